# SPDX-License-Identifier: GPL-2.0
"""Kernel configs as data (data/configs.toml): default, debug.

A config names the fragments it adds to the arch's own, the guest's
default timeout and the test programs' environment (per arch where an
arch differs).  The file is checked when it is read: a key this module
does not know is an error naming the file, the config and the key.
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Tuple

from . import arches, paths
from .errors import UserError

CONFIGS_FILE = Path(__file__).parent / 'data' / 'configs.toml'
DEFAULT = 'default'

_KEYS = {'fragments', 'arch_fragment', 'timeout', 'guest_env', 'arch'}
_ARCH_KEYS = {'guest_env'}


@dataclass(frozen=True)
class KernelConfig:
	"""One entry of configs.toml."""
	name: str
	fragments: Tuple[str, ...] = ()
	arch_fragment: str = ''
	timeout: float = 900.0
	guest_env: Tuple[Tuple[str, str], ...] = ()
	# arch name -> its guest_env entries over the config's
	arch_env: Tuple[Tuple[str, Tuple[Tuple[str, str], ...]], ...] = ()

	def fragments_for(self, arch: arches.ArchParams,
			  kconfigs: Optional[Path] = None) -> Tuple[str, ...]:
		"""The arch's fragments, this config's, and the per-arch one
		if kconfigs/ has it."""
		kconfigs = kconfigs or paths.KCONFIGS
		own = self.arch_fragment.format(arch=arch.name) \
			if self.arch_fragment else ''
		return (*arch.fragments, *self.fragments) + \
			((own,) if own and (kconfigs / own).exists() else ())

	def env_for(self, arch_name: str) -> Tuple[Tuple[str, str], ...]:
		env = dict(self.guest_env)
		env.update(dict(self.arch_env).get(arch_name, ()))
		return tuple(env.items())

	def options(self, arch_name: str) -> dict:
		"""What this config adds to pipeline.Options ({} for the
		default: the arch's fragments and guest environment)."""
		if self.name == DEFAULT:
			return {}
		return {'fragments': self.fragments_for(arches.get(arch_name)),
			'config_name': self.name,
			'guest_env': self.env_for(arch_name)}


def _env(where: str, value) -> Tuple[Tuple[str, str], ...]:
	if not isinstance(value, dict) or \
	   not all(isinstance(v, str) for v in value.values()):
		raise UserError(f'{where}: guest_env is a table of strings',
				'write it as [... .guest_env] NAME = "value"')
	return tuple(value.items())


def _unknown(where: str, got, known) -> None:
	bad = sorted(set(got) - set(known))
	if bad:
		raise UserError(f'{where}: unknown key {", ".join(bad)}',
				f'use: {", ".join(sorted(known))}')


def load(path: Optional[Path] = None) -> Dict[str, KernelConfig]:
	"""Read and check configs.toml: every key known, every arch named
	exists, a default config there."""
	path = path or CONFIGS_FILE
	try:
		data = tomllib.loads(path.read_text())
	except (OSError, tomllib.TOMLDecodeError) as e:
		raise UserError(f'{path}: {e}', 'fix the configs file') from None
	_unknown(path.name, data, {'configs'})
	out = {}
	known_arches = arches.known()
	for name, c in data.get('configs', {}).items():
		where = f'{path.name}: [configs.{name}]'
		_unknown(where, c, _KEYS)
		per_arch = []
		for arch, a in c.get('arch', {}).items():
			if arch not in known_arches:
				raise UserError(f'{where}: unknown arch {arch!r}',
						'use one of: ' +
						', '.join(sorted(known_arches)))
			_unknown(f'{where} arch.{arch}', a, _ARCH_KEYS)
			per_arch.append((arch, _env(f'{where} arch.{arch}',
						    a.get('guest_env', {}))))
		try:
			timeout = float(c.get('timeout', 900))
		except (TypeError, ValueError):
			raise UserError(f'{where}: timeout {c["timeout"]!r} is not '
					'a number', 'give seconds') from None
		out[name] = KernelConfig(
			name=name, fragments=tuple(c.get('fragments', ())),
			arch_fragment=c.get('arch_fragment', ''),
			timeout=timeout,
			guest_env=_env(where, c.get('guest_env', {})),
			arch_env=tuple(per_arch))
	if DEFAULT not in out:
		raise UserError(f'{path.name}: no [configs.{DEFAULT}]',
				'every arch builds the default config; add it')
	return out


def names() -> Tuple[str, ...]:
	return tuple(load())


def get(name: str) -> KernelConfig:
	known = load()
	if name not in known:
		raise UserError(f'unknown kernel config {name!r}',
				f'use one of: {", ".join(known)} ({CONFIGS_FILE})')
	return known[name]
