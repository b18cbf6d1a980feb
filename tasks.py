# SPDX-License-Identifier: GPL-2.0
"""perfctr tasks: inv --list; inv --help <task>.

Exit codes: 0 everything passed, 1 a test failed, 2 the run could not be
done (bad input or a missing tool; the message says which and how to fix).

Each task only turns its options into a call of pytools, run through
pipeline.guarded (exit 2 for anything that is not a test result).
"""

import shlex
import sys
from pathlib import Path

from invoke import Exit, task

from pytools import invoke_errors, pipeline
from pytools.ops import Ops

invoke_errors.install()		# inv chek, inv check --bogus: exit 2 and a fix

ARCH_HELP = {'arch': 'x86_64 (default); the arches are pytools/arches/*.py'}
COMMON_HELP = {
	'base': 'lts (default, linux-source-6.12) or mainline (newest in '
		'Debian sid); see pytools/data/bases.toml',
	'tree': 'your own kernel git tree instead of a Debian base',
	'ref': 'with --tree: the commit, tag or branch to apply onto '
	       '(default HEAD)',
	'offline': 'use the cached base without asking apt for a newer one',
}


def _finish(rc: int) -> None:
	if rc:
		raise Exit(code=rc)


def _argv() -> list:
	return ['inv', *sys.argv[1:]]


def _after_dashes(c) -> list:
	"""The words after `--`, as the shell split them (invoke's
	remainder is one string, their quoting lost)."""
	if '--' in sys.argv:
		return sys.argv[sys.argv.index('--') + 1:]
	return shlex.split(c.remainder or '')


@task(help=COMMON_HELP)
def base(c, base=None, tree=None, ref=None, offline=False):
	"""Fetch and import a base tree (cached: seconds the second time)."""
	_finish(pipeline.guarded(lambda: pipeline.show_base(pipeline.options(
		base=base, tree=tree, ref=ref, offline=offline), Ops())))


@task(help=dict(COMMON_HELP, abort='throw away a "git am" that stopped '
		'at a conflict and go back to the work branch'))
def apply(c, base=None, tree=None, ref=None, offline=False, abort=False):
	"""Apply patches/ onto the base, on branch 'perfctr' (git am -3)."""
	_finish(pipeline.guarded(lambda: pipeline.apply_series(pipeline.options(
		base=base, tree=tree, ref=ref, offline=offline), Ops(), abort)))


@task(help=COMMON_HELP)
def squash(c, base=None, tree=None, ref=None, offline=False):
	"""Fold fixup!/amend! commits on branch 'perfctr' into their targets, then export."""
	_finish(pipeline.guarded(lambda: pipeline.squash(pipeline.options(
		base=base, tree=tree, ref=ref, offline=offline), Ops())))


@task(help=COMMON_HELP)
def export(c, base=None, tree=None, ref=None, offline=False):
	"""Write the work branch back to patches/ (format-patch + series)."""
	_finish(pipeline.guarded(lambda: pipeline.export(pipeline.options(
		base=base, tree=tree, ref=ref, offline=offline), Ops())))


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
	from pytools import rebase as R
	_finish(pipeline.guarded(R.main, onto, base, tree, ref, offline, Ops(),
				 continue_=continue_, abort_=abort))


@task(help=dict(COMMON_HELP, **ARCH_HELP, accel='auto (default), kvm or tcg',
		timeout='seconds the guest may run (default 900)'))
def bench(c, arch='x86_64', base=None, tree=None, ref=None, offline=False,
	  accel='auto', timeout=900):
	"""Benchmarks in the guest: perfctr's reads, starts and switches next to perf's."""
	from pytools import bench as B
	_finish(pipeline.guarded(lambda: B.main(pipeline.options(
		arch=arch, base=base, tree=tree, ref=ref, offline=offline,
		accel=accel, timeout=pipeline.number('timeout', timeout)),
		Ops())))


@task(help=dict(COMMON_HELP, no_tree='build from the repository alone, '
		'without fetching the base tree (the ABI page shows the headers '
		'instead of kernel-doc, no range-diff)'))
def docs(c, base=None, tree=None, ref=None, offline=False, no_tree=False):
	"""Build the reviewers' HTML site (Sphinx) into docs/_build/html."""
	from pytools import docs as D
	_finish(pipeline.guarded(lambda: D.main(pipeline.options(
		base=base, tree=tree, ref=ref, offline=offline), Ops(),
		no_tree=no_tree)))


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
	from pytools import snapshot as S
	_finish(pipeline.guarded(lambda: S.main(
		pipeline.options(base=base, tree=tree, ref=ref, offline=offline),
		Ops(), runs=[Path(r) for r in run or []],
		bench=[Path(b) for b in bench or []], previous=previous,
		version=version)))


@task(help=dict(COMMON_HELP, **ARCH_HELP, jobs='make -j (default: all cores)',
		no_apply='build the tree as it is, uncommitted edits and all'))
def build(c, arch='x86_64', base=None, tree=None, ref=None, offline=False,
	  jobs=0, no_apply=False):
	"""Apply if needed, then configure and build the kernel (incremental)."""
	_finish(pipeline.guarded(lambda: pipeline.build_only(pipeline.options(
		arch=arch, base=base, tree=tree, ref=ref, offline=offline,
		apply=not no_apply, **pipeline.jobs_option(jobs)), Ops())))


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
	_finish(pipeline.guarded(lambda: pipeline.check(pipeline.check_options(
		arch=arch, base=base, tree=tree, ref=ref, offline=offline,
		jobs=jobs, accel=accel, timeout=timeout, no_apply=no_apply,
		debug=debug, cpu=cpu), _argv(), Ops())))


GUEST_HELP = dict(
	COMMON_HELP, **ARCH_HELP, jobs='make -j (default: all cores)',
	accel='auto (default), kvm or tcg: chosen as inv check chooses',
	no_apply='boot the tree as it is, uncommitted edits and all',
	debug='the debug kernel (kconfigs/debug.config), as inv check --debug',
	cpu='QEMU CPU model for ppc64le (default power9; power10)')


@task(help=GUEST_HELP)
def shell(c, arch='x86_64', base=None, tree=None, ref=None, offline=False,
	  jobs=0, accel='auto', no_apply=False, debug=False, cpu=None):
	"""A shell on the built kernel (built first if needed), perfex on PATH."""
	from pytools import shell as S
	_finish(pipeline.guarded(lambda: S.main(pipeline.check_options(
		arch=arch, base=base, tree=tree, ref=ref, offline=offline,
		jobs=jobs, accel=accel, no_apply=no_apply, debug=debug,
		cpu=cpu), Ops())))


@task(iterable=['build'],
      help=dict(GUEST_HELP, build='a C program to compile (static, for the '
		'arch) and put on the guest\'s PATH as its name without .c; '
		'once per program',
		timeout='seconds the guest may run (default 900)'))
def run(c, arch='x86_64', base=None, tree=None, ref=None, offline=False,
	jobs=0, accel='auto', no_apply=False, debug=False, cpu=None,
	build=None, timeout=None):
	"""inv run -- CMD ARGS: boot the built kernel, run CMD, exit with its status."""
	from pytools import shell as S
	_finish(pipeline.guarded(lambda: S.main(pipeline.check_options(
		arch=arch, base=base, tree=tree, ref=ref, offline=offline,
		jobs=jobs, accel=accel, no_apply=no_apply, debug=debug,
		cpu=cpu, timeout=timeout), Ops(), command=_after_dashes(c),
		sources=[Path(b) for b in build or []])))


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
	from pytools import lint as L
	_finish(pipeline.guarded(lambda: L.run(pipeline.options(
		base=base, tree=tree, ref=ref, offline=offline), Ops())))


@task(help=dict(COMMON_HELP, arch='x86_64 (default), ppc64le, or all',
		jobs='make -j (default: all cores)',
		boot='also boot every prefix that builds and run the tests '
		     'that exist at that point'))
def bisect(c, arch='x86_64', base=None, tree=None, ref=None, offline=False,
	   jobs=0, boot=False):
	"""Build every prefix of the series; name the first that breaks the build or warns."""
	from pytools import bisect as B
	_finish(pipeline.guarded(lambda: B.main(arch, pipeline.options(
		base=base, tree=tree, ref=ref, offline=offline,
		**pipeline.jobs_option(jobs)), _argv(), Ops(), boot=boot)))


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
	from pytools import kcidb as K
	_finish(pipeline.guarded(K.main, Path(results) if results else None,
				 kcidb, Path(out) if out else None, url_base,
				 origin))


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
	from pytools import lava as L
	_finish(pipeline.guarded(lambda: L.from_options(
		Ops(), arch=arch, cell=cell, out=out, url=url, run=run,
		reference=reference, boards=boards, apply=not no_apply,
		offline=offline)))
