# SPDX-License-Identifier: GPL-2.0
"""Per-arch facts, one module an arch, as kunit.py's qemu_configs.

The list of supported arches is the directory listing: adding an arch is
adding a file that defines ARCH = ArchParams(...).
"""

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Dict, Tuple

from ..errors import UserError


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
	boot: str = 'vng'		# how the guest is booted
	extra: Dict[str, str] = field(default_factory=dict)
	# Seconds the guest may print nothing on its console before it is
	# taken for stopped and killed, by config name ('default' for the
	# rest): the debug kernel is much slower, and emulated POWER is.
	silence: Dict[str, float] = field(
		default_factory=lambda: {'default': 120.0})
	# inv bench's guest boots: 'wall' (the accelerator inv check would
	# use; wall time, and PMC5 where the counters are real) and 'icount'
	# (TCG with -icount: the guest clock counts instructions).
	bench_boots: Tuple[str, ...] = ('wall', 'icount')

	def silence_for(self, config_name: str) -> float:
		return self.silence.get(config_name, self.silence['default'])


def known() -> Dict[str, ArchParams]:
	out = {}
	for mod in pkgutil.iter_modules(__path__):
		m = importlib.import_module(f'{__name__}.{mod.name}')
		arch = getattr(m, 'ARCH', None)
		if isinstance(arch, ArchParams):
			out[arch.name] = arch
	return out


def get(name: str) -> ArchParams:
	arches = known()
	if name not in arches:
		raise UserError(f'unknown arch {name!r}',
				f'use one of: {", ".join(sorted(arches))}')
	return arches[name]
