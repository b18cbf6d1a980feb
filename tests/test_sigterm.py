# SPDX-License-Identifier: GPL-2.0
"""SIGTERM (CI runners, timeout(1)) stops the run and its guest: exit 2,
no child process group left behind.  Real processes, no kernel."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _alive(pid: int) -> bool:
	try:
		os.kill(pid, 0)
	except ProcessLookupError:
		return False
	# a zombie is gone for our purpose, but it is nobody's child here
	try:
		stat = Path(f'/proc/{pid}/stat').read_text()
	except FileNotFoundError:
		return False
	return stat.rsplit(')', 1)[1].split()[0] != 'Z'


def _tool_streaming(tmp_path, argv, pidfile):
	"""A tool process: pipeline.guarded(Ops().stream(argv)); returns it
	once the child has written its pid."""
	script = textwrap.dedent(f'''
		import sys
		from pathlib import Path
		from pytools import pipeline
		from pytools.ops import Ops
		sys.exit(pipeline.guarded(lambda: Ops().stream(
			{argv!r}, Path({str(tmp_path / 'log')!r}), timeout=600)))
	''')
	tool = subprocess.Popen([sys.executable, '-c', script], cwd=REPO,
				env=dict(os.environ, PYTHONPATH=str(REPO),
					 PERFCTR_RESULTS=str(tmp_path)),
				stderr=subprocess.PIPE, text=True)
	for _ in range(200):
		if pidfile.exists() and pidfile.read_text().strip():
			break
		time.sleep(0.05)
	else:
		tool.kill()
		raise AssertionError(f'the child never started: {tool.stderr}')
	time.sleep(0.3)
	return tool, int(pidfile.read_text())


def _terminate(tool):
	tool.send_signal(signal.SIGTERM)
	rc = tool.wait(timeout=20)
	return rc, tool.stderr.read()


def test_sigterm_takes_the_child_process_group_with_it(tmp_path):
	pidfile = tmp_path / 'pid'
	tool, child = _tool_streaming(
		tmp_path, ['sh', '-c', f'echo $$ > {pidfile}; sleep 300 & wait'],
		pidfile)
	assert _alive(child)
	rc, err = _terminate(tool)
	assert rc == 2
	assert 'terminated (SIGTERM)' in err
	time.sleep(0.2)
	assert not _alive(child), 'the child outlived the terminated tool'


@pytest.mark.skipif(not shutil.which('qemu-system-x86_64'),
		    reason='qemu-system-x86_64 is not installed')
def test_sigterm_takes_a_real_paused_qemu_with_it(tmp_path):
	# A stopped guest, as a VM paused by a KVM internal error is.
	pidfile = tmp_path / 'qemu.pid'
	tool, qemu = _tool_streaming(
		tmp_path, ['qemu-system-x86_64', '-accel', 'tcg', '-S',
			   '-display', 'none', '-nodefaults', '-monitor', 'none',
			   '-serial', 'stdio', '-pidfile', str(pidfile)],
		pidfile)
	assert _alive(qemu)
	rc, _ = _terminate(tool)
	assert rc == 2
	time.sleep(0.2)
	assert not _alive(qemu), 'QEMU outlived the terminated tool'
