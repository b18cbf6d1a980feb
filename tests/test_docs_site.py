# SPDX-License-Identifier: GPL-2.0
"""The reviewers' site in a real browser (Debian's chromium, headless).

The site is built once per session from what a fresh clone holds (no
base tree: inv docs --no-tree), with a local results directory holding a
failed run and a benchmark run beside the committed snapshot, then every
page is opened at 1280 px.  Screenshots go to
docs/_build/browser-test/screenshots/ for a person to look at.
"""

import json
import shutil

import pytest

from pytools import docs, paths, site_check, snapshot
from pytools.ops import Ops
from pytools.series import read_series

from test_docs import METRICS

OUT = paths.REPO / 'docs' / '_build' / 'browser-test'


@pytest.fixture(scope='session')
def site(tmp_path_factory):
	results = tmp_path_factory.mktemp('results')
	run = results / '20260101-000000-x86_64-lts'
	run.mkdir()
	(run / 'results.json').write_text(json.dumps({
		'arch': 'x86_64', 'base': {'name': 'lts', 'origin': 'linux 6.12',
					   'series_tip': 'f' * 40},
		'config_fragments': ['common.config'], 'result': 'FAIL',
		'kernel_release': '6.12.117+', 'accelerator': {'accel': 'tcg'},
		'counts': {'PASS': 1, 'FAIL': 1, 'SKIP': 0},
		'started': '2026-01-01T00:00:00',
		'tests': [{'family': 'kunit', 'name': 'a', 'status': 'PASS'},
			  {'family': 'kunit', 'name': 'b', 'status': 'FAIL',
			   'message': 'a local failure'}]}))
	bench = results / 'bench-20260101-000000-ppc64le'
	bench.mkdir()
	(bench / 'bench.json').write_text(json.dumps(
		{'meta': {'arch': 'ppc64le', 'kernel': '6.12.117+', 'accel': 'tcg'},
		 'metrics': METRICS}))
	if OUT.exists():
		shutil.rmtree(OUT)
	index = docs.build(None, Ops(), OUT, docs.Sources(
		patches=paths.PATCHES, results=results))
	report = site_check.check(index.parent, OUT / 'screenshots')
	return index.parent, report


def test_every_page_loads_fits_and_links_resolve(site):
	html, report = site
	assert report.problems == []
	pages = set(report.pages)
	n = len(read_series(paths.PATCHES))
	assert {'index.html', 'design.html', 'abi.html', 'changes.html',
		'results.html', 'bench.html', 'patches/index.html',
		'patches/cover.html',
		*(f'patches/{i:04d}.html' for i in range(1, n + 1))} <= pages
	# the checks saw something to check
	assert sum(len(r.links) for r in report.pages.values()) > 100
	assert report.pages['patches/0001.html'].ids


def test_each_patch_page_holds_its_diff(site):
	html, report = site
	for i, p in enumerate(read_series(paths.PATCHES), 1):
		r = report.pages[f'patches/{i:04d}.html']
		files = docs.parse_patch(p.read_text()).files
		assert r.listed_files == r.diff_files == len(files) > 0


def test_results_and_bench_show_the_snapshot_and_mark_local_runs(site):
	html, _ = site
	s = snapshot.load()
	results = (html / 'results.html').read_text()
	assert f'series <strong>{s.version.name}</strong>' in results
	assert results.count('<span class="published">published</span>') == \
		len(s.runs)
	assert '<span class="local">local</span>' in results
	assert 'a local failure' in results
	bench = (html / 'bench.html').read_text()
	assert '<span class="local">local</span> ppc64le' in bench
	assert 'bench-local-ppc64le-0.svg' in bench


def test_screenshots_are_written_beside_the_build(site):
	_, report = site
	names = sorted(p.name for p in report.screenshots)
	assert names == sorted(site_check.SCREENSHOTS.values())
	for p in report.screenshots:
		assert p.parent == OUT / 'screenshots'
		assert p.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
		assert p.stat().st_size > 10000


def test_the_checks_catch_what_they_look_for(tmp_path):
	"""A made-up site with one fault of each kind: each is reported."""
	(tmp_path / 'patches').mkdir()
	(tmp_path / 'index.html').write_text(
		'<html><body><a href="missing.html">x</a>'
		'<a href="patches/0001.html#nowhere">y</a>'
		'<a href="https://example.invalid/">external</a>'
		'<table><tr><td style="white-space:nowrap">' + 'wide ' * 400 +
		'</td></tr></table><script>console.error("boom")</script>'
		'</body></html>')
	(tmp_path / 'patches' / '0001.html').write_text(
		'<html><body><section id="files-changed"><ul><li>a.c</li>'
		'</ul></section></body></html>')
	report = site_check.check(tmp_path)
	text = '\n'.join(report.problems)
	assert 'index.html: console error: boom' in text
	assert 'index.html: link missing.html leads nowhere' in text
	assert 'no #nowhere in patches/0001.html' in text
	assert 'px wider than a 1280 px window' in text
	assert 'patches/0001.html: lists 1 files but holds a diff for 0' in text
	assert 'example.invalid' not in text
