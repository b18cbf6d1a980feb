# SPDX-License-Identifier: GPL-2.0
"""The test run inside the guest: python3 -m pytools.guest --out DIR ...

Runs every test family, keeps every output in DIR (a directory shared
read-write with the host), and judges nothing: the host parses the files.
Only the standard library is used here, apart from pytest for the Python
ABI checks: the host's root filesystem has them (x86_64), and so does the
root built for an arch of its own (pytools/rootfs.py, ppc64le).
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

KSELFTEST_TIMEOUT = 300
# Programs that need longer: the inheritance chain forks 10^5 times.
KSELFTEST_TIMEOUTS = {'vperfctr_chain_test': 900}
PYTEST_TIMEOUT = 600
KMEMLEAK = Path('/sys/kernel/debug/kmemleak')


def _debugfs() -> None:
	if not os.path.ismount('/sys/kernel/debug'):
		subprocess.run(['mount', '-t', 'debugfs', 'debugfs',
				'/sys/kernel/debug'], check=False,
			       stderr=subprocess.DEVNULL)


def _kmemleak(cmd: str) -> None:
	try:
		KMEMLEAK.write_text(cmd)
	except OSError:
		pass


def kmemleak_start() -> bool:
	"""Forget what boot left unreferenced: only the tests' leaks count."""
	_debugfs()
	if not KMEMLEAK.exists():
		return False
	_kmemleak('scan')
	_kmemleak('clear')
	return True


def kmemleak_report(out: Path) -> None:
	"""Scan twice (an object must look leaked in both) and keep the list."""
	for _ in range(2):
		_kmemleak('scan')
		time.sleep(1)
	try:
		out.write_text(KMEMLEAK.read_text())
	except OSError as e:
		out.write_text(f'# perfctr: cannot read {KMEMLEAK}: {e}\n')


MARK = '### perfctr-guest'
ALIVE_EVERY = 30
# Lines of a test's output worth showing on the console as they come: the
# host prints each failing test as it fails (pytools/watch.py).
_SHOW = re.compile(r'^\s*not ok \d+|^\S+::\S+ (FAILED|ERROR)\b')


def _kill_group(proc) -> None:
	try:
		os.killpg(proc.pid, signal.SIGKILL)
	except ProcessLookupError:
		pass


def say(text: str) -> None:
	print(f'{MARK} {text}', flush=True)


def _run(argv, out: Path, timeout: int, env=None, family: str = 'run',
	 name: str = '') -> dict:
	"""Run one test program, its output to @out; on the console, markers
	for its start and end, a line every ALIVE_EVERY seconds while it
	runs (the host's silence bound counts on them), and its failures."""
	name = name or Path(argv[0]).name
	start = time.monotonic()
	say(f'start {family} {name}')
	done = threading.Event()

	def alive():
		while not done.wait(ALIVE_EVERY):
			say(f'alive {family} {name} '
			    f'{time.monotonic() - start:.0f}')
	threading.Thread(target=alive, daemon=True).start()
	rc = 'cannot-run'
	with open(out, 'w') as f:
		try:
			proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
						stderr=subprocess.STDOUT,
						text=True, errors='replace',
						env=dict(os.environ, **(env or {})),
						start_new_session=True)
			killer = threading.Timer(timeout, _kill_group, (proc,))
			killer.start()
			for line in proc.stdout:
				f.write(line)
				if _SHOW.match(line):
					print(line.rstrip(), flush=True)
			rc = proc.wait()
			killer.cancel()
			if rc == -9 and time.monotonic() - start >= timeout:
				f.write(f'\n# perfctr: killed after {timeout} s\n')
				rc = 'timeout'
		except OSError as e:
			f.write(f'\n# perfctr: cannot run {argv[0]}: {e}\n')
	done.set()
	say(f'end {family} {name} {rc}')
	return {'argv': argv, 'rc': rc, 'output': out.name,
		'seconds': round(time.monotonic() - start, 3)}


def local_copy(src: Path) -> Path:
	"""Test programs (the kselftests; the checks' C programs, conftest.py)
	copied into the guest's memory (/tmp is
	a tmpfs under virtme-ng).  Run from the 9p share, every fork's
	child faults the program's pages in again over virtio, and the
	inheritance chain forks 10^5 times: measured on ppc64le, 20,000
	generations took 198 s from the share and 159 s from /tmp."""
	dst = Path(tempfile.mkdtemp(prefix='perfctr-kselftests-'))
	for prog in src.iterdir():
		if prog.is_file():
			shutil.copy2(prog, dst / prog.name)
	return dst


def main(argv=None) -> int:
	ap = argparse.ArgumentParser(prog='pytools.guest')
	ap.add_argument('--out', required=True, type=Path)
	ap.add_argument('--kselftests', type=Path)
	ap.add_argument('--pytest', type=Path)
	ap.add_argument('--headers', type=Path)
	ap.add_argument('--progs', type=Path,
			help="the Python checks' C programs (pytools/progs.py)")
	ap.add_argument('--env', action='append', default=[],
			help='KEY=VALUE for the test programs')
	args = ap.parse_args(argv)
	out = args.out
	out.mkdir(parents=True, exist_ok=True)
	summary = {'uname': os.uname().release, 'families': {}}
	test_env = dict(e.split('=', 1) for e in args.env if '=' in e)
	summary['env'] = test_env
	# A slow kernel (the debug one: KASAN, lockdep) stretches every
	# program's bound, as kunit.py's --timeout does for a whole run.
	scale = float(test_env.get('PERFCTR_TIMEOUT_SCALE', '1'))
	kmemleak = kmemleak_start()

	if args.kselftests and args.kselftests.is_dir():
		runs = {}
		ksel = local_copy(args.kselftests)
		summary['kselftests_from'] = str(ksel)
		for prog in sorted(ksel.iterdir()):
			# kselftest programs are named *_test; anything else
			# in the directory (a benchmark) is not a test
			if prog.is_file() and os.access(prog, os.X_OK) and \
			   prog.name.endswith('_test'):
				runs[prog.name] = _run([str(prog)],
						       out / f'kselftest-{prog.name}.tap',
						       scale * KSELFTEST_TIMEOUTS.get(
							       prog.name,
							       KSELFTEST_TIMEOUT),
						       test_env,
						       'kselftest')
		summary['families']['kselftest'] = runs

	if args.pytest:
		env = {**test_env, 'PERFCTR_HEADERS': str(args.headers or ''),
		       'PERFCTR_PROGS': str(args.progs or ''),
		       'PYTHONDONTWRITEBYTECODE': '1',
		       # each result as it comes, to the log and the console
		       # (a pipe would hold them until pytest ends)
		       'PYTHONUNBUFFERED': '1'}
		summary['families']['pytest'] = _run(
			[sys.executable, '-m', 'pytest', '-p', 'no:cacheprovider',
			 '-v', '-rsP', f'--junitxml={out / "pytest.xml"}',
			 str(args.pytest)],
			out / 'pytest.log', scale * PYTEST_TIMEOUT, env, 'pytest',
			'abi_checks')

	if kmemleak:
		kmemleak_report(out / 'kmemleak.txt')
	# Last, so that anything the tests made the kernel say is in it.
	_run(['dmesg'], out / 'dmesg.txt', 60, family='collect')
	(out / 'guest.json').write_text(json.dumps(summary, indent=1))
	return 0


if __name__ == '__main__':
	sys.exit(main())
