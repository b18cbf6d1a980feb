# SPDX-License-Identifier: GPL-2.0
from pytools import bisect


def _p(i, built=True, warnings=(), boot=''):
	return bisect.PrefixResult(i, f'patch {i}', built, 1.0, tuple(warnings),
				   f'bisect-{i:02d}.log', boot)


def test_first_bad_is_the_first_that_fails_to_build_warns_or_boot():
	r = bisect.BisectResult('x86_64', [_p(1), _p(2, boot='PASS 3 passed'),
					   _p(3, boot='FAIL 1 failed'), _p(4, built=False)])
	assert r.first_bad.index == 3
	r = bisect.BisectResult('x86_64', [_p(1), _p(2, warnings=['a.c:1: w'])])
	assert r.first_bad.index == 2
	assert bisect.BisectResult('x86_64', [_p(1), _p(2)]).first_bad is None


def test_warnings_are_parsed_from_make_output():
	out = ('  CC      drivers/perfctr/x86.o\n'
	       'drivers/perfctr/x86.c:10:5: warning: unused variable \'x\' '
	       '[-Wunused-variable]\n')
	assert bisect.warnings_in(out) == [
		"drivers/perfctr/x86.c:10: unused variable 'x' [-Wunused-variable]"]


def test_kunit_suites_built_reads_the_suite_table_from_system_map(tmp_path):
	from pytools import kernel
	m = tmp_path / 'System.map'
	m.write_text('ffffffff818aaf80 D __kunit_suites_start\n'
		     'ffffffff818aaf98 D __kunit_suites_end\n')
	assert kernel.kunit_suites_built(tmp_path)
	m.write_text('ffffffff818aaf80 D __kunit_suites_start\n'
		     'ffffffff818aaf80 D __kunit_suites_end\n')
	assert not kernel.kunit_suites_built(tmp_path)
