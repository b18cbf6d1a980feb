# SPDX-License-Identifier: GPL-2.0
"""Per-arch facts, one module an arch, as kunit.py's qemu_configs.

The list of supported arches is the directory listing: adding an arch is
adding a file that defines ARCH = ArchParams(...).  Every parameter is a
typed field: a misspelled or missing one stops the loading of that file
with an error naming the file and the field, not a KeyError mid-run.
"""

import functools
import importlib.util
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Dict, Tuple

from ..errors import UserError

BOOTS = ('vng', 'initramfs')
HERE = Path(__file__).parent


@dataclass(frozen=True)
class Guest:
	"""The guest machine, where the tools (not virtme-ng) start QEMU:
	the initramfs guests, a LAVA job, a board."""
	console: str			# the serial console: ttyS0, hvc0
	# QEMU CPU model when none is asked for (x86_64: what virtme-ng
	# gives a TCG guest; under KVM it asks for "host")
	cpu: str
	machine: str = ''		# QEMU -M ('' : virtme-ng chooses)
	# the test programs' environment by default (on the kernel
	# command line of an initramfs guest)
	env: Tuple[Tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ArchParams:
	name: str			# our name: x86_64, ppc64le
	linux_arch: str			# ARCH= for make
	cross_compile: str		# CROSS_COMPILE= prefix, '' for native
	cross_package: str		# Debian package that provides it
	image: str			# kernel image, relative to the build dir
	make_target: str		# make target that builds the image
	fragments: Tuple[str, ...]	# kconfigs/ fragments, in merge order
	qemu_binary: str
	qemu_package: str
	unistd_header: str		# installed header with __NR_ numbers
	debian_arch: str		# Debian's name (packages for a ramdisk)
	guest: Guest
	boot: str = 'vng'		# how inv check boots the guest: BOOTS
	# How inv bench and inv bisect --boot boot it, when that differs
	# ('' : as inv check): a smaller guest that starts sooner.
	fast_boot: str = ''
	# The guest's root filesystem under virtme-ng: the host's (empty),
	# or a root of the arch's own built from these Debian packages of
	# debian_arch (pytools/rootfs.py)
	rootfs_packages: Tuple[str, ...] = ()
	# The oldest QEMU that runs every test of this arch, and why
	qemu_min: Tuple[int, ...] = ()
	qemu_min_why: str = ''
	# Seconds the guest may print nothing on its console before it is
	# taken for stopped and killed, by config name ('default' for the
	# rest): the debug kernel is much slower, and emulated POWER is.
	silence: Dict[str, float] = field(
		default_factory=lambda: {'default': 120.0})
	# inv bench's guest boots: 'wall' (the accelerator inv check would
	# use; wall time, and PMC5 where the counters are real) and 'icount'
	# (TCG with -icount: the guest clock counts instructions).
	bench_boots: Tuple[str, ...] = ('wall', 'icount')

	def __post_init__(self) -> None:
		if not isinstance(self.guest, Guest):
			raise TypeError('guest must be a Guest(...)')
		if self.boot not in BOOTS:
			raise ValueError(f'boot {self.boot!r}: one of {BOOTS}')
		if self.fast_boot not in ('', *BOOTS):
			raise ValueError(f'fast_boot {self.fast_boot!r}: \'\' or '
					 f'one of {BOOTS}')
		if 'initramfs' in (self.boot, self.fast_boot) and \
		   not self.guest.machine:
			raise ValueError('an initramfs guest needs guest.machine')
		if self.rootfs_packages and self.boot != 'vng':
			raise ValueError('rootfs_packages is the root of a '
					 'virtme-ng guest: it needs boot=\'vng\'')
		if 'default' not in self.silence:
			raise ValueError("silence needs a 'default' bound")
		if self.qemu_min and not self.qemu_min_why:
			raise ValueError('qemu_min needs qemu_min_why')

	def boot_for(self, fast: bool = False) -> str:
		"""How a guest boots: inv check's way, or the fast one."""
		return self.fast_boot if fast and self.fast_boot else self.boot

	@property
	def own_root(self) -> bool:
		"""The vng guest boots a root of its own, not the host's."""
		return bool(self.rootfs_packages)

	@property
	def picks_cpu(self) -> bool:
		"""The tools choose the QEMU CPU model (--cpu), not virtme-ng:
		an initramfs guest, or one with a root of its own (a foreign
		arch, always under TCG)."""
		return 'initramfs' in (self.boot, self.fast_boot) or self.own_root

	def silence_for(self, config_name: str) -> float:
		return self.silence.get(config_name, self.silence['default'])

	@property
	def qemu_min_text(self) -> str:
		return '.'.join(map(str, self.qemu_min))


def load_file(path: Path) -> ArchParams:
	"""The ARCH a file defines, or a UserError naming the file and what
	is wrong with it (an unknown or missing field, a bad value)."""
	spec = importlib.util.spec_from_file_location(
		f'{__name__}.{path.stem}', path)
	m = importlib.util.module_from_spec(spec)
	try:
		spec.loader.exec_module(m)
	except (TypeError, ValueError) as e:
		raise UserError(f'{path}: {e}', 'the fields are: ' + ', '.join(
			f.name for f in fields(ArchParams)) + '; Guest: ' +
			', '.join(f.name for f in fields(Guest))) from None
	arch = getattr(m, 'ARCH', None)
	if not isinstance(arch, ArchParams):
		raise UserError(f'{path} defines no ARCH = ArchParams(...)',
				'define it, or move the file out of '
				'pytools/arches/')
	return arch


@functools.lru_cache(maxsize=None)
def _load_all() -> Tuple[ArchParams, ...]:
	return tuple(load_file(p) for p in sorted(HERE.glob('*.py'))
		     if p.name != '__init__.py')


def known() -> Dict[str, ArchParams]:
	return {a.name: a for a in _load_all()}


def get(name: str) -> ArchParams:
	arches = known()
	if name not in arches:
		raise UserError(f'unknown arch {name!r}',
				f'use one of: {", ".join(sorted(arches))}')
	return arches[name]
