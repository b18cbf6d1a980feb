# SPDX-License-Identifier: GPL-2.0
from pathlib import Path

import pytest

from pytools import arches, boot
from pytools.errors import InfraError

PVM_FAILURE = (134, "(qemu) qemu-system-x86_64: error: failed to set MSR 0x10a to "
	       "0x69\nqemu-system-x86_64: ../../target/i386/kvm/kvm.c:3183: "
	       "kvm_buf_set_msrs: Assertion `ret == cpu->kvm_msr_buf->nmsrs' "
	       "failed.\n")
X86 = arches.get('x86_64')


@pytest.fixture
def with_kvm(monkeypatch):
	real = Path.exists
	monkeypatch.setattr(Path, 'exists', lambda p: True if str(p) ==
			    '/dev/kvm' else real(p))


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


def test_real_stream_kills_a_hung_command(tmp_path):
	from pytools.ops import Ops
	res = Ops().stream(['sh', '-c', 'echo start; sleep 60'],
			   tmp_path / 'log', timeout=1)
	assert res.timed_out
	assert 'start' in (tmp_path / 'log').read_text()
	assert 'killed after' in (tmp_path / 'log').read_text()
