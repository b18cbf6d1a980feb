# SPDX-License-Identifier: GPL-2.0
"""inv run end to end on x86_64 under TCG: the command's exit status is
the task's, perfex is a plain command in the guest, and two clones on
one cache each run their own kselftests (a boot each; the kernel is inv
check's, built first if it is not yet).  Deselect with -m 'not e2e'."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytools import paths

pytestmark = pytest.mark.e2e


def inv_run(*command, cwd=paths.REPO):
	env = dict(os.environ)
	env['PATH'] = f'{Path(sys.executable).parent}:{env["PATH"]}'
	proc = subprocess.run(['inv', 'run', '--arch', 'x86_64', '--accel',
			       'tcg', '--', *command], cwd=cwd, env=env,
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


def break_info_basic(patches: Path) -> None:
	"""Add a failing assertion to info.basic in the series' kselftests
	patch of a checkout (a new file's hunk: its header counts one line
	more)."""
	[patch] = patches.glob('*-selftests-perfctr-the-harness-and-*.patch')
	lines = patch.read_text().split('\n')
	start = lines.index('+++ b/tools/testing/selftests/perfctr/'
			    'perfctr_info_test.c')
	at = next(i for i in range(start, len(lines))
		  if lines[i] == '+TEST_F(info, basic)') + 2
	assert lines[at - 1] == '+{'
	lines.insert(at, '+\tASSERT_EQ(1, 2);')
	hunk = start + 1
	m = re.fullmatch(r'@@ -0,0 \+1,(\d+) @@', lines[hunk])
	assert m, lines[hunk]
	lines[hunk] = f'@@ -0,0 +1,{int(m.group(1)) + 1} @@'
	patch.write_text('\n'.join(lines))


def test_two_clones_on_one_cache_each_run_their_own_kselftests(tmp_path):
	"""Issue 24's repro 2, for real: clone A breaks info.basic in its
	series, clone B is untouched; they share the default cache (its
	kernel tree, build and kselftest directories).  Each must run the
	tests of its own series: A fails, B passes, whichever ran last."""
	clones = {}
	for name in ('a', 'b'):
		clones[name] = tmp_path / name
		subprocess.run(['git', 'clone', '--quiet', '--shared',
				str(paths.REPO), str(clones[name])], check=True)
	break_info_basic(clones['a'] / 'patches')
	cmd = ('perfctr_info_test', '-t', 'basic')
	a = inv_run(*cmd, cwd=clones['a'])
	b = inv_run(*cmd, cwd=clones['b'])
	a_again = inv_run(*cmd, cwd=clones['a'])
	assert a.returncode != 0 and 'not ok' in a.stdout, a.stdout
	assert b.returncode == 0 and 'ok 1 info.basic' in b.stdout, b.stdout
	assert a_again.returncode != 0, 'A ran B\'s build after B ran'
