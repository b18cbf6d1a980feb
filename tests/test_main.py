# SPDX-License-Identifier: GPL-2.0
"""Every task called as the command line calls it, with the one injected
object replaced: the program runner (tasks.Ops -> FakeOps), as
kunit_tool_test.py calls kunit.main() with a fake kernel tree.  The
fake machine answers make, the selftests' make and vng with captured
output; nothing is built or booted."""

import json
import re
import shutil
from pathlib import Path

import pytest
from invoke import Context, Exit

import tasks
from pytools import paths

from conftest import DATA, FakeOps

SHA = 'a' * 40


def _exit(task, **kw):
	try:
		task(Context(), **kw)
	except Exit as e:
		return e.code
	return 0


@pytest.fixture
def kernel_tree(tmp_path):
	"""A --tree the tools accept: Makefile, Kconfig, .git, the KUnit
	parser collect.py imports, the kselftest lib.mk and the series'
	kselftests' Makefile."""
	t = tmp_path / 'linux'
	shutil.copytree(DATA / 'fake-tree', t)
	for f in ('Makefile', 'Kconfig', 'tools/testing/selftests/lib.mk',
		  'tools/testing/selftests/perfctr/Makefile'):
		(t / f).parent.mkdir(parents=True, exist_ok=True)
		(t / f).write_text('')
	(t / '.git').mkdir()
	return t


def _option(argv, name):
	for a in argv:
		if a.startswith(f'{name}='):
			return a.split('=', 1)[1]
	return argv[argv.index(name) + 1]


def _allnoconfig(argv):
	"""make allnoconfig: every option the fragments ask for sticks."""
	allconfig = Path(_option(argv, 'KCONFIG_ALLCONFIG'))
	shutil.copy(allconfig, Path(_option(argv, 'O')) / '.config')
	return (0, '')


def _make(argv):
	"""make of the kernel (O=) or of the selftests (OUTPUT=)."""
	if 'bzImage' in argv:
		out = Path(_option(argv, 'O'))
		(out / 'arch/x86/boot').mkdir(parents=True, exist_ok=True)
		(out / 'arch/x86/boot/bzImage').write_text('')
		(out / 'include/config').mkdir(parents=True, exist_ok=True)
		(out / 'include/config/kernel.release').write_text(
			'6.12.0-perfctr\n')
	return (0, '  CC      drivers/perfctr/virtual.o\n')


def _guest(tap='kselftest-info-pass.tap'):
	"""vng: the guest's runner writes its files into the --rwdir, the
	console is a captured one of a good run."""
	def vng(argv):
		out = Path(_option(argv, '--rwdir'))
		shutil.copy(DATA / 'dmesg-kunit-pass.txt', out / 'dmesg.txt')
		shutil.copy(DATA / tap, out / 'kselftest-perfctr_info_test.tap')
		shutil.copy(DATA / 'pytest-pass.xml', out / 'pytest.xml')
		(out / 'guest.json').write_text(json.dumps({'families': {
			'kselftest': {'perfctr_info_test': {
				'rc': 0,
				'output': 'kselftest-perfctr_info_test.tap'}}}}))
		return (0, (DATA / 'console-x86-pass.log').read_text())
	return vng


@pytest.fixture
def machine(monkeypatch, tmp_path):
	"""The fake machine every task gets; its answers, replaceable."""
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path / 'results'))
	ops = FakeOps(answers=[
		('rev-parse', (0, SHA + '\n')),
		('describe', (0, 'v6.12-dirty\n')),
		('allnoconfig', _allnoconfig),
		('vng', _guest()),
		('make', _make),
	])
	monkeypatch.setattr(tasks, 'Ops', lambda: ops)
	return ops


def test_check_runs_every_stage_and_prints_the_results_path_last(
		machine, kernel_tree, capsys):
	assert _exit(tasks.check, tree=str(kernel_tree), no_apply=True,
		     accel='tcg') == 0
	out = capsys.readouterr().out.splitlines()
	path = Path(out[-1])
	assert path.name == 'results.json' and path.exists()
	assert (path.parent / 'results.junit.xml').exists()
	data = json.loads(path.read_text())
	assert data['result'] == 'PASS'
	assert (data['config'], data['cpu']) == ('default', 'max')
	assert {t['family'] for t in data['tests']} == \
		{'kunit', 'kselftest', 'pytest', 'kernel-log'}
	# configure, build, headers, the selftests, the guest: in order
	steps = ['vng' if c[0].endswith('/vng') else
		 next((w for w in ('allnoconfig', 'bzImage', 'headers_install',
				   'KSFT_INSTALL_PATH=') if any(w in a for a in c)), None)
		 for c in machine.calls]
	steps = [s for s in steps if s]
	assert steps == ['allnoconfig', 'bzImage', 'headers_install',
			 'KSFT_INSTALL_PATH=', 'vng']
	vng = machine.calls[-1]
	cmd = vng[vng.index('--exec') + 1]
	assert f'-m {paths.GUEST_MODULE}' in cmd and '--disable-kvm' in vng


def test_check_of_the_debug_config_takes_its_settings_from_the_data(
		machine, kernel_tree):
	assert _exit(tasks.check, tree=str(kernel_tree), no_apply=True,
		     accel='tcg', debug=True) == 0
	make = next(c for c in machine.calls if 'allnoconfig' in c)
	allconfig = Path(_option(make, 'KCONFIG_ALLCONFIG'))
	assert allconfig.parent.name.endswith('-x86_64-debug')
	vng = machine.calls[-1]
	cmd = vng[vng.index('--exec') + 1]
	assert 'PERFCTR_FUZZ_CALLS=100000' in cmd
	assert machine.streams[-1]['timeout'] == 2400
	data = json.loads(next((Path(machine.streams[-1]['argv'][
		machine.streams[-1]['argv'].index('--rwdir') + 1]).parent)
		.glob('results.json')).read_text())
	assert data['config'] == 'debug'
	assert 'debug.config' in data['config_fragments']


def test_check_with_a_failing_test_is_exit_1(machine, kernel_tree, capsys):
	machine.answers[3] = ('vng', _guest(
		'kselftest-vperfctr-one-fail-one-skip.tap'))
	assert _exit(tasks.check, tree=str(kernel_tree), no_apply=True,
		     accel='tcg') == 1
	assert 'FAIL' in capsys.readouterr().out


def test_check_with_a_broken_build_is_exit_2_naming_the_error(
		machine, kernel_tree, capsys):
	machine.answers[4] = ('make', (2, 'drivers/perfctr/x86.c:1:1: error: '
				       'expected ";"\n'))
	assert _exit(tasks.check, tree=str(kernel_tree), no_apply=True) == 2
	err = capsys.readouterr().err
	assert 'x86.c:1:1: error' in err and 'build.log' in err
	assert not any('vng' in a for c in machine.calls for a in c)


def test_an_unexpected_exception_in_a_stage_is_exit_2_with_a_traceback(
		machine, kernel_tree, capsys, tmp_path):
	def crash(argv):
		raise RuntimeError('the fake make crashed')
	machine.answers[4] = ('make', crash)
	assert _exit(tasks.check, tree=str(kernel_tree), no_apply=True) == 2
	err = capsys.readouterr().err
	assert 'internal error: RuntimeError: the fake make crashed' in err
	log = Path(re.search(r'traceback in (\S+)', err).group(1))
	assert log.parent == tmp_path / 'results' / 'errors'
	assert 'Traceback' in log.read_text() and 'crash' in log.read_text()


TASKS_WITH_A_TREE = ['base', 'apply', 'squash', 'export', 'rebase', 'bench',
		     'docs', 'publish', 'build', 'check', 'test', 'lint',
		     'bisect']


@pytest.mark.parametrize('name', TASKS_WITH_A_TREE)
def test_a_bad_option_is_exit_2_before_any_program_runs(name, machine,
							capsys):
	assert _exit(getattr(tasks, name), ref='v6.12') == 2
	assert '--ref needs --tree' in capsys.readouterr().err
	assert machine.calls == []


@pytest.mark.parametrize('task,kw,says', [
	('lava', {'reference': 'x'}, '--reference is for --run'),
	('lava', {'url': 'files.example.org'}, 'not a URL'),
	('lava', {'cell': 'x86_64-lts-kasan-max'}, 'no cell'),
	('report', {'results': '/nonexistent'}, '/nonexistent'),
	('build', {'jobs': 'many'}, '--jobs many: not a number'),
	('bisect', {'arch': 'sparc'}, "unknown arch 'sparc'"),
	('bench', {'timeout': 'soon'}, '--timeout soon: not a number'),
])
def test_other_bad_options_are_exit_2_before_any_program_runs(
		task, kw, says, machine, capsys):
	assert _exit(getattr(tasks, task), **kw) == 2
	assert says in capsys.readouterr().err
	assert machine.calls == []


@pytest.mark.parametrize('name', TASKS_WITH_A_TREE)
def test_a_program_runner_that_breaks_is_exit_2_in_every_task(
		name, machine, kernel_tree, capsys, tmp_path):
	"""Whatever stage a task is at, an exception that is not the tools'
	own is an internal error: exit 2, the traceback in a log."""
	def broken(*a, **kw):
		raise ValueError('runner broke')
	machine.run = machine.stream = machine.git = broken
	kw = {'tree': str(kernel_tree)}
	if name == 'docs':
		kw['no_tree'] = False
	assert _exit(getattr(tasks, name), **kw) == 2
	err = capsys.readouterr().err
	assert 'internal error: ValueError: runner broke' in err
	assert any((tmp_path / 'results' / 'errors').iterdir())
