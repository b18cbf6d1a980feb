# SPDX-License-Identifier: GPL-2.0
"""Bad input and bad luck: each gives a message naming the fix, exit 2."""

import errno

import pytest

from pytools import kernel, pipeline
from pytools.errors import EXIT_CANNOT_RUN, GitError, InfraError, UserError


def test_full_disk_during_build_is_named_with_the_way_out(tmp_path):
	out = ('  CC      kernel/fork.o\n'
	       'kernel/fork.c:1: fatal error: cannot write kernel/.fork.o.d: '
	       'No space left on device\nmake[2]: *** Error 1\n')
	e = kernel.make_error('bzImage', out, tmp_path, tmp_path / 'build.log')
	assert isinstance(e, InfraError)
	assert 'ran out of disk space' in str(e) and 'resumes' in e.hint
	assert e.exit_code == EXIT_CANNOT_RUN


def test_compile_error_quotes_the_errors(tmp_path):
	out = 'drivers/perfctr/x86.c:12:1: error: expected ";"\nmake: *** Error 2\n'
	e = kernel.make_error('bzImage', out, tmp_path, tmp_path / 'build.log')
	assert isinstance(e, UserError)
	assert 'x86.c:12:1: error' in str(e) and 'build.log' in e.hint


def test_enospc_anywhere_in_a_task_is_exit_2_with_a_message(capsys):
	def writes_a_log():
		raise OSError(errno.ENOSPC, 'No space left on device',
			      '/cache/build/x/build.log')
	assert pipeline.guarded(writes_a_log) == EXIT_CANNOT_RUN
	err = capsys.readouterr().err
	assert 'no space left' in err and '/cache/build/x/build.log' in err
	assert 'run the same command again' in err


def test_a_read_only_directory_is_a_user_error_with_a_fix(capsys, tmp_path,
							 monkeypatch):
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path))

	def writes_docs():
		raise OSError(errno.EROFS, 'Read-only file system',
			      '/repo/docs/_build/index.html')
	assert pipeline.guarded(writes_docs) == EXIT_CANNOT_RUN
	err = capsys.readouterr().err
	assert 'user error: cannot write /repo/docs/_build/index.html: ' \
	       'Read-only file system' in err
	assert 'fix: make /repo/docs/_build writable' in err
	assert 'internal error' not in err and not (tmp_path / 'errors').exists()


def test_other_os_errors_exit_2_with_the_traceback_in_a_log(capsys, tmp_path,
							     monkeypatch):
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path))

	def boom():
		raise OSError(errno.EACCES, 'denied')
	assert pipeline.guarded(boom) == EXIT_CANNOT_RUN
	err = capsys.readouterr().err
	assert 'internal error: PermissionError' in err and 'denied' in err
	log = next((tmp_path / 'errors').iterdir())
	assert str(log) in err
	assert 'Traceback' in log.read_text() and 'boom' in log.read_text()


@pytest.mark.parametrize('exc', [
	KeyError('no-such-base'),
	RuntimeError('a bug'),
	GitError(['git', 'am'], 128, 'fatal: bad object'),
])
def test_any_unexpected_exception_exits_2_never_1(exc, capsys, tmp_path,
						   monkeypatch):
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path))

	def task():
		raise exc
	assert pipeline.guarded(task) == EXIT_CANNOT_RUN
	err = capsys.readouterr().err
	assert f'internal error: {type(exc).__name__}' in err
	assert 'traceback in ' in err


def test_cpu_model_for_an_arch_booted_by_virtme_ng_is_refused(capsys):
	o = pipeline.Options(arch='x86_64', cpu='power10')
	assert pipeline.guarded(pipeline.check, o, []) == EXIT_CANNOT_RUN
	err = capsys.readouterr().err
	assert '--cpu power10' in err and 'drop --cpu' in err


def test_an_interrupted_stream_takes_its_child_with_it(tmp_path):
	import os
	import time
	from pytools.ops import Ops
	pidfile = tmp_path / 'pid'

	def stop(line):
		raise KeyboardInterrupt
	t0 = time.monotonic()
	try:
		Ops().stream(['sh', '-c', f'echo $$ > {pidfile}; echo go; sleep 30'],
			     tmp_path / 'log', on_line=stop)
	except KeyboardInterrupt:
		pass
	assert time.monotonic() - t0 < 10
	pid = int(pidfile.read_text())
	try:
		os.kill(pid, 0)
		alive = True
	except ProcessLookupError:
		alive = False
	assert not alive, 'the child outlived the interrupted stream'
