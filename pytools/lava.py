# SPDX-License-Identifier: GPL-2.0
"""LAVA jobs for the matrix's cells: generated with tuxlava, validated and
run with LAVA's own dispatcher (Debian's lava-run), read back as results.

For each cell (pytools/data/matrix.toml) inv lava lays out, in a directory
a file server can publish as it is:

  <cell>/bzImage | vmlinux    the kernel the cell builds
  <cell>/rootfs.cpio          the ramdisk: Debian's static busybox (init,
                              getty, login, the shell LAVA's test shell
                              needs), the static kselftests in /tests, and
                              guest/init.c as /perfctr/run, the same
                              runner the ppc64le initramfs guest uses
  <cell>/qemu.yaml            the LAVA job for the QEMU device type
  <cell>/qemu-device.yaml     the device dictionary it runs on here
  <cell>/board.yaml           the job for the arch's real board (no run here)
  index.json                  what is where, with sizes and sha256

The job boots the kernel with the ramdisk, logs in on the console and runs
/perfctr/run in LAVA's test shell; the runner prints every output and the
kernel log between markers, so the console LAVA records is cut back into
the very files inv check reads (initramfs.split_console, collect.collect)
and a LAVA run and inv check are compared test by test.

Everything that reads a cell's kernel and test programs goes through
artefacts(): a change in how a guest is built (a Debian root instead of a
ramdisk) changes it there.
"""

import datetime
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from . import arches, bases, collect, configs, initramfs, kernel, locks, \
	paths, pipeline, qemu, results
from .errors import InfraError, UserError
from .matrix import Board, Cell
from .ops import Ops, progress

RUNNER = '/perfctr/run'
DISPATCHER_TMP = Path('/var/lib/lava/dispatcher/tmp')
RAMDISK = 'rootfs.cpio'
BUSYBOX = 'busybox-static'
# The same memory inv check gives each guest (vng: 2G; initramfs: 1G).
MEMORY = {'x86_64': '2G', 'ppc64le': '1G'}
# tuxlava's kernel command line says "debug" (every kernel message on the
# console); loglevel=1 after it keeps the console to the tests' output,
# as in inv check's initramfs guest.  KUnit runs at boot as there.
BOOT_ARGS = 'loglevel=1 panic=-1 kunit.autorun=1'
# Minutes: generous bounds for a TCG guest on a busy 2-core machine
# (measured inv check: 2-10 min for the tests); a lab's KVM or a board
# is much faster.
TIMEOUTS = {'deploy': 5, 'boot': 15, 'commands': 45}
TIMEOUTS_DEBUG = {'deploy': 5, 'boot': 30, 'commands': 90}
# LAVA's boot action first waits for the kernel's banner ("Linux version
# [0-9]"), which loglevel=1 keeps off the console: the ramdisk's rcS
# prints this line instead, and the job tells LAVA to wait for it.
START_MESSAGE = 'perfctr-ramdisk: Linux [0-9]'
PROMPT = 'perfctr #'
NO_PYTHON_REASON = (
	'not run in the LAVA job: its ramdisk is busybox and static C '
	'programs, with no Python; inv check runs them through virtme-ng, '
	'on the host\'s root (x86_64) or a ppc64el root of its own')


@dataclass(frozen=True)
class Artefacts:
	"""What a cell's guest is made of, built and on disk."""
	cell: Cell
	tree: bases.BaseTree
	kernel: Path			# the image to boot
	tests: kernel.Kselftests		# the static kselftests, installed
	release: str
	base: Dict[str, str]		# as results.json says it
	fragments: Tuple[str, ...]
	guest_env: Tuple[Tuple[str, str], ...]
	build_log: Path


def guest_env(cell: Cell) -> Tuple[Tuple[str, str], ...]:
	"""The test programs' environment: the config's, else the arch's
	default (both as inv check passes them)."""
	env = configs.get(cell.config).options(cell.arch).get('guest_env')
	if env:
		return tuple(env)
	return arches.get(cell.arch).guest.env


def artefacts(cell: Cell, ops: Ops, apply: bool = True,
	      offline: bool = False) -> Artefacts:
	"""Build (incrementally) and find a cell's kernel and test programs.

	The one place LAVA reads them from: base, series, kernel build and
	kselftests exactly as inv check makes them for the same cell.
	"""
	extra = configs.get(cell.config).options(cell.arch)
	o = pipeline.Options(arch=cell.arch, base=cell.base, offline=offline,
			     apply=apply, **extra)
	pipeline.validate(o)
	tree = pipeline.resolve_base(o, ops)
	if apply:
		tip = pipeline.series_for(tree).apply().tip
	else:
		tip = ops.run(['git', '-C', str(tree.path), 'describe', '--always',
			       '--dirty']).output.strip()
	req = pipeline.build_request(o, tree)
	build = kernel.build(req, ops)
	tests = kernel.build_selftests(req, ops)
	return Artefacts(
		cell=cell, tree=tree, kernel=build.image, tests=tests,
		release=build.release,
		base={'name': tree.name, 'origin': tree.origin,
		      'version': tree.version, 'commit': tree.commit,
		      'ref': tree.ref, 'series_tip': tip},
		fragments=tuple(req.fragments), guest_env=guest_env(cell),
		build_log=build.log)


def busybox(arch_name: str, ops: Ops) -> Path:
	"""Debian's static busybox for the arch (this machine's release, from
	its own mirror), unpacked in the cache; the path of the binary."""
	a = arches.get(arch_name)
	deb_arch = a.debian_arch
	root = paths.cache_dir() / 'busybox' / deb_arch
	suite = bases.codename()
	if not suite:
		raise InfraError('cannot tell this machine\'s Debian release '
				 '(/etc/os-release has no VERSION_CODENAME)',
				 'run on Debian (the tools fetch busybox-static '
				 'for the LAVA ramdisk from its mirror)')
	fetcher = bases.PackageFetcher(ops, root / 'apt', arch=deb_arch)
	fetcher.update([suite])
	version = qemu._candidate(fetcher, BUSYBOX)
	if not version:
		raise InfraError(f'{BUSYBOX} ({deb_arch}) is not in Debian {suite}',
				 'check the mirror in the apt configuration')
	dest = root / re.sub(r'[^A-Za-z0-9.+~-]', '_', version)
	binary = dest / 'bin' / 'busybox'
	with locks.hold(locks.lock_file('busybox-' + locks.slug(dest)),
			f'unpacking busybox into {dest}'):
		if not binary.exists():
			deb = fetcher.download(BUSYBOX, version)
			tmp = dest.with_name(dest.name + '.tmp')
			shutil.rmtree(tmp, ignore_errors=True)
			tmp.mkdir(parents=True)
			ops.run(['dpkg-deb', '-x', str(deb), str(tmp)])
			tmp.rename(dest)
	return binary


def _rootfs_files(console: str) -> Dict[str, str]:
	"""The ramdisk's configuration: busybox init, a getty on the
	console, root without a password (LAVA logs in as root)."""
	return {
		'etc/inittab': (
			'::sysinit:/etc/init.d/rcS\n'
			f'{console}::respawn:/sbin/getty -L {console} 0 vt100\n'
			'::ctrlaltdel:/sbin/poweroff\n'),
		'etc/init.d/rcS': (
			'#!/bin/sh\n'
			'/bin/busybox --install -s\n'
			'mount -t proc proc /proc\n'
			'mount -t sysfs sysfs /sys\n'
			'mount -t devtmpfs devtmpfs /dev\n'
			'mkdir -p /dev/pts\n'
			'mount -t devpts devpts /dev/pts\n'
			'mount -t debugfs debugfs /sys/kernel/debug\n'
			'mount -t tmpfs tmpfs /tmp\n'
			'hostname perfctr\n'
			'echo "perfctr-ramdisk: Linux $(uname -r) $(uname -m)"\n'),
		'etc/passwd': 'root::0:0:root:/root:/bin/sh\n',
		'etc/group': 'root:x:0:\n',
		# a prompt LAVA is told to expect (PROMPT); LAVA sets its own
		# once logged in
		'etc/profile': "export PS1='perfctr # '\nexport HOME=/root\n",
	}


def ramdisk(arch_name: str, tests: kernel.Kselftests, out: Path,
	    ops: Ops) -> Path:
	"""The cell's ramdisk (an uncompressed newc cpio: LAVA appends its
	test overlay to it, and the kernel needs no decompressor)."""
	a = arches.get(arch_name)
	bb = busybox(arch_name, ops)
	runner = initramfs.compile_init(a, out.parent / 'perfctr-run', ops)
	d, f, l = stat.S_IFDIR | 0o755, stat.S_IFREG, stat.S_IFLNK | 0o777
	entries = [(n, d, b'') for n in (
		'bin', 'sbin', 'usr', 'usr/bin', 'usr/sbin', 'etc', 'etc/init.d',
		'proc', 'sys', 'dev', 'tmp', 'root', 'perfctr')]
	entries.append(('bin/busybox', f | 0o755, bb.read_bytes()))
	for link, target in (('init', 'bin/busybox'), ('sbin/init', '../bin/busybox'),
			     ('bin/sh', 'busybox')):
		entries.append((link, l, target.encode()))
	for name, text in _rootfs_files(a.guest.console).items():
		mode = 0o755 if name.startswith('etc/init.d/') else 0o644
		entries.append((name, f | mode, text.encode()))
	entries.append((RUNNER.lstrip('/'), f | 0o755, runner.read_bytes()))
	entries += initramfs.test_entries(tests)
	out.write_bytes(initramfs.cpio(entries))
	return out


@dataclass(frozen=True)
class Urls:
	kernel: str
	ramdisk: str


def _command(env: Sequence[Tuple[str, str]]) -> List[str]:
	return (['env', *(f'{k}={v}' for k, v in env)] if env else []) + [RUNNER]


def _render(device: str, urls: Urls, env, cpu: Optional[str],
	    timeouts: Dict[str, int], workdir: Path):
	"""tuxlava's Job for the device, initialised (options checked)."""
	from tuxlava.jobs import Job
	workdir.mkdir(parents=True, exist_ok=True)
	j = Job(device=device, kernel=urls.kernel, rootfs=urls.ramdisk,
		commands=_command(env), boot_args=BOOT_ARGS, prompt=PROMPT,
		parameters=dict({'command-name': 'perfctr'},
				**({'cpu': cpu} if cpu else {})),
		timeouts=dict(timeouts), enable_network=False, tmpdir=workdir,
		# a list of our own: Job appends "commands" to it, and its
		# default is one list shared by every Job
		tests=[], overlays=[])
	j.initialize()
	return j


def qemu_job(cell: Cell, urls: Urls, env, workdir: Path) -> Tuple[dict, dict]:
	"""The LAVA job for the cell's QEMU device, and the device
	dictionary it runs on (tuxlava renders both, as TuxRun does)."""
	import yaml
	timeouts = TIMEOUTS_DEBUG if cell.config == 'debug' else TIMEOUTS
	j = _render(f'qemu-{cell.arch}', urls, env, cell.cpu, timeouts, workdir)
	job = yaml.safe_load(j.render())
	job['job_name'] = f'perfctr {cell.name}'
	_expect_start_message(job)
	# inv check's memory, not tuxlava's 4G (the chain test's noise
	# budget is read from free memory)
	job['context']['memory'] = MEMORY.get(cell.arch, '1G')
	device = yaml.safe_load(j.device.device_dict(dict(job['context'])))
	return job, device


def board_job(cell: Cell, board: Board, urls: Urls, env,
	      workdir: Path) -> dict:
	"""The same kernel and ramdisk on the arch's real board."""
	import yaml
	timeouts = TIMEOUTS_DEBUG if cell.config == 'debug' else TIMEOUTS
	j = _render(board.tuxlava_device, urls, env, None, timeouts, workdir)
	job = yaml.safe_load(j.render())
	job['job_name'] = f'perfctr {cell.name} on {board.device_type}'
	_expect_start_message(job)
	return job


def _expect_start_message(job: dict) -> None:
	for action in job['actions']:
		if 'boot' in action:
			action['boot'].setdefault('parameters', {})[
				'kernel-start-message'] = START_MESSAGE


def use_qemu(device: dict, q: qemu.Qemu) -> dict:
	"""The device dictionary with this machine's QEMU for the arch (a
	backport when the system's is too old: a lab's device says which
	QEMU it has the same way)."""
	if q.origin == 'system':
		return device
	params = device['actions']['boot']['methods']['qemu']['parameters']
	params['command'] = q.binary
	if q.datadir:
		params['options'] = [f'-L {q.datadir}', *params['options']]
	return device


def _dump(data: dict, path: Path) -> Path:
	import yaml
	path.write_text(yaml.safe_dump(data, sort_keys=False, width=1000))
	return path


def _sha256(path: Path) -> str:
	h = hashlib.sha256()
	with open(path, 'rb') as f:
		for chunk in iter(lambda: f.read(1 << 20), b''):
			h.update(chunk)
	return h.hexdigest()


@dataclass(frozen=True)
class CellJobs:
	cell: Cell
	dir: Path
	kernel: Path
	ramdisk: Path
	job: Path
	device: Path
	board: Optional[Path]
	qemu: qemu.Qemu
	artefacts: Optional[Artefacts] = None


def url_base_for(out: Path, url_base: str) -> str:
	return (url_base or out.resolve().as_uri()).rstrip('/')


def lay_out(cell: Cell, art: Artefacts, out: Path, url_base: str,
	    board: Optional[Board], ops: Ops) -> CellJobs:
	"""Copy the artefacts into out/<cell>/ and write its jobs."""
	d = out / cell.name
	d.mkdir(parents=True, exist_ok=True)
	kern = d / art.kernel.name
	shutil.copyfile(art.kernel, kern)
	rd = ramdisk(cell.arch, art.tests, d / RAMDISK, ops)
	base = f'{url_base_for(out, url_base)}/{cell.name}'
	urls = Urls(f'{base}/{kern.name}', f'{base}/{rd.name}')
	work = d / '.tuxlava'
	job, device = qemu_job(cell, urls, art.guest_env, work)
	q = qemu.choose(arches.get(cell.arch), ops)
	device = use_qemu(device, q)
	board_path = None
	if board:
		board_path = _dump(board_job(cell, board, urls, art.guest_env,
					     work), d / 'board.yaml')
	shutil.rmtree(work, ignore_errors=True)
	return CellJobs(cell, d, kern, rd, _dump(job, d / 'qemu.yaml'),
			_dump(device, d / 'qemu-device.yaml'), board_path, q, art)


def write_index(out: Path, jobs: Sequence[CellJobs], url_base: str) -> Path:
	"""index.json: every cell's files, with size and sha256."""
	base = url_base_for(out, url_base)
	cells = []
	for j in jobs:
		files = [p for p in (j.kernel, j.ramdisk, j.job, j.device, j.board)
			 if p]
		cells.append({
			'cell': j.cell.name, 'arch': j.cell.arch, 'base': j.cell.base,
			'config': j.cell.config, 'cpu': j.cell.cpu,
			'check': j.cell.check_command(),
			'kernel_release': j.artefacts.release if j.artefacts else '',
			'series_tip': (j.artefacts.base['series_tip']
				       if j.artefacts else ''),
			'files': [{'name': p.name,
				   'url': f'{base}/{j.cell.name}/{p.name}',
				   'bytes': p.stat().st_size,
				   'sha256': _sha256(p)} for p in files]})
	path = out / 'index.json'
	path.write_text(json.dumps({'url_base': base, 'cells': cells},
				   indent=1) + '\n')
	return path


def _job_id() -> int:
	"""Unique among concurrent jobs on this machine (lava-run works in
	/var/lib/lava/dispatcher/tmp/<id>)."""
	return int(time.time() * 1000) % 10**9 * 100 + os.getpid() % 100


def lava_run(ops: Ops) -> str:
	return ops.require('lava-run', 'lava-dispatcher')


def dispatcher_version(ops: Ops) -> str:
	res = ops.run(['dpkg-query', '-W', '-f=${Version}', 'lava-dispatcher'],
		      check=False)
	return res.output.strip() if res.returncode == 0 else '?'


@dataclass(frozen=True)
class Validation:
	job: Path
	ok: bool
	errors: Tuple[str, ...]
	seconds: float


def validate(job: Path, device: Path, ops: Ops,
	     workdir: Optional[Path] = None) -> Validation:
	"""lava-run --validate: the dispatcher builds the job's whole
	pipeline against the device and checks it, running nothing."""
	exe = lava_run(ops)
	workdir = workdir or job.parent / '.validate'
	workdir.mkdir(parents=True, exist_ok=True)
	t0 = time.monotonic()
	job_id = _job_id()
	res = ops.run([exe, '--validate', '--job-id', str(job_id),
		       '--output-dir', str(workdir), '--device', str(device),
		       str(job)], check=False, timeout=300)
	secs = time.monotonic() - t0
	shutil.rmtree(workdir, ignore_errors=True)
	# --validate leaves its (empty) download directories behind
	shutil.rmtree(DISPATCHER_TMP / str(job_id), ignore_errors=True)
	errors = tuple(_validation_errors(res.output)) if res.returncode \
		else ()
	if res.returncode and not errors:
		errors = (f'lava-run --validate exited {res.returncode}: ' +
			  res.output.strip()[-800:],)
	return Validation(job, res.returncode == 0, errors, secs)


def _validation_errors(output: str) -> List[str]:
	out = []
	for rec in log_records(output):
		msg = rec.get('msg')
		if rec.get('lvl') in ('error', 'exception'):
			out.append(str(msg)[:500])
		elif rec.get('lvl') == 'results' and isinstance(msg, dict) and \
		     msg.get('error_msg'):
			# the job's result says why (the invalid job data)
			out.append(str(msg['error_msg']).strip()[:500])
	return out


_RECORD = re.compile(r'^(?:- )?(\{.*\})\s*$')


def log_records(text: str) -> List[dict]:
	"""The dispatcher's log: one YAML flow mapping a line (JSON-like,
	with dt, lvl and msg); anything else is kept as an 'other' record."""
	import yaml
	out = []
	for line in text.splitlines():
		m = _RECORD.match(line)
		if not m:
			if line.strip():
				out.append({'lvl': 'other', 'msg': line})
			continue
		try:
			rec = json.loads(m.group(1))
		except ValueError:
			try:
				rec = yaml.safe_load(m.group(1))
			except yaml.YAMLError:
				rec = None
		out.append(rec if isinstance(rec, dict) else
			   {'lvl': 'other', 'msg': line})
	return out


@dataclass(frozen=True)
class LavaOutcome:
	"""What the dispatcher said about a job, read from its log."""
	console: List[str]		# the guest's console, line by line
	results: List[dict]		# LAVA's own result records
	errors: List[str]		# job errors (infrastructure, timeouts)
	job_result: str			# 'pass' / 'fail' / '' (none seen)


def read_log(text: str) -> LavaOutcome:
	console, res, errors = [], [], []
	job_result = ''
	for rec in log_records(text):
		lvl, msg = rec.get('lvl'), rec.get('msg')
		if lvl == 'target':
			# LAVA's ShellLogger writes every '"' of the console as
			# '\\"' (for its YAML) and drops ESC and CR: undo the first
			text = msg if isinstance(msg, str) else str(msg)
			console.append(text.replace('\\"', '"'))
		elif lvl == 'results' and isinstance(msg, dict):
			res.append(msg)
			if msg.get('definition') == 'lava' and \
			   msg.get('case') == 'job':
				job_result = str(msg.get('result', ''))
		elif lvl in ('error', 'exception'):
			errors.append(str(msg)[:1000])
	return LavaOutcome(console, res, errors, job_result)


def runner_case(outcome: LavaOutcome) -> Optional[dict]:
	"""LAVA's record of the test-shell case that ran /perfctr/run."""
	for r in outcome.results:
		if r.get('case') == 'perfctr':
			return r
	return None


def run(cj: CellJobs, ops: Ops, timeout: float = 0) -> Tuple[
		results.RunResult, Path]:
	"""Run the cell's QEMU job with lava-run; its results, written as
	results.json and JUnit in a results directory of its own."""
	if cj.artefacts is None:
		raise UserError('no artefacts for the cell', 'lay it out first')
	art = cj.artefacts
	exe = lava_run(ops)
	stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
	outdir = paths.results_dir() / \
		f'{stamp}-{cj.cell.arch}-{cj.cell.base}-lava'
	outdir.mkdir(parents=True, exist_ok=True)
	work = outdir / 'lava-output'
	job_id = _job_id()
	argv = [exe, '--job-id', str(job_id), '--output-dir', str(work),
		'--device', str(cj.device), str(cj.job)]
	log = outdir / 'lava.log'
	progress(f'lava: {cj.cell.name}: {shlex.join(argv)}')
	progress(f'lava: the dispatcher\'s log: {log}')
	timeout = timeout or 60 * sum(
		(TIMEOUTS_DEBUG if cj.cell.config == 'debug' else TIMEOUTS)
		.values()) + 120
	watch = _Watch()
	t0 = time.monotonic()
	done = ops.stream(argv, log, timeout=timeout, on_line=watch)
	seconds = round(time.monotonic() - t0, 1)
	stopped = done.stopped or ('' if not done.timed_out else
				   f'lava-run did not finish within '
				   f'{timeout:.0f} s')
	run = results_of(cj, outdir, seconds, job_id, argv, done.returncode,
			 stopped, ops)
	return run, results.write(run, outdir)


def results_of(cj: CellJobs, outdir: Path, seconds: float, job_id: int,
	       argv: Sequence[str], returncode, stopped: str,
	       ops: Ops) -> results.RunResult:
	"""The RunResult of a job whose dispatcher log is outdir/lava.log."""
	art = cj.artefacts
	log = outdir / 'lava.log'
	outcome = read_log(log.read_text(errors='replace'))
	console = outdir / 'console.log'
	console.write_text('\n'.join(outcome.console) + '\n')
	guest = outdir / 'guest'
	initramfs.split_console(console.read_text(), guest)
	run = results.RunResult(
		arch=cj.cell.arch, base=dict(art.base),
		accelerator={'accel': 'tcg', 'reason': 'the LAVA job says '
			     'no_kvm: /dev/kvm on this machine runs no guest'},
		qemu=dict(cj.qemu.as_dict(), cpu=cj.cell.cpu),
		kernel_release=art.release, config=cj.cell.config,
		config_fragments=list(art.fragments), cpu=cj.cell.cpu,
		durations={'lava_job': seconds},
		command=shlex.join(argv),
		logs={'build': str(art.build_log), 'console': str(console),
		      'guest': str(guest), 'lava_log': str(log),
		      'lava_job': str(cj.job), 'lava_device': str(cj.device)},
		started=datetime.datetime.fromtimestamp(
			log.stat().st_ctime).isoformat(timespec='seconds'),
		runner={'kind': 'lava', 'device_type': 'qemu',
			'dispatcher': f'lava-run {dispatcher_version(ops)}',
			'job_id': str(job_id),
			'job_result': outcome.job_result or 'none',
			'tuxlava': _tuxlava_version()})
	run.tests = collect.collect(guest, console, art.tree.path,
				    expect_pytest=False, stopped=stopped)
	run.tests.append(results.TestCase('pytest', 'python ABI checks',
					  results.Status.SKIP, NO_PYTHON_REASON))
	_lava_problems(run, outcome, returncode, stopped)
	return run


def _tuxlava_version() -> str:
	try:
		import tuxlava
		return tuxlava.__version__
	except (ImportError, AttributeError):
		return '?'


def _lava_problems(run: results.RunResult, outcome: LavaOutcome,
		   returncode, stopped: str) -> None:
	"""What went wrong in LAVA itself is a problem of the run."""
	if stopped:
		run.problems.append(f'lava-run was stopped: {stopped}')
	if outcome.job_result and outcome.job_result != 'pass':
		run.problems.append(f'LAVA says the job failed: '
				    f'{"; ".join(outcome.errors[:3]) or "see " + run.logs["lava_log"]}')
	elif not outcome.job_result:
		run.problems.append(f'lava-run left no job result (exit status '
				    f'{returncode}; {run.logs["lava_log"]})')
	case = runner_case(outcome)
	if case is None:
		run.problems.append('LAVA recorded no result for the perfctr '
				    'test case: the test shell never ran '
				    f'{RUNNER}')
	elif case.get('result') != 'pass':
		run.problems.append(f'LAVA: {RUNNER} exited non-zero in the test '
				    f'shell ({case.get("result")})')


class _Watch:
	"""Progress from the dispatcher's log: each action as it starts, the
	runner's test programs as they start and end."""

	def __init__(self) -> None:
		self.last = 0.0

	def __call__(self, line: str) -> Optional[str]:
		m = _RECORD.match(line)
		if not m:
			return None
		try:
			rec = json.loads(m.group(1))
		except ValueError:
			return None
		msg = str(rec.get('msg', ''))
		if rec.get('lvl') == 'info' and msg.startswith('start: '):
			progress(f'lava: {msg[7:120]}')
		elif rec.get('lvl') == 'target' and initramfs.MARK in msg:
			what = msg.split(initramfs.MARK, 1)[1].strip()
			if what.startswith(('file ', 'alive ', 'done')):
				progress(f'lava: guest: {what}')
		elif rec.get('lvl') in ('error', 'exception'):
			progress(f'lava: {rec["lvl"]}: {msg[:200]}')
		return None


# -- comparing a LAVA run with inv check's, test by test ----------------


@dataclass(frozen=True)
class Comparison:
	reference: str
	same: int
	differ: Tuple[Tuple[str, str, str], ...]	# name, reference, lava
	only_reference: Tuple[str, ...]
	only_lava: Tuple[str, ...]
	not_comparable: Tuple[str, ...]			# said why

	@property
	def agrees(self) -> bool:
		return not (self.differ or self.only_reference or self.only_lava)

	def as_dict(self) -> dict:
		return {'reference': self.reference, 'same': self.same,
			'agrees': self.agrees,
			'differ': [dict(test=n, reference=a, lava=b)
				   for n, a, b in self.differ],
			'only_reference': list(self.only_reference),
			'only_lava': list(self.only_lava),
			'not_comparable': list(self.not_comparable)}


def _key(t: results.TestCase) -> str:
	return f'{t.family}: {t.name}'


def compare(ref: results.RunResult, lava: results.RunResult,
	    reference: str = '') -> Comparison:
	"""Test by test; a family the LAVA root cannot run (pytest, when
	its one TestCase says so) is set aside with its reason."""
	lava_keys = {_key(t) for t in lava.tests}
	# set aside only what the reference ran and LAVA could not (a
	# reference that skipped the family the same way is compared)
	skipped_families = {t.family for t in lava.tests
			    if t.status is results.Status.SKIP and
			    t.message == NO_PYTHON_REASON and
			    any(r.family == t.family and _key(r) not in lava_keys
				for r in ref.tests)}
	a = {_key(t): t for t in ref.tests
	     if t.family not in skipped_families}
	b = {_key(t): t for t in lava.tests
	     if t.family not in skipped_families}
	nc = [f'{sum(t.family == f for t in ref.tests)} {f} tests of the '
	      f'reference: {NO_PYTHON_REASON}' for f in sorted(skipped_families)
	      if any(t.family == f for t in ref.tests)]
	differ = tuple((k, a[k].status.value, b[k].status.value)
		       for k in a if k in b and a[k].status != b[k].status)
	return Comparison(
		reference, sum(1 for k in a if k in b and
			       a[k].status == b[k].status), differ,
		tuple(k for k in a if k not in b), tuple(k for k in b if k not in a),
		tuple(nc))


def find_reference(run: results.RunResult, cpu: str) -> Optional[Path]:
	"""The newest inv check results.json of the same kernel (arch, base
	commit, series tip, release, config) and CPU model."""
	best = None
	for f in sorted(paths.results_dir().glob('*/results.json')):
		if f.parent.is_symlink() or f.parent.name.endswith('-lava') or \
		   '-bisect' in f.parent.name:
			continue
		try:
			d = json.loads(f.read_text())
		except (OSError, ValueError):
			continue
		if d.get('runner'):
			continue
		b = d.get('base', {})
		if (d.get('arch'), b.get('commit'), b.get('series_tip'),
		    d.get('kernel_release'), d.get('config_fragments'),
		    results.cpu_of(d)) == (run.arch, run.base.get('commit'),
				   run.base.get('series_tip'), run.kernel_release,
				   run.config_fragments, cpu):
			best = f
	return best


# -- the task -------------------------------------------------------------


def from_options(ops: Ops, arch: str = 'x86_64', cell: str = '', out: str = '',
	 url: str = '', run: bool = False, reference: str = '',
	 boards: bool = False, apply: bool = True,
	 offline: bool = False) -> int:
	"""inv lava: check the options, pick the cells (@cell: names,
	comma-separated, or 'all'; else @arch's first cell, 'all' for every
	arch's), then main()."""
	from . import matrix
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
		wanted = sorted(arches.known()) if arch == 'all' \
			else [arches.get(arch).name]
		cells = [m.select(a)[0] for a in wanted if m.select(a)]
	ref = None
	if reference:
		from . import results as R
		ref = R.locate(Path(reference))
	lava_run(ops)		# the dispatcher is there, or exit 2 now
	outdir = Path(out) if out else paths.results_dir() / 'lava'
	return main(cells, m, outdir, url, ops, run=run, reference=ref,
		    boards=boards, apply=apply, offline=offline)


def main(cells: Sequence[Cell], m, out: Path, url_base: str, ops: Ops,
	 run: bool = False, reference: Optional[Path] = None,
	 boards: bool = False, apply: bool = True,
	 offline: bool = False) -> int:
	"""inv lava: lay out and validate every cell's jobs; with @run, run
	the QEMU jobs and compare.  The exit code: 0 all valid (and, run,
	passed and agreeing with inv check), 1 a test failed or a verdict
	differs, 2 (an exception) the jobs could not be made or run."""
	out.mkdir(parents=True, exist_ok=True)
	laid: List[CellJobs] = []
	invalid = 0
	for cell in cells:
		progress(f'lava: {cell.name}: building its kernel and tests '
			 f'(as {cell.check_command()})')
		art = artefacts(cell, ops, apply=apply, offline=offline)
		cj = lay_out(cell, art, out, url_base,
			     m.boards.get(cell.arch) if boards else None, ops)
		laid.append(cj)
		v = validate(cj.job, cj.device, ops)
		print(f'{cell.name}: {cj.job} '
		      f'{"valid" if v.ok else "INVALID"} (lava-run --validate, '
		      f'{v.seconds:.1f} s)')
		for e in v.errors:
			print(f'  {e}')
		invalid += not v.ok
		if cj.board:
			print(f'{cell.name}: {cj.board} (for a lab\'s '
			      f'{m.boards[cell.arch].device_type} board; not run '
			      'here)')
	index = write_index(out, laid, url_base)
	print(f'index of the files to publish: {index}')
	if invalid:
		return 1
	if not run:
		return 0
	rc = 0
	for cj in laid:
		r, path = run_cell(cj, ops, reference)
		rc = max(rc, r)
		print(path)
	return rc


def run_cell(cj: CellJobs, ops: Ops,
	     reference: Optional[Path] = None) -> Tuple[int, Path]:
	"""Run one cell's QEMU job; print its summary and the comparison."""
	r, path = run(cj, ops)
	print(results.summary(r))
	ref_path = reference or find_reference(r, cj.cell.cpu)
	if ref_path is None:
		print(f'{cj.cell.name}: no inv check results of this kernel '
		      f'({r.kernel_release}, series {r.base["series_tip"][:12]}) '
		      f'and CPU {cj.cell.cpu} to compare with; run '
		      f'"{cj.cell.check_command()}" first')
		return (0 if r.passed else 1), path
	cmp = compare(results.load(ref_path), r, str(ref_path))
	(path.parent / 'comparison.json').write_text(
		json.dumps(cmp.as_dict(), indent=1) + '\n')
	print(f'{cj.cell.name}: compared with {ref_path}: {cmp.same} tests '
	      f'agree' + ('' if cmp.agrees else
			  f', {len(cmp.differ)} differ, {len(cmp.only_reference)}'
			  f' only in inv check, {len(cmp.only_lava)} only in LAVA'))
	for n, a, b in cmp.differ:
		print(f'  DIFFERS {n}: inv check {a}, LAVA {b}')
	for n in cmp.only_reference:
		print(f'  ONLY IN inv check: {n}')
	for n in cmp.only_lava:
		print(f'  ONLY IN LAVA: {n}')
	for n in cmp.not_comparable:
		print(f'  not compared: {n}')
	return (0 if r.passed and cmp.agrees else 1), path
