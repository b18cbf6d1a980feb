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


def test_a_machine_that_cannot_build_is_not_a_bad_patch(tmp_path):
	"""A missing cross compiler stops bisect with InfraError (exit 2),
	before any prefix is blamed."""
	import pytest
	from pytools import arches, kernel
	from pytools.errors import InfraError
	from pytools.ops import Ops

	class NoCompiler(Ops):
		def which(self, name):
			return None

		def run(self, *a, **k):
			raise AssertionError('nothing may run')

		def stream(self, *a, **k):
			raise AssertionError('nothing may be built')

	class FakeSeries:
		class tree:
			commit = 'base'

		def check_clean(self):
			pass

		def branch_commits(self):
			return ['c1', 'c2']

		def subject(self, commit):
			return 'a patch'

		def checkout(self, commit=None):
			pass

	arch = arches.get('ppc64le')
	req = kernel.BuildRequest(tree=None, arch=arch, fragments=(),
				  build_dir=tmp_path, jobs=1)
	with pytest.raises(InfraError) as e:
		bisect.run(FakeSeries(), req, NoCompiler())
	assert 'powerpc64le-linux-gnu-gcc' in str(e.value)
