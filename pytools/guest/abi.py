# SPDX-License-Identifier: GPL-2.0
"""ctypes binding of the perfctr system-call ABI.

Constants and system-call numbers are read from the installed uapi headers
of the kernel under test (PERFCTR_HEADERS, the build's usr/include), never
written here, so one binding serves every base and arch.  Only the
structure layouts are spelled out, and the ABI checks compare them with
what the C compiler sees in those same headers.
"""

import ctypes
import os
import re
from pathlib import Path
from typing import Dict, Optional


class PerfctrInfo(ctypes.Structure):
	_fields_ = [
		('abi_version', ctypes.c_uint32),
		('cpu_type', ctypes.c_uint32),
		('cpu_features', ctypes.c_uint64),
		('cpu_khz', ctypes.c_uint32),
		('nr_counters', ctypes.c_uint32),
		('counter_width', ctypes.c_uint32),
		('nr_fixed_counters', ctypes.c_uint32),
		('fixed_counter_width', ctypes.c_uint32),
		('cpu_id_limit', ctypes.c_uint32),
		('cpumask_size', ctypes.c_uint32),
		('__reserved', ctypes.c_uint32),
		('cpus', ctypes.c_uint64),
		('forbidden_cpus', ctypes.c_uint64),
		('driver_version', ctypes.c_char * 32),
	]


MAX_COUNTERS = 16	# PERFCTR_MAX_COUNTERS; checked against the header


class PerfctrCpuControl(ctypes.Structure):
	_fields_ = [
		('tsc_on', ctypes.c_uint32),
		('nractrs', ctypes.c_uint32),
		('nrictrs', ctypes.c_uint32),
		('__reserved', ctypes.c_uint32),
		('pmc_map', ctypes.c_uint32 * MAX_COUNTERS),
		('evntsel', ctypes.c_uint64 * MAX_COUNTERS),
		('ireset', ctypes.c_int64 * MAX_COUNTERS),
	]


class VperfctrControl(ctypes.Structure):
	_fields_ = [
		('flags', ctypes.c_uint32),
		('si_signo', ctypes.c_int32),
		('cpu_control', PerfctrCpuControl),
	]


class PerfctrSumCtrs(ctypes.Structure):
	_fields_ = [
		('tsc', ctypes.c_uint64),
		('pmc', ctypes.c_uint64 * MAX_COUNTERS),
	]


class VperfctrSums(ctypes.Structure):
	_fields_ = [
		('self', PerfctrSumCtrs),
		('children', PerfctrSumCtrs),
		('status', ctypes.c_uint32),
		('nrctrs', ctypes.c_uint32),
		('ovf_mask', ctypes.c_uint32),
		('__reserved', ctypes.c_uint32),
	]


class VperfctrState(ctypes.Structure):
	_fields_ = [
		('seq', ctypes.c_uint32),
		('status', ctypes.c_uint32),
		('running', ctypes.c_uint32),
		('nrctrs', ctypes.c_uint32),
		('tsc_start', ctypes.c_uint64),
		('tsc_sum', ctypes.c_uint64),
		('pmc_start', ctypes.c_uint64 * MAX_COUNTERS),
		('pmc_sum', ctypes.c_uint64 * MAX_COUNTERS),
		('rdpmc_index', ctypes.c_uint32 * MAX_COUNTERS),
		('counter_width', ctypes.c_uint32),
		('size', ctypes.c_uint32),
		('caps', ctypes.c_uint32),
		('__reserved', ctypes.c_uint32),
	]


# vperfctr_state.caps
CAP_USER_TSC = 1 << 0
CAP_USER_PMC = 1 << 1


# Every uapi struct the binding knows, by its C name.
STRUCTS = {
	'perfctr_info': PerfctrInfo,
	'perfctr_cpu_control': PerfctrCpuControl,
	'vperfctr_control': VperfctrControl,
	'perfctr_sum_ctrs': PerfctrSumCtrs,
	'vperfctr_sums': VperfctrSums,
	'vperfctr_state': VperfctrState,
}

_DEFINE = re.compile(r'^#define\s+(\w+)\s+(.+?)\s*(?:/\*.*)?$')


def parse_defines(text: str) -> Dict[str, int]:
	"""Integer #defines of a header, evaluating simple expressions."""
	raw = {}
	for line in text.splitlines():
		m = _DEFINE.match(line.strip())
		if m:
			raw[m.group(1)] = m.group(2)
	out: Dict[str, int] = {}

	def value(name, depth=0):
		if name in out:
			return out[name]
		if depth > 20 or name not in raw:
			raise KeyError(name)
		expr = re.sub(r'(?<=\d)U?L{0,2}\b', '', raw[name])
		expr = re.sub(r'\b(__NR3264_|__NR_)\w+|\b[A-Z_][A-Z0-9_]+\b',
			      lambda mm: str(value(mm.group(0), depth + 1)), expr)
		if not re.fullmatch(r'[\d\s()+\-*/<>|&x%a-fA-F]*', expr):
			raise KeyError(name)
		v = int(eval(expr, {'__builtins__': {}}))  # digits and operators only
		out[name] = v
		return v

	for name in raw:
		try:
			value(name)
		except (KeyError, SyntaxError, ZeroDivisionError, TypeError):
			pass
	return out


class Headers:
	"""The installed uapi headers of the kernel under test."""

	def __init__(self, root: Optional[Path] = None) -> None:
		root = root or Path(os.environ.get('PERFCTR_HEADERS', ''))
		if not root or not (root / 'linux' / 'perfctr.h').exists():
			raise FileNotFoundError(
				f'no linux/perfctr.h under {root!s}: set '
				'PERFCTR_HEADERS to the usr/include of a perfctr '
				'kernel build')
		self.root = root
		self.perfctr = parse_defines((root / 'linux/perfctr.h').read_text())
		self.nr = {}
		for f in sorted((root / 'asm').glob('unistd*.h')):
			for k, v in parse_defines(f.read_text()).items():
				if k.startswith('__NR_'):
					self.nr.setdefault(k[5:], v)

	def const(self, name: str) -> int:
		return self.perfctr[name]

	def syscall_nr(self, name: str) -> int:
		if name not in self.nr:
			raise LookupError(f'__NR_{name} is not in {self.root}/asm')
		return self.nr[name]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class Perfctr:
	"""The perfctr system calls; errors raise OSError with errno set."""

	def __init__(self, headers: Optional[Headers] = None) -> None:
		self.h = headers or Headers()

	def _call(self, name: str, *args) -> int:
		ctypes.set_errno(0)
		ret = _libc.syscall(ctypes.c_long(self.h.syscall_nr(name)),
				    *args)
		if ret == -1:
			err = ctypes.get_errno()
			raise OSError(err, f'{name}: {os.strerror(err)}')
		return ret

	def info_raw(self, buf, size: int, flags: int = 0) -> int:
		"""perfctr_info(2) on any buffer (a ctypes object or address)."""
		ptr = buf if isinstance(buf, int) else ctypes.addressof(buf)
		return self._call('perfctr_info', ctypes.c_void_p(ptr),
				  ctypes.c_size_t(size), ctypes.c_uint(flags))

	def info(self) -> PerfctrInfo:
		i = PerfctrInfo()
		self.info_raw(i, ctypes.sizeof(i))
		return i

	@staticmethod
	def _ptr(buf) -> ctypes.c_void_p:
		return ctypes.c_void_p(buf if isinstance(buf, int)
				       else ctypes.addressof(buf))

	def open(self, tid: int = 0, flags: int = 0) -> int:
		"""vperfctr_open(2): an fd for a thread's counters."""
		return self._call('vperfctr_open', ctypes.c_int(tid),
				  ctypes.c_uint(flags))

	def control_raw(self, fd: int, buf, size: int, flags: int = 0) -> int:
		return self._call('vperfctr_control', ctypes.c_int(fd),
				  self._ptr(buf), ctypes.c_size_t(size),
				  ctypes.c_uint(flags))

	def control(self, fd: int, ctl: VperfctrControl) -> None:
		self.control_raw(fd, ctl, ctypes.sizeof(ctl))

	def read_raw(self, fd: int, buf, size: int, flags: int = 0) -> int:
		return self._call('vperfctr_read', ctypes.c_int(fd),
				  self._ptr(buf), ctypes.c_size_t(size),
				  ctypes.c_uint(flags))

	def read(self, fd: int) -> VperfctrSums:
		s = VperfctrSums()
		self.read_raw(fd, s, ctypes.sizeof(s))
		return s

	def iresume(self, fd: int, flags: int = 0) -> None:
		self._call('vperfctr_iresume', ctypes.c_int(fd), ctypes.c_uint(flags))

	def unlink(self, fd: int, flags: int = 0) -> None:
		self._call('vperfctr_unlink', ctypes.c_int(fd), ctypes.c_uint(flags))


def tsc_control(flags: int = 0) -> VperfctrControl:
	c = VperfctrControl()
	c.flags = flags
	c.cpu_control.tsc_on = 1
	return c


# An instructions-retired counter, per perfctr_info.cpu_type (the names
# of the uapi header's PERFCTR_CPU_* constants): (pmc_map, evntsel for
# user mode only, the evntsel bit that adds kernel mode).  POWER's PMC5
# counts instructions and takes no selector; x86's architectural event
# 0xc0 with USR (bit 16), OS (bit 17).
INSTRUCTIONS = {
	'PERFCTR_CPU_PPC64_BOOK3S': (4, 0x0, 0x100),
	'PERFCTR_CPU_X86_INTEL_ARCH': (0, 0xc0 | 1 << 16, 1 << 17),
	'PERFCTR_CPU_X86_AMD_CORE': (0, 0xc0 | 1 << 16, 1 << 17),
}


def instructions_event(info: PerfctrInfo, headers: Headers,
		       kernel: bool = False) -> Optional[tuple]:
	"""(evntsel, pmc_map) counting instructions on this CPU, or None
	where the binding knows no such event (a TSC-only machine)."""
	for name, (pmc, sel, kbit) in INSTRUCTIONS.items():
		if name in headers.perfctr and \
		   info.cpu_type == headers.const(name) and info.nr_counters:
			return sel | (kbit if kernel else 0), pmc
	return None


def instructions_control(info: PerfctrInfo, headers: Headers,
			 kernel: bool = False, period: int = 0,
			 signo: int = 0) -> Optional[VperfctrControl]:
	"""The TSC and one instructions counter in slot 0: accumulating, or
	with @period an interrupt-mode counter that overflows after that
	many instructions and sends @signo (0: suspend silently)."""
	ev = instructions_event(info, headers, kernel)
	if ev is None:
		return None
	c = tsc_control()
	cc = c.cpu_control
	cc.evntsel[0], cc.pmc_map[0] = ev
	if period:
		cc.nrictrs = 1
		cc.ireset[0] = -period
		c.si_signo = signo
	else:
		cc.nractrs = 1
	return c


# siginfo_t as the kernel fills it for a queued signal (64-bit Linux,
# every arch here): si_signo, si_errno, si_code, then the union, whose
# _rt member holds si_pid, si_uid and the sigval.
class Siginfo(ctypes.Structure):
	_fields_ = [
		('si_signo', ctypes.c_int),
		('si_errno', ctypes.c_int),
		('si_code', ctypes.c_int),
		('_pad0', ctypes.c_int),
		('si_pid', ctypes.c_int),
		('si_uid', ctypes.c_uint),
		('si_value', ctypes.c_long),	# sival_int in its low half
		('_rest', ctypes.c_byte * (128 - 32)),
	]


class _Timespec(ctypes.Structure):
	_fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


SI_KERNEL = 0x80


def wait_signal(signo: int, timeout: float) -> Optional[Siginfo]:
	"""sigtimedwait(2) for a blocked @signo: its whole siginfo (Python's
	signal.sigtimedwait() leaves out si_value, where perfctr puts the
	overflowed slots), or None if none came within @timeout."""
	sigset = ctypes.create_string_buffer(128)
	_libc.sigemptyset(sigset)
	_libc.sigaddset(sigset, ctypes.c_int(signo))
	info = Siginfo()
	ts = _Timespec(int(timeout), int((timeout % 1) * 1e9))
	ctypes.set_errno(0)
	r = _libc.sigtimedwait(sigset, ctypes.byref(info), ctypes.byref(ts))
	if r < 0:
		err = ctypes.get_errno()
		if err == 11:		# EAGAIN: the timeout
			return None
		raise OSError(err, f'sigtimedwait: {os.strerror(err)}')
	return info
