# SPDX-License-Identifier: GPL-2.0
import json
from pathlib import Path

from pytools import initramfs


def test_cpio_newc_layout():
	data = initramfs.cpio([('init', 0o100755, b'#!x\n')])
	assert data.startswith(b'070701')
	assert b'init\0' in data and b'TRAILER!!!\0' in data
	assert len(data) % 512 == 0


def test_split_console(tmp_path):
	console = '\r\n'.join([
		'[    0.1] booting',
		'### perfctr-guest file kselftest-a_test.tap',
		'TAP version 13', '1..1', 'ok 1 a',
		'### perfctr-guest end',
		'### perfctr-guest file dmesg.txt',
		'<6>[    1.0] KTAP version 1',
		'### perfctr-guest end',
		'### perfctr-guest file guest.json',
		'{"families": {"kselftest": {"a_test": {"rc": 0, "output": "kselftest-a_test.tap"}}}}',
		'### perfctr-guest end',
		'### perfctr-guest done'])
	sizes = initramfs.split_console(console, tmp_path)
	assert sizes == {'kselftest-a_test.tap': 3, 'dmesg.txt': 1, 'guest.json': 1}
	assert (tmp_path / 'dmesg.txt').read_text() == '[    1.0] KTAP version 1\n'
	assert json.loads((tmp_path / 'guest.json').read_text())['families']
	assert '\r' not in (tmp_path / 'kselftest-a_test.tap').read_text()


def test_unterminated_section_is_not_written(tmp_path):
	"""A guest that panicked mid-test leaves no half file behind."""
	sizes = initramfs.split_console(
		'### perfctr-guest file kselftest-a_test.tap\nTAP version 13\n'
		'Kernel panic - not syncing\n', tmp_path)
	assert sizes == {}
	assert not (tmp_path / 'kselftest-a_test.tap').exists()


def test_marker_glued_to_a_kernel_line(tmp_path):
	sizes = initramfs.split_console(
		'[ 1.0] Run /init as init process#1 SMP ### perfctr-guest file x.tap\n'
		'ok 1 a\n### perfctr-guest end\n', tmp_path)
	assert sizes == {'x.tap': 1}


def test_qemu_argv_passes_the_guest_environment():
	from pytools import arches
	argv = initramfs.qemu_argv(arches.get('ppc64le'), Path('vmlinux'),
				   Path('initrd'), 'tcg', qemu=['/q/qemu', '-L', '/q'])
	assert argv[:3] == ['/q/qemu', '-L', '/q']
	append = argv[argv.index('-append') + 1]
	assert 'PERFCTR_FUZZ_CALLS=300000' in append.split()


def test_qemu_argv_cpu_model_defaults_to_the_arch_and_can_be_changed():
	from pytools import arches
	ppc = arches.get('ppc64le')
	argv = initramfs.qemu_argv(ppc, Path('vmlinux'), Path('initrd'), 'tcg')
	assert argv[argv.index('-cpu') + 1] == 'power9'
	argv = initramfs.qemu_argv(ppc, Path('vmlinux'), Path('initrd'), 'tcg',
				   cpu='power10')
	assert argv[argv.index('-cpu') + 1] == 'power10'


def test_qemu_argv_environment_from_the_options_replaces_the_arch_default():
	from pytools import arches
	argv = initramfs.qemu_argv(arches.get('ppc64le'), Path('vmlinux'),
				   Path('initrd'), 'tcg',
				   env=(('PERFCTR_FUZZ_CALLS', '20000'),))
	append = argv[argv.index('-append') + 1].split()
	assert 'PERFCTR_FUZZ_CALLS=20000' in append
	assert 'PERFCTR_FUZZ_CALLS=300000' not in append
