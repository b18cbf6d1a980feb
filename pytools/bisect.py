# SPDX-License-Identifier: GPL-2.0
"""Build every prefix of the series: the first patch that breaks the
build, or adds a compiler warning, is named.  With a boot function (inv
bisect --boot) every prefix that builds is also booted and tested, with
the tests that exist at that point: KUnit and the kernel log always, the
kselftests and Python checks once the system calls are wired up.

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
from .series import WORK_BRANCH, Series

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
	commits = series._git('rev-list', '--reverse',
			      f'{series.tree.commit}..{WORK_BRANCH}').split()
	res = BisectResult(arch=req.arch.name)
	# A kill (CI timeout, kill(1)) must still put the work branch back.
	old_term = signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
	try:
		for i, c in enumerate(commits, 1):
			subject = series._git('log', '-1', '--format=%s', c)
			progress(f'bisect {req.arch.name} [{i}/{len(commits)}] '
				 f'{subject}')
			series._git('checkout', '-q', '--detach', c)
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
		series._git('checkout', '-q', WORK_BRANCH)
		signal.signal(signal.SIGTERM, old_term)
	return res
