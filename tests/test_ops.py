# SPDX-License-Identifier: GPL-2.0
"""ops.stream's bounds, for real: short shell commands, no kernel."""

import os
import time

import pytest

from pytools.ops import Ops


def test_a_silent_command_is_killed_at_the_silence_bound(tmp_path):
	t0 = time.monotonic()
	res = Ops().stream(['sh', '-c', 'echo booting; sleep 60'],
			   tmp_path / 'log', timeout=600, idle_timeout=1)
	assert time.monotonic() - t0 < 10
	assert res.silent and not res.timed_out
	assert 'no output for' in res.stopped and 'silence bound 1 s' in res.stopped
	assert 'booting' in res.output
	assert '*** killed: no output' in (tmp_path / 'log').read_text()


def test_output_keeps_a_command_alive_past_the_silence_bound(tmp_path):
	res = Ops().stream(['sh', '-c', 'for i in 1 2 3 4 5 6; do echo $i; '
			    'sleep 0.4; done'], tmp_path / 'log',
			   idle_timeout=1.5)
	assert res.returncode == 0 and not res.silent and res.stopped == ''


def test_on_line_stops_the_command_with_its_reason(tmp_path):
	def watch(line):
		return 'KVM internal error seen' if 'KVM internal' in line \
			else None
	t0 = time.monotonic()
	res = Ops().stream(['sh', '-c', 'echo "KVM internal error. Suberror: 1";'
			    ' sleep 60'], tmp_path / 'log', on_line=watch)
	assert time.monotonic() - t0 < 10
	assert res.stopped == 'KVM internal error seen'
	assert not res.timed_out and not res.silent


def test_on_quiet_hears_of_every_quiet_period(tmp_path):
	heard = []
	Ops().stream(['sh', '-c', 'echo last words; sleep 2.7'],
		     tmp_path / 'log', quiet_every=1,
		     on_quiet=lambda s, l: heard.append((int(s), l)))
	assert [l for _, l in heard] == ['last words', 'last words']
	assert [s for s, _ in heard] == [1, 2]


def test_the_total_timeout_says_so(tmp_path):
	res = Ops().stream(['sh', '-c', 'while :; do echo x; sleep 0.1; done'],
			   tmp_path / 'log', timeout=1, idle_timeout=30)
	assert res.timed_out and not res.silent
	assert res.stopped == 'did not finish within 1 s'


def test_cancel_from_another_thread_kills_a_quiet_command(tmp_path):
	"""A background job (the guest root's build) is stopped with its
	run: setting the event kills it even while it prints nothing."""
	import threading
	cancel = threading.Event()
	threading.Timer(0.5, cancel.set).start()
	t0 = time.monotonic()
	res = Ops().stream(['sh', '-c', 'echo unpacking; sleep 60'],
			   tmp_path / 'log', timeout=600, cancel=cancel)
	assert time.monotonic() - t0 < 10
	assert res.stopped == 'cancelled' and res.returncode != 0
	assert '*** killed: cancelled' in (tmp_path / 'log').read_text()


def test_interactive_returns_the_status_and_kills_its_group_when_stopped(
		tmp_path):
	"""inv shell's terminal command: its status; stopped by ^C or
	SIGTERM (an exception in the main thread), its whole group dies, a
	grandchild (vng's QEMU) too."""
	import signal
	import time
	from pytools.ops import Ops
	assert Ops().interactive(['sh', '-c', 'exit 3']).returncode == 3
	pidfile = tmp_path / 'pid'

	def stop(signum, frame):
		raise KeyboardInterrupt
	old = signal.signal(signal.SIGALRM, stop)
	signal.alarm(2)
	try:
		with pytest.raises(KeyboardInterrupt):
			Ops().interactive(['sh', '-c', f'sleep 60 & echo $! > '
					   f'{pidfile}; wait'])
	finally:
		signal.alarm(0)
		signal.signal(signal.SIGALRM, old)
	pid = int(pidfile.read_text())
	for _ in range(50):
		try:
			os.kill(pid, 0)
		except ProcessLookupError:
			break
		time.sleep(0.1)
	else:
		pytest.fail(f'grandchild {pid} outlived the interrupt')
