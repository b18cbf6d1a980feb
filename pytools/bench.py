# SPDX-License-Identifier: GPL-2.0
"""inv bench: perfctr's costs next to perf_events', measured in the guest.

Builds (incrementally) the kernel inv check builds, compiles
bench/perfctr_bench.c against its headers, boots the guest running only
the benchmark, and writes results/bench-<time>-<arch>/bench.json: the
metrics (name, value, unit) and the run's metadata (arch, kernel, base,
accelerator, QEMU).  Under TCG wall time is indicative only, and the
metadata says so; the ratios inside one run, and on ppc64le the
instruction counts (the emulated PMC5 counts them exactly), are what
carry over.

Also measured, on the host: a one-file rebuild (drivers/perfctr/virtual.c
touched) and the time from starting the guest to its results; and, when
the build directory's first (cold) build was timed (kernel.build records
it), that cold build.
"""

import datetime
import json
import os
import shlex
import time
from pathlib import Path
from typing import List

from . import boot, initramfs, kernel, paths, qemu
from .errors import InfraError
from .ops import Ops, progress

SOURCE = paths.REPO / 'bench' / 'perfctr_bench.c'
TCG_NOTE = ('Under QEMU TCG: wall-clock numbers are indicative only; '
	    'compare ratios within this run.')


def compile_bench(req: kernel.BuildRequest, out: Path, ops: Ops) -> Path:
	cc = f'{req.arch.cross_compile}gcc'
	ops.require(cc, req.arch.cross_package)
	binary = out / 'perfctr_bench'
	ops.run([cc, '-O2', '-Wall', '-static', '-isystem',
		 str(req.build_dir / 'usr' / 'include'), '-o', str(binary),
		 str(SOURCE), '-lpthread'])
	return binary


def parse_metrics(text: str) -> List[dict]:
	out = []
	for line in text.splitlines():
		line = line.strip()
		if not line.startswith('{'):
			continue
		try:
			m = json.loads(line)
		except ValueError:
			continue
		if {'name', 'value', 'unit'} <= set(m):
			out.append(m)
	return out


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
				  image=build.image if req.arch.boot == 'vng'
				  else None, probe_log=outdir / 'kvm-probe.log')
	meta = {'arch': req.arch.name, 'kernel': build.release,
		'base': tree.origin, 'accel': accel.accel.value,
		'accel_reason': accel.reason,
		'accel_attempts': boot.attempts_json(accel.attempts),
		'note': TCG_NOTE if accel.accel.value == 'tcg' else ''}
	log = outdir / 'console.log'
	t0 = time.monotonic()
	if req.arch.boot == 'initramfs':
		q = qemu.choose(req.arch, ops)
		meta['qemu'] = q.as_dict()
		initrd = initramfs.build(req.arch, None, outdir / 'initramfs.cpio',
					 ops, bench=[binary])
		argv = initramfs.qemu_argv(req.arch, build.image, initrd,
					   accel.accel.value,
					   qemu=qemu.argv_prefix(q))
		done = initramfs.boot(argv, log, timeout, ops,
				      idle_timeout=req.arch.silence_for(
					      req.config_name))
		initramfs.split_console(log.read_text(errors='replace'), outdir)
		text = (outdir / 'bench-perfctr_bench.jsonl').read_text() \
			if (outdir / 'bench-perfctr_bench.jsonl').exists() else ''
	else:
		out = outdir / 'bench.jsonl'
		cmd = (f'{shlex.quote(str(binary))} > {shlex.quote(str(out))} '
		       f'2> {shlex.quote(str(outdir / "bench.err"))}')
		done = boot.boot(boot.BootRequest(
			arch=req.arch, image=build.image, command=cmd, accel=accel,
			rwdirs=(outdir,), log=log, timeout=timeout,
			idle_timeout=req.arch.silence_for(req.config_name)), ops)
		text = out.read_text() if out.exists() else ''
	guest_s = time.monotonic() - t0
	metrics = parse_metrics(text)
	if done.timed_out or not metrics:
		raise InfraError(f'the benchmark produced no metrics (guest '
				 f'{"killed: " + done.stopped if done.stopped else "ended"}; '
				 f'console {log})',
				 'look at the console log; inv check first to '
				 'see whether the kernel boots')
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
		m.update(arch=meta['arch'], accelerator=meta['accel'],
			 kernel=meta['kernel'])
	path = outdir / 'bench.json'
	path.write_text(json.dumps({'meta': meta, 'metrics': metrics},
				   indent=1) + '\n')
	progress(f'bench: {len(metrics)} metrics in {path}')
	return path
