# SPDX-License-Identifier: GPL-2.0
"""inv shell and inv run: the built kernel booted for a person.

The same stages as inv check up to the boot (base, apply, build; the
arch's own root and QEMU where it has them; the accelerator proved the
same way, and said), then a guest that does what the person asks: an
interactive shell on the terminal (inv shell), or one command whose
output is printed and whose exit status is the task's (inv run; vng
returns the command's).

In the guest the working directory is the checkout (x86_64: at its own
path, on the host's root; ppc64le: at /perfctr/src on its own root),
PERFCTR_HEADERS names the kernel's installed headers, and a directory
on PATH holds `perfex` (a wrapper of `python3 -m pytools.guest.perfex`
from the checkout), the programs given with --build (compiled static by
the arch's compiler, as pytools/progs.py builds the checks' programs),
and this checkout's kselftests (built first, seconds).  That directory is
the session's, results/shell/<stamp>-<arch>/guest/bin on the host.
"""

import datetime
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from . import arches, boot, kernel, paths, pipeline, results, rootfs
from .errors import EXIT_CANNOT_RUN, InfraError, UserError
from .ops import Ops, progress

BIN = 'bin'
SHELL = 'perfctr-shell'
# What QEMU itself says at start-up, not the command: the backport QEMU
# (ppc64le) finding the system build's display and audio modules, and
# TCG's pseries capability warnings.  Kept in the console log, not
# printed among the command's output.
QEMU_NOISE = re.compile(
	r"qemu-system-\w+: (failed to (initialize|open) module: |"
	r"warning: TCG doesn't support requested feature, cap-)|"
	r"Only modules from the same build can be loaded\.$")
STATUS = '.shell-status'	# the login shell's exit status, for inv shell's
# inv check runs the KUnit suites at boot; a person's guest skips them
# (minutes of emulated POWER before the prompt): inv check runs them.
APPEND = ('kunit.enable=0',)


@dataclass(frozen=True)
class Session:
	"""What the person's guest is given, as it sees it."""
	plan: pipeline.GuestPlan
	bin_dir: Path			# on the host: perfex, the programs
	env: Tuple[Tuple[str, str], ...]
	cwd: str			# the checkout

	@property
	def bin(self) -> str:
		return self.plan.out + '/' + BIN


def perfex_wrapper(plan: pipeline.GuestPlan) -> str:
	"""`perfex` as a plain command: the checkout's perfex, run by the
	guest's Python (x86_64: the host's venv; ppc64le: the root's)."""
	q = shlex.quote
	return ('#!/bin/sh\n'
		'# written by pytools/shell.py: perfex from the checkout\n'
		f'PYTHONPATH={q(plan.repo)}${{PYTHONPATH:+:$PYTHONPATH}} '
		f'exec {q(plan.python)} -m pytools.guest.perfex "$@"\n')


def exports(env: Sequence[Tuple[str, str]]) -> str:
	return '; '.join(f'export {k}={shlex.quote(v)}' for k, v in env)


def run_command(s: Session, argv: Sequence[str]) -> str:
	"""The guest's command line of `inv run -- ARGV`."""
	return (f'{exports(s.env)}; cd {shlex.quote(s.cwd)} && '
		f'{shlex.join(argv)}')


def shell_script(s: Session, what: str) -> str:
	"""The guest's login shell for inv shell: the environment set, a
	line saying what is at hand, then the guest's bash (or sh)."""
	banner = (f'perfctr: {what}. perfex -- ls (-e instructions where '
		  'the CPU counts: ppc64le); '
		  f'PERFCTR_HEADERS={dict(s.env)["PERFCTR_HEADERS"]}; '
		  'exit (or ^D) powers the guest off')
	return ('#!/bin/sh\n'
		'# written by pytools/shell.py: inv shell\'s login shell\n'
		f'{exports(s.env)}\n'
		f'cd {shlex.quote(s.cwd)}\n'
		f'echo {shlex.quote(banner)}\n'
		'if command -v bash >/dev/null; then bash --norc -i; '
		'else sh -i; fi\n'
		'st=$?\n'
		f'echo $st > {shlex.quote(s.bin + "/" + STATUS)}\n'
		'exit $st\n')


def compile_progs(arch: arches.ArchParams, headers: Path,
		  sources: Sequence[Path], out: Path, ops: Ops,
		  selftests: Optional[Path] = None) -> List[Path]:
	"""Each C source, static, by the arch's compiler, against the
	kernel's uapi @headers (and the kernel's @selftests directory, for
	kselftest_harness.h), into @out as its stem; the programs."""
	stems = [s.stem for s in sources]
	dup = next((n for n in stems if stems.count(n) > 1), None)
	if dup:
		raise UserError(f'--build: two programs would be named {dup}',
				'rename one of the sources')
	cc = f'{arch.cross_compile}gcc'
	ops.require(cc, arch.cross_package)
	out.mkdir(parents=True, exist_ok=True)
	built = []
	for src in sources:
		if not src.is_file():
			raise UserError(f'--build {src}: no such file',
					'give the path of a C source')
		prog = out / src.stem
		inc = ['-isystem', str(headers)]
		if selftests:
			inc += ['-I', str(selftests)]
		res = ops.run([cc, '-static', '-O2', '-Wall', *inc,
			       '-o', str(prog), str(src)], check=False)
		if res.returncode != 0:
			raise UserError(f'{cc} -static {src} failed (status '
					f'{res.returncode}):\n' +
					res.output.strip()[-3000:],
					'fix the program; it is built against '
					f'the kernel\'s headers in {headers}')
		progress(f'build: {src} -> {prog} ({arch.name}, static)')
		built.append(prog)
	return built


def session_dir(arch: str) -> Path:
	stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
	d = paths.results_dir() / 'shell' / f'{stamp}-{arch}'
	d.mkdir(parents=True, exist_ok=True)
	return d


def prepare(opts: pipeline.Options, ops: Ops) \
		-> Tuple[kernel.BuildRequest, kernel.BuildResult]:
	"""inv check's stages up to the boot: base, apply, build (the
	arch's root built alongside)."""
	tree = pipeline.resolve_base(opts, ops)
	progress(f'base: {tree.origin} at {tree.commit[:12]} ({tree.path})')
	if opts.apply:
		applied = pipeline.series_for(tree).apply()
		progress(f'apply: {len(applied.patches)} patches, '
			 f'{"applied" if applied.changed else "already applied"}')
	req = pipeline.build_request(opts, tree)
	prefetch = None
	if req.arch.own_root:
		rootfs.preflight(req.arch, ops)
		prefetch = rootfs.Prefetch(req.arch, ops)
	try:
		build = kernel.build(req, ops)
	finally:
		if prefetch:
			prefetch.stop()
	progress(f'build: {build.release} in {build.build_seconds:.0f} s')
	return req, build


def make_session(opts: pipeline.Options, req: kernel.BuildRequest,
		 build: kernel.BuildResult, outdir: Path,
		 sources: Sequence[Path], ops: Ops) -> Session:
	"""The guest's plan (inv check's: root, QEMU, mounts) and what the
	person gets in it, written into the session's directory."""
	guest_out = outdir / 'guest'
	bin_dir = guest_out / BIN
	bin_dir.mkdir(parents=True, exist_ok=True)
	plan = pipeline.plan_guest(opts, req.arch, build.build_dir, guest_out,
				   results.RunResult(arch=opts.arch, base={}),
				   ops)
	headers = build.build_dir / 'usr' / 'include'
	compile_progs(req.arch, headers, sources, bin_dir, ops,
		      req.tree.path / 'tools' / 'testing' / 'selftests')
	wrapper = bin_dir / 'perfex'
	wrapper.write_text(perfex_wrapper(plan))
	wrapper.chmod(0o755)
	path = [plan.out + '/' + BIN]
	# this checkout's kselftests, built as inv check builds them (in a
	# directory named by their inputs' content: kernel.selftests_key),
	# so that an edited test runs as edited
	ksel = kernel.build_selftests(req, ops)
	progress(f'kselftests: {ksel.collection} (on PATH; '
		 f'{ksel.runner.name} beside it)')
	path.append(plan.path(ksel.collection))
	env = (('PATH', ':'.join(path) + ':/usr/local/sbin:/usr/local/bin:'
		'/usr/sbin:/usr/bin:/sbin:/bin'),
	       ('PERFCTR_HEADERS', plan.path(headers)))
	return Session(plan=plan, bin_dir=bin_dir, env=env, cwd=plan.repo)


def request(opts: pipeline.Options, req: kernel.BuildRequest,
	    build: kernel.BuildResult, s: Session, accel: boot.AccelChoice,
	    log: Path, command: str = '', shell: str = '') -> boot.BootRequest:
	return boot.BootRequest(
		arch=req.arch, image=build.image, accel=accel, log=log,
		timeout=opts.timeout, command=command, shell=shell,
		rwdirs=s.plan.rwdirs, root=s.plan.root, mounts=s.plan.mounts,
		qemu=s.plan.qemu, cpu=opts.cpu, append=APPEND, verbose=False)


def main(opts: pipeline.Options, ops: Ops,
	 command: Optional[Sequence[str]] = None,
	 sources: Sequence[Path] = ()) -> int:
	"""inv shell (@command None) and inv run -- COMMAND; the exit
	status: the shell's or the command's."""
	if command is not None and not command:
		raise UserError('inv run needs a command after --',
				'inv run -- perfex -e instructions -- ls')
	req, build = prepare(opts, ops)
	outdir = session_dir(opts.arch)
	want = None if opts.accel == 'auto' else opts.accel
	accel = boot.choose_accel(req.arch, ops, want=want, image=build.image,
				  probe_log=outdir / 'kvm-probe.log')
	s = make_session(opts, req, build, outdir, sources, ops)
	what = (f'{build.release} on {req.arch.name} under '
		f'{accel.accel.value.upper()}')
	progress(f'{"shell" if command is None else "run"}: {what} '
		 f'({accel.reason}); in the guest: {s.cwd}, perfex and '
		 f'{len(sources)} program(s) of --build on PATH ({s.bin})')
	if command is None:
		script = s.bin_dir / SHELL
		script.write_text(shell_script(s, what))
		script.chmod(0o755)
		breq = request(opts, req, build, s, accel, outdir / 'console.log',
			       shell=f'{s.bin}/{SHELL}')
		status = s.bin_dir / STATUS
		status.unlink(missing_ok=True)
		done = boot.boot(breq, ops)
		if done.returncode != 0:
			progress(f'shell: vng ended with status {done.returncode}')
			return EXIT_CANNOT_RUN
		try:
			return int(status.read_text())
		except (OSError, ValueError):
			# powered off from inside (poweroff, sysrq): no status
			return 0
	return _run(opts, req, build, s, accel, outdir, list(command), want,
		    ops)


def _run(opts, req, build, s: Session, accel: boot.AccelChoice,
	 outdir: Path, command: List[str], want: Optional[str],
	 ops: Ops) -> int:
	"""One command, its output printed as it comes; a KVM failure on
	the way runs it again under TCG, as inv check does."""
	while True:
		breq = request(opts, req, build, s, accel, outdir / 'console.log',
			       command=run_command(s, command))
		kvm = accel.accel is boot.Accel.KVM

		def line(text: str) -> Optional[str]:
			if not QEMU_NOISE.match(text):
				print(text, flush=True)
			return boot.kvm_failure(text) if kvm else None
		done = boot.boot(breq, ops, watch=line)
		if not (kvm and done.stopped.startswith(boot.KVM_FAILED)):
			break
		if want == 'kvm':
			raise InfraError(f'--accel kvm asked for, but '
					 f'{done.stopped}', 'use --accel tcg or auto')
		boot.record_verdict(boot.host_key(ops, ops.which(
			req.arch.qemu_binary) or req.arch.qemu_binary), False,
			done.stopped)
		progress(f'run: {done.stopped}; QEMU killed, running the '
			 'command again under TCG')
		accel = boot.AccelChoice(boot.Accel.TCG, 'KVM failed during the '
					 'run', accel.attempts)
	if done.stopped:
		progress(f'run: the guest was killed: {done.stopped} (console: '
			 f'{breq.log}; --timeout to give it longer)')
		return EXIT_CANNOT_RUN
	return done.returncode
