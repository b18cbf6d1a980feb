# SPDX-License-Identifier: GPL-2.0
"""The published results snapshot: docs/snapshot/published.json.

results/ is local and ignored by git, so a fresh clone's docs would show
no results at all.  The snapshot is the summary of the full runs of one
version of the series (x86_64, ppc64le, the debug kernel, and benchmark
runs when there are any), committed with the series, so that the
reviewers' site of any clone shows what ran where and how it ended.

It is written by "inv publish" from results directories, never by hand:
each run's arch, kernel config, kernel, accelerator, QEMU, compiler (from
the build directory's .config while it exists), start time and duration,
its counts per test family, its skips and failures with their reasons;
the series it ran (the tip of the applied series, checked against the
patches being published) and the previous published version (the git
tree of its patches/ in this repository's history, for the range-diff);
and the machine, when the runs' logs show they ran on the machine
publishing them.

"Previous published version": the version the snapshot being replaced
recorded, when its series differs from the new one; the very first
snapshot names it with --previous REV (a commit of this repository whose
patches/ held it).  The docs compare the series of the checkout with the
snapshot's: the same, and the range-diff page shows what changed since
the previous version; different, and it shows what changed since the
snapshot's own version, and the results pages say the snapshot is of
another version.
"""

import datetime
import json
import os
import platform
import re
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from . import paths
from .errors import UserError
from .ops import Ops

FORMAT = 1
SNAPSHOT = paths.REPO / 'docs' / 'snapshot' / 'published.json'
MAX_SKIPS = 40


@dataclass(frozen=True)
class Reason:
	name: str
	why: str


@dataclass(frozen=True)
class Run:
	"""One full run, as much of it as the site shows."""
	arch: str
	config: str			# 'default' or 'debug'
	cpu: str			# QEMU CPU model where one was chosen
	kernel: str
	base: str			# 'linux-source-6.12 6.12.117-1'
	base_commit: str
	series_tip: str
	accel: str
	accel_reason: str
	qemu: str			# 'system' or '10.0.2 (debian ...)'
	gcc: str
	started: str
	command: str
	seconds: Dict[str, float]
	counts: Dict[str, int]
	result: str
	families: Dict[str, Dict[str, int]]
	skips: List[Reason]
	failures: List[Reason]
	local_dir: str = ''		# set for local runs only, never published

	@property
	def label(self) -> str:
		return f'{self.arch} {self.config}' + \
			(f' ({self.cpu})' if self.cpu else '')


@dataclass(frozen=True)
class Bench:
	"""One inv bench run: bench.json's meta, metrics (without the raw
	rounds) and the table inv bench printed."""
	meta: dict
	metrics: List[dict]
	local_dir: str = ''
	table: str = ''


@dataclass(frozen=True)
class Version:
	name: str			# pub-1, pub-2, ... (not the posting's vN)
	patches_tree: str		# git tree id of patches/ in this repo
	project_commit: str		# a commit of this repo holding it
	series_tip: str			# the applied series' tip (pinned dates)
	base_commit: str


@dataclass(frozen=True)
class Snapshot:
	published: str
	version: Version
	previous: Optional[Version]
	machine: Dict[str, str]
	tools: Dict[str, str]
	runs: List[Run]
	bench: List[Bench] = field(default_factory=list)
	format: int = FORMAT


def _first_line(text: str) -> str:
	lines = [l.strip() for l in (text or '').splitlines() if l.strip()]
	return lines[0][:300] if lines else ''


def _gcc(build_log: str) -> str:
	"""The compiler the kernel was built with, from its .config."""
	if not build_log:
		return ''
	config = Path(build_log).parent / '.config'
	try:
		m = re.search(r'^CONFIG_CC_VERSION_TEXT="(.*)"$',
			      config.read_text(errors='replace'), re.M)
	except OSError:
		return ''
	return m.group(1) if m else ''


def run_from_results(d: dict, local_dir: str = '') -> Run:
	"""A Run from a results.json as inv check writes it."""
	from . import results
	fams: Dict[str, Dict[str, int]] = {}
	for t in d.get('tests', []):
		f = fams.setdefault(t.get('family', '?'), {})
		f[t.get('status', '?')] = f.get(t.get('status', '?'), 0) + 1
	q = d.get('qemu') or {}
	base = d.get('base') or {}
	acc = d.get('accelerator') or {}
	tests = d.get('tests', [])
	return Run(
		arch=d.get('arch', '?'),
		config=results.config_of(d),
		cpu=results.cpu_of(d), kernel=d.get('kernel_release', '?'),
		base=base.get('origin', '?'), base_commit=base.get('commit', ''),
		series_tip=base.get('series_tip', ''),
		accel=acc.get('accel', '?'), accel_reason=acc.get('reason', ''),
		qemu=(f'{q["version"]} ({q.get("origin", "")})'
		      if q.get('version') else 'system'),
		gcc=_gcc((d.get('logs') or {}).get('build', '')),
		started=d.get('started', ''), command=d.get('command', ''),
		seconds={k: v for k, v in (d.get('durations') or {}).items()
			 if isinstance(v, (int, float))},
		counts={k: int(v) for k, v in (d.get('counts') or {}).items()},
		result=d.get('result', '?'), families=fams,
		skips=[Reason(t['name'], _first_line(t.get('message', '')))
		       for t in tests if t.get('status') == 'SKIP'][:MAX_SKIPS],
		failures=[Reason(t['name'], _first_line(t.get('message', '')))
			  for t in tests if t.get('status') == 'FAIL'],
		local_dir=local_dir)


def _reasons(items, where: str) -> List[Reason]:
	out = []
	for r in items or []:
		if not isinstance(r, dict) or not {'name', 'why'} <= set(r):
			raise ValueError(f'{where}: each entry needs name and why')
		out.append(Reason(str(r['name']), str(r['why'])))
	return out


def _version(d: Optional[dict], where: str) -> Optional[Version]:
	if d is None:
		return None
	try:
		return Version(**d)
	except TypeError as e:
		raise ValueError(f'{where}: {e}') from None


def from_dict(d: dict) -> Snapshot:
	"""Parse and check a snapshot; ValueError names what is wrong."""
	if not isinstance(d, dict) or d.get('format') != FORMAT:
		raise ValueError(f'format is {d.get("format") if isinstance(d, dict) else d!r}, '
				 f'this tool reads format {FORMAT}')
	runs = []
	for i, r in enumerate(d.get('runs') or []):
		r = dict(r)
		try:
			r['skips'] = _reasons(r.get('skips'), f'runs[{i}].skips')
			r['failures'] = _reasons(r.get('failures'),
						 f'runs[{i}].failures')
			runs.append(Run(**r))
		except TypeError as e:
			raise ValueError(f'runs[{i}]: {e}') from None
	bench = []
	for i, b in enumerate(d.get('bench') or []):
		if not isinstance(b, dict) or not isinstance(b.get('metrics'), list):
			raise ValueError(f'bench[{i}]: needs meta and a metrics list')
		bench.append(Bench(meta=b.get('meta') or {}, metrics=b['metrics'],
				   table=str(b.get('table') or '')))
	try:
		return Snapshot(
			published=str(d['published']),
			version=_version(d['version'], 'version'),
			previous=_version(d.get('previous'), 'previous'),
			machine=dict(d.get('machine') or {}),
			tools=dict(d.get('tools') or {}), runs=runs, bench=bench)
	except KeyError as e:
		raise ValueError(f'{e.args[0]} is missing') from None


def load(path: Path = SNAPSHOT) -> Optional[Snapshot]:
	"""The committed snapshot, None when there is none; a broken one is
	a UserError naming the file and the problem."""
	if not path.exists():
		return None
	try:
		return from_dict(json.loads(path.read_text()))
	except ValueError as e:
		raise UserError(f'{path}: {e}',
				'write it again with "inv publish" (it is '
				'generated, never edited by hand)') from None


def to_json(s: Snapshot) -> str:
	d = asdict(s)
	for r in d['runs']:
		r.pop('local_dir')
	for b in d['bench']:
		b.pop('local_dir')
	return json.dumps(d, indent=1, sort_keys=True) + '\n'


# -- what the checkout holds -----------------------------------------------

def _git(ops: Ops, *args: str, env: Optional[dict] = None) -> str:
	res = ops.run(['git', '-C', str(paths.REPO), *args], env=env,
		      check=False)
	if res.returncode:
		raise UserError(f'git {" ".join(args)}: {res.output.strip()[:300]}',
				'this needs the repository as a git clone')
	return res.output.strip()


def patches_tree(patches: Path, ops: Ops) -> str:
	"""The git tree id of a series directory as the checkout holds it
	(committed or not): equal ids, equal series."""
	rel = patches.resolve().relative_to(paths.REPO)
	with tempfile.TemporaryDirectory() as tmp:
		env = {'GIT_INDEX_FILE': str(Path(tmp) / 'index')}
		_git(ops, 'add', '-f', '--', str(rel), env=env)
		return _git(ops, 'write-tree', f'--prefix={rel}/', env=env)


def extract_tree(tree_id: str, out: Path, ops: Ops) -> bool:
	"""Write a tree of this repository's history into out (False when the
	history of this checkout does not hold it)."""
	res = ops.run(['git', '-C', str(paths.REPO), 'cat-file', '-t',
		       tree_id], check=False)
	if res.returncode or res.output.strip() != 'tree':
		return False
	out.mkdir(parents=True, exist_ok=True)
	tar = out / '.tree.tar'
	if ops.run(['git', '-C', str(paths.REPO), 'archive', '--format=tar',
		    '-o', str(tar), tree_id], check=False).returncode:
		return False
	ops.run(['tar', '-x', '-f', str(tar), '-C', str(out)])
	tar.unlink()
	return True


# -- inv publish ---------------------------------------------------------------

def _machine(runs_here: bool) -> Dict[str, str]:
	if not runs_here:
		return {'note': 'not recorded: the runs\' logs are not on the '
			'machine that published them'}
	m = {'arch': platform.machine(), 'cpus': str(os.cpu_count()),
	     'host_kernel': platform.release()}
	try:
		mem = re.search(r'^MemTotal:\s+(\d+) kB', Path(
			'/proc/meminfo').read_text(), re.M)
		m['memory'] = f'{int(mem.group(1)) / 2**20:.0f} GiB'
		cpu = re.search(r'^model name\s*:\s*(.*)$', Path(
			'/proc/cpuinfo').read_text(), re.M)
		if cpu:
			m['cpu'] = cpu.group(1).strip()
		osr = re.search(r'^PRETTY_NAME="(.*)"$', Path(
			'/etc/os-release').read_text(), re.M)
		if osr:
			m['os'] = osr.group(1)
	except OSError:
		pass
	return m


def _tool_version(argv: List[str], ops: Ops) -> str:
	if not ops.which(argv[0]) and not Path(argv[0]).exists():
		return ''
	res = ops.run(argv, check=False, timeout=30)
	return _first_line(res.output) if not res.returncode else ''


def _host_tools(ops: Ops) -> Dict[str, str]:
	"""Versions on the publishing machine of the tools the results do
	not record themselves (x86_64 boots through virtme-ng with the
	system QEMU)."""
	t = {'python': platform.python_version()}
	for name, argv in (('qemu-system-x86_64', ['qemu-system-x86_64',
						   '--version']),
			   ('virtme-ng', [str(Path(sys.executable).parent /
					      'vng'), '--version'])):
		v = _tool_version(argv, ops)
		if v:
			t[name] = v
	return t


def _read_results(d: Path) -> dict:
	f = d / 'results.json'
	try:
		return json.loads(f.read_text())
	except (OSError, ValueError) as e:
		raise UserError(f'{f}: cannot be read ({e})',
				'give --run a results directory that inv check '
				'wrote (it holds results.json)') from None


# What the snapshot keeps of a bench metric (the raw rounds stay in
# the run's bench.json).
BENCH_KEYS = ('name', 'value', 'unit', 'figure', 'instrument', 'method',
	      'what', 'unobservable', 'spread', 'inside_noise', 'boot')


def _read_bench(d: Path) -> Bench:
	f = d / 'bench.json'
	try:
		b = json.loads(f.read_text())
		return Bench(meta=b['meta'], metrics=[
			{k: m[k] for k in BENCH_KEYS if k in m}
			for m in b['metrics']], table=str(b.get('table') or ''))
	except (OSError, ValueError, KeyError, TypeError) as e:
		raise UserError(f'{f}: cannot be read ({e})',
				'give --bench a directory that inv bench '
				'wrote (it holds bench.json)') from None


def _next_name(prev: Optional[Version]) -> str:
	m = re.fullmatch(r'pub-(\d+)', prev.name) if prev else None
	return f'pub-{int(m.group(1)) + 1}' if m else 'pub-1'


@dataclass(frozen=True)
class PublishRequest:
	runs: List[Path]
	bench: List[Path]
	patches: Path
	series_tip: str			# of patches/ applied onto the base
	base_commit: str
	previous: Optional[Version] = None	# --previous, else the old snapshot's
	name: str = ''


def publish(req: PublishRequest, old: Optional[Snapshot], ops: Ops) -> \
		Snapshot:
	"""The snapshot of req's runs; every run must be of the series
	being published."""
	if not req.runs:
		raise UserError('no runs given',
				'inv publish --run results/<dir> for each full run '
				'(x86_64, ppc64le, --debug)')
	data = [(_read_results(d), d) for d in req.runs]
	for d, where in data:
		tip = (d.get('base') or {}).get('series_tip', '')
		if tip != req.series_tip:
			raise UserError(
				f'{where} ran series {tip[:12] or "(unrecorded)"}, '
				f'not {req.series_tip[:12]}, the series in '
				f'{req.patches.name}/',
				'publish only runs of the series as it is now: '
				'run inv check again, or check out the patches '
				'those runs had')
		if d.get('command', '').find('--no-apply') >= 0:
			raise UserError(f'{where} ran with --no-apply (the tree as '
					'it was, not the series)',
					'publish runs that applied the series')
	tree = patches_tree(req.patches, ops)
	previous = req.previous
	if previous is None and old is not None:
		previous = old.version if old.version.patches_tree != tree \
			else old.previous
	version = Version(
		name=req.name or (old.version.name if old and
				  old.version.patches_tree == tree
				  else _next_name(previous)),
		patches_tree=tree, project_commit=_git(ops, 'rev-parse', 'HEAD'),
		series_tip=req.series_tip, base_commit=req.base_commit)
	here = all(Path((d.get('logs') or {}).get('console', '/nonexistent'))
		   .exists() for d, _ in data)
	runs = [run_from_results(d) for d, _ in data]
	return Snapshot(
		published=datetime.datetime.now().isoformat(timespec='seconds'),
		version=version, previous=previous, machine=_machine(here),
		tools=_host_tools(ops) if here else {},
		runs=sorted(runs, key=lambda r: (r.arch, r.config, r.cpu)),
		bench=[_read_bench(d) for d in req.bench])


def version_at(rev: str, patches: Path, name: str, commit_series,
	       ops: Ops) -> Version:
	"""The Version a commit of this repository holds (for --previous):
	commit_series(patches_dir) gives the tip of that series applied."""
	rel = patches.resolve().relative_to(paths.REPO)
	res = ops.run(['git', '-C', str(paths.REPO), 'rev-parse', '--verify',
		       '-q', f'{rev}^{{commit}}'], check=False)
	if res.returncode:
		raise UserError(f'--previous {rev}: no such commit in this '
				'repository',
				'give the commit (or a tag) that published the '
				'previous snapshot: git log -- '
				'docs/snapshot/published.json')
	commit = res.output.strip()
	tree = _git(ops, 'rev-parse', f'{commit}:{rel}')
	with tempfile.TemporaryDirectory() as tmp:
		if not extract_tree(tree, Path(tmp), ops):
			raise UserError(f'{rev}:{rel} cannot be read')
		tip, base = commit_series(Path(tmp))
	return Version(name=name, patches_tree=tree, project_commit=commit,
		       series_tip=tip, base_commit=base)


def main(opts, ops: Ops, runs: Sequence[Path] = (),
	 bench: Sequence[Path] = (), previous: Optional[str] = None,
	 version: str = '') -> None:
	"""inv publish: write SNAPSHOT from the runs (of the series as
	patches/ holds it) and say what it holds."""
	from . import pipeline
	t = pipeline.resolve_base(opts, ops)
	series = pipeline.series_for(t)
	prev = None
	if previous:
		def commit_series(d):
			return pipeline.Series(t, d).commits(), t.commit
		prev = version_at(previous, series.patches, 'pub-1',
				  commit_series, ops)
	req = PublishRequest(runs=list(runs), bench=list(bench),
			     patches=series.patches,
			     series_tip=series.commits(), base_commit=t.commit,
			     previous=prev, name=version)
	snap = publish(req, load(), ops)
	SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
	SNAPSHOT.write_text(to_json(snap))
	print(f'{snap.version.name}: {len(snap.runs)} runs, '
	      f'{len(snap.bench)} bench runs -> {SNAPSHOT}')
