# SPDX-License-Identifier: GPL-2.0
"""perfex runs a command under counters and prints what it counted."""

import json
import subprocess
import sys


def _perfex(*args):
	return subprocess.run([sys.executable, '-m', 'pytools.guest.perfex', *args],
			      capture_output=True, text=True, timeout=120)


def test_counts_a_busy_command():
	busy = 'import time\nend=time.thread_time()+0.1\nwhile time.thread_time()<end: pass'
	p = _perfex('--json', '--', sys.executable, '-c', busy)
	assert p.returncode == 0, p.stderr
	out = json.loads(p.stdout.strip().splitlines()[-1])
	assert out['ms'] > 50, out


def test_exit_status_is_the_commands():
	assert _perfex('--', 'sh', '-c', 'exit 7').returncode == 7


def test_inherit_counts_children():
	busy = 'import time\nend=time.thread_time()+0.1\nwhile time.thread_time()<end: pass'
	script = f'{sys.executable} -c "{busy}"; true'
	p = _perfex('--inherit', '--json', '--', 'sh', '-c', script)
	assert p.returncode == 0, p.stderr
	out = json.loads(p.stdout.strip().splitlines()[-1])
	assert out['children']['tsc'] > 0, out


def test_missing_command_is_a_usage_error():
	p = _perfex()
	assert p.returncode == 2
	assert 'no command given' in p.stderr


def test_unknown_program_is_127():
	p = _perfex('--', '/nonexistent/program')
	assert p.returncode == 127
	assert 'nonexistent' in p.stderr
