# SPDX-License-Identifier: GPL-2.0
"""The test run inside the guest: python3 -m pytools.guest --out DIR ...

Runs every test family, keeps every output in DIR (a directory shared
read-write with the host), and judges nothing: the host parses the files.
Only the standard library is used here, apart from pytest for the Python
ABI checks: the host's root filesystem has them (x86_64), and so does the
root built for an arch of its own (pytools/rootfs.py, ppc64le).
"""

import argparse
import contextlib
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

from . import ksft

# The kselftests: the collection run_kselftest.sh runs, each program
# bounded by its settings file (kselftest/runner.sh's default without one)
KSELFTEST_COLLECTION = 'perfctr'
KSELFTEST_DEFAULT_TIMEOUT = 45
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
_SHOW = re.compile(r'^[#\s]*not ok \d+|^\S+::\S+ (FAILED|ERROR)\b')


def _kill_group(proc) -> None:
	try:
		os.killpg(proc.pid, signal.SIGKILL)
	except ProcessLookupError:
		pass


def say(text: str) -> None:
	print(f'{MARK} {text}', flush=True)


def _run(argv, out: Path, timeout: float, env=None, family: str = 'run',
	 name: str = '', times: dict = None) -> dict:
	"""Run one test program, its output to @out; on the console, markers
	for its start and end, a line every ALIVE_EVERY seconds while it
	runs (the host's silence bound counts on them), and its failures.
	@times, if given, gets each output line's time since the start, by
	line number."""
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
			for n, line in enumerate(proc.stdout):
				f.write(line)
				if times is not None:
					times[n] = time.monotonic() - start
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
	"""Test programs (the kselftests' install; the checks' C programs,
	conftest.py) copied into the guest's memory (/tmp is
	a tmpfs under virtme-ng).  Run from the 9p share, every fork's
	child faults the program's pages in again over virtio, and the
	inheritance chain forks 10^5 times: measured on ppc64le, 20,000
	generations took 198 s from the share and 159 s from /tmp."""
	dst = Path(tempfile.mkdtemp(prefix='perfctr-kselftests-')) / src.name
	shutil.copytree(src, dst, symlinks=True)
	return dst


def settings_timeout(collection: Path) -> int:
	"""The timeout=N of the collection's settings file, as runner.sh
	reads it."""
	try:
		text = (collection / 'settings').read_text()
	except OSError:
		return KSELFTEST_DEFAULT_TIMEOUT
	for line in text.splitlines():
		if line.startswith('timeout='):
			return int(line.split('=', 1)[1])
	return KSELFTEST_DEFAULT_TIMEOUT


@contextlib.contextmanager
def dev_stdout_of_each_process():
	"""/dev/stdout as udev and systemd make it, /proc/self/fd/1, while
	the kernel's runner runs: kselftest/runner.sh writes every program's
	output to /dev/stdout (its logfile), meaning the runner's own
	standard output, and virtme-ng links /dev/stdout to its console
	port instead (the output would go to the console, not to the pipe
	this runner reads).  Put back afterwards."""
	link = Path('/dev/stdout')
	old = os.readlink(link) if link.is_symlink() else None
	changed = False
	if old != '/proc/self/fd/1':
		try:
			if link.is_symlink() or link.is_file():
				link.unlink()
			link.symlink_to('/proc/self/fd/1')
			changed = True
		except OSError as e:
			say(f'cannot point {link} at /proc/self/fd/1: {e}')
	try:
		yield
	finally:
		if changed:
			link.unlink()
			if old:
				link.symlink_to(old)


def kselftests(install: Path, out: Path, scale: float, env: dict) -> dict:
	"""The collection, run by the kernel's runner (run_kselftest.sh),
	its whole output kept as kselftest.tap and each program's cut back
	into kselftest-NAME.tap, with its exit status."""
	ksel = local_copy(install)
	collection = ksel / KSELFTEST_COLLECTION
	each = settings_timeout(collection)
	argv = [str(ksel / 'run_kselftest.sh'), '-c', KSELFTEST_COLLECTION]
	if scale != 1:
		# a slow kernel (the debug one) stretches every program's bound
		each = int(each * scale)
		argv += ['--override-timeout', str(each)]
	try:
		listed = (ksel / 'kselftest-list.txt').read_text().split()
	except OSError:
		listed = []
	times: dict = {}
	with dev_stdout_of_each_process():
		run = _run(argv, out / 'kselftest.tap',
			   (len(listed) + 1) * (each + 30), env, 'kselftest',
			   'run_kselftest.sh', times)
	lines = (out / 'kselftest.tap').read_text(errors='replace').splitlines()
	runs = {'_runner': dict(run, installed=str(ksel))}
	for name, prog in ksft.split(lines, KSELFTEST_COLLECTION,
				     times).items():
		tap = f'kselftest-{name}.tap'
		if prog.rc == 'timeout':
			prog.lines.append(f'# perfctr: killed after {each} s '
					  '(run_kselftest.sh\'s timeout)')
		(out / tap).write_text(''.join(l + '\n' for l in prog.lines))
		runs[name] = {'argv': [str(collection / name)], 'rc': prog.rc,
			      'output': tap, 'seconds': prog.seconds}
	return runs


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
		runs = kselftests(args.kselftests, out, scale, test_env)
		summary['kselftest_runner'] = runs.pop('_runner')
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
