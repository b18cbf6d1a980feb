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
