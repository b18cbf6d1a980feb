# SPDX-License-Identifier: GPL-2.0
"""inv docs: the generated pages, from the real series and fake results."""

import json
import shutil

from pytools import docs, paths
from pytools.series import read_series


def test_every_patch_of_the_real_series_gets_a_page(tmp_path):
	pages = docs.patch_pages(paths.REPO / 'patches', tmp_path)
	assert len(pages) == len(read_series(paths.REPO / 'patches'))
	first = (tmp_path / '0001.rst').read_text()
	assert 'perfctr: core' in first
	assert 'Commit message' in first and 'Files changed' in first
	assert 'include/uapi/linux/perfctr.h' in first	# the diffstat
	index = (tmp_path / 'index.rst').read_text()
	assert 'Cover letter' in index and ':doc:`0008`' in index


def test_parse_patch_splits_message_and_diffstat():
	text = ('From x Mon Sep 17 00:00:00 2001\nFrom: a <a@b>\n'
		'Subject: [PATCH 1/2] perfctr: a long\n subject line\n\n'
		'Why.\n\nMore why.\n---\n a.c | 2 +-\n 1 file changed\n\n'
		'diff --git a/a.c b/a.c\n')
	d = docs.parse_patch(text)
	assert d['subject'] == 'perfctr: a long subject line'
	assert d['message'] == 'Why.\n\nMore why.'
	assert d['diffstat'].strip().startswith('a.c | 2 +-')


def _run(results, name, arch, frags, status):
	d = results / name
	d.mkdir(parents=True)
	(d / 'results.json').write_text(json.dumps({
		'arch': arch, 'base': {'name': 'lts', 'origin': 'linux 6.12'},
		'config_fragments': frags, 'kernel_release': '6.12.117+',
		'accelerator': {'accel': 'tcg'}, 'result': status,
		'counts': {'PASS': 3, 'FAIL': 0, 'SKIP': 1},
		'tests': [{'family': 'kunit', 'name': 'a', 'status': 'PASS'},
			  {'family': 'kselftest', 'name': 'b', 'status': 'SKIP',
			   'message': 'no PMU here'}]}))


def test_results_page_keeps_the_newest_per_arch_base_config(tmp_path):
	_run(tmp_path, '20260101-000000-x86_64-lts', 'x86_64', ['a'], 'FAIL')
	_run(tmp_path, '20260102-000000-x86_64-lts', 'x86_64', ['a'], 'PASS')
	_run(tmp_path, '20260103-000000-x86_64-lts', 'x86_64',
	     ['a', 'debug.config'], 'PASS')
	runs = docs.latest_results(tmp_path)
	assert sorted((r['_dir'], docs._config_name(r['config_fragments']))
		      for r in runs) == [('20260102-000000-x86_64-lts', 'default'),
					 ('20260103-000000-x86_64-lts', 'debug')]
	page = docs.results_page(tmp_path)
	assert '- FAIL' not in page and 'no PMU here' in page
	assert '3 / 0 / 1' in page


def test_bench_page_says_when_there_is_none(tmp_path):
	assert 'inv bench' in docs.bench_page(tmp_path)


def test_bench_page_has_tables_and_svg_plots(tmp_path):
	d = tmp_path / 'results' / 'bench-20260101-000000-ppc64le'
	d.mkdir(parents=True)
	metrics = [{'name': 'read_rdtsc_vs_getpid', 'value': 0.07, 'unit': 'ratio'},
		   {'name': 'read_getpid_vs_getpid', 'value': 1.0, 'unit': 'ratio'},
		   {'name': 'read_getpid_instructions', 'value': 184, 'unit': 'instructions'},
		   {'name': 'read_perfctr_fast_read_instructions', 'value': 31.7,
		    'unit': 'instructions'},
		   {'name': 'ctxsw_vperfctr_vs_none', 'value': 1.4, 'unit': 'ratio'}]
	(d / 'bench.json').write_text(json.dumps(
		{'meta': {'arch': 'ppc64le', 'kernel': '6.12.117+', 'accel': 'tcg',
			  'note': 'Under QEMU TCG'}, 'metrics': metrics}))
	src = tmp_path / 'src'
	src.mkdir()
	page = docs.bench_page(tmp_path / 'results', src)
	assert 'Under QEMU TCG' in page and 'Weaver' in page
	svgs = sorted(p.name for p in src.glob('*.svg'))
	assert svgs == ['bench-ppc64le-0.svg', 'bench-ppc64le-1.svg',
			'bench-ppc64le-2.svg']
	assert '.. image:: bench-ppc64le-1.svg' in page
	assert '<svg' in (src / svgs[1]).read_text()
	assert 'perfctr_fast_read' in (src / svgs[1]).read_text()


def test_results_page_has_the_matrix_with_check_and_lava_runs(tmp_path):
	from pytools import matrix
	_run(tmp_path, '20260101-000000-x86_64-lts', 'x86_64', ['a'], 'PASS')
	d = tmp_path / '20260101-000100-x86_64-lts-lava'
	shutil.copytree(tmp_path / '20260101-000000-x86_64-lts', d)
	r = json.loads((d / 'results.json').read_text())
	r['runner'] = {'kind': 'lava', 'device_type': 'qemu'}
	(d / 'results.json').write_text(json.dumps(r))
	page = docs.results_page(tmp_path)
	for c in matrix.load().cells:
		assert c.name in page and c.check_command() in page
	row = page.split('x86_64-lts-default-max')[1].split('* -')[0]
	assert '20260101-000000-x86_64-lts' in row
	assert '20260101-000100-x86_64-lts-lava' in row
	# the LAVA run is not taken for the newest inv check
	assert [x['_dir'] for x in docs.latest_results(tmp_path)] == \
		['20260101-000000-x86_64-lts']
