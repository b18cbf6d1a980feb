# SPDX-License-Identifier: GPL-2.0
"""inv docs: the generated pages, from the real series, the committed
snapshot, a tiny real git tree for the range-diff, and made-up local
results."""

import json
import shutil
import re

import pytest

from pytools import docs, paths, snapshot
from pytools.errors import UserError
from pytools.ops import Ops
from pytools.series import Series, read_series

from conftest import git
from test_series import _make_series, _tree


def test_every_patch_of_the_real_series_gets_a_page(tmp_path):
	pages = docs.patch_pages(paths.REPO / 'patches', tmp_path)
	assert len(pages) == len(read_series(paths.REPO / 'patches'))
	first = (tmp_path / '0001.rst').read_text()
	assert 'perfctr: core' in first
	assert 'Commit message' in first and 'Files changed' in first
	# the message is plain text, not a (Python-highlighted) literal block
	assert '<pre class="commit-message">' in first and '\n::\n' not in first
	# one diff block a file, highlighted as a diff, linked to the design
	name, patch = pages[0]
	assert first.count('<details class="patch-file"') == len(patch.files) > 1
	assert first.count('class="highlight-diff') == len(patch.files)
	assert '<span class="gi">+' in first		# pygments' inserted line
	assert 'href="../design.html#the-fast-user-space-read"' in first
	index = (tmp_path / 'index.rst').read_text()
	assert ':doc:`0008`' in index and ':doc:`cover letter <cover>`' in index
	cover = (tmp_path / 'cover.rst').read_text()
	assert '<pre class="commit-message">' in cover
	assert 'href="0001.html#f-include-uapi-linux-perfctr-h"' in cover


def test_long_files_start_collapsed(tmp_path):
	pages = dict(docs.patch_pages(paths.REPO / 'patches', tmp_path))

	def split(page):
		n = docs.COLLAPSE_LINES
		return ([f for f in page.files if f.text.count('\n') > n],
			[f for f in page.files if f.text.count('\n') <= n])
	# the first patch with both (the x86 driver: its KUnit file and its
	# Makefile lines), whatever its number after a rebase
	name = next(n for n, p in sorted(pages.items()) if all(split(p)))
	big, small = split(pages[name])
	text = (tmp_path / f'{name}.rst').read_text()
	for f in big:
		assert f'id="{docs._file_id(f.path)}">' in text	# no "open"
	for f in small:
		assert f'id="{docs._file_id(f.path)}" open>' in text


def test_parse_patch_splits_message_diffstat_and_files():
	text = ('From x Mon Sep 17 00:00:00 2001\nFrom: a <a@b>\n'
		'Subject: [PATCH 1/2] perfctr: a long\n subject line\n\n'
		'Why.\n\nMore why.\n---\n a.c | 2 +-\n 1 file changed\n\n'
		'diff --git a/a.c b/a.c\nindex 1..2 100644\n--- a/a.c\n'
		'+++ b/a.c\n@@ -1 +1 @@\n-int a;\n+int b;\n'
		'diff --git a/b.c b/b.c\n--- a/b.c\n+++ b/b.c\n@@ -1 +1,2 @@\n'
		' x\n+y\n-- \n2.39.5\n')
	d = docs.parse_patch(text)
	assert d.subject == 'perfctr: a long subject line'
	assert d.message == 'Why.\n\nMore why.'
	assert d.diffstat.strip().startswith('a.c | 2 +-')
	assert [(f.path, f.added, f.removed) for f in d.files] == \
		[('a.c', 1, 1), ('b.c', 1, 0)]
	assert '2.39.5' not in d.files[1].text		# the signature is not diff


def test_a_design_section_renamed_without_the_map_is_named(tmp_path):
	design = tmp_path / 'design.md'
	design.write_text('# d\n\n## Objects and lifetimes\n')
	with pytest.raises(UserError, match='"The fast user-space read"'):
		docs.design_map(design)


def _run(results, name, arch, frags, status, tip='t1'):
	d = results / name
	d.mkdir(parents=True)
	(d / 'results.json').write_text(json.dumps({
		'arch': arch, 'base': {'name': 'lts', 'origin': 'linux 6.12',
				       'series_tip': tip},
		'config_fragments': frags, 'kernel_release': '6.12.117+',
		'accelerator': {'accel': 'tcg'}, 'result': status,
		'counts': {'PASS': 3, 'FAIL': 0, 'SKIP': 1},
		'started': name[:15],
		'tests': [{'family': 'kunit', 'name': 'a', 'status': 'PASS'},
			  {'family': 'kselftest', 'name': 'b', 'status': 'SKIP',
			   'message': 'no PMU here'}]}))


def test_local_results_keep_the_newest_per_arch_base_config(tmp_path):
	_run(tmp_path, '20260101-000000-x86_64-lts', 'x86_64', ['a'], 'FAIL')
	_run(tmp_path, '20260102-000000-x86_64-lts', 'x86_64', ['a'], 'PASS')
	_run(tmp_path, '20260103-000000-x86_64-lts', 'x86_64',
	     ['a', 'debug.config'], 'PASS')
	runs = docs.latest_results(tmp_path)
	assert sorted((r.local_dir, r.config) for r in runs) == \
		[('20260102-000000-x86_64-lts', 'default'),
		 ('20260103-000000-x86_64-lts', 'debug')]
	page = docs.results_page(tmp_path)
	assert '**FAIL**' not in page and 'no PMU here' in page
	assert '3 / 0 / 1' in page
	assert 'There is no published snapshot' in page


def test_a_failed_local_run_is_shown_beside_the_snapshot_never_for_it(
		tmp_path):
	s = snapshot.load()
	assert s is not None, 'the repository carries a published snapshot'
	_run(tmp_path, '20260101-000000-x86_64-lts', 'x86_64', ['a'], 'FAIL')
	page = docs.results_page(tmp_path, s, s.version.patches_tree)
	body = page.split('\nResults\n=======\n', 1)[1]
	published, _, local = body.partition('\nLocal runs\n')
	assert '|published|' in published and '|local|' not in published
	assert '**FAIL**' not in published and '**FAIL**' in local
	assert '|local| x86\\_64 default' in local
	for r in s.runs:
		assert f'{docs._rst(r.label)}: {r.result}' in published
	assert 'This checkout holds that series' in page
	have = {(r.arch, r.config) for r in s.runs}
	if ('ppc64le', 'debug') not in have:
		assert 'Not among the published runs' in published
		assert 'ppc64le debug' in published
	other = docs.results_page(tmp_path, s, 'f' * 40)
	assert f'This checkout\'s series differs from {s.version.name}' in other


def test_the_committed_snapshot_is_well_formed_and_of_full_runs():
	s = snapshot.load()
	assert s.version.name and len(s.version.patches_tree) == 40
	assert {r.arch for r in s.runs} >= {'x86_64', 'ppc64le'}
	assert 'debug' in {r.config for r in s.runs}
	assert all(r.series_tip == s.version.series_tip for r in s.runs)
	assert s.previous is None or \
		s.previous.patches_tree != s.version.patches_tree


def test_a_broken_snapshot_is_a_user_error_naming_the_file(tmp_path):
	f = tmp_path / 'published.json'
	f.write_text(json.dumps({'format': 1, 'published': 'x',
				 'version': {'name': 'pub-1'}, 'runs': []}))
	with pytest.raises(UserError, match=r'published\.json: version:'):
		snapshot.load(f)
	f.write_text(json.dumps({'format': 99}))
	with pytest.raises(UserError, match='reads format 1'):
		snapshot.load(f)


def test_publish_refuses_runs_of_another_series(tmp_path):
	_run(tmp_path, '20260101-000000-x86_64-lts', 'x86_64', ['a'], 'PASS',
	     tip='a' * 40)
	req = snapshot.PublishRequest(
		runs=[tmp_path / '20260101-000000-x86_64-lts'], bench=[],
		patches=paths.PATCHES, series_tip='b' * 40, base_commit='c' * 40)
	with pytest.raises(UserError, match='ran series aaaaaaaaaaaa, not '
			   'bbbbbbbbbbbb'):
		snapshot.publish(req, None, Ops())


def test_publish_summarises_runs_and_names_versions(tmp_path):
	_run(tmp_path, '20260101-000000-x86_64-lts', 'x86_64', ['a'], 'PASS',
	     tip='a' * 40)
	req = snapshot.PublishRequest(
		runs=[tmp_path / '20260101-000000-x86_64-lts'], bench=[],
		patches=paths.PATCHES, series_tip='a' * 40, base_commit='c' * 40)
	old = snapshot.load()
	s = snapshot.publish(req, old, Ops())
	tree = snapshot.patches_tree(paths.PATCHES, Ops())
	assert s.version.patches_tree == tree
	if old.version.patches_tree == tree:
		assert s.version.name == old.version.name
	else:
		assert s.previous == old.version
	r = s.runs[0]
	assert r.families == {'kunit': {'PASS': 1}, 'kselftest': {'SKIP': 1}}
	assert r.skips == [snapshot.Reason('b', 'no PMU here')]
	assert s.machine == {'note': 'not recorded: the runs\' logs are not on '
			     'the machine that published them'}
	again = snapshot.from_dict(json.loads(snapshot.to_json(s)))
	assert again == s


def test_range_diff_of_two_versions_in_a_real_tree(kernel_repo, tmp_path):
	v1 = tmp_path / 'v1'
	_make_series(kernel_repo, v1)
	# version 2: the second patch's change differs
	git(kernel_repo, 'checkout', '-q', 'perfctr')
	text = (kernel_repo / 'drivers' / 'Makefile').read_text()
	(kernel_repo / 'drivers' / 'Makefile').write_text(
		text.replace('perfctr.o', 'perfctr.o perfctr-x86.o'))
	git(kernel_repo, 'commit', '-q', '-a', '--amend', '--no-edit')
	v2 = tmp_path / 'v2'
	Series(_tree(kernel_repo), v2).export()
	head = git(kernel_repo, 'rev-parse', 'perfctr')
	rd = docs.range_diff(_tree(kernel_repo), v1, v2)
	assert re.search(r'^1: +\w+ = 1: +\w+ perfctr: core$', rd, re.M)
	assert re.search(r'^2: +\w+ ! 2: +\w+ perfctr: build it$', rd, re.M)
	assert '+obj-y += d10/ perfctr.o perfctr-x86.o' in rd
	html = docs._range_diff_html(rd)
	assert '<span class="add">' in html and '<span class="hdr">' in html
	# nothing moved in the tree: commits live in the object store only
	assert git(kernel_repo, 'rev-parse', 'perfctr') == head


def test_changes_page_without_a_tree_says_what_it_needs():
	s = snapshot.load()
	page = docs.changes_page(None, s, s.version.patches_tree,
				 paths.PATCHES, Ops())
	if s.previous:
		assert f'the previous published version is {s.previous.name}' in page
		assert 'needs the base tree' in page


def test_bench_page_says_when_there_is_none(tmp_path):
	d = json.loads(snapshot.to_json(snapshot.load()))
	d['bench'] = []
	page = docs.bench_page(tmp_path, None, snapshot.from_dict(d))
	assert 'holds no benchmark run' in page and 'inv bench' in page


def test_the_committed_snapshot_has_a_bench_run_and_its_charts(tmp_path):
	"""What a fresh clone's Benchmarks page shows: the published run."""
	s = snapshot.load()
	assert s.bench, 'docs/snapshot/published.json holds no bench run'
	page = docs.bench_page(tmp_path, tmp_path, s)
	assert '|published|' in page and 'holds no benchmark run' not in page
	assert list(tmp_path.glob('bench-published-*.svg'))


METRICS = [
	{'name': 'read_perfctr_fast_read.pmc5', 'figure': 'read_perfctr_fast_read',
	 'instrument': 'pmc5', 'value': 31.7, 'unit': 'instructions'},
	{'name': 'read_getpid.pmc5', 'figure': 'read_getpid',
	 'instrument': 'pmc5', 'value': 184, 'unit': 'instructions'},
	{'name': 'start_vperfctr_control_new.icount',
	 'figure': 'start_vperfctr_control_new', 'instrument': 'icount',
	 'value': 2000, 'unit': 'instructions'},
	{'name': 'start_perf_ioc_enable_task_clock.icount',
	 'figure': 'start_perf_ioc_enable_task_clock', 'instrument': 'icount',
	 'value': 800, 'unit': 'instructions'},
	{'name': 'ctxsw_none.icount', 'figure': 'ctxsw_none',
	 'instrument': 'icount', 'value': 3100, 'unit': 'instructions'},
	{'name': 'ctxsw_vperfctr_pmc_both.icount',
	 'figure': 'ctxsw_vperfctr_pmc_both', 'instrument': 'icount',
	 'value': 3400, 'unit': 'instructions'},
	{'name': 'ctxsw_vperfctr_pmc_both.cpu0', 'figure': 'ctxsw_vperfctr_pmc_both',
	 'instrument': 'cpu0', 'value': None, 'unit': 'instructions',
	 'unobservable': 'perf cannot count while perfctr holds the PMU'},
	{'name': 'read_rdtsc_vs_getpid.wall', 'value': 0.07, 'unit': 'ratio'},
	{'name': 'read_getpid_vs_getpid.wall', 'value': 1.0, 'unit': 'ratio'},
	{'name': 'ctxsw_vperfctr_tsc_both_vs_none.wall', 'value': 1.4,
	 'unit': 'ratio', 'inside_noise': True}]


def test_bench_page_has_tables_and_svg_plots_of_a_local_run(tmp_path):
	d = tmp_path / 'results' / 'bench-20260101-000000-ppc64le'
	d.mkdir(parents=True)
	(d / 'bench.json').write_text(json.dumps(
		{'meta': {'arch': 'ppc64le', 'kernel': '6.12.117+', 'accel': 'tcg',
			  'note': 'Under QEMU TCG'}, 'metrics': METRICS}))
	src = tmp_path / 'src'
	src.mkdir()
	page = docs.bench_page(tmp_path / 'results', src)
	assert 'Under QEMU TCG' in page and 'Weaver' in page
	assert '|local| ppc64le' in page
	svgs = sorted(p.name for p in src.glob('*.svg'))
	assert svgs == [f'bench-local-ppc64le-{i}.svg' for i in range(5)]
	assert '.. image:: bench-local-ppc64le-0.svg' in page
	chart = (src / svgs[0]).read_text()
	assert chart.startswith('<svg') and 'perfctr_fast_read' in chart
	assert 'not observable: perf cannot count' in page
	assert 'viewBox=' in chart


def test_bench_charts_work_from_the_snapshot_format(tmp_path):
	"""No bench run exists yet: the published path is exercised with a
	snapshot holding one, in the snapshot's own format."""
	s = snapshot.load()
	d = json.loads(snapshot.to_json(s))
	d['bench'] = [{'meta': {'arch': 'ppc64le', 'kernel': '6.12.117+',
				'accel': 'tcg'}, 'metrics': METRICS}]
	s2 = snapshot.from_dict(d)
	page = docs.bench_page(tmp_path, tmp_path, s2)
	assert f'|published| ppc64le ({s.version.name})' in page
	assert len(list(tmp_path.glob('bench-published-ppc64le-0-*.svg'))) == 5


def test_new_file_is_the_file_as_the_series_creates_it():
	text = docs.new_file(paths.PATCHES, 'include/uapi/linux/perfctr.h', Ops())
	assert text.startswith('/* SPDX-License-Identifier')
	assert text.rstrip().endswith('#endif /* _UAPI_LINUX_PERFCTR_H */')
	# created by one patch, changed by a later one: the later state
	arch = docs.new_file(paths.PATCHES, 'include/linux/perfctr.h', Ops())
	changed = [f for p in read_series(paths.PATCHES)[1:]
		   for f in docs.parse_patch(p.read_text()).files
		   if f.path == 'include/linux/perfctr.h']
	assert changed
	added = [l[1:] for l in changed[-1].text.splitlines()
		 if l.startswith('+') and not l.startswith('+++') and l[1:].strip()]
	assert all(l in arch for l in added)
	assert docs.new_file(paths.PATCHES, 'kernel/fork.c', Ops()) is None


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
	assert [x.local_dir for x in docs.latest_results(tmp_path)] == \
		['20260101-000000-x86_64-lts']
