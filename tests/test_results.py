# SPDX-License-Identifier: GPL-2.0
import json
import xml.etree.ElementTree as ET

from pytools import results
from pytools.results import RunResult, Status, TestCase


def _run(*tests, problems=()):
	return RunResult(arch='x86_64', base={'name': 'lts'},
			 tests=list(tests), problems=list(problems))


def test_no_tests_is_not_a_pass():
	assert not _run().passed


def test_skip_is_not_a_failure_but_is_counted():
	r = _run(TestCase('kunit', 'a', Status.PASS),
		 TestCase('kunit', 'b', Status.SKIP, 'no PMU'))
	assert r.passed
	assert r.counts() == {'PASS': 1, 'FAIL': 0, 'SKIP': 1}
	assert 'SKIP kunit: b: no PMU' in results.summary(r)


def test_a_problem_fails_the_run_even_if_tests_pass():
	r = _run(TestCase('kunit', 'a', Status.PASS), problems=['guest hung'])
	assert not r.passed
	assert 'PROBLEM guest hung' in results.summary(r)


def test_json_round_trip_and_shape(tmp_path):
	r = _run(TestCase('kselftest', 'info.basic', Status.FAIL, 'boom'))
	path = results.write(r, tmp_path)
	d = json.loads(path.read_text())
	assert d['result'] == 'FAIL'
	assert d['tests'][0] == {'family': 'kselftest', 'name': 'info.basic',
				 'status': 'FAIL', 'message': 'boom'}
	back = results.from_json(path.read_text())
	assert back.tests == r.tests


def test_junit(tmp_path):
	r = _run(TestCase('kunit', 'a', Status.PASS),
		 TestCase('kunit', 'b', Status.FAIL, 'expected 1 got 2'),
		 TestCase('pytest', 'c', Status.SKIP, 'why'))
	results.write(r, tmp_path)
	root = ET.parse(tmp_path / 'results.junit.xml').getroot()
	suites = {s.get('name'): s for s in root.iter('testsuite')}
	assert suites['x86_64.kunit'].get('failures') == '1'
	assert suites['x86_64.pytest'].get('skipped') == '1'


def test_summary_says_what_the_guest_root_cost():
	r = _run(TestCase('kunit', 'a', Status.PASS))
	r.rootfs = {'suite': 'bookworm', 'debian_arch': 'ppc64el',
		    'size_mb': 223, 'build_seconds': 146.5, 'fresh': True}
	assert 'root filesystem: Debian bookworm ppc64el, 223 MB, built now ' \
		'in 146 s' in results.summary(r)
	r.rootfs = dict(r.rootfs, fresh=False, built='2026-12-01T05:30:00')
	assert '223 MB, cached (built 2026-12-01T05:30:00 in 146 s)' in \
		results.summary(r)
	# and it survives the JSON round trip
	assert results.from_json(r.to_json()).rootfs == r.rootfs
