# SPDX-License-Identifier: GPL-2.0
import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from pytools import arches, boot
from pytools.errors import InfraError, UserError

PVM_FAILURE = (134, "(qemu) qemu-system-x86_64: error: failed to set MSR 0x10a to "
	       "0x69\nqemu-system-x86_64: ../../target/i386/kvm/kvm.c:3183: "
	       "kvm_buf_set_msrs: Assertion `ret == cpu->kvm_msr_buf->nmsrs' "
	       "failed.\n")
X86 = arches.get('x86_64')


def test_pvm_falls_back_to_tcg_and_says_why(fake_ops, with_kvm):
	c = boot.choose_accel(X86, fake_ops(answers=[('-accel kvm',
							  PVM_FAILURE)]))
	assert c.accel is boot.Accel.TCG
	assert 'failed to set MSR 0x10a' in c.reason
	assert '(qemu)' not in c.reason


def test_working_kvm_is_used(fake_ops, with_kvm):
	c = boot.choose_accel(X86, fake_ops(answers=[('-accel kvm', (0, ''))]))
	assert c.accel is boot.Accel.KVM


def test_forced_kvm_that_cannot_run_is_an_error(fake_ops, with_kvm):
	with pytest.raises(InfraError, match='MSR 0x10a'):
		boot.choose_accel(X86, fake_ops(answers=[('-accel kvm',
							  PVM_FAILURE)]),
				  want='kvm')


def test_forced_tcg_and_foreign_arch_never_probe(fake_ops):
	ops = fake_ops()
	assert boot.choose_accel(X86, ops, want='tcg').accel is boot.Accel.TCG
	assert boot.choose_accel(X86, ops, host_arch='aarch64').accel is \
		boot.Accel.TCG
	assert ops.calls == []


def test_missing_qemu_names_the_package(fake_ops, with_kvm):
	ops = fake_ops(which={'qemu-system-x86_64': None})
	with pytest.raises(InfraError) as e:
		boot.choose_accel(X86, ops)
	assert 'qemu-system-x86' in e.value.hint


def test_vng_argv(tmp_path):
	req = boot.BootRequest(
		arch=X86, image=tmp_path / 'bzImage', command='true',
		accel=boot.AccelChoice(boot.Accel.TCG, 'test'),
		rwdirs=(tmp_path,), log=tmp_path / 'log', timeout=10)
	argv = boot.vng_argv(req, 'vng')
	assert '--disable-kvm' in argv
	assert argv[argv.index('--rwdir') + 1] == str(tmp_path)
	assert argv[-2:] == ['--exec', 'true']
	kvm = boot.BootRequest(**dict(req.__dict__, accel=boot.AccelChoice(
		boot.Accel.KVM, 'test')))
	assert '--disable-kvm' not in boot.vng_argv(kvm, 'vng')


def test_boot_timeout_is_reported(fake_ops, tmp_path):
	ops = fake_ops(answers=[('vng', ('timeout', 'booting...\n'))])
	req = boot.BootRequest(
		arch=X86, image=tmp_path / 'bzImage', command='true',
		accel=boot.AccelChoice(boot.Accel.TCG, 'test'),
		rwdirs=(), log=tmp_path / 'log', timeout=1)
	assert boot.boot(req, ops).timed_out


def test_one_entry_point_boots_an_initramfs_guest_too(fake_ops, tmp_path):
	"""boot.boot() starts every guest: an initramfs arch's request
	becomes its QEMU command line, with the bounds and extra options."""
	from pytools import arches
	ppc = arches.get('ppc64le')
	ops = fake_ops(answers=[('qemu-system-ppc64', (0, 'ok\n'))])
	req = boot.BootRequest(
		arch=ppc, image=tmp_path / 'vmlinux',
		accel=boot.AccelChoice(boot.Accel.TCG, 'test'),
		log=tmp_path / 'log', timeout=7, idle_timeout=3,
		initrd=tmp_path / 'initrd', qemu=('/opt/qemu', '-L', '/opt/fw'),
		cpu='power10', qemu_opts=('-icount', 'shift=0'))
	boot.boot(req, ops, announce=False)
	argv = ops.streams[0]['argv']
	assert argv == boot.command_line(req)
	assert argv[:3] == ['/opt/qemu', '-L', '/opt/fw']
	assert argv[argv.index('-cpu') + 1] == 'power10'
	assert argv[argv.index('-m') + 1] == '1G'
	assert argv[-2:] == ['-icount', 'shift=0']
	assert ops.streams[0]['timeout'] == 7
	assert ops.streams[0]['idle_timeout'] == 3
	with pytest.raises(ValueError, match='initrd'):
		boot.command_line(boot.BootRequest(**dict(req.__dict__,
							  initrd=None)))


def test_real_stream_kills_a_hung_command(tmp_path):
	from pytools.ops import Ops
	res = Ops().stream(['sh', '-c', 'echo start; sleep 60'],
			   tmp_path / 'log', timeout=1)
	assert res.timed_out
	assert 'start' in (tmp_path / 'log').read_text()
	assert 'killed after' in (tmp_path / 'log').read_text()


# What this project's nested-PVM hosts print when the guest dies under KVM
# (QEMU stays alive with the VM paused).
KVM_INTERNAL = ('[    2.104551] smp: Bringing up secondary CPUs ...\n'
		'KVM internal error. Suberror: 1\n'
		'extra data[0]: 0x0000000000000000\n'
		'emulation failure\n'
		'RAX=0000000000000000 RBX=ffff888003c35e00\n')


def _probe_ops(fake_ops, console):
	return fake_ops(answers=[('-accel kvm', (0, '')),
				 ('--version', (0, 'QEMU emulator version 7.2.22\n')),
				 ('vng', console)])


def test_kvm_that_starts_a_vcpu_but_cannot_run_the_guest_is_refused(
		fake_ops, with_kvm, tmp_path):
	ops = _probe_ops(fake_ops, (0, KVM_INTERNAL))
	c = boot.choose_accel(X86, ops, image=tmp_path / 'bzImage',
			      probe_log=tmp_path / 'probe.log')
	assert c.accel is boot.Accel.TCG
	assert 'KVM internal error' in c.reason
	assert [(a.what, a.ok) for a in c.attempts] == [('vcpu probe', True),
						       ('boot probe', False)]
	# the probe booted the real kernel, under KVM, with a short bound
	probe = ops.streams[0]
	assert '--disable-kvm' not in probe['argv']
	assert probe['timeout'] <= 120 and probe['idle_timeout'] <= 60
	# the probe stopped at the error: nothing after it was read
	assert 'RAX=' not in (tmp_path / 'probe.log').read_text()


def test_the_verdict_is_cached_per_host(fake_ops, with_kvm, tmp_path):
	boot.choose_accel(X86, _probe_ops(fake_ops, (0, KVM_INTERNAL)),
			  image=tmp_path / 'bzImage')
	ops = _probe_ops(fake_ops, (0, KVM_INTERNAL))
	c = boot.choose_accel(X86, ops, image=tmp_path / 'bzImage')
	assert c.accel is boot.Accel.TCG and 'before' in c.reason
	assert ops.streams == [], 'a cached failure probes again'


def test_a_guest_that_reaches_the_marker_proves_kvm(fake_ops, with_kvm,
						    tmp_path):
	ops = _probe_ops(fake_ops, (0, f'$ vng ... --exec echo {boot.PROBE_MARK}\n'
				   f'[    0.5] booting\n{boot.PROBE_MARK}\n'))
	c = boot.choose_accel(X86, ops, image=tmp_path / 'bzImage')
	assert c.accel is boot.Accel.KVM and 'marker' in c.reason
	# cached "works" saves the probe but not the watch on the real run
	ops = _probe_ops(fake_ops, (0, ''))
	c = boot.choose_accel(X86, ops, image=tmp_path / 'bzImage')
	assert c.accel is boot.Accel.KVM and 'watched' in c.reason
	assert ops.streams == []


def test_a_silent_probe_guest_is_not_kvm(fake_ops, with_kvm, tmp_path):
	c = boot.choose_accel(X86, _probe_ops(fake_ops, ('silent', 'booting\n')),
			      image=tmp_path / 'bzImage')
	assert c.accel is boot.Accel.TCG and 'no output for' in c.reason


def test_a_kvm_guest_is_watched_even_without_a_watch(fake_ops, tmp_path):
	ops = fake_ops(answers=[('vng', (0, KVM_INTERNAL))])
	req = boot.BootRequest(
		arch=X86, image=tmp_path / 'bzImage', command='true',
		accel=boot.AccelChoice(boot.Accel.KVM, 'test'),
		rwdirs=(), log=tmp_path / 'log', timeout=900, idle_timeout=120)
	done = boot.boot(req, ops)
	assert done.stopped.startswith(boot.KVM_FAILED)
	assert 'KVM internal error. Suberror: 1' in done.stopped


def test_boot_prints_the_command_that_reproduces_it(fake_ops, tmp_path,
						     capsys):
	req = boot.BootRequest(
		arch=X86, image=tmp_path / 'bzImage', command='echo hi',
		accel=boot.AccelChoice(boot.Accel.TCG, 'test'),
		rwdirs=(), log=tmp_path / 'log', timeout=10)
	boot.boot(req, fake_ops())
	err = capsys.readouterr().err
	assert 'the same by hand: ' in err and "'echo hi'" in err
	assert f"--run {tmp_path / 'bzImage'}" in err


def test_a_path_vng_would_paste_unquoted_is_refused(fake_ops, tmp_path):
	"""virtme-ng 1.42 builds a shell line of --run, --root, --rwdir...
	without quoting: a space in a clone's or cache's path is a clear
	exit 2, not a guest that boots something else."""
	req = boot.BootRequest(
		arch=X86, image=tmp_path / 'my kernels' / 'bzImage',
		command='true', accel=boot.AccelChoice(boot.Accel.TCG, 'test'),
		log=tmp_path / 'log', timeout=10)
	ops = fake_ops()
	with pytest.raises(UserError) as e:
		boot.boot(req, ops)
	assert 'my kernels' in str(e.value) and 'PERFCTR_CACHE' in e.value.hint
	assert ops.calls == []


@pytest.mark.skipif(not Path('/dev/kvm').exists() or
		    not shutil.which('qemu-system-x86_64'),
		    reason='needs /dev/kvm and qemu-system-x86_64')
def test_real_kvm_probe_gives_a_verdict_and_a_reason_quickly():
	"""The real probe on this host, without a kernel: the vCPU stage.
	Measured here (nested PVM, QEMU 7.2): QEMU aborts with "failed to
	set MSR 0x10a", so the verdict is TCG and quotes that line."""
	import time
	from pytools.ops import Ops
	t0 = time.monotonic()
	c = boot.choose_accel(X86, Ops(), host_arch='x86_64')
	assert time.monotonic() - t0 < 40
	assert c.reason and c.attempts[0].what == 'vcpu probe'
	if c.accel is boot.Accel.TCG:
		assert not c.attempts[0].ok
		assert 'error' in c.reason.lower() or 'failed' in c.reason.lower()


REAL_IMAGE = os.environ.get('PERFCTR_TEST_BZIMAGE', '')


@pytest.mark.skipif(not REAL_IMAGE or not Path('/dev/kvm').exists(),
		    reason='set PERFCTR_TEST_BZIMAGE to a built bzImage')
def test_real_boot_probe_on_a_real_kernel(tmp_path):
	"""The boot probe itself, under KVM, on a real kernel: a verdict
	within its bound whatever this host's KVM does."""
	import time
	from pytools.ops import Ops
	t0 = time.monotonic()
	ok, why, secs = boot.probe_boot(X86, Path(REAL_IMAGE),
					tmp_path / 'probe.log', Ops())
	assert time.monotonic() - t0 < boot.PROBE_TIMEOUT + 15
	print(f'KVM boot probe: ran={ok}: {why} ({secs:.1f} s)')
	assert why


@pytest.mark.skipif(not REAL_IMAGE, reason='set PERFCTR_TEST_BZIMAGE to a '
		    'built bzImage')
def test_real_hang_is_killed_at_the_silence_bound(tmp_path):
	"""A kernel that never reaches user space: rootfstype=ext4 makes the
	9p root unmountable, the kernel panics 1.6 s in, and panic=0 (after
	vng's panic=-1, so it wins) leaves it halted with QEMU alive and
	silent.  (init=/bin/false does not do it: vng puts its own init=
	after ours.)  Killed at the bound, reported with the panic."""
	import time
	from pytools import collect
	from pytools.ops import Ops
	from pytools.results import Status
	req = boot.BootRequest(
		arch=X86, image=Path(REAL_IMAGE), command='echo never',
		accel=boot.AccelChoice(boot.Accel.TCG, 'test'), rwdirs=(),
		log=tmp_path / 'console.log', timeout=900, idle_timeout=20,
		append=('panic=0', 'rootfstype=ext4'))
	t0 = time.monotonic()
	done = boot.boot(req, Ops())
	took = time.monotonic() - t0
	print(f'hang killed after {took:.0f} s: {done.stopped}')
	assert done.silent and took < 60
	assert 'silence bound 20 s' in done.stopped
	(tmp_path / 'guest').mkdir()
	cases = collect.collect(tmp_path / 'guest', req.log, tmp_path,
				stopped=done.stopped)
	by = {c.family: c for c in cases}
	assert 'killed: no output for' in by['boot'].message
	assert 'Unable to mount root fs' in by['boot'].message
	assert by['kernel-log'].status is Status.FAIL	# the panic


def test_vng_argv_with_a_root_of_its_own(tmp_path):
	"""ppc64le: Debian's arch name for vng, the root, the mounts, the
	backport QEMU with its firmware and the CPU model, quoted for the
	shell line vng builds."""
	req = boot.BootRequest(
		arch=arches.get('ppc64le'), image=tmp_path / 'vmlinux',
		command='true', accel=boot.AccelChoice(boot.Accel.TCG, 'test'),
		log=tmp_path / 'log', timeout=10, root=tmp_path / 'root',
		mounts=(('/perfctr/src', Path('/repo'), False),
			('/perfctr/out', tmp_path / 'out', True)),
		qemu=('/c/qemu-system-ppc64', '-L', '/c/share dir'),
		cpu='power10')
	argv = boot.vng_argv(req, 'vng')
	assert argv[argv.index('--root') + 1] == str(tmp_path / 'root')
	assert argv[argv.index('--arch') + 1] == 'ppc64el'
	assert argv[argv.index('--rodir') + 1] == '/perfctr/src=/repo'
	assert argv[argv.index('--rwdir') + 1] == f'/perfctr/out={tmp_path}/out'
	assert argv[argv.index('--qemu') + 1] == '/c/qemu-system-ppc64'
	assert "--qemu-opts=-L '/c/share dir' -cpu power10" in argv
	assert argv[-2:] == ['--exec', 'true']
	assert boot.cpu_model(req) == 'power10'
	with pytest.raises(ValueError, match='needs root'):
		boot.vng_argv(dataclasses.replace(req, root=None), 'vng')
