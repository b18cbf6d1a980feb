# SPDX-License-Identifier: GPL-2.0
"""Kconfig fragments: parse, merge, and check what olddefconfig kept.

Pure functions on text, no make here (kernel.py runs make).  A fragment
line is CONFIG_FOO=value or '# CONFIG_FOO is not set'; '=n' means the same
as 'is not set'.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Tuple

from .errors import UserError

_SET = re.compile(r'^(CONFIG_[A-Za-z0-9_]+)=(.*)$')
_UNSET = re.compile(r'^# (CONFIG_[A-Za-z0-9_]+) is not set$')


@dataclass(frozen=True)
class Option:
	name: str
	value: str		# 'n' for not set
	source: str		# 'file:line' the option came from


def parse(text: str, source: str = '<fragment>') -> List[Option]:
	out = []
	for no, raw in enumerate(text.splitlines(), 1):
		line = raw.strip()
		if not line:
			continue
		m = _SET.match(line)
		if m:
			out.append(Option(m.group(1), m.group(2), f'{source}:{no}'))
			continue
		m = _UNSET.match(line)
		if m:
			out.append(Option(m.group(1), 'n', f'{source}:{no}'))
			continue
		if line.startswith('#'):
			continue
		raise UserError(f'{source}:{no}: not a Kconfig line: {raw!r}',
				'write CONFIG_FOO=y, CONFIG_FOO=n or '
				'"# CONFIG_FOO is not set"')
	return out


def merge(fragments: Iterable[Tuple[str, str]]) -> Dict[str, Option]:
	"""Later fragments override earlier ones, as merge_config.sh does."""
	merged: Dict[str, Option] = {}
	for source, text in fragments:
		for opt in parse(text, source):
			merged[opt.name] = opt
	return merged


def render(merged: Dict[str, Option]) -> str:
	"""A KCONFIG_ALLCONFIG file for make allnoconfig."""
	lines = []
	for opt in merged.values():
		if opt.value == 'n':
			lines.append(f'# {opt.name} is not set')
		else:
			lines.append(f'{opt.name}={opt.value}')
	return '\n'.join(lines) + '\n'


def read_config(text: str) -> Dict[str, str]:
	return {o.name: o.value for o in parse(text, '.config')}


def missing(merged: Dict[str, Option], config_text: str) -> List[str]:
	"""Options a fragment asked for that the final .config does not have."""
	have = read_config(config_text)
	out = []
	for opt in merged.values():
		got = have.get(opt.name, 'n')
		if got != opt.value:
			out.append(f'{opt.name}={opt.value} ({opt.source}) is '
				   f'{"not set" if got == "n" else got} in '
				   '.config')
	return out


def load(dirpath: Path, names: Iterable[str]) -> Dict[str, Option]:
	frags = []
	for n in names:
		p = dirpath / n
		if not p.exists():
			raise UserError(f'config fragment {p} does not exist',
					f'fragments live in {dirpath}: '
					f'{", ".join(sorted(x.name for x in dirpath.glob("*.config")))}')
		frags.append((f'kconfigs/{n}', p.read_text()))
	return merge(frags)
