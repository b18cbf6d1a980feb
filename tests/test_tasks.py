# SPDX-License-Identifier: GPL-2.0
"""Every task as the command line calls it: bad options fail at once with
exit 2, and an unexpected exception anywhere exits 2, never 1."""

import pytest
from invoke import Context, Exit

import tasks
from pytools import pipeline


@pytest.fixture
def nothing_slow(monkeypatch, tmp_path):
	"""Fetching a base is the first slow step: reaching it is a failure
	of option validation."""
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path))

	def slow(*a, **kw):
		raise AssertionError('resolve_base reached with bad options')
	monkeypatch.setattr(pipeline, 'resolve_base', slow)


def _exit(task, **kw):
	with pytest.raises(Exit) as e:
		task(Context(), **kw)
	return e.value.code


@pytest.mark.parametrize('task,kw,says', [
	(tasks.check, {'arch': 'arm64'}, "unknown arch 'arm64'"),
	(tasks.check, {'timeout': -1}, '--timeout -1'),
	(tasks.check, {'timeout': '0'}, '--timeout 0'),
	(tasks.check, {'timeout': 'soon'}, '--timeout soon: not a number'),
	(tasks.check, {'accel': 'hvf'}, 'unknown accelerator'),
	(tasks.check, {'jobs': 'x'}, '--jobs x: not a number'),
	(tasks.check, {'ref': 'v6.12'}, '--ref needs --tree'),
	(tasks.check, {'cpu': 'power10'}, '--cpu power10'),
	(tasks.check, {'arch': 'arm64', 'debug': True}, "unknown arch 'arm64'"),
	(tasks.test, {'arch': 'arm64'}, "unknown arch 'arm64'"),
	(tasks.bench, {'arch': 'arm64'}, "unknown arch 'arm64'"),
	(tasks.bench, {'timeout': -5}, '--timeout -5'),
	(tasks.build, {'arch': 'arm64'}, "unknown arch 'arm64'"),
	(tasks.bisect, {'arch': 'arm64'}, "unknown arch 'arm64'"),
	(tasks.base, {'ref': 'x'}, '--ref needs --tree'),
])
def test_bad_options_fail_at_once_with_exit_2(task, kw, says, nothing_slow,
					      capsys):
	assert _exit(task, **kw) == 2
	err = capsys.readouterr().err
	assert says in err
	if 'arch' in says:
		assert 'x86_64' in err and 'ppc64le' in err


ALL_TASKS = [tasks.base, tasks.apply, tasks.squash, tasks.export,
	     tasks.rebase, tasks.bench, tasks.docs, tasks.build, tasks.check,
	     tasks.test, tasks.lint, tasks.bisect, tasks.lava, tasks.shell]


@pytest.mark.parametrize('task', ALL_TASKS, ids=lambda t: t.name)
@pytest.mark.parametrize('exc', [KeyError('lts'), RuntimeError('bug'),
				 ValueError('bad value')],
			 ids=lambda e: type(e).__name__)
def test_every_task_exits_2_on_an_unexpected_exception(task, exc, monkeypatch,
							tmp_path, capsys):
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path))

	def boom(*a, **kw):
		raise exc
	monkeypatch.setattr(pipeline, 'resolve_base', boom)
	assert _exit(task) == 2
	err = capsys.readouterr().err
	assert f'internal error: {type(exc).__name__}' in err
	log = next((tmp_path / 'errors').iterdir())
	assert str(log) in err and 'Traceback' in log.read_text()


def test_a_git_error_exits_2(monkeypatch, tmp_path, capsys):
	from pytools.errors import GitError
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path))

	def boom(*a, **kw):
		raise GitError(['git', 'am', '-3'], 128,
			       'fatal: previous rebase directory '
			       '.git/rebase-apply still exists')
	monkeypatch.setattr(pipeline, 'resolve_base', boom)
	assert _exit(tasks.apply) == 2
	err = capsys.readouterr().err
	assert 'internal error: GitError' in err and 'rebase-apply' in err


def test_a_test_failure_is_exit_1_and_a_pass_is_0(monkeypatch):
	monkeypatch.setattr(pipeline, 'check', lambda o, argv, ops: 1)
	assert _exit(tasks.check) == 1
	monkeypatch.setattr(pipeline, 'check', lambda o, argv, ops: 0)
	assert tasks.check(Context()) is None


@pytest.mark.parametrize('argv,says,fix', [
	(['check', '--bogus'], 'inv check: no option --bogus',
	 'fix: inv --help check'),
	(['check', '--acel', 'kvm'], 'options of check: --accel, --arch',
	 'fix: did you mean --accel?'),
	(['chek'], "no task 'chek'", "fix: did you mean 'check'?"),
	(['check', '--arch'], 'needed value', 'fix: inv --help check'),
])
def test_invoke_parse_errors_exit_2_with_the_choices_and_a_fix(
		argv, says, fix):
	import subprocess
	import sys
	from pathlib import Path
	inv = Path(sys.executable).parent / 'inv'
	if not inv.exists():
		pytest.skip('invoke\'s inv is not beside this Python')
	proc = subprocess.run([str(inv), *argv], capture_output=True, text=True,
			      cwd=Path(tasks.__file__).parent, timeout=60)
	assert proc.returncode == 2, proc.stderr
	assert says in proc.stderr and fix in proc.stderr, proc.stderr
	if argv == ['chek']:
		assert 'tasks: apply, base' in proc.stderr
