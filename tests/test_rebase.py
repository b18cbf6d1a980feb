# SPDX-License-Identifier: GPL-2.0
"""inv rebase: port a series between two real (tiny) git trees."""

import shutil

import pytest

from pytools import paths, rebase
from pytools.bases import BaseTree
from pytools.errors import PatchConflict, UserError
from pytools.series import Series

from conftest import git
from test_series import _make_series, _tree


def _newer(tmp_path, src_repo, drivers_makefile):
	"""A second tree: the same files, one of them changed upstream."""
	d = tmp_path / 'linux-10'
	shutil.copytree(src_repo, d, ignore=shutil.ignore_patterns('.git'))
	(d / 'drivers' / 'perfctr.c').unlink(missing_ok=True)
	(d / 'drivers' / 'Makefile').write_text(drivers_makefile)
	(d / 'README').write_text('ten\n')
	git(d, 'init', '-q', '-b', 'base')
	git(d, 'add', '-A')
	git(d, 'commit', '-q', '-m', 'base 10',
	    env={'GIT_AUTHOR_DATE': '2001-01-01T00:00:00Z',
		 'GIT_COMMITTER_DATE': '2001-01-01T00:00:00Z'})
	commit = git(d, 'rev-parse', 'HEAD').strip()
	return BaseTree(name='mainline', path=d, ref='base', commit=commit,
			version='10.0', origin='linux-source-10.0 10.0-1',
			patches='patches-mainline')


@pytest.fixture
def results(tmp_path, monkeypatch):
	monkeypatch.setattr(paths, 'results_dir', lambda: tmp_path / 'results')


def _series(kernel_repo, tmp_path):
	src = _make_series(kernel_repo, tmp_path / 'patches')
	git(kernel_repo, 'checkout', '-q', '--detach', 'base')
	return src


def test_clean_port_writes_series_and_range_diff(kernel_repo, tmp_path,
						 results):
	src = _series(kernel_repo, tmp_path)
	mk = (kernel_repo / 'drivers' / 'Makefile').read_text()
	dst_t = _newer(tmp_path, kernel_repo, 'obj-y += d00/\n' + mk)
	dst = Series(dst_t, tmp_path / 'patches-mainline')
	r = rebase.start(src, dst)
	assert [s.how for s in r.steps] == ['clean', 'clean']
	assert (tmp_path / 'patches-mainline' / 'series').exists()
	cover = (tmp_path / 'patches-mainline' / '0000-cover-letter.patch')
	assert 'Base: linux-source-10.0 10.0-1' in cover.read_text()
	# Both patches map one to one ("=": same diff) in the range-diff.
	assert r.range_diff.count(' = ') == 2, r.range_diff
	assert (r.report / 'range-diff.txt').read_text() == r.range_diff
	# The range-diff borrowed the source's objects and gave them back.
	alt = dst_t.path / '.git' / 'objects' / 'info' / 'alternates'
	assert not alt.exists()
	# ... after copying what the new commits use: the repository is
	# whole without them (git writes no object it can read elsewhere).
	git(dst_t.path, 'fsck', '--connectivity-only', '--no-dangling')
	assert git(dst_t.path, 'cat-file', '-p',
		   'perfctr:drivers/perfctr.c') == 'int perfctr;\n'


def test_three_way_merge_is_reported(kernel_repo, tmp_path, results):
	src = _series(kernel_repo, tmp_path)
	mk = (kernel_repo / 'drivers' / 'Makefile').read_text()
	# The line next to the one patch 2 edits changed: the context no
	# longer matches, a 3-way merge does.
	dst_t = _newer(tmp_path, kernel_repo,
		       mk.replace('obj-y += d12/\n', 'obj-y += d12/ new.o\n'))
	dst = Series(dst_t, tmp_path / 'patches-mainline')
	r = rebase.start(src, dst)
	assert [s.how for s in r.steps] == ['clean', '3-way merge']
	assert '!' in r.range_diff	# patch 2 changed in the port


def test_conflict_stops_then_continue_finishes(kernel_repo, tmp_path,
					       results):
	src = _series(kernel_repo, tmp_path)
	mk = (kernel_repo / 'drivers' / 'Makefile').read_text()
	dst_t = _newer(tmp_path, kernel_repo,
		       mk.replace('obj-y += d10/\n', 'obj-y += d10/ other.o\n'))
	dst = Series(dst_t, tmp_path / 'patches-mainline')
	with pytest.raises(PatchConflict) as e:
		rebase.start(src, dst)
	assert 'drivers/Makefile' in str(e.value)
	assert '--continue' in e.value.hint
	with pytest.raises(UserError, match='already under way'):
		rebase.start(src, dst)
	with pytest.raises(UserError, match='not finished'):
		rebase.resume(src, dst)
	(dst_t.path / 'drivers' / 'Makefile').write_text(
		mk.replace('obj-y += d10/\n', 'obj-y += d10/ other.o perfctr.o\n'))
	git(dst_t.path, 'add', 'drivers/Makefile')
	git(dst_t.path, 'am', '--continue', env={
		'GIT_COMMITTER_NAME': 'x', 'GIT_COMMITTER_EMAIL': 'x@x'})
	r = rebase.resume(src, dst)
	assert [s.how for s in r.steps] == ['clean',
					    'conflict, resolved by hand']
	text = (tmp_path / 'patches-mainline' /
		'0002-perfctr-build-it.patch').read_text()
	assert 'other.o perfctr.o' in text


def test_abort_goes_back(kernel_repo, tmp_path, results):
	src = _series(kernel_repo, tmp_path)
	mk = (kernel_repo / 'drivers' / 'Makefile').read_text()
	dst_t = _newer(tmp_path, kernel_repo,
		       mk.replace('obj-y += d10/\n', 'obj-y += d10/ other.o\n'))
	dst = Series(dst_t, tmp_path / 'patches-mainline')
	with pytest.raises(PatchConflict):
		rebase.start(src, dst)
	rebase.abort(dst)
	assert git(dst_t.path, 'status', '--porcelain') == ''
	assert not (dst_t.path / '.git' / rebase.STATE).exists()
	with pytest.raises(UserError, match='no rebase under way'):
		rebase.resume(src, dst)


def test_same_tree_is_refused(kernel_repo, tmp_path, results):
	src = _series(kernel_repo, tmp_path)
	with pytest.raises(UserError, match='same tree'):
		rebase.start(src, Series(_tree(kernel_repo), tmp_path / 'x'))


def test_a_stop_prints_the_exact_command_to_continue_or_abort(
		kernel_repo, tmp_path, results):
	src = _series(kernel_repo, tmp_path)
	mk = (kernel_repo / 'drivers' / 'Makefile').read_text()
	dst_t = _newer(tmp_path, kernel_repo,
		       mk.replace('obj-y += d10/\n', 'obj-y += d10/ other.o\n'))
	dst = Series(dst_t, tmp_path / 'patches-mainline')
	cmd = 'inv rebase --onto mainline --base lts --offline'
	with pytest.raises(PatchConflict) as e:
		rebase.start(src, dst, cmd)
	assert f'"{cmd} --continue"' in e.value.hint
	assert f'"{cmd} --abort"' in e.value.hint
	assert '...' not in e.value.hint
	# --continue without the options still names them (kept in the state)
	with pytest.raises(UserError) as e:
		rebase.resume(src, dst)
	assert f'{cmd} --continue' in e.value.hint


def test_the_rebase_task_gives_every_option_back():
	assert rebase.command('mainline', 'lts', None, None, True) == \
		'inv rebase --onto mainline --base lts --offline'
	assert rebase.command('mainline', None, '/src/my linux', 'v7.2',
				     False) == \
		"inv rebase --tree '/src/my linux' --ref v7.2"


def test_a_cover_letter_onto_a_developer_tree_names_no_local_path(
		kernel_repo, tmp_path, results):
	src = _series(kernel_repo, tmp_path)
	mk = (kernel_repo / 'drivers' / 'Makefile').read_text()
	t = _newer(tmp_path, kernel_repo, 'obj-y += d00/\n' + mk)
	dst_t = BaseTree(name='tree', path=t.path, ref='base', commit=t.commit,
			 version='v10.0-rc1-3-gabcdef', origin=f'{t.path} base',
			 patches='patches-mainline')
	rebase.start(src, Series(dst_t, tmp_path / 'patches-mainline'))
	cover = (tmp_path / 'patches-mainline' /
		 '0000-cover-letter.patch').read_text()
	base_line = next(l for l in cover.splitlines() if l.startswith('Base:'))
	assert str(t.path) not in cover
	assert base_line == f'Base: v10.0-rc1-3-gabcdef (commit {t.commit[:12]}, base)'
