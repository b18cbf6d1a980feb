# SPDX-License-Identifier: GPL-2.0
"""inv bench: perfctr's costs next to perf_events', measured in the guest.

Builds (incrementally) the kernel inv check builds, compiles
bench/perfctr_bench.c against its headers, boots the guest running only
the benchmark, once per entry of the arch's bench_boots:

- 'wall': the accelerator inv check would use, wall time (and on powerpc
  the thread's PMC5 instructions);
- 'icount': TCG with ``-icount shift=0,sleep=off`` on one CPU, where the
  guest's time-stamp counter advances one step per executed instruction:
  exact instruction counts of everything the guest runs, on any arch.

The guest prints raw rounds; pytools/bench_report.py reduces them.
results/bench-<time>-<arch>/bench.json holds the metrics (every figure
with its unit, instrument and method), the published anchors, the table
as printed, and the run's metadata (arch, kernel, base, accelerators,
QEMU).

Also measured, on the host: a one-file rebuild (drivers/perfctr/virtual.c
touched) and the time from starting the guests to their results; and, when
the build directory's first (cold) build was timed (kernel.build records
it), that cold build.
"""

import dataclasses
import datetime
import json
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence, Tuple

from . import bench_report, boot, initramfs, kernel, paths, qemu
from .boot import Accel, AccelChoice
from .errors import InfraError
from .ops import Ops, progress

SOURCE = paths.REPO / 'bench' / 'perfctr_bench.c'
TCG_NOTE = ('Under QEMU TCG: wall-clock numbers are indicative only; '
	    'compare ratios within this run, and read their spread.')
ICOUNT_OPTS = ('-icount', 'shift=0,sleep=off')
ICOUNT_ENV = ('PERFCTR_BENCH_ICOUNT', '1')


def compile_bench(req: kernel.BuildRequest, out: Path, ops: Ops) -> Path:
	cc = f'{req.arch.cross_compile}gcc'
	ops.require(cc, req.arch.cross_package)
	binary = out / 'perfctr_bench'
	ops.run([cc, '-O2', '-Wall', '-static', '-isystem',
		 str(req.build_dir / 'usr' / 'include'), '-o', str(binary),
		 str(SOURCE), '-lpthread'])
	return binary


def parse_metrics(text: str) -> List[dict]:
	"""The guest's plain facts ({name, value, unit}) in @text."""
	return bench_report.parse(text)[1]


@dataclass(frozen=True)
class BootResult:
	label: str		# 'wall' or 'icount'
	text: str		# what the benchmark printed
	accel: str
	seconds: float


def _boot(req, build, binary, label: str, accel: AccelChoice,
	  outdir: Path, timeout: float, ops: Ops,
	  meta: dict) -> Tuple[str, object]:
	"""One benchmark boot (@label 'wall' or 'icount'); what the
	benchmark printed and how the guest ended."""
	icount = label == 'icount'
	if icount or req.arch.boot_for(fast=True) == 'initramfs':
		accel = AccelChoice(Accel.TCG, '-icount needs TCG' if icount
				    else f'{req.arch.name} guest', ())
	breq = boot.BootRequest(
		arch=req.arch, image=build.image, accel=accel,
		log=outdir / f'console-{label}.log', timeout=timeout,
		cpus=1 if icount else 2,
		qemu_opts=ICOUNT_OPTS if icount else (),
		idle_timeout=req.arch.silence_for(req.config_name))
	if req.arch.boot_for(fast=True) == 'initramfs':
		q = qemu.choose(req.arch, ops)
		meta['qemu'] = q.as_dict()
		initrd = initramfs.build(req.arch, None,
					 outdir / f'initramfs-{label}.cpio', ops,
					 bench=[binary])
		breq = dataclasses.replace(breq, initrd=initrd,
					   qemu=qemu.argv_prefix(q),
					   env=[ICOUNT_ENV] if icount else ())
		done = boot.boot(breq, ops)
		sub = outdir / label
		initramfs.split_console(breq.log.read_text(errors='replace'),
					sub)
		f = sub / 'bench-perfctr_bench.jsonl'
		return (f.read_text() if f.exists() else ''), done
	out = outdir / f'bench-{label}.jsonl'
	env = f'{ICOUNT_ENV[0]}={ICOUNT_ENV[1]} ' if icount else ''
	cmd = (f'{env}{shlex.quote(str(binary))} > {shlex.quote(str(out))} '
	       f'2> {shlex.quote(str(outdir / f"bench-{label}.err"))}')
	done = boot.boot(dataclasses.replace(breq, command=cmd,
					     rwdirs=(outdir,)), ops)
	return (out.read_text() if out.exists() else ''), done


def run(req: kernel.BuildRequest, tree, accel_want, timeout: float,
	ops: Ops) -> Path:
	stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
	outdir = paths.results_dir() / f'bench-{stamp}-{req.arch.name}'
	outdir.mkdir(parents=True)
	# A one-file rebuild, as a developer editing the driver gets it.
	os.utime(tree.path / 'drivers' / 'perfctr' / 'virtual.c')
	t0 = time.monotonic()
	build = kernel.build(req, ops)
	rebuild_s = time.monotonic() - t0
	binary = compile_bench(req, outdir, ops)
	accel = boot.choose_accel(req.arch, ops, want=accel_want,
				  image=build.image
				  if req.arch.boot_for(fast=True) == 'vng'
				  else None, probe_log=outdir / 'kvm-probe.log')
	meta = {'arch': req.arch.name, 'kernel': build.release,
		'base': tree.origin, 'accel': accel.accel.value,
		'accel_reason': accel.reason,
		'accel_attempts': boot.attempts_json(accel.attempts),
		'boots': {}}
	observations: List[bench_report.Observation] = []
	facts: List[dict] = []
	t_all = time.monotonic()
	for label in req.arch.bench_boots:
		t0 = time.monotonic()
		progress(f'bench: {req.arch.name} guest, {label} boot')
		text, done = _boot(req, build, binary, label, accel, outdir,
				   timeout, ops, meta)
		used = 'tcg' if label == 'icount' or \
			req.arch.boot_for(fast=True) == 'initramfs' \
			else accel.accel.value
		obs, fs = bench_report.parse(text, boot=label)
		if done.timed_out or not obs:
			raise InfraError(
				f'the benchmark\'s {label} boot produced no figures '
				f'(guest {"killed: " + done.stopped if done.stopped else "ended"}; '
				f'console {outdir / f"console-{label}.log"})',
				'look at the console log; inv check first to '
				'see whether the kernel boots')
		observations += obs
		facts += fs
		meta['boots'][label] = {
			'accel': used, 'seconds': round(time.monotonic() - t0, 1),
			'qemu_opts': list(ICOUNT_OPTS) if label == 'icount' else [],
			'cpus': 1 if label == 'icount' else 2}
	guest_s = time.monotonic() - t_all
	meta['note'] = (TCG_NOTE if any(b['accel'] == 'tcg' and l == 'wall'
					for l, b in meta['boots'].items()) else '')
	metrics = bench_report.reduce(observations) + facts
	cold = kernel.cold_build(req.build_dir)
	if cold:
		# measured when this build directory was first built
		metrics.append({'name': 'tools_cold_build_s',
				'value': cold['seconds'], 'unit': 's',
				'measured': cold.get('when', '')})
	metrics += [
		{'name': 'tools_one_file_rebuild_s', 'value': round(rebuild_s, 1),
		 'unit': 's'},
		{'name': 'tools_boot_to_results_s', 'value': round(guest_s, 1),
		 'unit': 's'},
	]
	for m in metrics:
		m.update(arch=meta['arch'], kernel=meta['kernel'])
	text = bench_report.table(metrics)
	path = outdir / 'bench.json'
	path.write_text(json.dumps({'meta': meta, 'metrics': metrics,
				    'anchors': bench_report.anchors_json(),
				    'table': text}, indent=1) + '\n')
	(outdir / 'table.txt').write_text(text)
	progress(f'bench: {len(metrics)} metrics in {path}')
	return path


def main(opts, ops: Ops) -> None:
	"""inv bench: apply, build, boot the benchmark; print the table and
	the path of bench.json."""
	from . import pipeline
	t = pipeline.resolve_base(opts, ops)
	pipeline.series_for(t).apply()
	path = run(pipeline.build_request(opts, t), t,
		   None if opts.accel == 'auto' else opts.accel, opts.timeout, ops)
	print(json.loads(path.read_text())['table'])
	print(path)
