# SPDX-License-Identifier: GPL-2.0
"""Parsing what guests leave behind, replayed from captured logs."""

import json
import shutil
from pathlib import Path

import pytest

from pytools import collect
from pytools.results import Status

DATA = Path(__file__).parent / 'data'
TREE = DATA / 'fake-tree'


@pytest.fixture(scope='module')
def parser():
	return collect.load_kunit_parser(TREE)


def _lines(name):
	return (DATA / name).read_text().splitlines()


def test_kunit_results_from_boot_log(parser):
	cases = collect.parse_ktap(_lines('dmesg-kunit-pass.txt'), 'kunit',
				   'kunit', parser)
	names = {c.name for c in cases}
	assert 'kunit.perfctr_x86_probe.perfctr_x86_test_intel_v4' in names
	assert len(cases) >= 12
	assert all(c.status is Status.PASS for c in cases)


def test_kunit_failure_keeps_the_expectation(parser):
	cases = collect.parse_ktap(_lines('kunit-fail-dmesg.txt'), 'kunit',
				   'kunit', parser)
	fail = [c for c in cases if c.status is Status.FAIL]
	assert [c.name for c in fail] == \
		['kunit.perfctr_x86_probe.perfctr_x86_test_amd_zen']
	assert 'pmu.desc.nr_counters == 4' in fail[0].message


def test_kunit_disabled_is_a_failure_not_a_pass(parser):
	"""A kernel booted with KUnit disabled prints no KTAP at all."""
	cases = collect.parse_ktap(_lines('dmesg-kunit-disabled.txt'), 'kunit',
				   'kunit', parser)
	assert [c.status for c in cases] == [Status.FAIL]
	assert 'no KTAP results' in cases[0].message


def test_kselftest_tap(parser):
	cases = collect.parse_ktap(_lines('kselftest-info-pass.tap'),
				   'kselftest', 'perfctr_info_test', parser)
	assert len(cases) == 13
	assert cases[0].name == 'perfctr_info_test.info.basic'
	assert all(c.status is Status.PASS for c in cases)


def test_kselftest_that_died_midway_fails(parser):
	cases = collect.parse_ktap(_lines('kselftest-crashed.tap'),
				   'kselftest', 'perfctr_info_test', parser)
	assert any(c.status is Status.FAIL for c in cases)


def test_pytest_junit_failure():
	cases = collect.parse_pytest_junit(DATA / 'pytest-one-failure.xml')
	fails = [c for c in cases if c.status is Status.FAIL]
	assert [c.name for c in fails] == ['test_info::test_unmapped_pointer_efault']
	assert 'PROT_NONE' in fails[0].message
	assert sum(c.status is Status.PASS for c in cases) == 10


def test_missing_pytest_output_fails(tmp_path):
	cases = collect.parse_pytest_junit(tmp_path / 'pytest.xml')
	assert cases[0].status is Status.FAIL


def test_kernel_reports_are_found_and_quoted():
	case = collect.kernel_log_case(_lines('console-panic.log'), 'console')
	assert case.status is Status.FAIL
	assert 'BUG: kernel NULL pointer dereference' in case.message
	clean = collect.kernel_log_case(_lines('dmesg-kunit-pass.txt'), 'dmesg')
	assert clean.status is Status.PASS


_WARN_ALLOC = """\
[   12.200000] vperfctr_fault_: page allocation failure: order:0, mode:0x400cc0(GFP_KERNEL_ACCOUNT), nodemask=(null),cpuset=/,mems_allowed=0
[   12.200001] CPU: 1 UID: 0 PID: 80 Comm: vperfctr_fault_ Not tainted 6.12.117 #1
[   12.200002] Hardware name: QEMU Standard PC (Q35 + ICH9, 2009)
[   12.200003] Call Trace:
[   12.200004]  <TASK>
[   12.200005]  dump_stack_lvl+0x5d/0x80
[   12.200006]  warn_alloc+0x164/0x190
[   12.200007]  __alloc_pages_slowpath.constprop.0+0xd2a/0xe00
[   12.200008] Mem-Info:
"""
_BEGIN = '[   12.100000] perfctr-fault-test: injecting allocation failures\n'
_END = '[   12.300000] perfctr-fault-test: injections done\n'
_WARN = """\
[   12.250000] WARNING: CPU: 1 PID: 80 at drivers/perfctr/virtual.c:341 vperfctr_alloc+0x10/0x20
[   12.250001] Call Trace:
"""


def test_injected_allocation_failures_are_excused_between_the_markers():
	"""The fault test's own allocation warnings are not reports; the same
	warning outside its markers is, and so is anything else inside."""
	inside = (_BEGIN + _WARN_ALLOC + _END).splitlines()
	assert collect.kernel_log_case(inside, 'dmesg').status is Status.PASS
	outside = (_WARN_ALLOC + _BEGIN + _END).splitlines()
	assert collect.kernel_log_case(outside, 'dmesg').status is Status.FAIL
	warn = (_BEGIN + _WARN_ALLOC + _WARN + _END).splitlines()
	case = collect.kernel_log_case(warn, 'dmesg')
	assert case.status is Status.FAIL and 'vperfctr_alloc' in case.message
	# A test that died between its markers excuses allocation warnings
	# only, to the end of the log.
	died = (_BEGIN + _WARN_ALLOC + _WARN).splitlines()
	assert collect.kernel_log_case(died, 'dmesg').status is Status.FAIL


def test_guest_that_never_finished(tmp_path):
	"""A panic: no guest.json, the console says why, and it is quoted."""
	out = tmp_path / 'guest'
	out.mkdir()
	cases = collect.collect(out, DATA / 'console-panic.log', TREE)
	assert {c.family for c in cases} == {'boot', 'kernel-log'}
	assert all(c.status is Status.FAIL for c in cases)
	assert 'Kernel panic' in cases[0].message



def _stopped_guest(tmp_path, console_text, stopped):
	"""Collect a guest killed for @stopped, its console @console_text."""
	out = tmp_path / 'guest'
	out.mkdir()
	console = tmp_path / 'console.log'
	console.write_text(console_text)
	return collect.collect(out, console, TREE, stopped=stopped)


def test_a_guest_that_never_booted_has_no_kernel_log_pass(tmp_path):
	"""QEMU died before the kernel said a word: the kernel-log check
	did not run, so it is not a PASS."""
	cases = _stopped_guest(tmp_path, 'KVM internal error. Suberror: 1\n'
			       'emulation failure\n',
			       'KVM internal error. Suberror: 1')
	by = {c.family: c for c in cases}
	assert by['boot'].status is Status.FAIL
	assert 'killed: KVM internal error' in by['boot'].message
	assert by['kernel-log'].status is Status.SKIP
	assert 'not checked' in by['kernel-log'].message


def test_a_hung_guest_with_a_clean_partial_log_is_not_a_pass(tmp_path):
	cases = _stopped_guest(tmp_path, '[    0.000000] Linux version 6.12\n'
			       '[    1.000000] Run /bin/false as init process\n',
			       'no output for 60 s (silence bound 60 s)')
	kl = [c for c in cases if c.family == 'kernel-log'][0]
	assert kl.status is Status.SKIP and '2 kernel lines' in kl.message


def test_full_collect_of_a_good_run(tmp_path):
	out = tmp_path / 'guest'
	out.mkdir()
	shutil.copy(DATA / 'dmesg-kunit-pass.txt', out / 'dmesg.txt')
	shutil.copy(DATA / 'kselftest-info-pass.tap',
		    out / 'kselftest-perfctr_info_test.tap')
	shutil.copy(DATA / 'pytest-pass.xml', out / 'pytest.xml')
	(out / 'guest.json').write_text(json.dumps({'families': {'kselftest': {
		'perfctr_info_test': {'rc': 0,
				      'output': 'kselftest-perfctr_info_test.tap'}}}}))
	cases = collect.collect(out, DATA / 'console-x86-pass.log', TREE)
	assert {c.family for c in cases} == {'kunit', 'kselftest', 'pytest',
					     'kernel-log'}
	assert all(c.status is not Status.FAIL for c in cases), \
		[c for c in cases if c.status is Status.FAIL]


def test_nonzero_exit_with_passing_tap_still_fails(tmp_path):
	out = tmp_path / 'guest'
	out.mkdir()
	shutil.copy(DATA / 'dmesg-kunit-pass.txt', out / 'dmesg.txt')
	shutil.copy(DATA / 'kselftest-info-pass.tap', out / 'k.tap')
	(out / 'guest.json').write_text(json.dumps({'families': {'kselftest': {
		't': {'rc': 139, 'output': 'k.tap'}}}}))
	cases = collect.collect(out, DATA / 'console-x86-pass.log', TREE,
				expect_pytest=False)
	assert any(c.name == 't.exit' and c.status is Status.FAIL
		   for c in cases)


def test_kselftest_skip_reason_and_failure(parser):
	cases = collect.parse_ktap(_lines('kselftest-vperfctr-one-fail-one-skip.tap'),
				   'kselftest', 'vperfctr_test', parser)
	by = {c.name: c for c in cases}
	skip = by['vperfctr_test.vperfctr.control_interrupt_mode']
	assert skip.status is Status.SKIP
	assert skip.message.startswith('no hardware counters here')
	fail = by['vperfctr_test.vperfctr.mmap_rules']
	assert fail.status is Status.FAIL
	assert 'Expected EPERM (1) == errno (13)' in fail.message
	assert sum(c.status is Status.PASS for c in cases) == 25


def test_missing_kselftest_output_is_a_failure(tmp_path):
	out = tmp_path / 'guest'
	out.mkdir()
	shutil.copy(DATA / 'dmesg-kunit-pass.txt', out / 'dmesg.txt')
	(out / 'guest.json').write_text(json.dumps({'families': {'kselftest': {
		'gone_test': {'rc': 0, 'output': 'kselftest-gone_test.tap'}}}}))
	cases = collect.collect(out, DATA / 'console-x86-pass.log', TREE,
				expect_pytest=False)
	gone = [c for c in cases if c.name == 'gone_test']
	assert gone and gone[0].status is Status.FAIL


def test_kmemleak_absent_means_no_case(tmp_path):
	assert collect.kmemleak_case(tmp_path / 'kmemleak.txt') is None


def test_kmemleak_empty_passes(tmp_path):
	p = tmp_path / 'kmemleak.txt'
	p.write_text('')
	assert collect.kmemleak_case(p).status is Status.PASS


def test_kmemleak_report_fails_and_quotes(tmp_path):
	p = tmp_path / 'kmemleak.txt'
	p.write_text('unreferenced object 0xffff888003a1c000 (size 4096):\n'
		     '  comm "vperfctr_test", pid 201, jiffies 4294937296\n'
		     '  backtrace (crc 0):\n    vperfctr_alloc+0x2f/0x90\n')
	case = collect.kmemleak_case(p)
	assert case.status is Status.FAIL
	assert 'vperfctr_alloc' in case.message and '1 unreferenced' in case.message


@pytest.mark.parametrize('tree', ['fake-tree', 'fake-tree-7.2'])
def test_both_kunit_parser_apis(tree):
	"""6.12's parse_run_tests(lines) and 7.2's (lines, printer) both work,
	each tree's own copy loaded even after the other's."""
	p = collect.load_kunit_parser(DATA / tree)
	assert collect.sys.modules['kunit_parser'].__file__.startswith(
		str(DATA / tree))
	cases = collect.parse_ktap(_lines('kunit-fail-dmesg.txt'), 'kunit',
				   'kunit', p)
	fail = [c for c in cases if c.status is Status.FAIL]
	assert [c.name for c in fail] == \
		['kunit.perfctr_x86_probe.perfctr_x86_test_amd_zen']
	cases = collect.parse_ktap(_lines('dmesg-kunit-pass.txt'), 'kunit',
				   'kunit', p)
	assert len(cases) >= 12 and all(c.status is Status.PASS for c in cases)


def test_kunit_skip_reason_after_a_printk_timestamp(parser):
	lines = ['[    1.50] KTAP version 1', '[    1.50] 1..1',
		 '[    1.51]     KTAP version 1',
		 '[    1.51]     # Subtest: perfctr_virtual',
		 '[    1.51]     1..1',
		 '[    1.58]     ok 1 vperfctr_test_affinity_hook # SKIP no hardware '
		 'counters here; runs on ppc64le',
		 '[    1.59] ok 1 perfctr_virtual']
	cases = collect.parse_ktap(lines, 'kunit', 'kunit', parser)
	assert [(c.status, c.message) for c in cases] == [
		(Status.SKIP, 'no hardware counters here; runs on ppc64le')]


def test_a_prefix_without_system_calls_reports_kunit_and_a_named_skip(tmp_path):
	out = tmp_path / 'guest'
	out.mkdir()
	shutil.copy(DATA / 'dmesg-kunit-pass.txt', out / 'dmesg.txt')
	(out / 'guest.json').write_text(json.dumps({'families': {}}))
	cases = collect.collect(out, DATA / 'console-x86-pass.log', TREE,
				userspace=False)
	skip = [c for c in cases if c.family == 'kselftest']
	assert [(c.status, c.message) for c in skip] == [
		(Status.SKIP, collect.NO_USERSPACE_REASON)]
	assert not any(c.status is Status.FAIL for c in cases)
	assert any(c.family == 'kunit' and c.status is Status.PASS for c in cases)


def test_no_ktap_where_no_kunit_suite_is_built_is_a_named_skip(tmp_path):
	out = tmp_path / 'guest'
	out.mkdir()
	(out / 'dmesg.txt').write_text('[    0.1] Linux version 6.12\n')
	(out / 'guest.json').write_text(json.dumps({'families': {}}))
	cases = collect.collect(out, DATA / 'console-x86-pass.log', TREE,
				userspace=False, kunit=False)
	k = [c for c in cases if c.family == 'kunit']
	assert [(c.status, c.message) for c in k] == [
		(Status.SKIP, collect.NO_KUNIT_REASON)]
	# expected but missing stays a failure
	cases = collect.collect(out, DATA / 'console-x86-pass.log', TREE,
				userspace=False)
	assert [c.status for c in cases if c.family == 'kunit'] == [Status.FAIL]


def test_a_failure_after_a_long_log_leads_with_its_assertion(parser):
	"""The summary shows a failure's first lines: they must say why."""
	cases = collect.parse_ktap(_lines('kselftest-fault-fail-midway.tap'),
				   'kselftest', 'vperfctr_fault_test', parser)
	[fail] = [c for c in cases if c.status is Status.FAIL]
	first = fail.message.splitlines()[:6]
	assert any('vperfctr_fault_test.c:361' in l and 'Expected' in l
		   for l in first), first
	assert any('after allocation 2 failed' in l for l in first), first
	# and the log itself is still there, after them
	assert 'vperfctr_open(self): 7 allocation points' in fail.message
