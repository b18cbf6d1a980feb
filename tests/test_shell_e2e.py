# SPDX-License-Identifier: GPL-2.0
"""inv run end to end on x86_64 under TCG: the command's exit status is
the task's, and perfex is a plain command in the guest (a boot each; the
kernel is inv check's, built first if it is not yet).  Deselect with
-m 'not e2e'."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytools import paths

pytestmark = pytest.mark.e2e


def inv_run(*command):
	env = dict(os.environ)
	env['PATH'] = f'{Path(sys.executable).parent}:{env["PATH"]}'
	proc = subprocess.run(['inv', 'run', '--arch', 'x86_64', '--accel',
			       'tcg', '--', *command], cwd=paths.REPO, env=env,
			      text=True, stdout=subprocess.PIPE,
			      stderr=subprocess.PIPE, timeout=3600)
	sys.stdout.write(proc.stdout[-3000:] + proc.stderr[-3000:])
	return proc


@pytest.mark.parametrize('command,status', [('true', 0), ('false', 1)])
def test_inv_run_exits_with_the_commands_status(command, status):
	proc = inv_run(command)
	assert proc.returncode == status
	assert 'under TCG' in proc.stderr


def test_perfex_is_on_path_and_counts_the_tsc():
	proc = inv_run('perfex', '--', 'true')
	assert proc.returncode == 0, proc.stdout + proc.stderr
	tsc = [l for l in proc.stdout.splitlines() if l.startswith('tsc\t')]
	assert tsc and int(tsc[0].split()[1]) > 0
