# SPDX-License-Identifier: GPL-2.0
"""inv shell and inv run on the fake Ops: the options, the guest's
command and the vng/QEMU command line, the exit status."""

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from invoke import Context, Exit

import tasks
from pytools import arches, boot, kernel, pipeline, qemu, rootfs, shell
from pytools.bases import BaseTree

X86 = arches.get('x86_64')
PPC = arches.get('ppc64le')


@pytest.fixture
def built(tmp_path, monkeypatch):
	"""shell.main on a stand-in build: the stages before the boot
	return it, results and sessions under tmp_path; per arch."""
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path / 'results'))

	def make(arch=X86):
		tree = BaseTree(name='lts', path=tmp_path / 'linux', ref='base',
				commit='0' * 40, version='6.12',
				origin='linux-source-6.12 6.12', patches='patches')
		bdir = tmp_path / f'build-{arch.name}'
		(bdir / 'usr' / 'include').mkdir(parents=True, exist_ok=True)
		kst = tmp_path / 'linux' / 'tools' / 'testing' / 'selftests'
		kst.mkdir(parents=True, exist_ok=True)
		for name in ('lib.mk', 'kselftest_harness.h', 'kselftest.h'):
			(kst / name).touch()
		(kst / 'perfctr').mkdir(exist_ok=True)
		(kst / 'perfctr' / 'Makefile').touch()
		req = kernel.BuildRequest(tree=tree, arch=arch, fragments=(),
					  build_dir=bdir, jobs=2)
		build = kernel.BuildResult(
			image=bdir / arch.image, build_dir=bdir,
			log=bdir / 'build.log', config_seconds=0, build_seconds=0,
			configured=False, release='6.12.0-perfctr')
		monkeypatch.setattr(shell, 'prepare', lambda opts, ops: (req, build))
		return build
	return make


def _boot(ops):
	"""The guest's command (the kselftests' make comes before it)."""
	[boot] = [s for s in ops.streams if 'make' not in s['argv'][0]]
	return boot


@pytest.fixture
def ppc_root(tmp_path, monkeypatch):
	rfs = rootfs.Rootfs(tmp_path / 'root', 'k', ('python3',), 'bookworm',
			    'ppc64el', 1 << 20, 1.0, 'then', False)
	monkeypatch.setattr(rootfs, 'ensure', lambda arch, ops: rfs)
	monkeypatch.setattr(qemu, 'choose', lambda arch, ops: qemu.Qemu(
		'/c/qemu-system-ppc64', (10, 0, 2), 'debian bookworm-backports',
		'/c/share', 'old system QEMU'))
	return rfs


def _opts(**kw):
	return pipeline.check_options(**kw)


def _exec(argv):
	"""The command vng runs in the guest."""
	return argv[argv.index('--exec') + 1]


def test_run_prints_the_output_and_exits_with_the_commands_status(
		fake_ops, built, capsys):
	build = built()
	ops = fake_ops(answers=[('vng', (3, 'TSC 12345\n'))])
	rc = shell.main(_opts(accel='tcg'), ops,
			command=['perfex', '--', 'sh', '-c', 'exit 3'])
	assert rc == 3
	out, err = capsys.readouterr()
	assert out == 'TSC 12345\n'
	assert 'run: 6.12.0-perfctr on x86_64 under TCG (asked for with ' \
		'--accel tcg)' in err
	argv = _boot(ops)['argv']
	assert argv[argv.index('--run') + 1] == str(build.image)
	assert '--disable-kvm' in argv and '--verbose' not in argv
	assert argv[argv.index('--append') + 1] == 'kunit.enable=0'
	cmd = _exec(argv)
	assert cmd.endswith(f'cd {shlex.quote(str(pipeline.paths.REPO))} && '
			    "perfex -- sh -c 'exit 3'")
	assert f'export PERFCTR_HEADERS={build.build_dir}/usr/include' in cmd
	session = Path(argv[argv.index('--rwdir') + 1])
	assert f'export PATH={session}/bin:' in cmd
	assert _boot(ops)['timeout'] == 900
	assert _boot(ops)['idle_timeout'] is None


def test_perfex_on_path_runs_the_checkouts_perfex(fake_ops, built):
	built()
	ops = fake_ops(answers=[('vng', (0, ''))])
	shell.main(_opts(accel='tcg'), ops, command=['true'])
	argv = _boot(ops)['argv']
	wrapper = Path(argv[argv.index('--rwdir') + 1]) / 'bin' / 'perfex'
	text = wrapper.read_text()
	assert wrapper.stat().st_mode & 0o111
	assert f'PYTHONPATH={pipeline.paths.REPO}' in text
	assert f'exec {sys.executable} -m pytools.guest.perfex "$@"' in text


def test_run_keeps_qemus_start_up_noise_out_of_the_output(fake_ops, built,
							  capsys):
	"""What the backport QEMU prints at start-up (seen on ppc64le) is not
	the command's output; a line of the command that merely mentions
	QEMU is."""
	built()
	noise = ('qemu-system-ppc64: failed to initialize module: '
		 '/usr/lib/x86_64-linux-gnu/qemu/ui-opengl.so\n'
		 'Only modules from the same build can be loaded.\n'
		 'qemu-system-ppc64: failed to open module: /usr/lib/x86_64-'
		 'linux-gnu/qemu/audio-alsa.so: undefined symbol: audio_calloc\n'
		 "qemu-system-ppc64: warning: TCG doesn't support requested "
		 'feature, cap-cfpc=workaround\n')
	ops = fake_ops(answers=[('vng', (0, noise + 'hello\n'
					   'qemu-system-ppc64 is my QEMU\n'))])
	assert shell.main(_opts(accel='tcg'), ops, command=['echo']) == 0
	out = capsys.readouterr().out
	assert out == 'hello\nqemu-system-ppc64 is my QEMU\n'


def test_shell_is_interactive_with_its_own_login_shell(fake_ops, built,
						       capsys):
	build = built()
	ops = fake_ops()
	assert shell.main(_opts(accel='tcg'), ops) == 0
	assert [s['argv'][0] for s in ops.streams] == ['make'], \
		'only the kselftests build streams: the shell is interactive'
	(argv, env), = ops.interactive_calls
	assert '--exec' not in argv and '--verbose' not in argv
	login = Path(argv[argv.index('--shell') + 1])
	assert login.name == shell.SHELL and login.stat().st_mode & 0o111
	text = login.read_text()
	assert f'export PERFCTR_HEADERS={build.build_dir}/usr/include' in text
	assert f'cd {pipeline.paths.REPO}\n' in text
	assert 'bash --norc -i' in text
	assert 'under TCG' in capsys.readouterr().err


@pytest.mark.parametrize('status', [0, 3])
def test_shell_exits_with_the_login_shells_status(status, fake_ops, built):
	"""As ssh does: the guest's `exit 3` is inv shell's 3.  The login
	script runs for real (sh), with a bash that exits with @status."""
	built()

	def login(argv):
		script = Path(argv[argv.index('--shell') + 1])
		# first on the PATH the script exports: the session's bin
		(script.parent / 'bash').write_text(f'#!/bin/sh\nexit {status}\n')
		(script.parent / 'bash').chmod(0o755)
		rc = subprocess.run(['sh', str(script)],
				    stdin=subprocess.DEVNULL).returncode
		assert rc == status
		return (0, '')
	ops = fake_ops(answers=[('vng', login)])
	assert shell.main(_opts(accel='tcg'), ops) == status


def test_shell_powered_off_from_inside_exits_0(fake_ops, built):
	"""poweroff in the guest: no status written, vng ends well."""
	built()
	ops = fake_ops(answers=[('vng', (0, ''))])
	assert shell.main(_opts(accel='tcg'), ops) == 0


def test_ppc64le_boots_inv_checks_root_qemu_and_cpu(fake_ops, built,
						    ppc_root):
	build = built(PPC)
	ops = fake_ops(answers=[('vng', (0, ''))])
	shell.main(_opts(arch='ppc64le', cpu='power10'), ops,
		   command=['perfex', '-e', 'instructions', '--', 'ls'])
	argv = _boot(ops)['argv']
	assert argv[argv.index('--root') + 1] == str(ppc_root.path)
	assert argv[argv.index('--arch') + 1] == 'ppc64el'
	assert argv[argv.index('--qemu') + 1] == '/c/qemu-system-ppc64'
	assert "--qemu-opts=-L /c/share -cpu power10" in argv
	assert f'{rootfs.GUEST_SRC}={pipeline.paths.REPO}' in argv
	assert f'{rootfs.GUEST_BUILD}={build.build_dir}' in argv
	out = argv[argv.index('--rwdir') + 1]
	assert out.startswith(f'{rootfs.GUEST_OUT}=')
	cmd = _exec(argv)
	assert 'export PATH=/perfctr/out/bin:' in cmd
	assert 'export PERFCTR_HEADERS=/perfctr/build/usr/include' in cmd
	assert cmd.endswith('cd /perfctr/src && perfex -e instructions -- ls')
	wrapper = Path(out.split('=', 1)[1]) / 'bin' / 'perfex'
	assert 'PYTHONPATH=/perfctr/src' in wrapper.read_text()
	assert 'exec /usr/bin/python3 -m pytools.guest.perfex' in \
		wrapper.read_text()
	# a foreign arch: TCG, never a KVM probe
	assert '--disable-kvm' in argv
	assert not [c for c in ops.calls if '-accel kvm' in ' '.join(c)]


def test_build_compiles_static_for_the_arch_onto_path(fake_ops, built,
						      ppc_root, tmp_path):
	build = built(PPC)
	src = tmp_path / 'myprog.c'
	src.write_text('int main(void) { return 0; }\n')
	ops = fake_ops(answers=[('vng', (0, ''))])
	shell.main(_opts(arch='ppc64le'), ops, command=['myprog'],
		   sources=[src])
	cc, = [c for c in ops.calls if c[0].endswith('gcc')]
	assert cc[:2] == ['powerpc64le-linux-gnu-gcc', '-static']
	assert cc[cc.index('-isystem') + 1] == str(build.build_dir /
						   'usr' / 'include')
	# a kselftest compiles too (kselftest_harness.h, the tree's)
	assert cc[cc.index('-I') + 1].endswith('tools/testing/selftests')
	assert Path(cc[cc.index('-o') + 1]).parent.name == 'bin'
	assert Path(cc[cc.index('-o') + 1]).name == 'myprog'
	assert cc[-1] == str(src)


def test_a_program_that_does_not_compile_is_a_user_error(fake_ops, built,
							 tmp_path):
	built()
	src = tmp_path / 'bad.c'
	src.write_text('int main(void) { return x; }\n')
	ops = fake_ops(answers=[('gcc', (1, "bad.c:1: error: 'x' undeclared"))])
	with pytest.raises(shell.UserError, match="'x' undeclared"):
		shell.main(_opts(accel='tcg'), ops, command=['bad'],
			   sources=[src])
	with pytest.raises(shell.UserError, match='no such file'):
		shell.main(_opts(accel='tcg'), ops, command=['x'],
			   sources=[tmp_path / 'missing.c'])
	assert ops.streams == []


def test_a_guest_killed_by_the_timeout_is_exit_2(fake_ops, built, capsys):
	built()
	ops = fake_ops(answers=[('vng', ('timeout', 'half\n'))])
	assert shell.main(_opts(accel='tcg', timeout=5), ops,
			  command=['sleep', '99']) == 2
	assert _boot(ops)['timeout'] == 5
	assert 'killed' in capsys.readouterr().err


def test_kvm_failing_during_the_run_runs_it_again_under_tcg(
		fake_ops, built, with_kvm, monkeypatch, capsys):
	from test_boot import KVM_INTERNAL
	built()
	monkeypatch.setattr(boot, 'choose_accel', lambda *a, **kw:
			    boot.AccelChoice(boot.Accel.KVM, 'probed'))

	def console(argv):
		return (0, 'ok\n') if '--disable-kvm' in argv else \
			(0, KVM_INTERNAL)
	ops = fake_ops(answers=[('vng', console)])
	assert shell.main(_opts(), ops, command=['true']) == 0
	assert ['--disable-kvm' in s['argv'] for s in ops.streams
		if s['argv'][0] != 'make'] == [False, True]
	assert 'running the command again under TCG' in capsys.readouterr().err


def _exit(task, c=None, **kw):
	with pytest.raises(Exit) as e:
		task(c or Context(), **kw)
	return e.value.code


def test_the_tasks_pass_their_options_and_the_words_after_dashes(
		monkeypatch):
	seen = {}

	def main(opts, ops, command=None, sources=()):
		seen.update(opts=opts, command=command, sources=sources)
		return 5
	monkeypatch.setattr(shell, 'main', main)
	monkeypatch.setattr(sys, 'argv', ['inv', 'run', '--arch', 'ppc64le',
					  '--', 'perfex', '-e', 'instructions',
					  '--', 'sh', '-c', 'echo a b'])
	assert _exit(tasks.run, arch='ppc64le', cpu='power10',
		     build=['p.c']) == 5
	assert seen['command'] == ['perfex', '-e', 'instructions', '--', 'sh',
				   '-c', 'echo a b']
	assert seen['sources'] == [Path('p.c')]
	assert seen['opts'].arch == 'ppc64le' and seen['opts'].cpu == 'power10'
	# no -- on the command line: invoke's remainder, split
	monkeypatch.setattr(sys, 'argv', ['inv', 'run'])
	assert _exit(tasks.run, Context(remainder="echo 'a b'")) == 5
	assert seen['command'] == ['echo', 'a b']
	monkeypatch.setattr(shell, 'main', lambda opts, ops: seen.update(
		opts=opts, command=None) or 0)
	assert tasks.shell(Context(), debug=True) is None
	assert seen['opts'].config_name == 'debug' and seen['command'] is None


@pytest.mark.parametrize('task,kw,says', [
	(tasks.shell, {'arch': 'arm64'}, "unknown arch 'arm64'"),
	(tasks.shell, {'cpu': 'power10'}, '--cpu power10'),
	(tasks.shell, {'accel': 'hvf'}, 'unknown accelerator'),
	(tasks.run, {'timeout': 'soon'}, '--timeout soon: not a number'),
	(tasks.run, {'arch': 'arm64'}, "unknown arch 'arm64'"),
	(tasks.run, {}, 'inv run needs a command after --'),
])
def test_bad_options_fail_before_anything_slow(task, kw, says, monkeypatch,
					       tmp_path, capsys):
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path))
	monkeypatch.setattr(sys, 'argv', ['inv', task.name])

	def slow(*a, **k):
		raise AssertionError('resolve_base reached with bad options')
	monkeypatch.setattr(pipeline, 'resolve_base', slow)
	assert _exit(task, **kw) == 2
	assert says in capsys.readouterr().err


def test_path_has_this_checkouts_kselftests_not_another_clones(fake_ops,
								built):
	"""The kselftests on PATH are the build of this checkout's sources
	(the content-keyed directory inv check uses), not whichever build
	another clone left in the shared build directory."""
	build = built()
	tree = build.build_dir.parent / 'linux'
	req = kernel.BuildRequest(tree=BaseTree(
		name='lts', path=tree, ref='base', commit='0' * 40,
		version='6.12', origin='x', patches='patches'), arch=X86,
		fragments=(), build_dir=build.build_dir, jobs=2)
	key = kernel.selftests_key(req, kernel.selftests_source(req.tree),
				   tree / 'tools' / 'testing' / 'selftests',
				   f'{X86.cross_compile}gcc')
	ours = build.build_dir / 'kselftest' / key
	other = build.build_dir / 'kselftest' / ('f' * 16) / 'install' / 'perfctr'
	ours.mkdir(parents=True)
	other.mkdir(parents=True)
	ops = fake_ops(answers=[('vng', (0, ''))])
	shell.main(_opts(accel='tcg'), ops, command=['true'])
	[make] = [s['argv'] for s in ops.streams if s['argv'][0] == 'make']
	assert f'KSFT_INSTALL_PATH={ours}/install' in make, \
		'built where PATH looks'
	ours = ours / 'install' / 'perfctr'
	cmd = _exec(_boot(ops)['argv'])
	assert f':{ours}:' in cmd
	assert str(other) not in cmd
