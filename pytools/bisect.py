# SPDX-License-Identifier: GPL-2.0
"""Build every prefix of the series: the first patch that breaks the
build, or adds a compiler warning, is named.  With a boot function (inv
bisect --boot) every prefix that builds is also booted and tested, with
the tests that exist at that point: KUnit and the kernel log always, the
kselftests and Python checks once the system calls are wired up and the
kselftests patch is in.

The prefixes are checked out in the base tree itself (it must be clean)
and built in a build directory of their own, kept between runs; ccache
keys on file contents and paths, so the files a prefix shares with
earlier builds cost a cache lookup, not a compile.  The work branch is
checked out again at the end, whatever happened.
"""

import re
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from . import kernel
from .errors import UserError
from .ops import Ops, progress
from .series import Series

_WARN = re.compile(r'^(\S+?):(\d+):(\d+): warning: (.*)$')


@dataclass(frozen=True)
class PrefixResult:
	index: int		# 1-based: the prefix ends with this patch
	subject: str
	built: bool
	seconds: float
	warnings: tuple		# new compiler warnings, 'file:line: text'
	log: str
	boot: str = ''		# '' not booted; else 'PASS ...' or 'FAIL ...'


@dataclass
class BisectResult:
	arch: str
	prefixes: List[PrefixResult] = field(default_factory=list)

	@property
	def first_bad(self) -> Optional[PrefixResult]:
		return next((p for p in self.prefixes
			     if not p.built or p.warnings or
			     p.boot.startswith('FAIL')), None)


def warnings_in(output: str) -> List[str]:
	out = []
	for line in output.splitlines():
		m = _WARN.match(line.strip())
		if m:
			out.append(f'{m.group(1)}:{m.group(2)}: {m.group(4)}')
	return out


# (prefix index, commit) -> (passed, one line saying what ran and where)
BootFn = Callable[[int, str], Tuple[bool, str]]


def run(series: Series, req: kernel.BuildRequest, ops: Ops,
	boot: Optional[BootFn] = None) -> BisectResult:
	series.check_clean()
	commits = series.branch_commits()
	res = BisectResult(arch=req.arch.name)
	# A kill (CI timeout, kill(1)) must still put the work branch back.
	old_term = signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
	try:
		for i, c in enumerate(commits, 1):
			subject = series.subject(c)
			progress(f'bisect {req.arch.name} [{i}/{len(commits)}] '
				 f'{subject}')
			series.checkout(c)
			log = req.build_dir / f'bisect-{i:02d}.log'
			log.unlink(missing_ok=True)
			t0 = time.monotonic()
			built, out = True, ''
			# The machine must be able to build at all (a missing
			# cross compiler is not a patch that breaks): that
			# InfraError goes up as it is, exit status 2.
			cmd = [*kernel.make_args(req, ops), f'-j{req.jobs}',
			       req.arch.make_target]
			try:
				# An early prefix lacks options later patches add
				kernel.configure(req, ops, strict=False)
				r = ops.stream(cmd, log)
				built, out = r.returncode == 0, r.output
			except UserError as e:	# a config that does not hold
				built, out = False, str(e)
			booted = ''
			if built and boot:
				ok, what = boot(i, c)
				booted = f'{"PASS" if ok else "FAIL"} {what}'
			res.prefixes.append(PrefixResult(
				i, subject, built, round(time.monotonic() - t0, 1),
				tuple(warnings_in(out)), str(log), booted))
			if not built or booted.startswith('FAIL'):
				break
	finally:
		series.checkout()
		signal.signal(signal.SIGTERM, old_term)
	return res


def boot_each_prefix(opts, tree, req: kernel.BuildRequest, argv: List[str],
		     ops: Ops) -> BootFn:
	"""inv bisect --boot: boot each prefix that built and run the tests
	that exist at that point (the kselftests and Python checks need the
	system calls and the kselftests' first patch; before them, KUnit
	and the kernel log are what there is), the arch's fast way
	(ppc64le: the initramfs, without the Python checks, which inv check
	runs)."""
	import dataclasses
	from . import pipeline

	def boot_prefix(i: int, commit: str) -> Tuple[bool, str]:
		calls = ops.run(['git', '-C', str(tree.path), 'grep', '-q',
				 'vperfctr_open', commit, '--',
				 f'arch/{req.arch.linux_arch}/'],
				check=False).returncode == 0
		tests = ops.run(['git', '-C', str(tree.path), 'cat-file', '-e',
				 f'{commit}:tools/testing/selftests/'
				 f'{kernel.COLLECTION}/Makefile'],
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
			dataclasses.replace(opts, userspace=calls and tests,
					    kunit=kunit, fast_boot=True),
			tree, build, req, commit[:12], {}, argv, ops,
			suffix=f'-bisect{i:02d}')
		c = run.counts()
		scope = 'every family' if calls and tests else \
			('KUnit and the kernel log' if kunit else
			 'the kernel log') + \
			(': no kselftests yet' if calls else
			 ': no system calls yet')
		return run.passed, (f'{c["PASS"]} passed, {c["FAIL"]} failed, '
				    f'{c["SKIP"]} skipped ({scope}); {path}')
	return boot_prefix


def report(name: str, r: BisectResult) -> bool:
	"""Print each prefix and the verdict of one arch; True if one is bad."""
	for p in r.prefixes:
		state = 'builds' if p.built else 'FAILS'
		extra = f', {len(p.warnings)} new warnings' if p.warnings else ''
		print(f'{name} {p.index:2d} {state} ({p.seconds:.0f} s{extra}): '
		      f'{p.subject}')
		if p.boot:
			print(f'      boot: {p.boot}')
		for w in p.warnings[:10]:
			print(f'      {w}')
	fb = r.first_bad
	if fb:
		print(f'{name}: first bad patch: {fb.index} {fb.subject} '
		      f'(log {fb.log})')
	else:
		print(f'{name}: every prefix of {len(r.prefixes)} builds '
		      'without warnings')
	return fb is not None


def main(arch: str, opts, argv: List[str], ops: Ops,
	 boot: bool = False) -> int:
	"""inv bisect: every prefix on each arch named (@arch, or 'all');
	0 every prefix builds clean (and passes, booted), 1 one does not."""
	import dataclasses
	from . import arches, pipeline
	# every arch named is known before anything is fetched or built
	names = sorted(arches.known()) if arch == 'all' else \
		[arches.get(arch).name]
	t = pipeline.resolve_base(opts, ops)
	s = pipeline.series_for(t)
	s.apply()
	bad = 0
	for name in names:
		ob = dataclasses.replace(opts, arch=name, config_name='bisect')
		pipeline.validate(ob)
		req = pipeline.build_request(ob, t)
		r = run(s, req, ops, boot=boot_each_prefix(ob, t, req, argv, ops)
			if boot else None)
		bad += report(name, r)
	return 1 if bad else 0
