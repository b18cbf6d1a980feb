# SPDX-License-Identifier: GPL-2.0
"""The stages (base, apply, build, test) and the main job that chains them.

tasks.py only parses options and calls these; each stage also runs alone.
"""

import contextlib
import datetime
import errno
import os
import shlex
import shutil
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from . import arches, bases, boot, collect, configs, initramfs, kernel, \
	locks, paths, progs, qemu, results, rootfs, watch
from .errors import EXIT_CANNOT_RUN, EXIT_OK, EXIT_TEST_FAILED, \
	InfraError, PerfctrError, UserError
from . import ops as ops_mod
from .ops import Ops, progress
from .series import Series


@dataclass(frozen=True)
class Options:
	arch: str = 'x86_64'
	base: Optional[str] = None
	tree: Optional[str] = None
	ref: Optional[str] = None
	jobs: int = os.cpu_count() or 2
	accel: str = 'auto'
	timeout: float = 900.0
	fragments: Tuple[str, ...] = ()
	config_name: str = 'default'
	offline: bool = False
	apply: bool = True
	# environment for the guest's test programs (e.g. the fuzzer's bounds)
	guest_env: Tuple[Tuple[str, str], ...] = ()
	# QEMU CPU model instead of the arch's default (arches whose guest
	# the tools start: ppc64le)
	cpu: Optional[str] = None
	# boot the arch's fast way (ArchParams.fast_boot: ppc64le's
	# initramfs, no Python checks) where it has one: inv bisect --boot
	fast_boot: bool = False
	# the kselftests and Python checks; False for a bisect prefix that
	# has no system calls yet (KUnit and the kernel log only)
	userspace: bool = True
	# KUnit suites are built into the kernel (False: a bisect prefix
	# before the first one)
	kunit: bool = True


ACCELS = ('auto', 'kvm', 'tcg')


def validate(opts: Options) -> None:
	"""Refuse bad options before anything slow (a base fetch, a build)
	happens: a UserError naming the choices."""
	arch = arches.get(opts.arch)
	if opts.ref and not opts.tree:
		raise UserError('--ref needs --tree (a Debian base is pinned by '
				'its package version)',
				'give --tree PATH with --ref, or drop --ref')
	if opts.accel not in ACCELS:
		raise UserError(f'--accel {opts.accel}: unknown accelerator',
				f'use one of: {", ".join(ACCELS)}')
	if not opts.timeout > 0:
		raise UserError(f'--timeout {opts.timeout:g}: the guest needs '
				'some time to run',
				'give a number of seconds above 0 (default 900)')
	if opts.jobs < 1:
		raise UserError(f'--jobs {opts.jobs}: make needs at least one job',
				'give --jobs 1 or more, or leave it out')
	if opts.cpu and not arch.picks_cpu:
		raise UserError(f'--cpu {opts.cpu}: {opts.arch} boots with '
				'virtme-ng, which picks the CPU model itself',
				'drop --cpu (it is for ppc64le: power9, power10)')


def options(arch: str = 'x86_64', base: Optional[str] = None,
	    tree: Optional[str] = None, ref: Optional[str] = None,
	    offline: bool = False, **kw) -> Options:
	"""The options, validated (a UserError, exit 2, before anything slow)."""
	o = Options(arch=arch, base=base, tree=tree, ref=ref, offline=offline,
		    **kw)
	validate(o)
	return o


def number(option: str, value, kind=float):
	"""A number given on the command line, or a UserError naming it."""
	try:
		return kind(value)
	except (TypeError, ValueError):
		raise UserError(f'--{option} {value}: not a number',
				f'give --{option} a number of '
				f'{"seconds" if option == "timeout" else "jobs"}') \
			from None


def jobs_option(jobs) -> dict:
	"""{'jobs': N} for --jobs N, {} when not given (all cores)."""
	return {'jobs': number('jobs', jobs, int)} if jobs else {}


def check_options(arch: str = 'x86_64', base: Optional[str] = None,
		  tree: Optional[str] = None, ref: Optional[str] = None,
		  offline: bool = False, jobs=0, accel: str = 'auto',
		  timeout=None, no_apply: bool = False, debug: bool = False,
		  cpu: Optional[str] = None) -> Options:
	"""inv check's options: the kernel config's settings
	(data/configs.toml) under the ones given, validated."""
	arches.get(arch)	# an unknown arch fails here, at once
	config = configs.get('debug' if debug else configs.DEFAULT)
	if timeout is None:
		timeout = config.timeout
	return options(arch=arch, base=base, tree=tree, ref=ref,
		       offline=offline, accel=accel,
		       timeout=number('timeout', timeout), apply=not no_apply,
		       cpu=cpu, **config.options(arch), **jobs_option(jobs))


def resolve_base(opts: Options, ops: Ops) -> bases.BaseTree:
	return bases.resolve(opts.base, opts.tree, opts.ref, ops, opts.offline)


def series_for(tree: bases.BaseTree) -> Series:
	"""The series on @tree, whose work tree this run now holds (the
	tree's lock, until the run ends or lets it go)."""
	lock_tree(tree)
	return Series(tree, paths.REPO / tree.patches)


def lock_tree(tree: bases.BaseTree) -> None:
	locks.take(locks.tree_lock(tree.path),
		   f'the {tree.name} tree ({tree.path})')


def build_request(opts: Options, tree: bases.BaseTree) -> kernel.BuildRequest:
	arch = arches.get(opts.arch)
	frags = opts.fragments or arch.fragments
	return kernel.BuildRequest(
		tree=tree, arch=arch, fragments=tuple(frags),
		build_dir=kernel.build_dir_for(tree, arch, opts.config_name),
		jobs=opts.jobs, config_name=opts.config_name)


def show_base(opts: Options, ops: Ops) -> None:
	"""inv base: fetch and import the base; say where it is."""
	t = resolve_base(opts, ops)
	print(f'{t.name}: {t.origin}\n  tree   {t.path}\n  ref    '
	      f'{t.ref}\n  commit {t.commit}')


def apply_series(opts: Options, ops: Ops, abort: bool = False) -> None:
	"""inv apply: the series onto the base (or --abort a stopped one)."""
	t = resolve_base(opts, ops)
	s = series_for(t)
	if abort:
		print(f'{t.path}: {s.abort()}')
		return
	r = s.apply()
	print(f'{t.path}: branch {r.branch} at {r.tip[:12]}, '
	      f'{len(r.patches)} patches '
	      f'{"applied" if r.changed else "already applied"}')


def squash(opts: Options, ops: Ops) -> None:
	"""inv squash: fold fixup!/amend! commits, then export."""
	s = series_for(resolve_base(opts, ops))
	new = s.autosquash()
	names = s.export()
	print(f'perfctr at {new[:12]}; exported {len(names)} patches')


def export(opts: Options, ops: Ops) -> None:
	"""inv export: the work branch back to the series directory."""
	t = resolve_base(opts, ops)
	names = series_for(t).export()
	print(f'exported {len(names)} patches to {paths.REPO / t.patches}')


def build_only(opts: Options, ops: Ops) -> None:
	"""inv build: apply (unless --no-apply) and build, incrementally."""
	t = resolve_base(opts, ops)
	if opts.apply:
		series_for(t).apply()
	r = kernel.build(build_request(opts, t), ops)
	print(f'{r.release}: {r.image} ({r.build_seconds:.0f} s; log {r.log})')


def run_dir(opts: Options, tree: bases.BaseTree, suffix: str = '') -> Path:
	"""A results directory of this run's own: two runs in the same
	second (one PERFCTR_RESULTS shared) get -2, -3... rather than one
	directory.  results/latest moves to it only once its results file
	is written (point_latest)."""
	stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
	top = paths.results_dir()
	top.mkdir(parents=True, exist_ok=True)
	name = f'{stamp}-{opts.arch}-{tree.name}{suffix}'
	for n in range(1, 1000):
		d = top / (name if n == 1 else f'{name}-{n}')
		try:
			d.mkdir()
			return d
		except FileExistsError:
			continue
	raise UserError(f'{top} has 999 runs named {name}*',
			'clear out old runs from PERFCTR_RESULTS')


def point_latest(d: Path) -> None:
	"""results/latest -> @d, replaced in one step (a symlink under a
	name of this process's own, renamed over latest): a reader never
	sees it missing, and two runs never collide on it."""
	latest = d.parent / 'latest'
	tmp = d.parent / f'.latest-{os.getpid()}-{threading.get_ident()}'
	tmp.unlink(missing_ok=True)
	tmp.symlink_to(d.name)
	os.replace(tmp, latest)


@dataclass(frozen=True)
class GuestPlan:
	"""Where a vng guest finds what the runner needs: on the host's root
	(x86_64: the same paths, the host's Python and venv), or on a root
	of the arch's own (rootfs.py) with the repository, the build
	directory and the output mounted at fixed places."""
	python: str
	repo: str
	out: str
	build_dir: Path			# on the host
	build: str			# the same, as the guest sees it
	root: Optional[Path] = None
	rwdirs: Tuple[Path, ...] = ()
	mounts: Tuple[Tuple[str, Path, bool], ...] = ()
	qemu: Tuple[str, ...] = ()

	def path(self, host: Path) -> str:
		"""A path under the build directory, as the guest sees it."""
		return str(Path(self.build) / host.relative_to(self.build_dir))

	def in_repo(self, host: Path) -> str:
		"""A path in this repository, as the guest sees it."""
		return str(Path(self.repo) / host.relative_to(paths.REPO))


def plan_guest(opts: Options, arch: arches.ArchParams, build_dir: Path,
	       guest_out: Path, run: results.RunResult,
	       ops: Ops) -> GuestPlan:
	"""The host's root for an arch that has none of its own; else its
	root (from the cache, or built now) and the QEMU that boots it,
	both recorded in @run."""
	if not arch.own_root:
		return GuestPlan(python=sys.executable, repo=str(paths.REPO),
				 out=str(guest_out), build_dir=build_dir,
				 build=str(build_dir), rwdirs=(guest_out,))
	t0 = time.monotonic()
	rfs = rootfs.ensure(arch, ops)
	run.durations['rootfs'] = round(time.monotonic() - t0, 1)
	run.rootfs = rfs.as_dict()
	progress(f'rootfs: {rfs.path} (Debian {rfs.suite} {rfs.debian_arch}, '
		 f'{rfs.size_bytes / 2**20:.0f} MB' +
		 (f', built now in {rfs.build_seconds:.0f} s)' if rfs.fresh
		  else ', cached)'))
	q = qemu.choose(arch, ops)
	run.qemu = dict(q.as_dict(), cpu=opts.cpu or arch.guest.cpu)
	progress(f'guest CPU: {run.qemu["cpu"]}' +
		 ('' if opts.cpu else ' (the default; --cpu to change)'))
	return GuestPlan(
		python=rootfs.GUEST_PYTHON, repo=rootfs.GUEST_SRC,
		out=rootfs.GUEST_OUT, build_dir=build_dir,
		build=rootfs.GUEST_BUILD, root=rfs.path,
		mounts=((rootfs.GUEST_SRC, paths.REPO, False),
			(rootfs.GUEST_BUILD, build_dir, False),
			(rootfs.GUEST_OUT, guest_out, True)),
		qemu=tuple(qemu.argv_prefix(q)))


def guest_env(opts: Options, arch: arches.ArchParams) -> List[Tuple[str, str]]:
	"""The test programs' environment: the arch's defaults, then the
	options' (the debug run's bounds), which win."""
	env = dict(arch.guest.env)
	env.update(dict(opts.guest_env))
	return sorted(env.items())


def test(opts: Options, tree: bases.BaseTree, build: kernel.BuildResult,
	 req: kernel.BuildRequest, run: results.RunResult, outdir: Path,
	 ops: Ops) -> None:
	"""Boot the built kernel, run every family in the guest, collect."""
	t0 = time.monotonic()
	how = req.arch.boot_for(opts.fast_boot)
	ksel = kernel.build_selftests(req, ops) if opts.userspace else None
	built = progs.build(req.arch, build.build_dir / 'usr' / 'include',
			    build.build_dir / 'guest-progs', ops) \
		if opts.userspace and how == 'vng' else None
	run.durations['selftests_build'] = round(time.monotonic() - t0, 1)
	want = None if opts.accel == 'auto' else opts.accel
	accel = boot.choose_accel(req.arch, ops, want=want,
				  image=build.image if how == 'vng'
				  else None, probe_log=outdir / 'kvm-probe.log')
	_record_accel(run, accel)
	guest_out = outdir / 'guest'
	guest_out.mkdir(exist_ok=True)
	if how == 'initramfs':
		_test_initramfs(opts, tree, build, req, run, outdir, guest_out,
				ksel, accel, ops)
		return
	plan = plan_guest(opts, req.arch, build.build_dir, guest_out, run, ops)
	cmd = guest_command(plan, opts, ksel, built, guest_env(opts, req.arch))
	silence = req.arch.silence_for(opts.config_name)
	t0 = time.monotonic()
	while True:
		breq = boot.BootRequest(arch=req.arch, image=build.image,
					command=cmd, accel=accel,
					rwdirs=plan.rwdirs, root=plan.root,
					mounts=plan.mounts, qemu=plan.qemu,
					cpu=opts.cpu,
					log=outdir / 'console.log',
					timeout=opts.timeout, idle_timeout=silence)
		w = watch.GuestWatch(progress, kvm=accel.accel is boot.Accel.KVM)
		done = boot.boot(breq, ops, watch=w.on_line, on_quiet=w.on_quiet)
		if not done.stopped.startswith(boot.KVM_FAILED):
			break
		accel = _kvm_failed_at_run(run, accel, done, breq.log, want, ops)
		shutil.rmtree(guest_out)
		guest_out.mkdir()
	run.durations['boot_and_test'] = round(time.monotonic() - t0, 1)
	run.logs['console'] = str(breq.log)
	run.logs['guest'] = str(guest_out)
	run.logs['boot_command'] = boot.reproducer(boot.command_line(breq))
	run.cpu = boot.cpu_model(breq)
	_stopped_problem(run, done, opts.timeout, breq.log)
	run.tests = collect.collect(guest_out, breq.log, tree.path,
				    userspace=opts.userspace, kunit=opts.kunit,
				    stopped=done.stopped)
	run.command = run.command or ''


def guest_command(plan: GuestPlan, opts: Options,
		  kselftests: Optional[kernel.Kselftests],
		  built: Optional[Path], env: List[Tuple[str, str]]) -> str:
	"""The command a vng guest runs: pytools/guest's runner, from this
	repository, with the Python the plan names."""
	q = shlex.quote
	return (f'cd {q(plan.repo)} && {q(plan.python)} -m '
		f'{paths.GUEST_MODULE} --out {q(plan.out)}' +
		(f' --kselftests {q(plan.path(kselftests.install))}'
		 f' --pytest {q(plan.in_repo(paths.ABI_CHECKS))}'
		 f' --headers {q(plan.path(plan.build_dir / "usr" / "include"))}'
		 f' --progs {q(plan.path(built))}'
		 if opts.userspace and kselftests and built else '') +
		''.join(f' --env {q(f"{k}={v}")}' for k, v in env))


def _record_accel(run: results.RunResult, accel: boot.AccelChoice) -> None:
	run.accelerator = {'accel': accel.accel.value, 'reason': accel.reason}
	run.accel_attempts = boot.attempts_json(accel.attempts)


def _kvm_failed_at_run(run: results.RunResult, accel: boot.AccelChoice,
		       done, log: Path, want: Optional[str],
		       ops: Ops) -> boot.AccelChoice:
	"""KVM failed in the middle of the real run: keep its console, say
	so, and go on under TCG (or stop, if --accel kvm was asked for)."""
	kept = log.with_name('console-kvm.log')
	log.replace(kept)
	run.logs['console_kvm'] = str(kept)
	attempt = boot.Attempt('kvm', 'run', False, done.stopped,
			       round(done.duration, 1))
	qemu = ops.which(_qemu_of(run)) or _qemu_of(run)
	boot.record_verdict(boot.host_key(ops, qemu), False, done.stopped)
	if want == 'kvm':
		raise InfraError(f'--accel kvm asked for, but {done.stopped} '
				 f'(console: {kept})', 'use --accel tcg or auto')
	progress(f'boot: {done.stopped}; QEMU killed, running again under TCG')
	new = boot.AccelChoice(
		boot.Accel.TCG, 'KVM failed during the run ('
		f'{done.stopped.removeprefix(boot.KVM_FAILED + ": ")})',
		(*accel.attempts, attempt))
	_record_accel(run, new)
	return new


def _qemu_of(run: results.RunResult) -> str:
	return arches.get(run.arch).qemu_binary


def _stopped_problem(run: results.RunResult, done, timeout: float,
		     log: Path) -> None:
	"""A guest the tools had to kill is a problem of the run, said with
	the reason and the last lines of its console."""
	if not done.stopped:
		return
	tail = [l for l in done.output.splitlines() if l.strip()][-5:]
	last = ''.join(f'\n    | {l[:160]}' for l in tail)
	if done.timed_out:
		what = (f'the guest did not finish within {timeout:.0f} s and '
			'was killed')
	elif done.silent:
		what = f'the guest stopped talking and was killed: {done.stopped}'
	else:
		what = f'the guest was killed: {done.stopped}'
	run.problems.append(f'{what} (console: {log}); its last lines:{last}')


NO_PYTHON_REASON = (
	'not run on the fast boot: this {arch} guest is an initramfs of '
	'static C programs with no Python (inv bisect --boot); inv check '
	'runs the Python ABI checks and perfex on a {arch} root of its own')


def _test_initramfs(opts, tree, build, req, run, outdir, guest_out, ksel,
		    accel, ops) -> None:
	"""Boot QEMU with the kernel and an initramfs of the kselftests."""
	q = qemu.choose(req.arch, ops)
	run.qemu = dict(q.as_dict(), cpu=opts.cpu or req.arch.guest.cpu)
	progress(f'guest CPU: {run.qemu["cpu"]}' +
		 ('' if opts.cpu else ' (the default; --cpu to change)'))
	initrd = initramfs.build(req.arch, ksel, outdir / 'initramfs.cpio', ops)
	breq = boot.BootRequest(arch=req.arch, image=build.image, accel=accel,
				log=outdir / 'console.log', timeout=opts.timeout,
				initrd=initrd, qemu=qemu.argv_prefix(q),
				cpu=opts.cpu, env=opts.guest_env,
				idle_timeout=req.arch.silence_for(
					opts.config_name))
	log = breq.log
	t0 = time.monotonic()
	w = watch.GuestWatch(progress, kvm=accel.accel is boot.Accel.KVM)
	done = boot.boot(breq, ops, watch=w.on_line, on_quiet=w.on_quiet)
	run.durations['boot_and_test'] = round(time.monotonic() - t0, 1)
	run.logs['console'] = str(log)
	run.logs['guest'] = str(guest_out)
	run.logs['qemu'] = boot.reproducer(boot.command_line(breq))
	run.cpu = boot.cpu_model(breq)
	_stopped_problem(run, done, opts.timeout, log)
	initramfs.split_console(log.read_text(errors='replace'), guest_out)
	run.tests = collect.collect(guest_out, log, tree.path,
				    expect_pytest=False, userspace=opts.userspace,
				    kunit=opts.kunit, stopped=done.stopped)
	if opts.userspace:
		run.tests.append(results.TestCase(
			'pytest', 'python ABI checks', results.Status.SKIP,
			NO_PYTHON_REASON.format(arch=req.arch.name)))


def check(opts: Options, argv: List[str], ops: Optional[Ops] = None) -> int:
	"""The main job: base, apply, build, test, report.  Returns exit code."""
	ops = ops or Ops()
	validate(opts)
	stages: Dict[str, float] = {}
	t = time.monotonic()
	tree = resolve_base(opts, ops)
	stages['base'] = round(time.monotonic() - t, 1)
	progress(f'base: {tree.origin} at {tree.commit[:12]} ({tree.path})')

	t = time.monotonic()
	if opts.apply:
		applied = series_for(tree).apply()
		tip = applied.tip
		progress(f'apply: {len(applied.patches)} patches, '
			 f'{"applied" if applied.changed else "already applied"}')
	else:
		lock_tree(tree)
		if (tree.path / '.git' / 'rebase-apply').is_dir():
			series_for(tree).check_not_mid_am()
		tip = ops.run(['git', '-C', str(tree.path), 'describe', '--always',
			       '--dirty']).output.strip()
		progress(f'apply: skipped (--no-apply), testing the tree as it is '
			 f'({tip})')
	stages['apply'] = round(time.monotonic() - t, 1)

	req = build_request(opts, tree)
	# The guest's own root (if it needs one) builds alongside the kernel;
	# what that build needs is checked first, at once.
	prefetch = None
	if req.arch.own_root and req.arch.boot_for(opts.fast_boot) == 'vng':
		rootfs.preflight(req.arch, ops)
		prefetch = rootfs.Prefetch(req.arch, ops)
	try:
		t = time.monotonic()
		build = kernel.build(req, ops)
		stages['build'] = round(time.monotonic() - t, 1)
		progress(f'build: {build.release} in {build.build_seconds:.0f} s')
		# The tree is built: another run may apply its series now.
		# The build directory stays this run's until it ends (the
		# guest reads the kernel, kselftests and programs in it).
		locks.release(locks.tree_lock(tree.path))

		run, path = test_and_report(opts, tree, build, req, tip, stages,
					    argv, ops)
	finally:
		if prefetch:
			prefetch.stop()
	print(results.summary(run))
	print(f'JUnit: {path.parent / "results.junit.xml"}')
	print(path)
	return EXIT_OK if run.passed else EXIT_TEST_FAILED


def test_and_report(opts: Options, tree: bases.BaseTree,
		    build: kernel.BuildResult, req: kernel.BuildRequest,
		    tip: str, stages: Dict[str, float], argv: List[str],
		    ops: Ops, suffix: str = '') -> Tuple[results.RunResult, Path]:
	"""Boot a built kernel, test it, write results.json; the run and its
	path.  @suffix names the results directory further (bisect prefixes)."""
	outdir = run_dir(opts, tree, suffix)
	run = results.RunResult(
		arch=opts.arch,
		base={'name': tree.name, 'origin': tree.origin,
		      'version': tree.version, 'commit': tree.commit,
		      'ref': tree.ref, 'series_tip': tip},
		kernel_release=build.release, config=opts.config_name,
		config_fragments=list(req.fragments),
		durations=dict(stages),
		command=' '.join(shlex.quote(a) for a in argv),
		logs={'build': str(build.log)},
		started=datetime.datetime.now().isoformat(timespec='seconds'))
	try:
		test(opts, tree, build, req, run, outdir, ops)
	except BaseException as e:
		# Killed (^C, SIGTERM) or failed: the directory says so, and
		# results/latest stays on the last run that has results.
		with contextlib.suppress(OSError):
			(outdir / INCOMPLETE).write_text(
				f'stopped before its results were written: '
				f'{type(e).__name__}: {e}\n')
		raise
	path = results.write(run, outdir)
	point_latest(outdir)
	return run, path


# In a results directory whose run stopped before its results.json (a
# run killed with -9 leaves neither: its directory has no results.json).
INCOMPLETE = 'INCOMPLETE' 


class Terminated(KeyboardInterrupt):
	"""SIGTERM (a CI runner or timeout(1) stopping the run), raised in
	the main thread so that the same cleanup as for ^C runs: ops.stream
	kills its child's process group (the guest's QEMU with it)."""


def _on_sigterm(signum, frame):
	raise Terminated()


def error_log(exc: BaseException) -> Path:
	"""Write the traceback of an unexpected exception; its path."""
	stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
	d = paths.results_dir() / 'errors'
	d.mkdir(parents=True, exist_ok=True)
	path = d / f'{stamp}-{os.getpid()}.log'
	path.write_text(f'$ {" ".join(shlex.quote(a) for a in sys.argv)}\n' +
			''.join(traceback.format_exception(exc)))
	return path


def reap_leftovers() -> None:
	"""End what an earlier run of this cache left running (a guest of a
	run killed with its watchdog) and say so."""
	for left in ops_mod.reap_leftovers():
		progress(f'ended process group {left.pgid} ({left.argv[:120]}) '
			 f'left running by an earlier run (PID {left.run_pid} in '
			 f'{left.checkout}) that was killed')


def guarded(fn, *args, **kw) -> int:
	"""Run a stage; turn anything that is not a test result into a
	message and exit 2.

	Every task runs through here.  The tools' own errors say what to fix;
	^C and SIGTERM stop the run (and its guest); any other exception (a
	bug, a GitError, a KeyError) is named in one line with its
	traceback in a log file, never a status that looks like a test
	failure.
	"""
	old = None
	if threading.current_thread() is threading.main_thread():
		old = signal.signal(signal.SIGTERM, _on_sigterm)
	try:
		reap_leftovers()
		rc = fn(*args, **kw)
		return EXIT_OK if rc is None else rc
	except PerfctrError as e:
		print(f'perfctr: {e.kind}: {e}', file=sys.stderr)
		return e.exit_code
	except Terminated:
		print('perfctr: terminated (SIGTERM); the guest, if any, was '
		      'stopped with it', file=sys.stderr)
		return EXIT_CANNOT_RUN
	except KeyboardInterrupt:
		print('perfctr: interrupted', file=sys.stderr)
		return EXIT_CANNOT_RUN
	except OSError as e:
		if e.errno == errno.ENOSPC:
			print(f'perfctr: error: no space left on the device holding '
			      f'{e.filename or "a file the tools were writing"}\n'
			      f'  fix: free some space (or point PERFCTR_CACHE / '
			      f'PERFCTR_RESULTS at a bigger disk) and run the same '
			      f'command again: build directories are kept, make '
			      f'resumes', file=sys.stderr)
			return EXIT_CANNOT_RUN
		if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM) and \
		   e.filename:
			where = Path(e.filename)
			print(f'perfctr: user error: cannot write {where}: '
			      f'{e.strerror}\n'
			      f'  fix: make {where.parent} writable (or work in a '
			      f'writable checkout; PERFCTR_CACHE and '
			      f'PERFCTR_RESULTS move the cache and the results) '
			      f'and run the same command again', file=sys.stderr)
			return EXIT_CANNOT_RUN
		return _unexpected(e)
	except Exception as e:		# pylint: disable=broad-except
		return _unexpected(e)
	finally:
		if old is not None:
			signal.signal(signal.SIGTERM, old)


def _unexpected(e: BaseException) -> int:
	msg = str(e).strip() or '(no message)'
	try:
		where = f'traceback in {error_log(e)}'
	except OSError:
		where = 'traceback below'
		traceback.print_exception(e, file=sys.stderr)
	print(f'perfctr: internal error: {type(e).__name__}: {msg}\n'
	      f'  the run could not be done; {where}', file=sys.stderr)
	return EXIT_CANNOT_RUN
