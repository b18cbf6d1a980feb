# SPDX-License-Identifier: GPL-2.0
"""The guest phase of the main job, with the fake Ops: the accelerator's
fallback, the silence bound and the progress lines."""

import json
from pathlib import Path

import pytest

from pytools import arches, boot, kernel, pipeline, results
from pytools.bases import BaseTree

from test_boot import KVM_INTERNAL

X86 = arches.get('x86_64')


@pytest.fixture
def guest_run(tmp_path, monkeypatch):
	"""test_and_report on a stand-in build, results under tmp_path."""
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path / 'results'))
	tree = BaseTree(name='lts', path=tmp_path / 'linux', ref='base',
			commit='0' * 40, version='6.12', origin='linux-source-6.12 6.12',
			patches='patches')
	bdir = tmp_path / 'build'
	req = kernel.BuildRequest(tree=tree, arch=X86, fragments=(),
				  build_dir=bdir, jobs=2)
	build = kernel.BuildResult(image=bdir / 'bzImage', build_dir=bdir,
				   log=bdir / 'build.log', config_seconds=0,
				   build_seconds=0, configured=False,
				   release='6.12.0-perfctr')

	def run(ops, **kw):
		opts = pipeline.Options(userspace=False, **kw)
		return pipeline.test_and_report(opts, tree, build, req, 'tip', {},
						['inv', 'check'], ops)
	return run


def _console(argv):
	"""KVM dies once the tests start; the probe's tiny guest gets through;
	TCG runs to the end."""
	joined = ' '.join(argv)
	if boot.PROBE_MARK in joined:
		return (0, f'[    0.4] Run /init\n{boot.PROBE_MARK}\n')
	if '--disable-kvm' in argv:
		return (0, '[    1.0] Linux version 6.12\n'
			'### perfctr-guest start collect dmesg\n'
			'### perfctr-guest end collect dmesg 0\n')
	return (0, KVM_INTERNAL)


def test_kvm_failing_during_the_run_reruns_under_tcg_and_says_so(
		fake_ops, with_kvm, guest_run, capsys):
	ops = fake_ops(answers=[('-accel kvm', (0, '')), ('vng', _console)])
	run, path = guest_run(ops)
	vng = [s['argv'] for s in ops.streams]
	assert len(vng) == 3		# probe (KVM), run (KVM), run (TCG)
	assert '--disable-kvm' not in vng[1] and '--disable-kvm' in vng[2]
	assert run.accelerator['accel'] == 'tcg'
	data = json.loads(path.read_text())
	assert [(a['what'], a['ok']) for a in data['accel_attempts']] == \
		[('vcpu probe', True), ('boot probe', True), ('run', False)]
	assert 'KVM internal error' in data['accel_attempts'][-1]['reason']
	assert Path(run.logs['console_kvm']).exists()
	summary = results.summary(run)
	kvm_lines = [l for l in summary.splitlines() if 'KVM failed' in l]
	assert len(kvm_lines) == 1 and 'ran under TCG' in kvm_lines[0]
	err = capsys.readouterr().err
	assert 'running again under TCG' in err


def test_kvm_failing_with_accel_kvm_is_exit_2(fake_ops, with_kvm, guest_run):
	ops = fake_ops(answers=[('-accel kvm', (0, '')), ('vng', _console)])
	with pytest.raises(pipeline.InfraError, match='KVM internal error'):
		guest_run(ops, accel='kvm')


def test_a_silent_guest_is_killed_and_reported_with_its_last_lines(
		fake_ops, guest_run, capsys):
	ops = fake_ops(answers=[('vng', ('silent',
					 '[    0.9] Run /bin/false as init process\n'
					 '[    1.0] Kernel panic - not syncing: '
					 'Attempted to kill init!\n'))])
	run, path = guest_run(ops, accel='tcg')
	assert ops.streams[0]['idle_timeout'] == X86.silence_for('default')
	assert not run.passed
	problem = run.problems[0]
	assert 'stopped talking' in problem and 'silence bound' in problem
	assert 'Attempted to kill init' in problem
	boot_case = [t for t in run.tests if t.family == 'boot'][0]
	assert 'killed: no output' in boot_case.message
	assert 'still running' in capsys.readouterr().err


def test_the_debug_kernel_gets_a_longer_silence_bound(fake_ops, guest_run):
	ops = fake_ops(answers=[('vng', (0, ''))])
	guest_run(ops, accel='tcg', config_name='debug')
	assert ops.streams[0]['idle_timeout'] == X86.silence['debug'] > \
		X86.silence['default']


def test_progress_names_families_and_failures_as_they_go(fake_ops,
							  guest_run, capsys):
	console = ('[    1.1]     # Subtest: perfctr_core\n'
		   '[    1.2]     not ok 2 perfctr_core_reads\n'
		   '[    1.3] not ok 1 perfctr_core\n'
		   '### perfctr-guest start kselftest perfctr_info_test\n'
		   'not ok 3 info.reports_tsc\n'
		   '### perfctr-guest alive kselftest perfctr_info_test 30\n'
		   '### perfctr-guest end kselftest perfctr_info_test 1\n')
	guest_run(fake_ops(answers=[('vng', (0, console))]), accel='tcg')
	err = capsys.readouterr().err
	for want in ('guest: kunit perfctr_core started',
		     'guest: FAIL kunit perfctr_core: perfctr_core_reads',
		     'guest: kunit perfctr_core FAILED',
		     'guest: kselftest perfctr_info_test started',
		     'guest: FAIL kselftest perfctr_info_test: info.reports_tsc',
		     'guest: kselftest perfctr_info_test still running, 30 s',
		     'guest: kselftest perfctr_info_test FAILED (exit status 1)',
		     'boot: the same by hand: '):
		assert want in err, (want, err)


def test_progress_of_a_real_console(capsys):
	from conftest import DATA
	from pytools import watch
	said = []
	w = watch.GuestWatch(said.append)
	for line in (DATA / 'dmesg-kunit-pass.txt').read_text().splitlines():
		assert w.on_line(line) is None
	assert 'guest: kunit perfctr_x86_probe started at 0 s' in said
	assert 'guest: kunit perfctr_x86_probe ended at 0 s' in said
	assert not [s for s in said if 'FAIL' in s]
	said.clear()
	for line in (DATA / 'kunit-fail-dmesg.txt').read_text().splitlines():
		w.on_line(line)
	assert [s for s in said if 'FAIL' in s], said


def test_results_json_records_the_config_and_the_cpu_model(
		fake_ops, with_kvm, guest_run):
	"""What ran is recorded, not guessed later from paths or fragments:
	the KVM failure above reruns under TCG, on virtme-ng's TCG model."""
	ops = fake_ops(answers=[('-accel kvm', (0, '')), ('vng', _console)])
	run, path = guest_run(ops, config_name='debug')
	data = json.loads(path.read_text())
	assert (data['config'], data['cpu']) == ('debug', 'max')
	ops = fake_ops(answers=[('vng', (0, ''))])
	run, path = guest_run(ops, accel='tcg')
	assert results.load(path).config == 'default'


def test_results_json_of_a_kvm_run_says_host():
	req = boot.BootRequest(arch=X86, image=Path('bzImage'),
			       accel=boot.AccelChoice(boot.Accel.KVM, 'test'),
			       log=Path('log'), timeout=1)
	assert boot.cpu_model(req) == 'host'
	ppc = arches.get('ppc64le')
	req = boot.BootRequest(arch=ppc, image=Path('vmlinux'),
			       accel=boot.AccelChoice(boot.Accel.TCG, 'test'),
			       log=Path('log'), timeout=1, initrd=Path('i'))
	assert boot.cpu_model(req) == 'power9'
	import dataclasses
	assert boot.cpu_model(dataclasses.replace(req, cpu='power10')) == \
		'power10'


@pytest.mark.parametrize('name,config,cpu', [
	('x86_64-lts.json', 'default', 'max'),
	('ppc64le-lts.json', 'default', 'power9'),
])
def test_results_written_before_config_and_cpu_were_recorded_still_load(
		name, config, cpu):
	path = Path(__file__).parent / 'data' / 'results' / name
	assert 'cpu' not in json.loads(path.read_text())
	r = results.load(path)
	assert (r.config, r.cpu) == (config, cpu)


def test_the_published_snapshot_still_reads():
	from pytools import snapshot
	s = snapshot.load()
	assert {(r.arch, r.config) for r in s.runs} >= \
		{('x86_64', 'default'), ('x86_64', 'debug'),
		 ('ppc64le', 'default')}


def test_host_root_guest_runs_the_hosts_python_on_the_same_paths(tmp_path):
	run = results.RunResult(arch='x86_64', base={})
	plan = pipeline.plan_guest(pipeline.Options(), X86, tmp_path / 'build',
				   tmp_path / 'out', run, None)
	assert plan.root is None and plan.rwdirs == (tmp_path / 'out',)
	b = tmp_path / 'build'
	cmd = pipeline.guest_command(plan, pipeline.Options(),
				     kernel.Kselftests(b / 'kselftest' / 'k'),
				     b / 'guest-progs', [('A', '1')])
	assert f'--kselftests {b}/kselftest/k ' in cmd
	assert f'--headers {b}/usr/include' in cmd
	assert f'--progs {b}/guest-progs' in cmd
	assert cmd.endswith('--env A=1')
	assert not run.rootfs


def test_own_root_guest_sees_the_mount_points(tmp_path, monkeypatch,
					      fake_ops):
	from pytools import qemu, rootfs
	ppc = arches.get('ppc64le')
	rfs = rootfs.Rootfs(tmp_path / 'root', 'k', ('python3',), 'bookworm',
			    'ppc64el', 1 << 20, 146.5, 'then', False)
	monkeypatch.setattr(rootfs, 'ensure', lambda arch, ops: rfs)
	monkeypatch.setattr(qemu, 'choose', lambda arch, ops: qemu.Qemu(
		'/c/qemu-system-ppc64', (10, 0, 2), 'debian bookworm-backports',
		'/c/share', 'old system QEMU'))
	run = results.RunResult(arch='ppc64le', base={})
	opts = pipeline.Options(arch='ppc64le', cpu='power10')
	b = tmp_path / 'build'
	plan = pipeline.plan_guest(opts, ppc, b, tmp_path / 'out', run,
				   fake_ops())
	assert plan.root == tmp_path / 'root'
	assert (rootfs.GUEST_OUT, tmp_path / 'out', True) in plan.mounts
	assert (rootfs.GUEST_BUILD, b, False) in plan.mounts
	assert plan.qemu == ('/c/qemu-system-ppc64', '-L', '/c/share')
	assert run.qemu['cpu'] == 'power10' and run.rootfs['size_mb'] == 1
	assert 'rootfs' in run.durations
	cmd = pipeline.guest_command(plan, opts,
				     kernel.Kselftests(b / 'kselftest' / 'k'),
				     b / 'guest-progs',
				     pipeline.guest_env(pipeline.Options(), ppc))
	assert cmd.startswith('cd /perfctr/src && /usr/bin/python3 -m '
			      'pytools.guest --out /perfctr/out')
	assert '--kselftests /perfctr/build/kselftest/k ' in cmd
	assert '--headers /perfctr/build/usr/include' in cmd
	assert '--progs /perfctr/build/guest-progs' in cmd
	assert '--pytest /perfctr/src/pytools/guest/abi_checks' in cmd
	assert '--env PERFCTR_FUZZ_CALLS=300000' in cmd


def test_guest_env_options_win_over_the_arch():
	ppc = arches.get('ppc64le')
	env = pipeline.guest_env(pipeline.Options(
		guest_env=(('PERFCTR_FUZZ_CALLS', '20000'), ('B', '2'))), ppc)
	assert env == [('B', '2'), ('PERFCTR_FUZZ_CALLS', '20000')]
	assert pipeline.guest_env(pipeline.Options(), X86) == []


def test_bisect_boots_the_fast_way_and_check_the_full_way():
	ppc = arches.get('ppc64le')
	assert ppc.boot_for(fast=False) == 'vng' and ppc.own_root
	assert ppc.boot_for(fast=True) == 'initramfs'
	assert X86.boot_for(fast=True) == 'vng'


def test_two_runs_in_one_second_get_two_directories(tmp_path, monkeypatch):
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path))
	tree = BaseTree(name='lts', path=tmp_path, ref='b', commit='0' * 40,
			version='6.12', origin='o', patches='patches')
	opts = pipeline.Options()
	a = pipeline.run_dir(opts, tree)
	b = pipeline.run_dir(opts, tree)
	assert a != b and a.is_dir() and b.is_dir()
	assert not (tmp_path / 'latest').exists()


def test_latest_moves_only_to_a_run_with_results(tmp_path, monkeypatch,
						 guest_run, fake_ops):
	top = tmp_path / 'results'
	first, path = guest_run(fake_ops())
	assert (top / 'latest').resolve() == path.parent.resolve()

	class Killed(fake_ops):
		def stream(self, argv, log, **kw):
			raise pipeline.Terminated()
	with pytest.raises(pipeline.Terminated):
		guest_run(Killed())
	assert (top / 'latest').resolve() == path.parent.resolve()
	stopped = [d for d in top.iterdir()
		   if (d / pipeline.INCOMPLETE).exists()]
	assert len(stopped) == 1 and not (stopped[0] / 'results.json').exists()
	assert not [p for p in top.iterdir() if p.name.startswith('.latest')]
