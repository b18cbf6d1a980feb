# SPDX-License-Identifier: GPL-2.0
"""Boot a built kernel under QEMU and run the tests: the one way to start
a guest (inv check, bench, bisect --boot and the KVM probe all call
boot()).  A BootRequest says what to boot; the arch says how: virtme-ng
running a command on the host's root filesystem (x86_64) or on a root of
the arch's own (ppc64le's inv check; pytools/rootfs.py builds it), or
QEMU with an initramfs whose /init runs the tests (ppc64le's fast boot
for inv bench and bisect --boot; pytools/initramfs.py makes it and the
command line).

The accelerator is chosen here and said out loud: KVM only when a guest of
this arch is seen to run on it, TCG otherwise.  Machines differ in how their
KVM fails (this project's hosts are nested PVM: on some QEMU aborts at the
first MSR write, on others a vCPU starts, the guest runs a few seconds and
then stops on a "KVM internal error ... emulation failure" with QEMU left
alive), so creating a vCPU proves nothing: the probe boots the kernel to a
marker under a short bound, and the real run under KVM is watched for the
same errors, killed at once, and run again under TCG.  The verdict is
cached per host; a cached "KVM works" only saves the probe, never the watch.
"""

import datetime
import enum
import json
import os
import platform
import re
import shlex
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

from . import paths
from .arches import ArchParams
from .errors import InfraError, UserError
from .ops import Completed, Ops, progress


class Accel(enum.Enum):
	KVM = 'kvm'
	TCG = 'tcg'


@dataclass(frozen=True)
class Attempt:
	"""One try of an accelerator: a probe or a run, and how it went."""
	accel: str		# kvm, tcg
	what: str		# 'vcpu probe', 'boot probe', 'run', 'cache'
	ok: bool
	reason: str
	seconds: float = 0.0


@dataclass(frozen=True)
class AccelChoice:
	accel: Accel
	reason: str
	attempts: Tuple[Attempt, ...] = ()


# What QEMU and the host say when KVM cannot run the guest.
KVM_FAILURE = re.compile(
	r'KVM internal error|emulation failure|kvm_buf_set_msrs|'
	r'failed to set MSR|KVM: entry failed|KVM_RUN failed|kvm run failed|'
	r'failed to initialize kvm|Could not access KVM kernel module|'
	r'KVM_CREATE_VCPU failed|kvm_init_vcpu: ', re.I)
KVM_FAILED = 'KVM failed'
PROBE_MARK = 'perfctr-kvm-probe-ok'
PROBE_TIMEOUT = 90.0
PROBE_SILENCE = 30.0


def kvm_failure(line: str) -> Optional[str]:
	"""The reason, if this line of QEMU's output says KVM failed."""
	if KVM_FAILURE.search(line):
		return f'{KVM_FAILED}: {line.replace("(qemu)", "").strip()[:200]}'
	return None


def host_key(ops: Ops, qemu: str) -> str:
	"""What a cached verdict is valid for: this host, kernel and QEMU."""
	ver = ops.run([qemu, '--version'], check=False, timeout=30).output
	ver = (ver.splitlines() or ['?'])[0].strip()
	return f'{platform.node()} {platform.release()} {ver}'


def _cache_file() -> Path:
	return paths.cache_dir() / 'accel.json'


def cached_verdict(key: str) -> Optional[dict]:
	try:
		return json.loads(_cache_file().read_text()).get(key)
	except (OSError, ValueError):
		return None


def record_verdict(key: str, works: bool, reason: str) -> None:
	path = _cache_file()
	try:
		data = json.loads(path.read_text()) if path.exists() else {}
	except ValueError:
		data = {}
	data[key] = {'kvm_works': works, 'reason': reason,
		     'when': datetime.datetime.now().isoformat(timespec='seconds')}
	try:
		path.parent.mkdir(parents=True, exist_ok=True)
		path.write_text(json.dumps(data, indent=1) + '\n')
	except OSError:
		pass		# a cache, nothing more


def _vcpu_probe(qemu: str, ops: Ops) -> Tuple[bool, str]:
	"""Can QEMU create a paused vCPU (catches the MSR abort cheaply)?"""
	res = ops.run(['sh', '-c', f'echo quit | {qemu} -accel kvm -M q35 '
		       '-cpu host -display none -nodefaults -S -monitor stdio'],
		      check=False, timeout=30)
	if res.returncode == 0 and not res.timed_out:
		return True, 'a vCPU was created'
	lines = [l for l in res.output.splitlines()
		 if 'error' in l.lower() or 'failed' in l.lower()]
	why = lines[0].replace('(qemu)', '').strip() if lines else \
		f'exit status {res.returncode}'
	return False, why


def probe_boot(arch: ArchParams, image: Path, log: Path,
	       ops: Ops) -> Tuple[bool, str, float]:
	"""Boot @image under KVM to a marker; (ran, why, seconds)."""
	req = BootRequest(arch=arch, image=image, command=f'echo {PROBE_MARK}',
			  accel=AccelChoice(Accel.KVM, 'probe'), rwdirs=(),
			  log=log, timeout=PROBE_TIMEOUT,
			  idle_timeout=PROBE_SILENCE, append=())
	seen = []

	def watch(line: str) -> Optional[str]:
		if PROBE_MARK in line and 'echo' not in line:
			seen.append(line)
		return kvm_failure(line)
	done = boot(req, ops, watch=watch, announce=False)
	if done.stopped:
		return False, done.stopped, done.duration
	if not seen:
		return False, (f'the probe guest never printed its marker (exit '
			       f'status {done.returncode}; log {log})'), \
			done.duration
	return True, f'a guest booted to its marker in {done.duration:.0f} s', \
		done.duration


def choose_accel(arch: ArchParams, ops: Ops, host_arch: str = '',
		 want: Optional[str] = None, image: Optional[Path] = None,
		 probe_log: Optional[Path] = None) -> AccelChoice:
	"""KVM if a guest of this arch runs on it here, else TCG; and why.

	With @image the probe boots it to a marker (the only proof that
	counts); without, creating a vCPU is all that is tried.
	"""
	host_arch = host_arch or platform.machine()
	if want == 'tcg':
		return AccelChoice(Accel.TCG, 'asked for with --accel tcg')
	if arch.name != host_arch:
		return AccelChoice(Accel.TCG, f'{arch.name} guest on a '
				   f'{host_arch} host')
	if not Path('/dev/kvm').exists():
		return _no_kvm(want, '/dev/kvm does not exist')
	qemu = ops.require(arch.qemu_binary, arch.qemu_package)
	key = host_key(ops, qemu)
	cached = cached_verdict(key)
	if cached and not cached['kvm_works'] and want != 'kvm':
		a = Attempt('kvm', 'cache', False, cached['reason'])
		return AccelChoice(Accel.TCG, f'KVM failed on this host before '
				   f'({cached["reason"]}; cached in '
				   f'{_cache_file()}: delete it to probe again)',
				   (a,))
	t = time.monotonic()
	ok, why = _vcpu_probe(qemu, ops)
	attempts = [Attempt('kvm', 'vcpu probe', ok, why,
			    round(time.monotonic() - t, 1))]
	if not ok:
		record_verdict(key, False, why)
		return _no_kvm(want, why, attempts)
	# The boot probe is a vng guest on the host's root: an initramfs
	# arch or one with a root of its own is not probed that way.
	if image is None or arch.boot != 'vng' or arch.own_root:
		return AccelChoice(Accel.KVM, 'KVM probe started a vCPU; the run '
				   'is watched for KVM errors', tuple(attempts))
	if cached and cached['kvm_works']:
		attempts.append(Attempt('kvm', 'cache', True, cached['reason']))
		return AccelChoice(Accel.KVM, f'a KVM guest ran on this host '
				   f'before ({cached["reason"]}); the run is '
				   'watched for KVM errors', tuple(attempts))
	progress('accel: proving KVM by booting the kernel to a marker '
		 f'(at most {PROBE_TIMEOUT:.0f} s)')
	log = probe_log or image.parent / 'kvm-probe.log'
	ok, why, secs = probe_boot(arch, image, log, ops)
	attempts.append(Attempt('kvm', 'boot probe', ok, why, round(secs, 1)))
	record_verdict(key, ok, why)
	if not ok:
		return _no_kvm(want, why, attempts)
	return AccelChoice(Accel.KVM, f'KVM probe: {why}', tuple(attempts))


def _no_kvm(want: Optional[str], why: str,
	    attempts: Sequence[Attempt] = ()) -> AccelChoice:
	if want == 'kvm':
		raise InfraError(f'--accel kvm asked for, but KVM cannot run a '
				 f'guest here: {why}', 'use --accel tcg or auto')
	return AccelChoice(Accel.TCG, f'KVM cannot run a guest here ({why})',
			   tuple(attempts))


def attempts_json(attempts: Sequence[Attempt]) -> List[dict]:
	return [asdict(a) for a in attempts]


@dataclass(frozen=True)
class BootRequest:
	"""A guest to boot: the kernel, the accelerator, the bounds, and what
	the guest runs (a vng guest's command, an initramfs guest's
	initrd)."""
	arch: ArchParams
	image: Path
	accel: AccelChoice
	log: Path
	timeout: float
	# vng guests: the command the guest runs, the host directories it
	# may write (its results)
	command: str = ''
	rwdirs: Sequence[Path] = ()
	# vng guests with a root of their own (pytools/rootfs.py), and the
	# host directories mounted in it: (guest path, host path, writable)
	root: Optional[Path] = None
	mounts: Sequence[Tuple[str, Path, bool]] = ()
	# initramfs guests: the initrd (its /init runs the tests) and the
	# test programs' environment (default the arch's)
	initrd: Optional[Path] = None
	env: Sequence[Tuple[str, str]] = ()
	# the QEMU to run (binary and -L; default the arch's on PATH) and
	# the CPU model (default the arch's), where the tools choose them:
	# initramfs guests and vng guests with a root of their own
	qemu: Sequence[str] = ()
	cpu: Optional[str] = None
	# seconds without a console line before the guest counts as stopped
	idle_timeout: Optional[float] = None
	cpus: int = 2
	memory: str = ''	# '' : 2G under vng, 1G for an initramfs
	# KUnit suites run at boot on every base: 7.x allnoconfig turns
	# KUNIT_AUTORUN_ENABLED off, and 6.12 (no such parameter) ignores it.
	append: Sequence[str] = ('kunit.autorun=1',)
	# extra QEMU arguments (inv bench: -icount)
	qemu_opts: Sequence[str] = ()
	# A person's guest (inv shell, inv run; pytools/shell.py): a vng
	# guest without a command is an interactive shell on the terminal,
	# @shell its login shell (vng --shell); verbose=False leaves the
	# kernel's console out, so the output is the command's alone.
	shell: str = ''
	verbose: bool = True

	@property
	def interactive(self) -> bool:
		"""A shell on the terminal, not a command whose output the
		tools read."""
		return self.initrd is None and not self.command


def vng_argv(req: BootRequest, vng: str) -> List[str]:
	if req.arch.own_root and req.root is None:
		raise ValueError(f'{req.arch.name} boots a root of its own or an '
				 'initramfs: the BootRequest needs root or initrd')
	# vng pastes --root, --rodir, --rwdir and --qemu into a shell line
	# unquoted (virtme-ng 1.42): a path with a space or a quote in it
	# would boot something else or nothing.
	paths = [str(req.image), *(str(d) for d in req.rwdirs),
		 *(str(h) for _, h, _ in req.mounts),
		 *([str(req.root)] if req.root else []), *req.qemu[:1],
		 *([req.shell] if req.shell else [])]
	bad = [p for p in paths if re.search(r'[\s\'"\\$`]', p)]
	if bad:
		raise UserError(f'{bad[0]}: virtme-ng passes this path to a shell '
				'unquoted, and it has a space or a shell '
				'character in it',
				'use a clone and a cache (PERFCTR_CACHE, '
				'PERFCTR_RESULTS) whose paths have none')
	argv = [vng, '--run', str(req.image), '--user', 'root',
		'--cpus', str(req.cpus), '--memory', req.memory or '2G',
		*(['--verbose'] if req.verbose else []),
		'--disable-microvm', '--force-9p']
	if req.accel.accel is Accel.TCG:
		argv.append('--disable-kvm')
	opts = list(req.qemu_opts)
	if req.root:
		argv += ['--root', str(req.root), '--arch', req.arch.debian_arch]
		opts = ['-cpu', cpu_model(req), *opts]
	if req.qemu:
		argv += ['--qemu', req.qemu[0]]
		opts = [*req.qemu[1:], *opts]
	for d in req.rwdirs:
		argv += ['--rwdir', str(d)]
	for guest, host, rw in req.mounts:
		argv += ['--rwdir' if rw else '--rodir', f'{guest}={host}']
	for a in req.append:
		argv += ['--append', a]
	if opts:
		# vng pastes these into a shell command line: quoted here.
		argv.append('--qemu-opts=' + ' '.join(shlex.quote(o)
						      for o in opts))
	if req.shell:
		argv += ['--shell', req.shell]
	if req.command:
		argv += ['--exec', req.command]
	return argv


def initramfs_argv(req: BootRequest) -> List[str]:
	"""The QEMU command line of an initramfs guest."""
	from . import initramfs
	if req.initrd is None:
		raise ValueError(f'{req.arch.name} boots an initramfs: the '
				 'BootRequest needs initrd')
	return initramfs.qemu_argv(
		req.arch, req.image, req.initrd, req.accel.accel.value,
		cpus=req.cpus, memory=req.memory or '1G', qemu=req.qemu,
		cpu=req.cpu, env=req.env) + list(req.qemu_opts)


def cpu_model(req: BootRequest) -> str:
	"""The QEMU CPU model the guest runs on: the one asked for or the
	arch's; virtme-ng asks for the host's under KVM."""
	if req.initrd is not None or req.root is not None:
		return req.cpu or req.arch.guest.cpu
	return 'host' if req.accel.accel is Accel.KVM else req.arch.guest.cpu


def _vng(ops: Ops) -> str:
	# vng lives in the same virtualenv as the tools, on PATH or not
	here = Path(sys.executable).parent / 'vng'
	vng = str(here) if here.exists() else ops.which('vng')
	if not vng:
		raise InfraError('vng (virtme-ng) is not installed',
				 'run ./bootstrap, which installs it in .venv')
	return vng


def command_line(req: BootRequest, vng: str = 'vng') -> List[str]:
	"""The command that boots @req, whichever way it boots."""
	if req.initrd is not None:
		return initramfs_argv(req)
	return vng_argv(req, vng)


def boot(req: BootRequest, ops: Ops,
	 watch: Optional[Callable[[str], Optional[str]]] = None,
	 on_quiet: Optional[Callable[[float, str], None]] = None,
	 announce: bool = True) -> Completed:
	"""Boot, run the tests (or the command), power off; never outlive
	the timeout nor a silence longer than req.idle_timeout.

	@watch sees every console line and may stop the guest by returning
	a reason; without one, a KVM guest is still watched for KVM errors.
	@on_quiet hears every quiet period (a progress line).
	"""
	env = None
	if not req.qemu:
		ops.require(req.arch.qemu_binary, req.arch.qemu_package)
	if req.initrd is not None:
		argv = initramfs_argv(req)
	else:
		vng = _vng(ops)
		argv = vng_argv(req, vng)
		# vng runs virtme-run from PATH: its own bin directory too
		env = {'PATH': f'{Path(vng).parent}:{os.environ.get("PATH", "")}'}
	if announce:
		progress(f'boot: {req.arch.name} under '
			 f'{req.accel.accel.value.upper()} ({req.accel.reason}); '
			 f'console log: {req.log}')
		progress(f'boot: the same by hand: {reproducer(argv)}')
	if req.interactive:
		# the terminal's: nothing to read, bound or watch
		return ops.interactive(argv, env=env)
	if watch is None and req.accel.accel is Accel.KVM:
		watch = kvm_failure
	return ops.stream(argv, req.log, timeout=req.timeout, env=env,
			  on_line=watch, idle_timeout=req.idle_timeout,
			  on_quiet=on_quiet)


def reproducer(argv: Sequence[str]) -> str:
	return ' '.join(shlex.quote(a) for a in argv)
