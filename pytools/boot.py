# SPDX-License-Identifier: GPL-2.0
"""Boot a built kernel under QEMU (through virtme-ng) and run a command.

The accelerator is chosen here and said out loud: KVM only when a probe
shows it can really run a guest (this machine's /dev/kvm is PVM, on which a
stock guest aborts QEMU at its first MSR write), TCG otherwise.
"""

import enum
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

from .arches import ArchParams
from .errors import InfraError
from .ops import Completed, Ops, progress


class Accel(enum.Enum):
	KVM = 'kvm'
	TCG = 'tcg'


@dataclass(frozen=True)
class AccelChoice:
	accel: Accel
	reason: str


def choose_accel(arch: ArchParams, ops: Ops, host_arch: str = 'x86_64',
		 want: Optional[str] = None) -> AccelChoice:
	"""KVM if it can start a vCPU of this arch, else TCG; and why."""
	if want == 'tcg':
		return AccelChoice(Accel.TCG, 'asked for with --accel tcg')
	if arch.name != host_arch:
		return AccelChoice(Accel.TCG, f'{arch.name} guest on a '
				   f'{host_arch} host')
	if not Path('/dev/kvm').exists():
		return AccelChoice(Accel.TCG, '/dev/kvm does not exist')
	qemu = ops.require(arch.qemu_binary, arch.qemu_package)
	# Creating the machine puts the vCPU's registers, MSRs included: the
	# step that fails on PVM.  -S stops before the guest runs; the
	# monitor's "quit" ends a working probe at once.
	res = ops.run(['sh', '-c', f'echo quit | {qemu} -accel kvm -M q35 '
		       '-cpu host -display none -nodefaults -S -monitor stdio'],
		      check=False, timeout=30)
	if res.returncode == 0 and not res.timed_out:
		if want == 'kvm' or want is None:
			return AccelChoice(Accel.KVM, 'KVM probe started a vCPU')
	lines = [l for l in res.output.splitlines()
		 if 'error' in l.lower() or 'failed' in l.lower()]
	why = lines[0].replace('(qemu)', '').strip() if lines else \
		f'exit status {res.returncode}'
	if want == 'kvm':
		raise InfraError(f'--accel kvm asked for, but KVM cannot run a '
				 f'guest here: {why}', 'use --accel tcg or auto')
	return AccelChoice(Accel.TCG, f'KVM cannot run a guest here ({why})')


@dataclass(frozen=True)
class BootRequest:
	arch: ArchParams
	image: Path
	command: str
	accel: AccelChoice
	rwdirs: Sequence[Path]
	log: Path
	timeout: float
	cpus: int = 2
	memory: str = '2G'
	# KUnit suites run at boot on every base: 7.x allnoconfig turns
	# KUNIT_AUTORUN_ENABLED off, and 6.12 (no such parameter) ignores it.
	append: Sequence[str] = ('kunit.autorun=1',)


def vng_argv(req: BootRequest, vng: str) -> List[str]:
	argv = [vng, '--run', str(req.image), '--user', 'root',
		'--cpus', str(req.cpus), '--memory', req.memory, '--verbose',
		'--disable-microvm', '--force-9p']
	if req.accel.accel is Accel.TCG:
		argv.append('--disable-kvm')
	for d in req.rwdirs:
		argv += ['--rwdir', str(d)]
	for a in req.append:
		argv += ['--append', a]
	argv += ['--exec', req.command]
	return argv


def boot(req: BootRequest, ops: Ops) -> Completed:
	"""Boot, run the command, power off; never outlive the timeout."""
	# vng lives in the same virtualenv as the tools, on PATH or not
	here = Path(sys.executable).parent / 'vng'
	vng = str(here) if here.exists() else ops.which('vng')
	if not vng:
		raise InfraError('vng (virtme-ng) is not installed',
				 'run ./bootstrap, which installs it in .venv')
	ops.require(req.arch.qemu_binary, req.arch.qemu_package)
	argv = vng_argv(req, vng)
	progress(f'boot: {req.arch.name} under {req.accel.accel.value.upper()}'
		 f' ({req.accel.reason}); console log: {req.log}')
	# vng runs virtme-run from PATH: its own bin directory must be on it
	path = f'{Path(vng).parent}:{os.environ.get("PATH", "")}'
	return ops.stream(argv, req.log, timeout=req.timeout, env={'PATH': path})


def reproducer(argv: Sequence[str]) -> str:
	return ' '.join(shlex.quote(a) for a in argv)
