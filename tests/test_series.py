# SPDX-License-Identifier: GPL-2.0
"""apply/export against a real (tiny) git repository."""

import dataclasses
import filecmp
import os
import subprocess

import pytest

from pytools.bases import BaseTree
from pytools.errors import PatchConflict, UserError
from pytools.series import APPLIED_REF, Series, read_series

from conftest import git


def _tree(repo):
	commit = git(repo, 'rev-parse', 'base/linux-source-9.9/9.9.1-1').strip()
	return BaseTree(name='lts', path=repo, ref='base/linux-source-9.9/9.9.1-1',
			commit=commit, version='9.9.1-1',
			origin='linux-source-9.9 9.9.1-1', patches='patches')


def _make_series(repo, patches):
	"""Two commits on a branch, exported as the reference series."""
	git(repo, 'checkout', '-q', '-b', 'perfctr')
	(repo / 'drivers' / 'perfctr.c').write_text('int perfctr;\n')
	git(repo, 'add', '-A')
	git(repo, 'commit', '-q', '-m', 'perfctr: core\n\nThe core.\n\n'
	    'Signed-off-by: t <t@t>', env={'GIT_AUTHOR_DATE':
					  '2026-01-01T00:00:00Z'})
	text = (repo / 'drivers' / 'Makefile').read_text()
	(repo / 'drivers' / 'Makefile').write_text(
		text.replace('obj-y += d10/\n', 'obj-y += d10/ perfctr.o\n'))
	git(repo, 'commit', '-q', '-am', 'perfctr: build it\n\n'
	    'Signed-off-by: t <t@t>', env={'GIT_AUTHOR_DATE':
					  '2026-01-02T00:00:00Z'})
	git(repo, 'config', 'branch.perfctr.description',
	    'perfctr: test series\n\nA blurb.\n\nBase: x\n')
	s = Series(_tree(repo), patches)
	s.export()
	return s


def _fresh_apply(repo, patches):
	git(repo, 'checkout', '-q', '--detach', 'base/linux-source-9.9/9.9.1-1')
	git(repo, 'branch', '-D', 'perfctr')
	s = Series(_tree(repo), patches)
	s.apply()
	return s


def test_export_of_hand_made_commits_is_canonical(kernel_repo, tmp_path):
	"""A developer's own commits (their committer, dates) export to the
	same bytes as a fresh apply of the result would: export rewrites the
	branch to the canonical commits, without touching a file."""
	patches = tmp_path / 'patches'
	_make_series(kernel_repo, patches)
	assert git(kernel_repo, 'log', '-1', '--format=%cn', 'perfctr').strip() \
		== 'perfctr tools'
	assert git(kernel_repo, 'status', '--porcelain') == ''


def test_apply_then_export_reproduces_patches_byte_for_byte(kernel_repo,
							     tmp_path):
	patches = tmp_path / 'patches'
	_make_series(kernel_repo, patches)
	golden = tmp_path / 'golden'
	golden.mkdir()
	for p in patches.iterdir():
		(golden / p.name).write_bytes(p.read_bytes())
	# A fresh apply (branch gone), then export, gives the same bytes.
	git(kernel_repo, 'checkout', '-q', '--detach', 'base')
	git(kernel_repo, 'branch', '-D', 'perfctr')
	s = Series(_tree(kernel_repo), patches)
	r = s.apply()
	assert r.changed and len(r.patches) == 2
	for p in patches.iterdir():
		p.unlink()
	s.export()
	names = sorted(p.name for p in golden.iterdir())
	assert names == sorted(p.name for p in patches.iterdir())
	_, mismatch, errors = filecmp.cmpfiles(golden, patches, names,
					       shallow=False)
	assert not mismatch and not errors
	cover = (patches / '0000-cover-letter.patch').read_text()
	assert 'base-commit: ' + _tree(kernel_repo).commit in cover
	assert 'Base: linux-source-9.9 9.9.1-1' in cover


def test_apply_twice_touches_nothing(kernel_repo, tmp_path):
	patches = tmp_path / 'patches'
	_make_series(kernel_repo, patches)
	s = Series(_tree(kernel_repo), patches)
	s.apply()
	f = kernel_repo / 'drivers' / 'Makefile'
	before = f.stat().st_mtime_ns
	r = s.apply()
	assert not r.changed
	assert f.stat().st_mtime_ns == before


def test_dirty_tree_is_refused_and_kept(kernel_repo, tmp_path):
	patches = tmp_path / 'patches'
	_make_series(kernel_repo, patches)
	(kernel_repo / 'Makefile').write_text('all: # my edit\n')
	with pytest.raises(UserError) as e:
		Series(_tree(kernel_repo), patches).apply()
	assert 'uncommitted changes' in str(e.value)
	assert 'Makefile' in str(e.value)
	assert (kernel_repo / 'Makefile').read_text() == 'all: # my edit\n'


def test_conflict_names_patch_and_files_and_can_abort(kernel_repo, tmp_path):
	patches = tmp_path / 'patches'
	_make_series(kernel_repo, patches)
	# Move the base under the series: same lines changed differently.
	git(kernel_repo, 'checkout', '-q', '--detach', 'base')
	mk = kernel_repo / 'drivers' / 'Makefile'
	mk.write_text(mk.read_text().replace('obj-y += d10/\n',
					     'obj-y += d10/ other.o\n'))
	git(kernel_repo, 'commit', '-q', '-am', 'upstream change')
	tree = dataclasses.replace(
		_tree(kernel_repo),
		commit=git(kernel_repo, 'rev-parse', 'HEAD').strip())
	git(kernel_repo, 'update-ref', APPLIED_REF,
	    git(kernel_repo, 'rev-parse', 'perfctr').strip())
	s = Series(tree, patches)
	with pytest.raises(PatchConflict) as e:
		s.apply()
	assert e.value.patch.startswith('0002-')
	assert e.value.files == ['drivers/Makefile']
	assert 'git am --continue' in e.value.hint
	# A second apply says what state the tree is in instead of guessing.
	with pytest.raises(UserError) as again:
		s.apply()
	assert 'in the middle of a "git am" an earlier run left (stopped ' \
	       'at "perfctr: build it"' in str(again.value)
	assert 'inv apply --abort' in again.value.hint
	assert s.abort() == 'aborted the stopped "git am"; back on branch perfctr'
	assert not (kernel_repo / '.git' / 'rebase-apply').exists()
	# The original work branch survived.
	assert 'perfctr: build it' in git(kernel_repo, 'log', '-1', 'perfctr')


def test_unexported_commits_are_saved_not_lost(kernel_repo, tmp_path):
	patches = tmp_path / 'patches'
	_make_series(kernel_repo, patches)
	(kernel_repo / 'new.c').write_text('x\n')
	git(kernel_repo, 'add', 'new.c')
	git(kernel_repo, 'commit', '-q', '-m', 'work in progress')
	wip = git(kernel_repo, 'rev-parse', 'HEAD').strip()
	r = Series(_tree(kernel_repo), patches).apply()
	assert r.saved_branch
	assert git(kernel_repo, 'rev-parse', r.saved_branch).strip() == wip


def test_series_file_errors(tmp_path):
	with pytest.raises(UserError, match='does not exist'):
		read_series(tmp_path)
	(tmp_path / 'series').write_text('0001-missing.patch\n')
	with pytest.raises(UserError, match='0001-missing.patch'):
		read_series(tmp_path)
	(tmp_path / 'series').write_text('# only a comment\n')
	with pytest.raises(UserError, match='lists no patches'):
		read_series(tmp_path)


def test_the_real_series_file_lists_existing_patches():
	from pytools import paths
	names = [p.name for p in read_series(paths.PATCHES)]
	assert names and all(n.endswith('.patch') for n in names)


def test_plumbing_commits_equal_git_am(kernel_repo, tmp_path):
	"""Applying without the work tree makes exactly git am's commits."""
	patches = tmp_path / 'patches'
	_make_series(kernel_repo, patches)
	plumbed = git(kernel_repo, 'rev-parse', 'perfctr').strip()
	git(kernel_repo, 'checkout', '-q', '--detach', 'base/linux-source-9.9/9.9.1-1')
	for p in read_series(patches):
		git(kernel_repo, 'am', '-q', '-3', '--committer-date-is-author-date',
		    str(p), env={'GIT_COMMITTER_NAME': 'perfctr tools',
				 'GIT_COMMITTER_EMAIL': 'perfctr-tools@localhost'})
	assert git(kernel_repo, 'rev-parse', 'HEAD').strip() == plumbed


def test_changed_patch_rewrites_only_its_files(kernel_repo, tmp_path):
	patches = tmp_path / 'patches'
	_make_series(kernel_repo, patches)
	s = Series(_tree(kernel_repo), patches)
	untouched = kernel_repo / 'drivers' / 'perfctr.c'
	before = untouched.stat().st_mtime_ns
	# Change the second patch's commit message only: a new series whose
	# files are all the same.
	p2 = read_series(patches)[1]
	p2.write_text(p2.read_text().replace('perfctr: build it',
					     'perfctr: build it, reworded'))
	r = s.apply()
	assert r.changed
	assert untouched.stat().st_mtime_ns == before
	assert 'reworded' in git(kernel_repo, 'log', '-1', '--format=%s')


def test_autosquash_folds_fixups_without_touching_files(kernel_repo, tmp_path):
	patches = tmp_path / 'patches'
	_make_series(kernel_repo, patches)
	s = Series(_tree(kernel_repo), patches)
	target = git(kernel_repo, 'log', '--format=%H', '-1', '--grep',
		     'perfctr: core').strip()
	f = kernel_repo / 'drivers' / 'perfctr.c'
	f.write_text('int perfctr = 1;\n')
	git(kernel_repo, 'commit', '-q', '-a', f'--fixup={target}')
	mk = kernel_repo / 'drivers' / 'Makefile'
	before = mk.stat().st_mtime_ns
	s.autosquash()
	s.export()
	assert mk.stat().st_mtime_ns == before
	log = git(kernel_repo, 'log', '--format=%s', 'base/linux-source-9.9/9.9.1-1..perfctr')
	assert 'fixup!' not in log and log.count('\n') == 2
	assert '+int perfctr = 1;' in read_series(patches)[0].read_text()


def _cut(patch, keep_lines):
	lines = patch.read_text().splitlines(keepends=True)
	hunk = next(i for i, l in enumerate(lines) if l.startswith('@@'))
	patch.write_text(''.join(lines[:hunk + keep_lines]) + 'garbage\n')


@pytest.mark.parametrize('which', ['0001-', '0002-'])
def test_a_corrupt_patch_is_told_apart_and_leaves_the_tree_as_it_was(
		kernel_repo, tmp_path, which):
	patches = tmp_path / 'patches'
	_make_series(kernel_repo, patches)
	git(kernel_repo, 'checkout', '-q', '--detach', 'base')
	git(kernel_repo, 'branch', '-D', 'perfctr')
	_cut(next(patches.glob(which + '*.patch')), 1)
	s = Series(_tree(kernel_repo), patches)
	with pytest.raises(UserError) as e:
		s.apply()
	assert not isinstance(e.value, PatchConflict)
	assert 'is not a well-formed patch: git says "corrupt patch at line' \
		in str(e.value)
	assert 'fix: restore' in str(e.value)
	assert not s.am_in_progress()
	assert git(kernel_repo, 'status', '--porcelain') == ''


def test_abort_says_where_head_is_when_detached(kernel_repo, tmp_path):
	s = Series(_tree(kernel_repo), tmp_path)
	git(kernel_repo, 'checkout', '-q', '--detach', 'base')
	said = s.abort()
	assert said.startswith('no "git am" was in progress; HEAD detached at ')
	assert 'back on' not in said
