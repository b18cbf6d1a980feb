# SPDX-License-Identifier: GPL-2.0
"""Children die with the tools, however the tools die (kill -9 included):
real processes started through the ops layer, no kernel."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytools import ops as O
from test_sigterm import _alive

REPO = Path(__file__).resolve().parent.parent


def _tool(tmp_path, call, pidfile):
	"""A tool process running @call (Ops().stream or Ops().run of a
	shell that writes its pid and sleeps); returns it and the child's
	pid once the child is up."""
	script = textwrap.dedent(f'''
		from pathlib import Path
		from pytools.ops import Ops
		argv = ['sh', '-c', 'echo $$ > {pidfile}; sleep 300 & wait']
		{call}
	''')
	tool = subprocess.Popen([sys.executable, '-c', script], cwd=REPO,
				env=dict(os.environ, PYTHONPATH=str(REPO),
					 PERFCTR_CACHE=str(tmp_path / 'cache')),
				stderr=subprocess.PIPE, text=True)
	for _ in range(200):
		if pidfile.exists() and pidfile.read_text().strip():
			return tool, int(pidfile.read_text())
		time.sleep(0.05)
	tool.kill()
	raise AssertionError(f'the child never started: {tool.stderr.read()}')


def _gone(pid, within=10.0):
	end = time.monotonic() + within
	while time.monotonic() < end:
		if not _alive(pid):
			return True
		time.sleep(0.05)
	return False


def _group_members(pgid):
	out = []
	for d in Path('/proc').iterdir():
		if d.name.isdigit():
			try:
				stat = (d / 'stat').read_text().rsplit(')', 1)[1].split()
			except OSError:
				continue
			if int(stat[2]) == pgid and stat[0] != 'Z':
				out.append(int(d.name))
	return out


@pytest.mark.parametrize('call', [
	"Ops().stream(argv, Path({log!r}), timeout=600)",
	"Ops().run(argv, timeout=600)"], ids=['stream', 'run'])
def test_kill_9_of_the_tool_ends_its_child_group(tmp_path, call):
	pidfile = tmp_path / 'pid'
	tool, child = _tool(tmp_path, call.format(log=str(tmp_path / 'log')),
			    pidfile)
	time.sleep(0.2)
	assert _alive(child) and len(_group_members(child)) == 2
	tool.send_signal(signal.SIGKILL)
	tool.wait(timeout=10)
	assert _gone(child), 'the child outlived the tool killed with -9'
	assert not [p for p in _group_members(child) if _alive(p)], \
		'the child\'s own child (sleep) outlived the tool'


def test_a_finished_command_leaves_no_record(tmp_path, monkeypatch):
	monkeypatch.setenv('PERFCTR_CACHE', str(tmp_path))
	assert O.Ops().run(['true']).returncode == 0
	assert not list((tmp_path / 'runs').glob('*.json'))


def test_a_running_command_is_on_record(tmp_path):
	pidfile = tmp_path / 'pid'
	tool, child = _tool(tmp_path, "Ops().run(argv, timeout=600)", pidfile)
	try:
		rec = tmp_path / 'cache' / 'runs' / f'{tool.pid}.json'
		for _ in range(100):
			if rec.exists():
				break
			time.sleep(0.05)
		data = json.loads(rec.read_text())
		assert data['pid'] == tool.pid
		assert data['checkout'] == str(REPO)
		assert [g['pgid'] for g in data['groups']] == [child]
	finally:
		tool.kill()
		tool.wait()
	assert _gone(child)


def _orphan_group():
	"""A process group as a killed run's guest is left: its own session,
	nobody's child that cares."""
	p = subprocess.Popen(['sh', '-c', 'sleep 300 & wait'],
			     start_new_session=True)
	time.sleep(0.1)
	return p


def test_the_next_run_ends_what_a_killed_run_left(tmp_path):
	runs = tmp_path / 'runs'
	runs.mkdir()
	left = _orphan_group()
	# a run that is gone (pid 0's start time never matches)
	(runs / '999999.json').write_text(json.dumps({
		'pid': 999999, 'start': '1', 'checkout': '/clone/a',
		'groups': [{'pgid': left.pid, 'start': O._start_time(left.pid),
			    'argv': 'vng --run x'}]}))
	try:
		ended = O.reap_leftovers(runs)
		assert [(e.pgid, e.run_pid, e.checkout) for e in ended] == \
			[(left.pid, 999999, '/clone/a')]
		left.wait(timeout=5)
		assert not _group_members(left.pid)
		assert not list(runs.iterdir())
	finally:
		if left.poll() is None:
			os.killpg(left.pid, signal.SIGKILL)
			left.wait()


def test_a_live_run_and_a_reused_pid_are_left_alone(tmp_path):
	runs = tmp_path / 'runs'
	runs.mkdir()
	left = _orphan_group()
	me = subprocess.Popen(['sleep', '300'])
	try:
		# the run is alive: nothing of it is touched
		(runs / 'a.json').write_text(json.dumps({
			'pid': me.pid, 'start': O._start_time(me.pid),
			'checkout': '/a', 'groups': [{
				'pgid': left.pid,
				'start': O._start_time(left.pid), 'argv': 'x'}]}))
		# a dead run whose group leader's pid names another process
		(runs / 'b.json').write_text(json.dumps({
			'pid': 999999, 'start': '1', 'checkout': '/b',
			'groups': [{'pgid': left.pid, 'start': '1', 'argv': 'y'}]}))
		assert O.reap_leftovers(runs) == []
		assert left.poll() is None
		assert (runs / 'a.json').exists() and not (runs / 'b.json').exists()
	finally:
		os.killpg(left.pid, signal.SIGKILL)
		left.wait()
		me.kill()
		me.wait()


def test_a_full_disk_is_said_once_with_a_fix(tmp_path):
	with pytest.raises(O.InfraError) as e:
		O.Ops().run(['sh', '-c', 'for i in 1 2 3; do echo "tar: x: '
			     'Cannot write: No space left on device"; done; '
			     'exit 2'])
	assert 'ran out of disk space' in str(e.value)
	assert 'fix: free some space' in str(e.value)
	assert str(e.value).count('No space') == 1
