# SPDX-License-Identifier: GPL-2.0
"""Port the series to another base: inv rebase --onto BASE.

The source series (patches/ on the LTS base, by default) is applied patch
by patch onto the destination base with git am -3, in the destination's
tree, on its 'perfctr' branch.  Each patch is reported as applied cleanly,
applied with a 3-way merge, or conflicted.  A conflict stops with the tree
left mid-"git am", the files named and the next command printed; the state
is kept in the destination's git directory, so "inv rebase --continue"
picks up after "git am --continue", and "inv rebase --abort" goes back.

At the end the destination's series directory (bases.toml: patches-mainline
for mainline) is written with inv export's canonical format, and a
git range-diff of the old series against the new one is printed and kept
in results/.  While the rebase is under way the destination repository
borrows the source repository's objects (objects/info/alternates): git am
-3 needs the blobs the patches were made against to merge, and range-diff
the old commits.  Nothing is copied between the trees, and the borrowing
ends with the rebase (finished or aborted).
"""

import datetime
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from . import paths
from .errors import GitError, PatchConflict, UserError
from .ops import progress
from .series import COVER, WORK_BRANCH, Series, cover_description, \
	read_series

STATE = 'perfctr-rebase.json'
TMP_REF = 'refs/perfctr/rebase-source'


@dataclass
class Step:
	patch: str
	how: str		# clean, 3-way merge, conflict resolved by hand


@dataclass
class RebaseResult:
	steps: List[Step]
	tip: str
	range_diff: str
	report: Path


def _state_path(dst: Series) -> Path:
	return dst.git_dir / STATE


def _load(dst: Series) -> Optional[dict]:
	p = _state_path(dst)
	return json.loads(p.read_text()) if p.exists() else None


def _save(dst: Series, state: dict) -> None:
	_state_path(dst).write_text(json.dumps(state, indent=1))


def start(src: Series, dst: Series, command: str = 'inv rebase') -> \
		RebaseResult:
	"""Begin the port.  @command is the "inv rebase" command line as the
	user gave it (every option, without --continue/--abort): a stop
	prints it back with --continue and --abort, ready to paste."""
	if _load(dst):
		raise UserError(f'a rebase onto {dst.tree.path} is already under '
				'way', f'{command} --continue, or {command} '
				'--abort to drop it')
	if src.tree.path == dst.tree.path:
		raise UserError('the source and destination are the same tree',
				'pass --onto another base (mainline, or --tree '
				'PATH --ref REF)')
	progress(f'rebase: source series {src.patches} on {src.tree.origin}')
	applied = src.apply()		# the old series as commits, for range-diff
	patches = read_series(src.patches)
	dst.check_clean()
	old_branch = dst.branch_tip()
	saved = dst.keep_unexported()
	dst.checkout(dst.tree.commit)
	alternates = _borrow(dst, src.tree.path)
	state = {'alternates': alternates,'source_patches': str(src.patches),
		 'source_tree': str(src.tree.path),
		 'source_base': src.tree.commit,
		 'source_tip': applied.tip,
		 'patches': [str(p) for p in patches],
		 'next': 0, 'head': dst.tree.commit, 'steps': [],
		 'old_branch': old_branch or '', 'saved_branch': saved,
		 'command': command}
	_save(dst, state)
	return _run(src, dst, state)


def resume(src: Series, dst: Series, command: str = '') -> RebaseResult:
	state = _load(dst)
	if not state:
		raise UserError(f'no rebase under way in {dst.tree.path}',
				f'start one with {command or "inv rebase --onto BASE"}')
	command = command or state.get('command', 'inv rebase')
	state['command'] = command
	if dst.am_in_progress():
		raise UserError('the conflicted patch is not finished yet',
				f'in {dst.tree.path}: resolve, "git add" the files, '
				f'"git am --continue", then {command} --continue')
	head = dst.head()
	if head == state['head']:
		raise UserError('the conflicted patch was not committed (git am '
				'--skip or --abort?)',
				'apply it again by hand and commit it, or '
				f'{command} --abort')
	name = Path(state['patches'][state['next']]).name
	state['steps'].append({'patch': name,
			       'how': 'conflict, resolved by hand'})
	state['next'] += 1
	state['head'] = head
	_save(dst, state)
	return _run(src, dst, state)


def abort(dst: Series) -> None:
	state = _load(dst)
	dst.abort_am()
	if state:
		_give_back(dst, state.get('alternates'))
		if state.get('old_branch'):
			dst.checkout(state['old_branch'])
			dst.move_work_branch(state['old_branch'])
		_state_path(dst).unlink()


def _run(src: Series, dst: Series, state: dict) -> RebaseResult:
	patches = [Path(p) for p in state['patches']]
	while state['next'] < len(patches):
		i = state['next']
		p = patches[i]
		how = 'clean' if dst.applies_cleanly(p) else '3-way merge'
		try:
			dst.am(p)
		except GitError as e:
			progress(f'rebase [{i + 1}/{len(patches)}] {p.name}: '
				 'CONFLICT')
			_save(dst, state)
			files = dst.unmerged_files()
			raise PatchConflict(
				p.name, files,
				f'{p.name} conflicts on {dst.tree.origin} in: '
				f'{", ".join(files) or "(did not apply at all)"}\n'
				f'  git said: {(e.stderr or e.stdout or "").strip()[:500]}\n'
				f'  so far: ' + ', '.join(
					f'{s["patch"][:4]} {s["how"]}'
					for s in state['steps']),
				f'in {dst.tree.path}: resolve the files, "git add" '
				'them, "git am --continue", then '
				f'"{state.get("command", "inv rebase")} --continue"; '
				f'or "{state.get("command", "inv rebase")} --abort"'
				) from None
		state['steps'].append({'patch': p.name, 'how': how})
		state['next'] = i + 1
		state['head'] = dst.head()
		_save(dst, state)
		progress(f'rebase [{i + 1}/{len(patches)}] {p.name}: {how}')
	return _finish(src, dst, state)


def _finish(src: Series, dst: Series, state: dict) -> RebaseResult:
	dst.move_work_branch(dst.head(), cover_description(src.patches))
	dst.patches.mkdir(parents=True, exist_ok=True)
	if not (dst.patches / COVER).exists() and (src.patches / COVER).exists():
		shutil.copyfile(src.patches / COVER, dst.patches / COVER)
	dst.export()
	rd = range_diff(dst, Path(state['source_tree']), state['source_base'],
			state['source_tip'])
	stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
	outdir = paths.results_dir() / f'rebase-{stamp}'
	outdir.mkdir(parents=True, exist_ok=True)
	(outdir / 'range-diff.txt').write_text(rd)
	steps = [Step(**s) for s in state['steps']]
	(outdir / 'rebase.json').write_text(json.dumps({
		'from': {'patches': state['source_patches'],
			 'base': state['source_base']},
		'onto': {'origin': dst.tree.origin, 'base': dst.tree.commit,
			 'patches': str(dst.patches)},
		'steps': state['steps'],
		'tip': dst.branch_tip()}, indent=1) + '\n')
	_keep_series_objects(dst)
	_give_back(dst, state.get('alternates'))
	_state_path(dst).unlink()
	return RebaseResult(steps, dst.branch_tip(), rd, outdir)


def _alternates(dst: Series) -> Path:
	return dst.git_dir / 'objects' / 'info' / 'alternates'


def _borrow(dst: Series, src_tree: Path) -> Optional[str]:
	"""Let dst read src's objects; return what alternates held before."""
	alt = _alternates(dst)
	had = alt.read_text() if alt.exists() else None
	src_objects = Path(dst.ops.git(src_tree, 'rev-parse',
				       '--absolute-git-dir')) / 'objects'
	alt.parent.mkdir(parents=True, exist_ok=True)
	alt.write_text((had or '') + f'{src_objects}\n')
	return had


def _keep_series_objects(dst: Series) -> None:
	"""Copy what the new commits use from the borrowed objects.

	git writes no object it can already read, so a blob the destination
	found through the alternates (a new file identical to the source's)
	exists only there.  A pack of every object the series adds to the
	base, made while the alternates are still there, makes the
	destination whole (what git clone --dissociate does, for the series'
	objects only).
	"""
	dst.pack_objects_since_base()


def _give_back(dst: Series, had: Optional[str]) -> None:
	alt = _alternates(dst)
	if had is None:
		alt.unlink(missing_ok=True)
	else:
		alt.write_text(had)


def range_diff(dst: Series, src_tree: Path, src_base: str,
	       src_tip: str) -> str:
	"""git range-diff of the old series against the new (objects borrowed)."""
	try:
		dst.set_ref(TMP_REF, src_tip)
		return dst.range_diff(TMP_REF, WORK_BRANCH, old_base=src_base)
	finally:
		dst.set_ref(TMP_REF, None)


def command(onto: str, base: Optional[str], tree: Optional[str],
	    ref: Optional[str], offline: bool) -> str:
	"""The inv rebase command with every option given, for a stop to
	print with --continue or --abort."""
	import shlex
	argv = ['inv', 'rebase']
	if not tree:
		argv += ['--onto', onto]
	for name, value in (('base', base), ('tree', tree), ('ref', ref)):
		if value:
			argv += [f'--{name}', value]
	if offline:
		argv.append('--offline')
	return ' '.join(shlex.quote(a) for a in argv)


def main(onto: str, base: Optional[str], tree: Optional[str],
	 ref: Optional[str], offline: bool, ops, continue_: bool = False,
	 abort_: bool = False) -> None:
	"""inv rebase: start, continue or abort the port; print the range-diff
	and how each patch went."""
	from . import pipeline
	src_o = pipeline.options(base=base, offline=offline)
	dst_o = pipeline.options(base=None if tree else onto, tree=tree,
				 ref=ref, offline=offline)
	src_t = pipeline.resolve_base(src_o, ops)
	dst_t = pipeline.resolve_base(dst_o, ops)
	src, dst = pipeline.series_for(src_t), pipeline.series_for(dst_t)
	if abort_:
		abort(dst)
		print(f'rebase aborted; {dst_t.path} is back where it was')
		return
	again = command(onto, base, tree, ref, offline)
	r = resume(src, dst, again) if continue_ else start(src, dst, again)
	print(r.range_diff)
	for s in r.steps:
		print(f'  {s.how:27} {s.patch}')
	print(f'{dst_t.origin}: branch perfctr at {r.tip[:12]}; series '
	      f'written to {dst.patches}; range-diff and report in {r.report}')
