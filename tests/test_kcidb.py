# SPDX-License-Identifier: GPL-2.0
"""KCIDB output, validated with kcidb-io's own schema (no mock of it)."""

import dataclasses
import json
import re
import shutil

import pytest
from invoke import Context, Exit

import tasks
from pytools import kcidb, results
from pytools.errors import UserError
from pytools.results import Status, TestCase

from conftest import DATA

RUNS = sorted((DATA / 'results').glob('*.json'))
PATH_RE = re.compile(r'^[a-zA-Z0-9_-]+(\.[a-zA-Z0-9_-]+)*$')


def _run_dir(tmp_path, src, name='20261130-210709-x86_64-lts'):
	d = tmp_path / name
	d.mkdir()
	shutil.copy(src, d / 'results.json')
	return d


@pytest.mark.parametrize('src', RUNS, ids=lambda p: p.stem)
def test_real_results_give_a_valid_document(src, tmp_path):
	"""inv check's results of both arches: valid against the newest
	schema kcidb-io has, one test per TestCase, paths unique."""
	d = _run_dir(tmp_path, src)
	run = results.load(d / 'results.json')
	rep = kcidb.write(run, d, url_base='https://files.example.org/r/x')
	doc = json.loads(rep.path.read_text())
	from kcidb_io import schema
	schema.LATEST.validate_exactly(doc)	# the library's own check
	assert rep.counts == {'checkouts': 1, 'builds': 1,
			      'tests': len(run.tests)}
	paths = [t['path'] for t in doc['tests']]
	assert len(set(paths)) == len(paths)
	assert all(PATH_RE.match(p) and p.startswith('perfctr.') for p in paths)
	assert {t['status'] for t in doc['tests']} <= {'PASS', 'FAIL', 'SKIP'}
	assert [t['status'] for t in doc['tests']] == \
		[t.status.value for t in run.tests]
	build = doc['builds'][0]
	assert build['architecture'] == run.arch
	assert build['checkout_id'] == doc['checkouts'][0]['id']
	assert doc['checkouts'][0]['git_commit_hash'] == \
		run.base['series_tip']
	assert all(t['build_id'] == build['id'] for t in doc['tests'])
	kself = next(t for t in doc['tests']
		     if t['misc']['family'] == 'kselftest')
	prog = kself['misc']['name'].split('.')[0]
	assert kself['log_url'] == \
		f'https://files.example.org/r/x/guest/kselftest-{prog}.tap'


def test_paths_depend_only_on_the_tests_not_on_the_runner(tmp_path):
	"""A LAVA run of the same kernel has the same paths (other ids)."""
	src = DATA / 'results' / 'x86_64-lts.json'
	a = results.load(src)
	b = dataclasses.replace(a, runner={'kind': 'lava', 'device_type': 'qemu'},
				started='2026-12-01T10:00:00')
	da = kcidb.document(a, tmp_path / 'one')
	db = kcidb.document(b, tmp_path / 'two')
	assert kcidb.statuses(da) == kcidb.statuses(db)
	assert {t['id'] for t in da['tests']}.isdisjoint(
		t['id'] for t in db['tests'])
	assert db['tests'][0]['environment']['comment'].startswith('LAVA qemu')


def test_names_outside_the_alphabet_become_valid_paths():
	cases = {
		TestCase('kunit', 'kunit.perfctr_ppc64.freeze.POWER8 guest',
			 Status.PASS): 'perfctr.kunit.perfctr_ppc64.freeze.POWER8_guest',
		TestCase('pytest', 'test_info::test_basic[x-1]', Status.PASS):
			'perfctr.pytest.test_info.test_basic_x-1',
		TestCase('kernel-log', 'no WARN/BUG reports', Status.PASS):
			'perfctr.kernel-log.no_WARN_BUG_reports',
		TestCase('kselftest', 'vperfctr_test.exit', Status.FAIL):
			'perfctr.kselftest.vperfctr_test.exit',
	}
	for t, want in cases.items():
		assert kcidb.test_path(t) == want


def test_the_schema_check_can_fail():
	"""validate() is the real schema: a path with a space, a status
	KCIDB does not know and a missing id are all refused."""
	doc = kcidb.document(results.load(DATA / 'results' / 'ppc64le-lts.json'),
			     DATA)
	kcidb.validate(doc)
	for breakage in (lambda d: d['tests'][0].update(path='a b'),
			 lambda d: d['tests'][0].update(status='BROKEN'),
			 lambda d: d['builds'][0].pop('id')):
		bad = json.loads(json.dumps(doc))
		breakage(bad)
		with pytest.raises(UserError, match='breaks schema'):
			kcidb.validate(bad)


def test_a_failed_run_and_its_problems(tmp_path):
	run = results.RunResult(
		arch='ppc64le', base={'name': 'lts', 'series_tip': 'dirty-tree'},
		tests=[TestCase('boot', 'guest ran the tests', Status.FAIL,
				'x' * 40000)],
		problems=['the guest was killed'])
	doc = kcidb.document(run, tmp_path)
	kcidb.validate(doc)
	assert 'git_commit_hash' not in doc['checkouts'][0]
	assert len(doc['tests'][0]['log_excerpt']) == kcidb.EXCERPT_MAX
	assert doc['tests'][1]['status'] == 'ERROR'


def test_a_bad_origin_is_refused():
	with pytest.raises(UserError, match='--origin'):
		kcidb.document(results.load(RUNS[0]), DATA, origin='My CI')


def test_inv_report_kcidb(tmp_path, capsys):
	d = _run_dir(tmp_path, DATA / 'results' / 'ppc64le-lts.json')
	assert tasks.report(Context(), results=str(d), kcidb=True) is None
	out = capsys.readouterr().out
	assert 'valid against kcidb-io schema' in out
	doc = json.loads((d / 'kcidb.json').read_text())
	kcidb.validate(doc)


@pytest.mark.parametrize('content,says', [
	(None, 'no such results file'),
	('{"arch": 1', 'not a perfctr results file'),
	('{"nope": 1}', 'not a perfctr results file'),
])
def test_inv_report_bad_input_exits_2(tmp_path, capsys, content, says):
	p = tmp_path / 'results.json'
	if content is not None:
		p.write_text(content)
	with pytest.raises(Exit) as e:
		tasks.report(Context(), results=str(p), kcidb=True)
	assert e.value.code == 2
	assert says in capsys.readouterr().err
