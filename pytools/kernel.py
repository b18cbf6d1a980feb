# SPDX-License-Identifier: GPL-2.0
"""Configure and build a kernel out of tree (O=), incrementally.

Like kunit.py's kunit_kernel.py, the only place that runs make.  One build
directory per base, arch and config, kept between runs: make's own
dependency tracking plus ccache mean an unchanged tree rebuilds nothing and
a one-file change rebuilds one file.
"""

import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from . import kconfig, locks, paths
from .arches import ArchParams
from .bases import BaseTree
from .errors import InfraError, UserError
from .ops import Ops, progress


@dataclass(frozen=True)
class BuildRequest:
	tree: BaseTree
	arch: ArchParams
	fragments: Tuple[str, ...]
	build_dir: Path
	jobs: int
	config_name: str = 'default'


@dataclass(frozen=True)
class BuildResult:
	image: Path
	build_dir: Path
	log: Path
	config_seconds: float
	build_seconds: float
	configured: bool	# False when the config stage had nothing to do
	release: str


def build_dir_for(tree: BaseTree, arch: ArchParams, config_name: str) -> Path:
	name = tree.name if tree.name != 'tree' else \
		'tree-' + hashlib.sha1(str(tree.path).encode()).hexdigest()[:8]
	return paths.cache_dir() / 'build' / f'{name}-{arch.name}-{config_name}'


def make_args(req: BuildRequest, ops: Ops) -> List[str]:
	cc = f'{req.arch.cross_compile}gcc'
	ops.require(cc, req.arch.cross_package)
	if ops.which('ccache'):
		cc = f'ccache {cc}'
	args = ['make', '-C', str(req.tree.path), f'O={req.build_dir}',
		f'ARCH={req.arch.linux_arch}', f'CC={cc}']
	if req.arch.cross_compile:
		args.append(f'CROSS_COMPILE={req.arch.cross_compile}')
	return args


def _head(ops: Ops, tree: Path) -> str:
	return ops.run(['git', '-C', str(tree), 'rev-parse', 'HEAD'],
		       check=False).output.strip()


def configure(req: BuildRequest, ops: Ops,
	      strict: bool = True) -> Tuple[bool, float]:
	"""allnoconfig + the fragments; an option that did not stick is an error.

	Skipped when neither the fragments nor the tree's commit changed since
	the last successful configure, so an unchanged tree is not touched.
	"""
	start = time.monotonic()
	merged = kconfig.load(paths.KCONFIGS, req.fragments)
	allconfig = kconfig.render(merged)
	stamp_key = hashlib.sha256((allconfig + _head(ops, req.tree.path))
				   .encode()).hexdigest()
	req.build_dir.mkdir(parents=True, exist_ok=True)
	stamp = req.build_dir / '.perfctr-config-stamp'
	config = req.build_dir / '.config'
	if config.exists() and stamp.exists() and \
	   stamp.read_text() == stamp_key:
		return False, time.monotonic() - start
	(req.build_dir / 'perfctr.allconfig').write_text(allconfig)
	progress(f'config: allnoconfig + {", ".join(req.fragments)}')
	res = ops.run([*make_args(req, ops),
		       f'KCONFIG_ALLCONFIG={req.build_dir}/perfctr.allconfig',
		       'allnoconfig'], check=False, timeout=600)
	if res.returncode != 0:
		raise InfraError('make allnoconfig failed:\n' +
				 res.output[-3000:])
	lost = kconfig.missing(merged, config.read_text())
	if lost and strict:
		raise UserError('config options the fragments ask for did not '
				'survive olddefconfig:\n  ' + '\n  '.join(lost),
				'an option usually drops because one it depends '
				'on is off: add that one to the fragment (see '
				'"make menuconfig" -> search for the option)')
	stamp.write_text(stamp_key)
	return True, time.monotonic() - start


class _Progress:
	"""Counts compiled objects; prints a line every few seconds."""

	def __init__(self, what: str, every: float = 15.0) -> None:
		self.what = what
		self.every = every
		self.count = 0
		self.start = time.monotonic()
		self.last = self.start

	def __call__(self, line: str) -> None:
		if re.match(r'\s+(CC|AS|LD|AR)\s', line):
			self.count += 1
		now = time.monotonic()
		if now - self.last >= self.every:
			self.last = now
			progress(f'{self.what}: {self.count} objects, '
				 f'{now - self.start:.0f} s')


COLD_BUILD = 'perfctr-cold-build.json'


def record_cold_build(build_dir: Path, seconds: float) -> None:
	"""Keep how long the build that created this build directory took."""
	(build_dir / COLD_BUILD).write_text(json.dumps(
		{'seconds': round(seconds, 1), 'jobs': os.cpu_count(),
		 'when': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}) + '\n')


def cold_build(build_dir: Path) -> Optional[dict]:
	p = build_dir / COLD_BUILD
	try:
		return json.loads(p.read_text())
	except (OSError, ValueError):
		return None


def make_error(target: str, output: str, build_dir: Path,
	       log: Path) -> Exception:
	"""What a failed make means, and what to do about it."""
	if 'No space left on device' in output:
		free = shutil.disk_usage(build_dir).free if build_dir.exists() \
			else 0
		return InfraError(
			f'make {target} ran out of disk space in {build_dir} '
			f'({free // 2**20} MiB free now)',
			'free some space, or set PERFCTR_CACHE to a bigger disk, '
			'and run the same command again: the build directory is '
			f'kept and make resumes (log {log})')
	errors = [l for l in output.splitlines()
		  if 'error:' in l or 'Error ' in l][:15]
	return UserError(f'make {target} failed:\n  ' +
			 '\n  '.join(errors or output.splitlines()[-15:]),
			 f'the full log is {log}')


def lock(req: BuildRequest) -> None:
	"""Hold the tree (make reads it) and the build directory (make
	writes it) until the run ends or lets them go; in that order."""
	locks.take(locks.tree_lock(req.tree.path),
		   f'the {req.tree.name} tree ({req.tree.path})')
	locks.take(locks.build_lock(req.build_dir),
		   f'the {req.arch.name} build ({req.build_dir})')


def build(req: BuildRequest, ops: Optional[Ops] = None) -> BuildResult:
	ops = ops or Ops()
	lock(req)
	configured, config_s = configure(req, ops)
	log = req.build_dir / 'build.log'
	log.write_text('')
	start = time.monotonic()
	progress(f'build: make -j{req.jobs} {req.arch.make_target} '
		 f'(log: {log})')
	env = {'KBUILD_BUILD_USER': 'perfctr', 'KBUILD_BUILD_HOST': 'perfctr'}
	cold = not (req.build_dir / req.arch.image).exists()
	for target in (req.arch.make_target, 'headers_install'):
		res = ops.stream([*make_args(req, ops), f'-j{req.jobs}', target],
				 log, env=env, on_line=_Progress(target))
		if res.returncode != 0:
			raise make_error(target, res.output, req.build_dir, log)
	if cold:
		record_cold_build(req.build_dir, time.monotonic() - start)
	return built(req, log, config_s, time.monotonic() - start, configured)


def built(req: BuildRequest, log: Path, config_seconds: float = 0,
	  build_seconds: float = 0, configured: bool = False) -> BuildResult:
	"""The BuildResult of what make left in the build directory."""
	release = (req.build_dir / 'include/config/kernel.release').read_text() \
		.strip()
	return BuildResult(image=req.build_dir / req.arch.image,
			   build_dir=req.build_dir, log=log,
			   config_seconds=config_seconds,
			   build_seconds=build_seconds, configured=configured,
			   release=release)


def kunit_suites_built(build_dir: Path) -> bool:
	"""Does the vmlinux just linked in @build_dir hold any KUnit suite?

	Read from System.map (rewritten at every link, unlike objects a later
	prefix left behind): the suite table's end is past its start.
	"""
	marks = {}
	try:
		for line in (build_dir / 'System.map').read_text().splitlines():
			parts = line.split()
			if len(parts) == 3 and parts[2] in ('__kunit_suites_start',
							    '__kunit_suites_end'):
				marks[parts[2]] = int(parts[0], 16)
	except OSError:
		return True	# cannot tell: expect them, and say so if absent
	return marks.get('__kunit_suites_end', 0) > \
		marks.get('__kunit_suites_start', 0)


KEEP_SELFTEST_BUILDS = 4
# The series' kselftests, in the tree: tools/testing/selftests/<this>
COLLECTION = 'perfctr'
# What the kernel's runner (run_kselftest.sh, kselftest/runner.sh) and
# lib.mk are made of: a change to any is a new build.
_HARNESS = ('Makefile', 'lib.mk', 'kselftest_harness.h', 'kselftest.h',
	    'run_kselftest.sh', 'kselftest/runner.sh', 'kselftest/prefix.pl')


@dataclass(frozen=True)
class Kselftests:
	"""The series' kselftests as the kernel's `make install` lays them
	out (TARGETS=perfctr): run_kselftest.sh, kselftest/, the list, and
	the collection's directory with its programs, config and settings."""
	install: Path

	@property
	def runner(self) -> Path:
		return self.install / 'run_kselftest.sh'

	@property
	def collection(self) -> Path:
		return self.install / COLLECTION

	def programs(self) -> List[Path]:
		"""The collection's test programs, in the runner's order."""
		try:
			names = (self.install / 'kselftest-list.txt').read_text()
		except OSError:
			return []
		return [self.collection / line.split(':', 1)[1]
			for line in names.split()
			if line.startswith(f'{COLLECTION}:')]


def selftests_source(tree: BaseTree) -> Path:
	return tree.path / 'tools' / 'testing' / 'selftests' / COLLECTION


def selftests_key(req: BuildRequest, src: Path, kst: Path, cc: str) -> str:
	"""The kselftests' inputs by content, not by time: the collection's
	sources in the tree (this checkout's series, applied), the kernel's
	harness and runner, the perfctr uapi headers the kernel build
	exported, the compiler.  make looks at times only, so a build left
	by another checkout's series on the same cache, newer than these
	sources, would get "Nothing to be done" and run that series' tests.
	(A few ms: the sources are 120 kB; all of usr/include would cost
	seconds.)"""
	h = hashlib.sha256(f'{cc} {req.arch.linux_arch}\n'.encode())
	inc = req.build_dir / 'usr' / 'include'
	files = sorted(p for p in src.rglob('*') if p.is_file()) + \
		[kst / n for n in _HARNESS] + \
		sorted(p for p in inc.rglob('*perfctr*') if p.is_file())
	for f in files:
		h.update(f'{f.name}\0'.encode())
		try:
			h.update(f.read_bytes())
		except OSError:
			h.update(b'(missing)')
	return h.hexdigest()[:16]


def selftests_dir(req: BuildRequest, src: Path, kst: Path, cc: str) -> Path:
	"""kselftest/KEY: a directory per set of inputs (make's objects under
	kselftest/KEY/kselftest, the install under kselftest/KEY/install), so
	that two checkouts alternating on one cache each run their own
	tests; the few newest are kept."""
	top = req.build_dir / 'kselftest'
	d = top / selftests_key(req, src, kst, cc)
	d.mkdir(parents=True, exist_ok=True)
	d.touch()
	old = sorted((p for p in top.iterdir()
		      if p.is_dir() and p != d and len(p.name) == 16),
		     key=lambda p: p.stat().st_mtime, reverse=True)
	for p in old[KEEP_SELFTEST_BUILDS - 1:]:
		shutil.rmtree(p, ignore_errors=True)
	return d


def build_selftests(req: BuildRequest, ops: Optional[Ops] = None
		    ) -> Kselftests:
	"""Build and install the series' kselftests with the kernel's own
	selftests Makefile (make -C tools/testing/selftests TARGETS=perfctr
	install), against the uapi headers the kernel build exported,
	static (the ppc64le initramfs and LAVA's ramdisk have no libc)."""
	ops = ops or Ops()
	locks.take(locks.build_lock(req.build_dir),
		   f'the {req.arch.name} build ({req.build_dir})')
	kst = req.tree.path / 'tools' / 'testing' / 'selftests'
	src = selftests_source(req.tree)
	if not (kst / 'lib.mk').exists():
		raise UserError(f'{kst}/lib.mk missing: not a kernel tree with '
				'kselftests')
	if not (src / 'Makefile').exists():
		raise UserError(f'{src} missing: the series\' selftests patch '
				f'is not applied in {req.tree.path}',
				'inv apply (or give a tree whose branch has '
				'the whole series)')
	cc = f'{req.arch.cross_compile}gcc'
	ops.require(cc, req.arch.cross_package)
	d = selftests_dir(req, src, kst, cc)
	ks = Kselftests(d / 'install')
	log = req.build_dir / 'kselftest.log'
	log.write_text('')
	res = ops.stream(['make', '-C', str(kst), f'TARGETS={COLLECTION}',
			  f'O={d}', f'KSFT_INSTALL_PATH={ks.install}',
			  f'KHDR_INCLUDES=-isystem {req.build_dir}/usr/include',
			  f'ARCH={req.arch.linux_arch}',
			  f'CROSS_COMPILE={req.arch.cross_compile}',
			  'LDFLAGS=-static', 'install'], log)
	if res.returncode != 0:
		errors = [l for l in res.output.splitlines() if 'error' in l]
		raise UserError('building the kselftests failed:\n  ' +
				'\n  '.join(errors[:15] or
					    res.output.splitlines()[-15:]),
				f'the full log is {log}')
	return ks
