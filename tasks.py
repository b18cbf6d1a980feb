# SPDX-License-Identifier: GPL-2.0
"""perfctr tasks: inv --list; inv --help <task>.

Exit codes: 0 everything passed, 1 a test failed, 2 the run could not be
done (bad input or a missing tool; the message says which and how to fix).
"""

import re
import sys
from pathlib import Path

from invoke import Exit, task

from pytools import pipeline
from pytools.errors import UserError
from pytools.ops import Ops, progress

ARCH_HELP = {'arch': 'x86_64 (default); the arches are pytools/arches/*.py'}
COMMON_HELP = {
	'base': 'lts (default, linux-source-6.12) or mainline (newest in '
		'Debian sid); see pytools/data/bases.toml',
	'tree': 'your own kernel git tree instead of a Debian base',
	'ref': 'with --tree: the commit, tag or branch to apply onto '
	       '(default HEAD)',
	'offline': 'use the cached base without asking apt for a newer one',
}


def _opts(arch='x86_64', base=None, tree=None, ref=None, offline=False,
	  **kw) -> pipeline.Options:
	"""The options, validated (a UserError, exit 2, before anything slow)."""
	o = pipeline.Options(arch=arch, base=base, tree=tree, ref=ref,
			     offline=offline, **kw)
	pipeline.validate(o)
	return o


def _number(option: str, value, kind=float):
	"""A number given on the command line, or a UserError naming it."""
	try:
		return kind(value)
	except (TypeError, ValueError):
		raise UserError(f'--{option} {value}: not a number',
				f'give --{option} a number of '
				f'{"seconds" if option == "timeout" else "jobs"}') \
			from None


def _finish(rc: int) -> None:
	if rc:
		raise Exit(code=rc)


def _argv() -> list:
	return ['inv', *sys.argv[1:]]


@task(help=COMMON_HELP)
def base(c, base=None, tree=None, ref=None, offline=False):
	"""Fetch and import a base tree (cached: seconds the second time)."""
	def run():
		t = pipeline.resolve_base(_opts(base=base, tree=tree, ref=ref,
						offline=offline), Ops())
		print(f'{t.name}: {t.origin}\n  tree   {t.path}\n  ref    '
		      f'{t.ref}\n  commit {t.commit}')
	_finish(pipeline.guarded(run))


@task(help=dict(COMMON_HELP, abort='throw away a "git am" that stopped '
		'at a conflict and go back to the work branch'))
def apply(c, base=None, tree=None, ref=None, offline=False, abort=False):
	"""Apply patches/ onto the base, on branch 'perfctr' (git am -3)."""
	def run():
		t = pipeline.resolve_base(_opts(base=base, tree=tree, ref=ref,
						offline=offline), Ops())
		s = pipeline.series_for(t)
		if abort:
			s.abort()
			print(f'aborted; {t.path} is back on its branch')
			return
		r = s.apply()
		print(f'{t.path}: branch {r.branch} at {r.tip[:12]}, '
		      f'{len(r.patches)} patches '
		      f'{"applied" if r.changed else "already applied"}')
	_finish(pipeline.guarded(run))


@task(help=COMMON_HELP)
def squash(c, base=None, tree=None, ref=None, offline=False):
	"""Fold fixup!/amend! commits on branch 'perfctr' into their targets, then export."""
	def run():
		t = pipeline.resolve_base(_opts(base=base, tree=tree, ref=ref,
						offline=offline), Ops())
		s = pipeline.series_for(t)
		new = s.autosquash()
		names = s.export()
		print(f'perfctr at {new[:12]}; exported {len(names)} patches')
	_finish(pipeline.guarded(run))


@task(help=COMMON_HELP)
def export(c, base=None, tree=None, ref=None, offline=False):
	"""Write the work branch back to patches/ (format-patch + series)."""
	def run():
		t = pipeline.resolve_base(_opts(base=base, tree=tree, ref=ref,
						offline=offline), Ops())
		names = pipeline.series_for(t).export()
		print(f'exported {len(names)} patches to '
		      f'{pipeline.paths.REPO / t.patches}')
	_finish(pipeline.guarded(run))


@task(help=dict(COMMON_HELP,
		onto='the base to move the series to: mainline (default), lts, '
		     'or your own tree with --tree/--ref',
		base='the base whose series is moved (default lts)',
		continue_='go on after resolving a conflict and "git am '
			  '--continue" in the destination tree',
		abort='drop a rebase that stopped at a conflict'))
def rebase(c, onto='mainline', base=None, tree=None, ref=None, offline=False,
	   continue_=False, abort=False):
	"""Port the series to another base, patch by patch; print a range-diff."""
	def run():
		from pytools import rebase as R
		ops = Ops()
		src_t = pipeline.resolve_base(_opts(base=base, offline=offline), ops)
		dst_t = pipeline.resolve_base(
			_opts(base=None if tree else onto, tree=tree, ref=ref,
			      offline=offline), ops)
		src, dst = pipeline.series_for(src_t), pipeline.series_for(dst_t)
		if abort:
			R.abort(dst)
			print(f'rebase aborted; {dst_t.path} is back where it was')
			return
		again = _rebase_command(onto, base, tree, ref, offline)
		r = R.resume(src, dst, again) if continue_ else \
			R.start(src, dst, again)
		print(r.range_diff)
		for s in r.steps:
			print(f'  {s.how:27} {s.patch}')
		print(f'{dst_t.origin}: branch perfctr at {r.tip[:12]}; series '
		      f'written to {dst.patches}; range-diff and report in '
		      f'{r.report}')
	_finish(pipeline.guarded(run))


def _rebase_command(onto, base, tree, ref, offline) -> str:
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


@task(help=dict(COMMON_HELP, **ARCH_HELP, accel='auto (default), kvm or tcg',
		timeout='seconds the guest may run (default 900)'))
def bench(c, arch='x86_64', base=None, tree=None, ref=None, offline=False,
	  accel='auto', timeout=900):
	"""Benchmarks in the guest: perfctr's reads, starts and switches next to perf's."""
	def run():
		from pytools import bench as B
		ops = Ops()
		o = _opts(arch=arch, base=base, tree=tree, ref=ref,
			  offline=offline, accel=accel,
			  timeout=_number('timeout', timeout))
		t = pipeline.resolve_base(o, ops)
		pipeline.series_for(t).apply()
		path = B.run(pipeline.build_request(o, t), t,
			     None if accel == 'auto' else accel, o.timeout,
			     ops)
		import json
		print(json.loads(path.read_text())['table'])
		print(path)
	_finish(pipeline.guarded(run))


@task(help=dict(COMMON_HELP, no_tree='build from the repository alone, '
		'without fetching the base tree (the ABI page shows the headers '
		'instead of kernel-doc, no range-diff)'))
def docs(c, base=None, tree=None, ref=None, offline=False, no_tree=False):
	"""Build the reviewers' HTML site (Sphinx) into docs/_build/html."""
	def run():
		from pytools import docs as D
		ops = Ops()
		if no_tree:
			print(D.build(None, ops))
			return
		t = pipeline.resolve_base(_opts(base=base, tree=tree, ref=ref,
						offline=offline), ops)
		pipeline.series_for(t).apply()
		print(D.build(t, ops))
	_finish(pipeline.guarded(run))


@task(iterable=['run', 'bench'],
      help=dict(COMMON_HELP,
		run='a results directory of a full run of the series (inv '
		    'check); once per run: x86_64, ppc64le, --debug',
		bench='a results/bench-* directory (inv bench), once per run',
		previous='for the first snapshot: a commit of this repository '
			 'whose patches/ was the previous published version',
		version='the name of this version (default: pub-1, or one more '
			'than the previous: pub-N, apart from the vN of a posting)'))
def publish(c, run=None, bench=None, previous=None, version='', base=None,
	    tree=None, ref=None, offline=False):
	"""Write docs/snapshot/published.json from full runs of the series."""
	def go():
		from pytools import snapshot as S
		ops = Ops()
		t = pipeline.resolve_base(_opts(base=base, tree=tree, ref=ref,
						offline=offline), ops)
		series = pipeline.series_for(t)
		prev = None
		if previous:
			def commit_series(d):
				return pipeline.Series(t, d).commits(), t.commit
			prev = S.version_at(previous, series.patches, 'pub-1',
					    commit_series, ops)
		req = S.PublishRequest(
			runs=[Path(r) for r in run or []],
			bench=[Path(b) for b in bench or []],
			patches=series.patches, series_tip=series.commits(),
			base_commit=t.commit, previous=prev, name=version)
		snap = S.publish(req, S.load(), ops)
		S.SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
		S.SNAPSHOT.write_text(S.to_json(snap))
		print(f'{snap.version.name}: {len(snap.runs)} runs, '
		      f'{len(snap.bench)} bench runs -> {S.SNAPSHOT}')
	_finish(pipeline.guarded(go))


@task(help=dict(COMMON_HELP, **ARCH_HELP, jobs='make -j (default: all cores)',
		no_apply='build the tree as it is, uncommitted edits and all'))
def build(c, arch='x86_64', base=None, tree=None, ref=None, offline=False,
	  jobs=0, no_apply=False):
	"""Apply if needed, then configure and build the kernel (incremental)."""
	def run():
		o = _opts(arch=arch, base=base, tree=tree, ref=ref,
			  offline=offline,
			  **({'jobs': _number('jobs', jobs, int)} if jobs else {}))
		ops = Ops()
		t = pipeline.resolve_base(o, ops)
		if not no_apply:
			pipeline.series_for(t).apply()
		r = pipeline.kernel.build(pipeline.build_request(o, t), ops)
		print(f'{r.release}: {r.image} ({r.build_seconds:.0f} s; '
		      f'log {r.log})')
	_finish(pipeline.guarded(run))


@task(help=dict(COMMON_HELP, **ARCH_HELP, jobs='make -j (default: all cores)',
		accel='auto (default), kvm or tcg',
		timeout='seconds the guest may run before it is killed '
			'(default 900; 2400 with --debug)',
		no_apply='test the tree as it is, uncommitted edits and all',
		debug='add kconfigs/debug.config (lockdep, KASAN, UBSAN, kmemleak, '
		      'list and object debugging) in a build directory of its own',
		cpu='QEMU CPU model for ppc64le (default power9; power10 runs '
		    'the ISA 3.1 row of the driver\'s model table)'))
def check(c, arch='x86_64', base=None, tree=None, ref=None, offline=False,
	  jobs=0, accel='auto', timeout=None, no_apply=False, debug=False,
	  cpu=None):
	"""The main job: base, apply, build, boot, test; prints the results path last."""
	def run():
		return pipeline.check(_check_opts(
			arch=arch, base=base, tree=tree, ref=ref, offline=offline,
			jobs=jobs, accel=accel, timeout=timeout, no_apply=no_apply,
			debug=debug, cpu=cpu), _argv())
	_finish(pipeline.guarded(run))


def _check_opts(arch, base, tree, ref, offline, jobs, accel, timeout,
		no_apply, debug, cpu) -> pipeline.Options:
	from pytools import arches
	arches.get(arch)	# an unknown arch fails here, at once
	extra = pipeline.config_options(arch, 'debug') if debug else {}
	# The debug guest is slow everywhere (measured under TCG: 160 s to
	# boot, 341 s for the Python checks, kmemleak scans): 40 minutes.
	if timeout is None:
		timeout = 2400 if debug else 900
	return _opts(arch=arch, base=base, tree=tree, ref=ref, offline=offline,
		     accel=accel, timeout=_number('timeout', timeout),
		     apply=not no_apply, cpu=cpu, **extra,
		     **({'jobs': _number('jobs', jobs, int)} if jobs else {}))


@task(help=dict(COMMON_HELP, **ARCH_HELP, accel='auto (default), kvm or tcg',
		timeout='seconds the guest may run (default 900)'))
def test(c, arch='x86_64', base=None, tree=None, ref=None, offline=False,
	 accel='auto', timeout=900):
	"""Same as check: a test always runs on the kernel the tree builds to."""
	check(c, arch=arch, base=base, tree=tree, ref=ref, offline=offline,
	      accel=accel, timeout=timeout)


@task(help=COMMON_HELP)
def lint(c, base=None, tree=None, ref=None, offline=False):
	"""checkpatch --strict, kernel-doc, sparse and W=1 on drivers/perfctr, make htmldocs."""
	def run():
		from pytools import kernel, lint as L, series
		ops = Ops()
		o = _opts(base=base, tree=tree, ref=ref, offline=offline)
		t = pipeline.resolve_base(o, ops)
		s = pipeline.series_for(t)
		s.apply()
		patches = series.read_series(s.patches)
		results = [L.checkpatch(t.path, patches, ops),
			   L.kernel_doc(t.path, ['include/uapi/linux/perfctr.h',
						 'include/linux/perfctr.h',
						 *sorted(str(p.relative_to(t.path)) for p in
							 (t.path / 'drivers/perfctr').glob('*.[ch]'))],
					ops)]
		req = pipeline.build_request(o, t)
		kernel.configure(req, ops)
		results.append(L.compiler_gates(
			[*kernel.make_args(req, ops), f'-j{req.jobs}'],
			'drivers/perfctr', ops, req.build_dir / 'lint.log'))
		touched = ops.run(['git', '-C', str(t.path), 'diff', '--name-only',
				   t.commit, series.WORK_BRANCH]).output.split()
		doc_out = req.build_dir.parent / f'{req.build_dir.name}-htmldocs'
		results.append(L.htmldocs(
			t.path, doc_out, req.jobs, touched, ops,
			Path(sys.executable).parent / 'sphinx-build'))
		bad = 0
		for r in results:
			for f in r.findings:
				print(f'{f.level:7} {f.gate:10} {f.where}: {f.text}')
			bad += len(r.failed)
		checked = sum(len(r.checked) for r in results)
		print(f'lint: {checked} items checked, {bad} errors/warnings, '
		      f'{sum(len(r.findings) for r in results) - bad} CHECK or justified')
		return 1 if bad else 0
	_finish(pipeline.guarded(run))


def _bisect_boot(o, t, req, ops):
	"""inv bisect --boot: boot each prefix that built and run the tests
	that exist at that point (the kselftests and Python checks need the
	system calls; before the patch wiring them up, KUnit and the kernel
	log are what there is)."""
	import dataclasses
	from pytools import kernel

	def boot_prefix(i, commit):
		calls = ops.run(['git', '-C', str(t.path), 'grep', '-q',
				 'vperfctr_open', commit, '--',
				 f'arch/{req.arch.linux_arch}/'],
				check=False).returncode == 0
		log = req.build_dir / f'bisect-{i:02d}.log'
		if calls:
			r = ops.stream([*kernel.make_args(req, ops),
					f'-j{req.jobs}', 'headers_install'], log)
			if r.returncode:
				return False, f'make headers_install failed ({log})'
		build = kernel.built(req, log)
		kunit = kernel.kunit_suites_built(req.build_dir)
		run, path = pipeline.test_and_report(
			dataclasses.replace(o, userspace=calls, kunit=kunit), t,
			build, req,
			commit[:12], {}, _argv(), ops, suffix=f'-bisect{i:02d}')
		c = run.counts()
		scope = 'every family' if calls else \
			('KUnit and the kernel log' if kunit else
			 'the kernel log') + ': no system calls yet'
		return run.passed, (f'{c["PASS"]} passed, {c["FAIL"]} failed, '
				    f'{c["SKIP"]} skipped ({scope}); {path}')
	return boot_prefix


@task(help=dict(COMMON_HELP, arch='x86_64 (default), ppc64le, or all',
		jobs='make -j (default: all cores)',
		boot='also boot every prefix that builds and run the tests '
		     'that exist at that point'))
def bisect(c, arch='x86_64', base=None, tree=None, ref=None, offline=False,
	   jobs=0, boot=False):
	"""Build every prefix of the series; name the first that breaks the build or warns."""
	def run():
		from pytools import arches, bisect as B, kernel
		ops = Ops()
		# every arch named is known before anything is fetched or built
		names = sorted(arches.known()) if arch == 'all' else \
			[arches.get(arch).name]
		o = _opts(base=base, tree=tree, ref=ref, offline=offline,
			  **({'jobs': _number('jobs', jobs, int)} if jobs else {}))
		t = pipeline.resolve_base(o, ops)
		s = pipeline.series_for(t)
		s.apply()
		bad = 0
		for name in names:
			ob = _opts(arch=name, base=base, tree=tree, ref=ref,
				   offline=offline, config_name='bisect',
				   **({'jobs': o.jobs} if jobs else {}))
			req = pipeline.build_request(ob, t)
			r = B.run(s, req, ops,
				  boot=_bisect_boot(ob, t, req, ops) if boot else None)
			for p in r.prefixes:
				state = 'builds' if p.built else 'FAILS'
				extra = f', {len(p.warnings)} new warnings' \
					if p.warnings else ''
				print(f'{name} {p.index:2d} {state} ({p.seconds:.0f} s'
				      f'{extra}): {p.subject}')
				if p.boot:
					print(f'      boot: {p.boot}')
				for w in p.warnings[:10]:
					print(f'      {w}')
			fb = r.first_bad
			if fb:
				bad += 1
				print(f'{name}: first bad patch: {fb.index} {fb.subject} '
				      f'(log {fb.log})')
			else:
				print(f'{name}: every prefix of {len(r.prefixes)} builds '
				      'without warnings')
		return 1 if bad else 0
	_finish(pipeline.guarded(run))


@task(help={'results': 'a results.json, or the directory holding it '
		       '(default: results/latest)',
	    'kcidb': 'write the run as KCIDB I/O JSON (KernelCI\'s schema, '
		     'validated with kcidb-io) beside it, or to --out',
	    'out': 'where the KCIDB JSON goes (default: kcidb.json beside '
		   'results.json)',
	    'url_base': 'the URL the results directory is published at, for '
			'the tests\' log URLs (default: its file:// URI)',
	    'origin': 'the KCIDB origin: your CI system\'s name (default '
		      'perfctr)'})
def report(c, results=None, kcidb=False, out=None, url_base='',
	   origin='perfctr'):
	"""Print a run's summary; with --kcidb also write it as KCIDB JSON."""
	def run():
		from pytools import kcidb as K, results as R
		path = R.locate(Path(results) if results else None)
		r = R.load(path)
		print(R.summary(r))
		if kcidb:
			rep = K.write(r, path.parent, Path(out) if out else None,
				      url_base, origin)
			c = rep.counts
			print(f'KCIDB: {c["checkouts"]} checkout, {c["builds"]} '
			      f'build, {c["tests"]} tests; valid against kcidb-io '
			      f'schema {K.schema_version()}')
			print(rep.path)
		return 0 if r.passed else 1
	_finish(pipeline.guarded(run))


@task(help={'arch': 'x86_64 (default), ppc64le, or all: the arch\'s first '
		    'cell of pytools/data/matrix.toml (all: every arch\'s)',
	    'cell': 'cells by name, comma-separated (e.g. ppc64le-lts-default-'
		    'power10), or "all" for the whole matrix',
	    'out': 'the directory to lay the jobs and artefacts out in, as a '
		   'file server would publish it (default: results/lava)',
	    'url': 'the URL that directory is published at (default: its '
		   'file:// URI, which the local dispatcher reads)',
	    'run': 'also run each QEMU job here with LAVA\'s dispatcher '
		   '(lava-run) and compare with inv check\'s results of the '
		   'same kernel',
	    'reference': 'with --run: the inv check results.json to compare '
			 'with (default: the newest of the same kernel and CPU)',
	    'boards': 'also write each cell\'s job for its arch\'s real board '
		      '(not run here)',
	    'no_apply': 'build the tree as it is, uncommitted edits and all',
	    'offline': 'use the cached base without asking apt for a newer one'})
def lava(c, arch='x86_64', cell='', out='', url='', run=False, reference='',
	 boards=False, no_apply=False, offline=False):
	"""LAVA jobs for the matrix (tuxlava), validated with lava-run; --run runs them."""
	def go():
		from pytools import lava as L, matrix
		if reference and not run:
			raise UserError('--reference is for --run',
					'add --run, or drop --reference')
		if url and not re.match(r'^[a-z][a-z0-9+.-]*://', url):
			raise UserError(f'--url {url}: not a URL',
					'give the http(s):// or file:// URL the '
					'--out directory is published at')
		m = matrix.load()
		names = [n.strip() for n in cell.split(',')] if cell and \
			cell != 'all' else []
		if cell == 'all':
			cells = list(m.cells)
		elif names:
			cells = m.select(names=names)
		else:
			wanted = sorted(pipeline.arches.known()) if arch == 'all' \
				else [pipeline.arches.get(arch).name]
			cells = [m.select(a)[0] for a in wanted if m.select(a)]
		ref = None
		if reference:
			from pytools import results as R
			ref = R.locate(Path(reference))
		ops = Ops()
		L.lava_run(ops)		# the dispatcher is there, or exit 2 now
		outdir = Path(out) if out else pipeline.paths.results_dir() / 'lava'
		return L.main(cells, m, outdir, url, ops, run=run, reference=ref,
			      boards=boards, apply=not no_apply, offline=offline)
	_finish(pipeline.guarded(go))
