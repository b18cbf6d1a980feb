# SPDX-License-Identifier: GPL-2.0
"""The QEMU a guest runs under, and where it came from.

An arch may need a newer QEMU than the machine has: QEMU's pseries PMU
raises the performance-monitor interrupt (counter overflow) only from
QEMU 8.1, and Debian bookworm ships 7.2.  The arch says so in
``ArchParams.qemu_min``.  When the installed QEMU is older, the Debian
backports build (``<codename>-backports`` on the machine's own mirror, as
the apt configuration names it) is downloaded and unpacked with ``dpkg -x``
into the cache: the system's QEMU and apt configuration are left alone.

The choice is reported in the results (``qemu``: binary, version, origin,
reason), like the accelerator's.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from . import bases, locks
from .arches import ArchParams
from .errors import InfraError
from .ops import Ops, progress
from .paths import cache_dir

# What the backports build of an arch's QEMU needs besides the binary
# package: the firmware (SLOF for pseries) lives in qemu-system-data.
DATA_PACKAGE = 'qemu-system-data'


@dataclass(frozen=True)
class Qemu:
	binary: str			# path to run
	version: Tuple[int, ...]
	origin: str			# 'system' or 'debian <suite> <version>'
	datadir: Optional[str] = None	# -L for a private copy's firmware
	reason: str = ''

	def as_dict(self) -> dict:
		return {'binary': self.binary,
			'version': '.'.join(map(str, self.version)),
			'origin': self.origin, 'reason': self.reason}


def parse_version(text: str) -> Tuple[int, ...]:
	m = re.search(r'QEMU emulator version (\d+)\.(\d+)(?:\.(\d+))?', text)
	if not m:
		return ()
	return tuple(int(x) for x in m.groups(default='0'))


def _version_of(binary: str, ops: Ops) -> Tuple[int, ...]:
	res = ops.run([binary, '--version'], check=False, timeout=60)
	return parse_version(res.output)



def _candidate(fetcher: bases.PackageFetcher, package: str) -> str:
	res = fetcher.ops.run(['apt-cache', *fetcher._apt_opts(), 'policy',
			       package], check=False)
	m = re.search(r'Candidate:\s*(\S+)', res.output)
	return m.group(1) if m and m.group(1) != '(none)' else ''


def fetch_backport(arch: ArchParams, suite: str, ops: Ops,
		   root: Optional[Path] = None) -> Qemu:
	"""Unpack the suite's build of the arch's QEMU into the cache."""
	root = root or cache_dir() / 'qemu'
	fetcher = bases.PackageFetcher(ops, root / 'apt')
	fetcher.update([suite])
	version = _candidate(fetcher, arch.qemu_package)
	if not version:
		raise InfraError(f'{arch.qemu_package} is not in Debian {suite}',
				 f'install QEMU {arch.qemu_min_text} or '
				 f'newer as {arch.qemu_binary}')
	dest = root / re.sub(r'[^A-Za-z0-9.+~-]', '_', version)
	binary = dest / 'usr' / 'bin' / arch.qemu_binary
	# One unpack at a time; a second run waits, then finds it done.
	with locks.hold(locks.lock_file('qemu-' + locks.slug(dest)),
			f'unpacking QEMU into {dest}'):
		if not binary.exists():
			progress(f'qemu: unpacking {arch.qemu_package} {version} '
				 f'from Debian {suite} into {dest}')
			tmp = dest.with_name(dest.name + '.tmp')
			ops.run(['rm', '-rf', str(tmp)])
			tmp.mkdir(parents=True)
			for pkg in (arch.qemu_package, DATA_PACKAGE):
				deb = fetcher.download(pkg, version)
				ops.run(['dpkg', '-x', str(deb), str(tmp)])
			tmp.rename(dest)
	missing = [line.split()[0] for line in
		   ops.run(['ldd', str(binary)], check=False).output.splitlines()
		   if 'not found' in line]
	if missing:
		raise InfraError(f'{binary} needs libraries this machine lacks: '
				 f'{", ".join(missing)}',
				 f'apt-get install {arch.qemu_package} (the '
				 'system package pulls in the same libraries), '
				 'or run ./bootstrap')
	return Qemu(str(binary), _version_of(str(binary), ops),
		    f'debian {suite} {version}',
		    datadir=str(dest / 'usr' / 'share' / 'qemu'))


def choose(arch: ArchParams, ops: Ops) -> Qemu:
	"""The installed QEMU if new enough for the arch, else a backport."""
	system = ops.require(arch.qemu_binary, arch.qemu_package)
	have = _version_of(system, ops)
	want = arch.qemu_min
	if not want or (have and have >= want):
		return Qemu(system, have, 'system')
	why = (f'{arch.qemu_binary} {".".join(map(str, have)) or "?"} is older '
	       f'than {arch.qemu_min_text}, which {arch.qemu_min_why}')
	codename = bases.codename()
	if not codename:
		raise InfraError(why, f'install QEMU {arch.qemu_min_text} or '
				 'newer')
	q = fetch_backport(arch, f'{codename}-backports', ops)
	if want and q.version < want:
		raise InfraError(f'{why}, and {q.origin} is {q.version} too',
				 f'install QEMU {arch.qemu_min_text} or newer')
	progress(f'qemu: {why}: using {q.binary} ({q.origin})')
	return Qemu(q.binary, q.version, q.origin, q.datadir, why)


def argv_prefix(q: Qemu) -> List[str]:
	return [q.binary] + (['-L', q.datadir] if q.datadir else [])
