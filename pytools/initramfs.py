# SPDX-License-Identifier: GPL-2.0
"""Guests without a virtme-ng root: an initramfs of static test programs.

For arches whose user space is not the host's (ppc64le here), the guest
is the kernel plus a small initramfs: a static /init (guest/init.c)
and the static kselftests under /tests.  /init prints every output and
the kernel log between markers on the console; split_console() cuts the
console log back into the files pytools.guest writes on vng guests, so
collect.py reads both the same way.
"""

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from . import paths
from .arches import ArchParams
from .ops import Ops

if TYPE_CHECKING:
	from .kernel import Kselftests

MARK = '### perfctr-guest'
INIT_SRC = paths.INIT_SRC


def _cpio_entry(name: str, mode: int, data: bytes, ino: int) -> bytes:
	"""One entry of a newc cpio archive."""
	name_b = name.encode() + b'\0'
	fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name_b), 0]
	hdr = b'070701' + b''.join(b'%08X' % f for f in fields)
	out = hdr + name_b
	out += b'\0' * (-len(out) % 4)
	out += data
	out += b'\0' * (-len(out) % 4)
	return out


def cpio(entries: List[Tuple[str, int, bytes]]) -> bytes:
	"""A newc archive of (name, mode, data); directories have no data."""
	out = b''.join(_cpio_entry(n, m, d, i + 1)
		       for i, (n, m, d) in enumerate(entries))
	out += _cpio_entry('TRAILER!!!', 0, b'', 0)
	return out + b'\0' * (-len(out) % 512)


def compile_init(arch: ArchParams, out: Path, ops: Ops) -> Path:
	"""guest/init.c, static, for the arch: the guest's /init here,
	the test runner a LAVA job's shell starts (pytools/lava.py)."""
	cc = f'{arch.cross_compile}gcc'
	ops.require(cc, arch.cross_package)
	ops.run([cc, '-static', '-O2', '-Wall', '-o', str(out), str(INIT_SRC)])
	return out


def test_entries(tests: Optional['Kselftests']
		 ) -> List[Tuple[str, int, bytes]]:
	"""/tests: the collection's programs, in the runner's order, and its
	settings file, which /init reads the timeout from as
	run_kselftest.sh does (cpio entries)."""
	entries = [('tests', stat.S_IFDIR | 0o755, b'')]
	for t in tests.programs() if tests else []:
		if os.access(t, os.X_OK):
			entries.append((f'tests/{t.name}', stat.S_IFREG | 0o755,
					t.read_bytes()))
	settings = tests.collection / 'settings' if tests else None
	if settings and settings.is_file():
		entries.append(('tests/settings', stat.S_IFREG | 0o644,
				settings.read_bytes()))
	return entries


def build(arch: ArchParams, tests: Optional['Kselftests'], out: Path, ops: Ops,
	  bench: Sequence[Path] = ()) -> Path:
	"""Compile /init for the arch and pack it with the tests (and benchmarks)."""
	init = compile_init(arch, out.parent / 'guest-init', ops)
	dirs = ['dev', 'proc', 'sys', 'tmp'] + (['bench'] if bench else [])
	entries = [(d, stat.S_IFDIR | 0o755, b'') for d in dirs]
	entries.append(('init', stat.S_IFREG | 0o755, init.read_bytes()))
	entries += test_entries(tests)
	for b in bench:
		entries.append((f'bench/{b.name}', stat.S_IFREG | 0o755,
				b.read_bytes()))
	out.write_bytes(cpio(entries))
	return out


def qemu_argv(arch: ArchParams, kernel: Path, initrd: Path, accel: str,
	      cpus: int = 2, memory: str = '1G',
	      qemu: Sequence[str] = (), cpu: Optional[str] = None,
	      env: Sequence[Tuple[str, str]] = ()) -> List[str]:
	"""The QEMU command line; @qemu is the binary (and -L) to use, @cpu
	a CPU model other than the arch's default, @env the test programs'
	environment (on the kernel command line; default the arch's)."""
	g = arch.guest
	guest_env = ' '.join(f'{k}={v}' for k, v in (env or g.env))
	return [*(qemu or [arch.qemu_binary]), '-M', g.machine,
		'-cpu', cpu or g.cpu,
		'-accel', accel, '-smp', str(cpus), '-m', memory,
		'-nographic', '-no-reboot', '-kernel', str(kernel),
		'-initrd', str(initrd),
		'-append', f'console={g.console} loglevel=1 panic=-1 '
		'kunit.autorun=1' +
		(f' {guest_env}' if guest_env else '')]


def split_console(text: str, outdir: Path) -> Dict[str, int]:
	"""Write each marked section of the console to its file."""
	outdir.mkdir(parents=True, exist_ok=True)
	sizes: Dict[str, int] = {}
	current, buf = None, []
	for raw in text.splitlines():
		line = raw.rstrip('\r')
		# a marker may follow a kernel line that lacked its newline
		m = re.search(rf'{MARK} file (\S+)$', line)
		if m:
			current, buf = m.group(1), []
			continue
		if line == f'{MARK} end' and current:
			if current == 'dmesg.txt':
				buf = [re.sub(r'^<\d+>', '', l) for l in buf]
			(outdir / current).write_text('\n'.join(buf) + '\n')
			sizes[current] = len(buf)
			current = None
			continue
		if current:
			buf.append(line)
	return sizes
