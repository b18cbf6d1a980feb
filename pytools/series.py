# SPDX-License-Identifier: GPL-2.0
"""The patch series: apply it onto a base tree, export it back.

patches/ holds git format-patch files, a 'series' file naming them in
order, and a cover letter.  Applying is git am -3 onto a work branch at
the base; exporting is git format-patch of that branch.  Committer identity
and dates are pinned, so apply followed by export reproduces patches/ byte
for byte, and an apply of an unchanged series changes no file in the tree
(so make rebuilds nothing).

git runs through the Ops object like every other program (ops.git).
"""

import datetime
import filecmp
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from .bases import BaseTree
from .errors import GitError, InfraError, PatchConflict, UserError
from .ops import Ops, progress

WORK_BRANCH = 'perfctr'
APPLIED_REF = 'refs/perfctr/applied'
COVER = '0000-cover-letter.patch'
COMMITTER = {
	'GIT_COMMITTER_NAME': 'perfctr tools',
	'GIT_COMMITTER_EMAIL': 'perfctr-tools@localhost',
}


@dataclass(frozen=True)
class ApplyResult:
	branch: str
	tip: str
	patches: List[str]
	changed: bool		# False: the branch already carried the series
	saved_branch: str = ''


def read_series(patches: Path) -> List[Path]:
	series = patches / 'series'
	if not series.exists():
		raise UserError(f'{series} does not exist',
				'a series directory has a "series" file listing '
				'its patches in order (inv export writes it)')
	out = []
	for no, line in enumerate(series.read_text().splitlines(), 1):
		line = line.split('#', 1)[0].strip()
		if not line:
			continue
		p = patches / line
		if not p.exists():
			raise UserError(f'{series}:{no}: {line} does not exist',
					'fix the series file or restore the patch')
		out.append(p)
	if not out:
		raise UserError(f'{series} lists no patches')
	return out


def cover_base(tree) -> str:
	"""The base as a cover letter names it: a package and version, or
	for a developer's tree (--tree) what git describes and the commit,
	never the tree's local path, which means nothing to a reader."""
	if tree.name == 'tree':
		return f'{tree.version} (commit {tree.commit[:12]}, {tree.ref})'
	return f'{tree.origin} (commit {tree.commit[:12]}, {tree.ref})'


def cover_description(patches: Path) -> str:
	"""Subject and blurb of the cover letter, as a branch description."""
	cover = patches / COVER
	if not cover.exists():
		return ''
	text = cover.read_text()
	m = re.search(r'^Subject: \[PATCH[^\]]*\] (.*(?:\n [^\n]*)*)\n', text,
		      re.M)
	subject = m.group(1).replace('\n ', ' ').strip() if m else ''
	body = text.split('\n\n', 1)[1] if '\n\n' in text else ''
	# The blurb is what precedes the shortlog; format-patch writes the
	# shortlog as 'Author (N):' lines after it.
	blurb = re.split(r'\n[^\n]+ \(\d+\):\n', '\n' + body, maxsplit=1)[0]
	return f'{subject}\n\n{blurb.strip()}\n'


def corrupt(e: GitError) -> str:
	"""git's words when it could not read a patch at all ('corrupt
	patch at line 838'), '' for a patch that is well formed."""
	m = re.search(r'corrupt patch at line \d+|patch fragment without '
		      r'header at line \d+[^\n]*|No valid patches in input',
		      f'{e.stderr}\n{e.stdout}')
	return m.group(0) if m else ''


class Series:
	def __init__(self, tree: BaseTree, patches: Path,
		     ops: Optional[Ops] = None) -> None:
		self.tree = tree
		self.patches = patches
		self.ops = ops or Ops()
		try:
			self.git_dir = Path(self._git('rev-parse',
						      '--absolute-git-dir'))
		except GitError as e:
			raise UserError(f'{tree.path} is not a git repository',
					'run inv base, or pass --tree with a '
					'kernel git clone') from e

	def _git(self, *args, env=None, input=None,
		 keep_newline: bool = False) -> str:
		return self.ops.git(self.tree.path, *args, env=env, input=input,
				    keep_newline=keep_newline)

	def am_in_progress(self) -> bool:
		"""Has a git am stopped at a conflict in the tree?"""
		return (self.git_dir / 'rebase-apply').exists()

	def _current_branch(self) -> Optional[str]:
		"""The branch checked out, None when HEAD is detached."""
		try:
			return self._git('symbolic-ref', '-q', '--short', 'HEAD')
		except GitError:
			return None

	def head(self) -> str:
		"""The commit checked out."""
		return self._git('rev-parse', 'HEAD')

	def stopped_am(self) -> str:
		"""The patch a stopped git am is at ('"perfctr: build it"'), ''
		if none is stopped."""
		if not self.am_in_progress():
			return ''
		d = self.git_dir / 'rebase-apply'
		for name in ('final-commit', 'msg'):
			try:
				subject = (d / name).read_text().strip().splitlines()
			except OSError:
				continue
			if subject:
				return f'"{subject[0][:100]}"'
		return 'a patch'

	def check_not_mid_am(self) -> None:
		"""A git am an earlier run left stopped (at a conflict) is named
		before anything else is done: nothing may build or test a tree
		half way through a series."""
		where = self.stopped_am()
		if where:
			raise UserError(
				f'{self.tree.path} is in the middle of a "git am" an '
				f'earlier run left (stopped at {where}; a clone '
				'sharing this cache sees it too)',
				'resolve it and run "git am --continue" there, then '
				'"inv export"; or throw it away with '
				'"inv apply --abort" (the work branch is kept)')

	def check_clean(self) -> None:
		self.check_not_mid_am()
		dirty = self._git('diff', '--name-only').split() + \
			self._git('diff', '--name-only', '--cached',
				  'HEAD').split()
		if dirty:
			raise UserError(
				f'{self.tree.path} has uncommitted changes: '
				f'{", ".join(sorted(set(dirty))[:10])}',
				'commit them (then "inv export" to put them in '
				'the series) or "git stash" them; nothing was '
				'touched')

	def branch_tip(self) -> Optional[str]:
		"""The work branch's commit; None if there is no such branch."""
		return self.resolve(f'refs/heads/{WORK_BRANCH}')

	def resolve(self, ref: str) -> Optional[str]:
		"""The commit @ref names; None if it names none."""
		try:
			return self._git('rev-parse', '-q', '--verify',
					 f'{ref}^{{commit}}')
		except GitError:
			return None

	def matches_patches(self) -> bool:
		"""Does the work branch export to exactly what patches/ holds?"""
		if self.branch_tip() is None:
			return False
		try:
			merge_base = self._git('merge-base', self.tree.commit,
					       WORK_BRANCH)
		except GitError:
			return False
		if merge_base != self.tree.commit:
			return False
		with tempfile.TemporaryDirectory() as tmp:
			self.format_patches(Path(tmp))
			names = sorted(p.name for p in Path(tmp).iterdir())
			mine = sorted(p.name for p in self.patches.iterdir()
				      if p.suffix == '.patch' or p.name == 'series')
			if names != mine:
				return False
			_, mismatch, errors = filecmp.cmpfiles(
				tmp, self.patches, names, shallow=False)
			return not mismatch and not errors

	def apply(self) -> ApplyResult:
		patches = read_series(self.patches)
		self.check_clean()
		names = [p.name for p in patches]
		if self.matches_patches():
			if self._current_branch() != WORK_BRANCH:
				self._git('checkout', '-q', WORK_BRANCH)
			return ApplyResult(WORK_BRANCH, self.branch_tip(),
					   names, changed=False)

		saved = self.keep_unexported()
		head, done = self._commit_patches(patches)
		if done < len(patches):
			# A patch needs a 3-way merge or conflicts: finish with
			# git am in the work tree, where the user can resolve.
			self._git('checkout', '-q', '--detach', head)
			for i, p in enumerate(patches[done:], done + 1):
				progress(f'apply [{i}/{len(patches)}] {p.name} '
					 '(git am -3)')
				try:
					self.am(p)
				except GitError as e:
					if corrupt(e):
						self.abort()
						raise self._corrupt(p, e) from None
					raise self._conflict(p, e) from None
			head = self.head()
		else:
			# Only the files that differ from what is checked out
			# are written, so make rebuilds only what changed.
			self._git('checkout', '-q', '--detach', head)
		self.move_work_branch(head, cover_description(self.patches))
		self.set_ref(APPLIED_REF, head)
		return ApplyResult(WORK_BRANCH, head, names, changed=True,
				   saved_branch=saved)

	def commits(self) -> str:
		"""The tip of the commits apply would make of these patches,
		made in the tree's object store only: no branch moves, no file
		in the work tree changes (the docs' range-diff uses it)."""
		patches = read_series(self.patches)
		head, done = self._commit_patches(patches, quiet=True)
		if done < len(patches):
			raise UserError(f'{patches[done].name} of {self.patches} '
					f'does not apply as is onto {self.tree.commit[:12]}',
					'that series was made for another base')
		return head

	def range_diff(self, old: str, new: str,
		       old_base: Optional[str] = None) -> str:
		"""git range-diff of two versions of the series (tips in this
		tree), each counted from its base."""
		return self._git('range-diff', '--no-color',
				 f'{old_base or self.tree.commit}..{old}',
				 f'{self.tree.commit}..{new}',
				 keep_newline=True)

	def keep_unexported(self) -> str:
		"""Keep work branch commits that were never exported (neither
		the base nor what the last apply or export made) as a branch
		perfctr-saved-<time>; its name, '' when there was nothing."""
		tip = self.branch_tip()
		if not tip or tip in (self.resolve(APPLIED_REF), self.tree.commit):
			return ''
		stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
		saved = f'{WORK_BRANCH}-saved-{stamp}'
		self._git('branch', saved, tip)
		progress(f'{WORK_BRANCH} in {self.tree.path} had commits that '
			 f'were never exported; kept them as branch {saved}')
		return saved

	def branch_commits(self) -> List[str]:
		"""The work branch's commits since the base, oldest first."""
		return self._git('rev-list', '--reverse',
				 f'{self.tree.commit}..{WORK_BRANCH}').split()

	def subject(self, commit: str) -> str:
		return self._git('log', '-1', '--format=%s', commit)

	def checkout(self, commit: Optional[str] = None) -> None:
		"""Check out @commit (detached), or the work branch."""
		if commit:
			self._git('checkout', '-q', '--detach', commit)
		else:
			self._git('checkout', '-q', WORK_BRANCH)

	def move_work_branch(self, commit: str, description: str = '') -> None:
		"""Point the work branch at @commit and check it out (with
		@description, the cover letter's, as the branch's)."""
		self._git('branch', '-f', WORK_BRANCH, commit)
		self._git('checkout', '-q', WORK_BRANCH)
		if description:
			self._git('config', f'branch.{WORK_BRANCH}.description',
				  description)

	def applies_cleanly(self, patch: Path) -> bool:
		"""Does @patch apply to the checked-out tree without a merge?"""
		try:
			self._git('apply', '--check', str(patch))
			return True
		except GitError:
			return False

	def am(self, patch: Path) -> None:
		"""git am -3 one patch as apply commits it (pinned committer);
		a GitError when it stops at a conflict."""
		self._git('am', '-q', '-3', '--committer-date-is-author-date',
			  str(patch), env=COMMITTER)

	def abort_am(self) -> None:
		if self.am_in_progress():
			self._git('am', '--abort')

	def unmerged_files(self) -> List[str]:
		return self._git('diff', '--name-only', '--diff-filter=U').split()

	def set_ref(self, ref: str, commit: Optional[str]) -> None:
		"""Point @ref at @commit; None deletes it."""
		if commit:
			self._git('update-ref', ref, commit)
		else:
			self._git('update-ref', '-d', ref)

	def pack_objects_since_base(self) -> None:
		"""Pack every object the work branch adds to the base into
		the tree's own store (git writes none it can already read,
		e.g. through objects/info/alternates)."""
		objects = self._git('rev-list', '--objects',
				    f'{self.tree.commit}..refs/heads/{WORK_BRANCH}',
				    keep_newline=True)
		self._git('pack-objects', '-q',
			  str(self.git_dir / 'objects' / 'pack' / 'pack'),
			  input=objects)

	def touched_files(self) -> List[str]:
		"""The files the work branch changes from the base."""
		return self._git('diff', '--name-only', self.tree.commit,
				 WORK_BRANCH).split()

	def _commit_patches(self, patches: List[Path],
			    quiet: bool = False) -> tuple:
		"""Commit patches onto the base without touching the work tree.

		The same commits git am would make (mailinfo, the pinned
		committer, committer date = author date), built in a private
		index.  Stops at the first patch that does not apply as is;
		returns (last commit made, number of patches done).
		"""
		parent = self.tree.commit
		with tempfile.TemporaryDirectory() as tmp:
			env = {'GIT_INDEX_FILE': str(Path(tmp) / 'index')}
			msgf, patchf = Path(tmp) / 'msg', Path(tmp) / 'patch'
			for i, p in enumerate(patches):
				if not quiet:
					progress(f'apply [{i + 1}/{len(patches)}] '
						 f'{p.name}')
				info = self._git('mailinfo', '-u', str(msgf),
						 str(patchf), input=p.read_bytes())
				fields = dict(l.split(': ', 1) for l in
					      info.splitlines() if ': ' in l)
				self._git('read-tree', parent, env=env)
				try:
					self._git('apply', '--cached', str(patchf),
						  env=env)
				except GitError as e:
					if corrupt(e):
						raise self._corrupt(p, e) from None
					return parent, i
				tree = self._git('write-tree', env=env)
				body = msgf.read_text()
				raw = fields.get('Subject', '') + '\n\n' + body
				message = self._git('stripspace', input=raw,
						    keep_newline=True)
				date = fields.get('Date', '')
				cenv = dict(COMMITTER,
					    GIT_AUTHOR_NAME=fields.get('Author', ''),
					    GIT_AUTHOR_EMAIL=fields.get('Email', ''),
					    GIT_AUTHOR_DATE=date,
					    GIT_COMMITTER_DATE=date)
				parent = self._git('commit-tree', tree, '-p',
						   parent, env=cenv, input=message)
		return parent, len(patches)

	def _corrupt(self, patch: Path, e: GitError) -> UserError:
		said = corrupt(e)
		return UserError(
			f'{patch.name} is not a well-formed patch: git says '
			f'"{said}" (the file is cut short or was edited by hand; '
			'this is not a conflict with the base)',
			f'restore {self.patches / patch.name} (git checkout -- '
			f'{patch.parent.name}/{patch.name}, or "inv export" from '
			f'the work branch); {self.tree.path} was left as it was')

	def _conflict(self, patch: Path, e: GitError) -> PatchConflict:
		files = self.unmerged_files()
		if not files:
			diff = patch.read_text(errors='replace')
			files = sorted(set(re.findall(r'^diff --git a/(\S+)', diff,
						      re.M)))
			how = 'did not apply, even with a 3-way merge (is ' \
			      'the base the one the series was made for?)'
		else:
			how = 'conflicts'
		return PatchConflict(
			patch.name, files,
			f'{patch.name} {how} in: {", ".join(files)}\n'
			f'  git said: {(e.stderr or e.stdout or "").strip()[:500]}',
			f'the tree {self.tree.path} is left mid-"git am": '
			'resolve the files, "git add" them, "git am --continue", '
			'then "inv export" to write the resolved series; or '
			'"inv apply --abort" to go back, nothing lost')

	def abort(self) -> str:
		"""Throw a stopped git am away; what the tree is on now, in
		words."""
		had = self.am_in_progress()
		self.abort_am()
		if self.branch_tip():
			self.checkout()
		branch = self._current_branch()
		now = (f'back on branch {branch}' if branch else
		       f'HEAD detached at {self.head()[:12]} (no {WORK_BRANCH} '
		       'branch yet: "inv apply" makes it)')
		return (f'aborted the stopped "git am"; {now}' if had else
			f'no "git am" was in progress; {now}')

	def autosquash(self) -> str:
		"""git rebase --autosquash of the work branch, in a scratch worktree.

		fixup!/squash!/amend! commits are folded into their targets
		without rewriting the files in the developer's tree: the result
		has the same tree as the branch had, so only the branch moves.
		"""
		self.check_clean()
		tip = self.branch_tip()
		if tip is None:
			raise UserError(f'no {WORK_BRANCH} branch', 'run inv apply first')
		with tempfile.TemporaryDirectory() as tmp:
			wt = Path(tmp) / 'wt'
			self._git('worktree', 'add', '-q', '--detach', str(wt), tip)
			try:
				self.ops.git(wt, 'rebase', '-q', '-i', '--autosquash',
					     self.tree.commit,
					     env=dict(COMMITTER,
						      GIT_SEQUENCE_EDITOR='true'))
				new = self.ops.git(wt, 'rev-parse', 'HEAD')
			except GitError as e:
				raise UserError('the autosquash rebase stopped: '
						f'{(e.stderr or "").strip()[:400]}',
						'squash by hand with git rebase -i') from None
			finally:
				self._git('worktree', 'remove', '--force', str(wt))
		if self._git('rev-parse', f'{new}^{{tree}}') != \
		   self._git('rev-parse', f'{tip}^{{tree}}'):
			raise InfraError('autosquash changed the tree; branch left '
					 'as it was')
		self._git('update-ref', f'refs/heads/{WORK_BRANCH}', new, tip)
		self._git('reset', '-q')
		return new

	def format_patches(self, out: Path) -> List[str]:
		"""git format-patch the work branch into out; return names."""
		tip_date = self._git('log', '-1', '--format=%cI', WORK_BRANCH)
		desc = self._git('config', '--default', '',
				 f'branch.{WORK_BRANCH}.description')
		args = ['format-patch', '-q', '--no-signature', '--cover-letter',
			f'--base={self.tree.commit}', '-o', str(out)]
		if desc.strip():
			args.append('--cover-from-description=subject')
		args.append(f'{self.tree.commit}..{WORK_BRANCH}')
		env = dict(COMMITTER, GIT_COMMITTER_DATE=tip_date)
		self._git(*args, env=env)
		names = sorted(p.name for p in out.iterdir()
			       if p.name != COVER)
		(out / 'series').write_text(
			'# The perfctr series, in order.  Regenerate with '
			'"inv export".\n' + ''.join(f'{n}\n' for n in names))
		self._fix_cover(out / COVER)
		return names

	def _fix_cover(self, cover: Path) -> None:
		"""Name the exact base in the cover letter's blurb."""
		text = cover.read_text()
		line = f'Base: {cover_base(self.tree)}'
		if re.search(r'^Base: .*$', text, re.M):
			text = re.sub(r'^Base: .*$', line, text, count=1,
				      flags=re.M)
		cover.write_text(text)

	def export(self) -> List[str]:
		if self.am_in_progress():
			raise UserError('a "git am" is in progress in '
					f'{self.tree.path}',
					'finish it (git am --continue) or abort it '
					'(inv apply --abort) first')
		if self.branch_tip() is None:
			raise UserError(f'no {WORK_BRANCH} branch in '
					f'{self.tree.path}', 'run inv apply first')
		self.patches.mkdir(parents=True, exist_ok=True)
		names = self._write_patches()
		# Make the branch canonical: the commits an apply of these
		# patches makes (pinned committer, committer date = author
		# date), so apply followed by export gives the same bytes on
		# any machine.  Same trees, so no file in the tree changes.
		tip = self.branch_tip()
		head, done = self._commit_patches(read_series(self.patches),
						  quiet=True)
		if done == len(names) and head != tip and \
		   self._git('rev-parse', f'{head}^{{tree}}') == \
		   self._git('rev-parse', f'{tip}^{{tree}}'):
			on_branch = self._current_branch() == WORK_BRANCH
			self._git('update-ref', f'refs/heads/{WORK_BRANCH}', head,
				  tip)
			if on_branch:
				self._git('reset', '-q')	# index only
			names = self._write_patches()
		self.set_ref(APPLIED_REF, self.branch_tip())
		return names

	def _write_patches(self) -> List[str]:
		with tempfile.TemporaryDirectory() as tmp:
			names = self.format_patches(Path(tmp))
			for old in self.patches.glob('*.patch'):
				old.unlink()
			for p in Path(tmp).iterdir():
				shutil.copyfile(p, self.patches / p.name)
		return names
