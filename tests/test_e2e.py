# SPDX-License-Identifier: GPL-2.0
"""The main job end to end: fetch, apply, build, boot, test (minutes).

Runs `inv check --arch ARCH` exactly as README's first command does and
checks what it reports.  Deselect with -m 'not e2e' for a quick run.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytools import paths

pytestmark = pytest.mark.e2e

# The least each family must report passed on each run; fewer means tests
# went missing.  The PMU tests must pass where a PMU exists (ppc64le
# pseries); x86 guests here have none and those tests skip.  The debug run
# is the whole x86_64 suite on a lockdep/KASAN/UBSAN/kmemleak kernel; its
# second kernel-log case is kmemleak's scan after the tests.
# The tests that see the review's findings (docs/review-log.md) must run
# and pass on every arch, not merely exist.
SOUNDNESS_MUST = ['vperfctr_lifetime_test.lt.attach_vs_exit',
		  'vperfctr_lifetime_test.lt.fork_vs_unlink',
		  'vperfctr_lifetime_test.lt.fork_vs_sibling_last_close',
		  'vperfctr_lifetime_test.global.cpu_hotplug_while_counting',
		  'vperfctr_chain_test.chain.inherit_chain',
		  'vperfctr_security_test.suid.setuid_exec_detaches',
		  'vperfctr_security_test.global.paranoid_levels',
		  'vperfctr_security_test.global.kernel_thread_refused',
		  'vperfctr_security_test.page.not_copied_into_fork_child',
		  'vperfctr_security_test.page.never_executable']
X86_MUST = ['vperfctr_test.vperfctr.fast_read_agrees_with_syscall',
	    'vperfctr_fuzz_test.fuzz.syscalls',
	    'kunit.perfctr_x86_model.perfctr_x86_model_two_threads_intel',
	    'kunit.perfctr_x86_overflow.perfctr_x86_model_late_pmi',
	    'kunit.perfctr_x86_overflow.perfctr_x86_model_nmi_inside_switch'] + \
	SOUNDNESS_MUST
EXPECT = {
	'x86_64': {'args': ['--arch', 'x86_64'], 'arch': 'x86_64',
		   'min': {'kunit': 44, 'kselftest': 52, 'pytest': 28,
			   'kernel-log': 1},
		   'must_pass': X86_MUST,
		   'release': '6.12.'},
	'x86_64-debug': {'args': ['--arch', 'x86_64', '--debug'],
			 'arch': 'x86_64',
			 'min': {'kunit': 44, 'kselftest': 52, 'pytest': 28,
				 'kernel-log': 2},
			 'must_pass': X86_MUST + [
				 'kmemleak: no unreferenced objects after the tests',
				 'vperfctr_fault_test.fault.every_allocation_of_every_call'],
			 'release': '6.12.'},
	'ppc64le': {'args': ['--arch', 'ppc64le'], 'arch': 'ppc64le',
		    'min': {'kunit': 49, 'kselftest': 65, 'pytest': 34,
			    'kernel-log': 1},
		    'must_pass': SOUNDNESS_MUST + [
				  'kunit.perfctr_ppc64.ppc_test_freeze_conditions.POWER9 HV',
				  'kunit.perfctr_ppc64.ppc_test_wrap_without_tick.POWER9 guest',
				  'vperfctr_fuzz_test.fuzz.syscalls',
				  'vperfctr_pmc_test.pmc.instructions_scale',
				  'vperfctr_pmc_test.pmc.other_thread_not_counted',
				  'vperfctr_pmc_test.pmc.fast_read_agrees_with_syscall',
				  'vperfctr_pmc_test.pmc.fast_read_bounded_by_the_callers_slots',
				  'vperfctr_pmc_test.pmc.perf_and_perfctr_exclude_each_other',
				  'vperfctr_pmc_test.overflow.signal_after_period',
				  'vperfctr_pmc_test.overflow.iresume_restarts',
				  'vperfctr_pmc_test.overflow.no_signal_when_none_asked',
				  'vperfctr_pmc_test.overflow.accumulating_slot_alongside',
				  'vperfctr_pmc_test.overflow.bad_periods_einval',
				  # the Python checks on the real PMU, through
				  # virtme-ng on the ppc64el root
				  'test_pmu::test_overflow_signal_suspends_and_iresume_restarts',
				  'test_pmu::test_overflow_siginfo_names_the_slot',
				  'test_pmu::test_no_signal_asked_suspends_silently',
				  'test_pmu::test_random_pmc_controls_are_accepted_or_defined',
				  'test_perfex::test_counts_the_instructions_of_a_known_loop',
				  'test_layout::test_layout_matches_c[vperfctr_state]'],
		    'release': '6.12.'},
}


# x86_64 and ppc64le first: the debug build is the longest.
@pytest.fixture(scope='module', params=['x86_64', 'ppc64le', 'x86_64-debug'])
def check_run(request):
	run = request.param
	env = dict(os.environ)
	env['PATH'] = f'{Path(sys.executable).parent}:{env["PATH"]}'
	proc = subprocess.run(['inv', 'check', *EXPECT[run]['args']],
			      cwd=paths.REPO, env=env, text=True,
			      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
			      timeout=3600)
	sys.stdout.write(proc.stdout[-6000:])
	return run, proc


def _results(proc):
	return json.loads(Path(proc.stdout.strip().splitlines()[-1]).read_text())


def test_check_passes(check_run):
	arch, proc = check_run
	assert proc.returncode == 0, proc.stdout[-4000:]


def test_last_line_is_the_results_file(check_run):
	_, proc = check_run
	path = Path(proc.stdout.strip().splitlines()[-1])
	assert path.name == 'results.json' and path.exists(), path
	assert (path.parent / 'results.junit.xml').exists()


def test_every_family_ran_and_passed(check_run):
	arch, proc = check_run
	r = _results(proc)
	assert r['result'] == 'PASS'
	for fam, least in EXPECT[arch]['min'].items():
		n = sum(1 for t in r['tests'] if t['family'] == fam and
			t['status'] == 'PASS')
		assert n >= least, f'{arch} {fam}: {n} passed, expected >= {least}'
	passed = {t['name'] for t in r['tests'] if t['status'] == 'PASS'}
	for name in EXPECT[arch]['must_pass']:
		assert name in passed, f'{arch}: {name} did not pass'
	# Every skip says why.
	for t in r['tests']:
		if t['status'] == 'SKIP':
			assert t.get('message'), f'{t["name"]} skipped silently'
	assert not [t for t in r['tests'] if t['status'] == 'FAIL']


def test_results_name_what_ran(check_run):
	arch, proc = check_run
	r = _results(proc)
	assert r['arch'] == EXPECT[arch]['arch']
	assert r['base']['origin'].startswith('linux-source-6.12 ')
	assert ('debug.config' in r['config_fragments']) == \
		('--debug' in EXPECT[arch]['args'])
	if r['arch'] == 'ppc64le':
		# the PMU interrupt needs QEMU 8.1+: which one ran is on record
		assert tuple(int(x) for x in r['qemu']['version'].split('.')[:2]) \
			>= (8, 1), r['qemu']
	assert len(r['base']['commit']) == 40
	assert r['kernel_release'].startswith(EXPECT[arch]['release'])
	assert r['accelerator']['accel'] in ('kvm', 'tcg')
	assert r['accelerator']['reason']
	assert r['config_fragments']
	assert {'base', 'apply', 'build', 'boot_and_test'} <= set(r['durations'])
	assert r['command'].startswith('inv check')
