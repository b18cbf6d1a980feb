# SPDX-License-Identifier: GPL-2.0
"""The cache's locks: a second run waits, names the holder, and gets the
lock as soon as the holder ends, however it ends.  Real processes."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from pytools import locks

REPO = Path(__file__).resolve().parent.parent


def _holder(lock: Path, ready: Path):
	"""Another run: takes @lock and sleeps."""
	script = textwrap.dedent(f'''
		import time
		from pathlib import Path
		from pytools import locks
		locks.take(Path({str(lock)!r}), 'the x86_64 build')
		Path({str(ready)!r}).write_text('1')
		time.sleep(300)
	''')
	p = subprocess.Popen([sys.executable, '-c', script], cwd=REPO,
			     env=dict(os.environ, PYTHONPATH=str(REPO)))
	for _ in range(200):
		if ready.exists():
			return p
		time.sleep(0.05)
	p.kill()
	raise AssertionError('the holder never took the lock')


def test_a_second_run_waits_names_the_holder_and_goes_on_when_it_is_killed(
		tmp_path, capsys):
	lock = locks.build_lock(tmp_path / 'build' / 'lts-x86_64-default')
	other = _holder(lock, tmp_path / 'ready')
	got = threading.Event()

	def second():
		locks.take(lock, 'the x86_64 build')
		got.set()
	t = threading.Thread(target=second)
	t.start()
	try:
		time.sleep(0.5)
		assert not got.is_set(), 'two runs held the build at once'
		err = capsys.readouterr().err
		assert f'waiting for the run of PID {other.pid} in {REPO} to ' \
		       'finish with the x86_64 build' in err
		other.send_signal(signal.SIGKILL)	# no cleanup runs
		other.wait()
		t.join(timeout=10)
		assert got.is_set(), 'the lock outlived its killed holder'
		assert locks.holder(lock)['pid'] == os.getpid()
	finally:
		if other.poll() is None:
			other.kill()
		t.join(timeout=1)
		locks.release(lock)
	assert not locks.held(lock)


def test_locks_are_reentrant_and_a_block_releases_what_it_took(tmp_path):
	lock = locks.lock_file('tree-x')
	with locks.hold(lock, 'the tree'):
		locks.take(lock, 'the tree')		# no deadlock
		with locks.hold(lock, 'the tree'):
			pass
		assert locks.held(lock)			# the inner block did not own it
	assert not locks.held(lock)
