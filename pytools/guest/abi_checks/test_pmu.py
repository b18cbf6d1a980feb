# SPDX-License-Identifier: GPL-2.0
"""The real PMU from Python: interrupt-mode counters, their signal and
vperfctr_iresume(), and a seeded fuzz of controls the PMU accepts.

They need hardware counters with an overflow interrupt: ppc64le's pseries
guest has them (QEMU 8.1 and later raise the interrupt); x86 guests here
have no PMU, and there these tests skip, saying so, as the C tests do.
QEMU counts kernel mode whatever the control asks (it ignores the
freeze-in-supervisor bit), so counts include the system calls' kernel
instructions; the bounds below are those of vperfctr_pmc_test.c.
"""

import errno
import os
import random
import signal

import pytest

from pytools.guest import abi

PERIOD = 1_000_000


def work(n: int) -> int:
	"""Python busy work: about 100 instructions an iteration or more."""
	x = 0
	for i in range(n):
		x += i
	return x


# Iterations of work() sure to cross PERIOD instructions, and by how much.
ITERS = 100_000


@pytest.fixture
def pmu(pc, headers):
	"""perfctr_info of a machine with counters and their interrupt."""
	info = pc.info()
	if abi.instructions_event(info, headers) is None:
		pytest.skip(f'no hardware counters in this machine (cpu_type '
			    f'{info.cpu_type}, {info.nr_counters} counters: TSC '
			    'only)')
	if not info.cpu_features & headers.const('PERFCTR_FEATURE_PCINT'):
		pytest.skip('this PMU has no overflow interrupt (no '
			    'PERFCTR_FEATURE_PCINT)')
	return info


@pytest.fixture
def counted(pc):
	"""This thread's counters, unlinked at the end: closing the fd
	leaves them running, and an interrupt-mode counter left running
	overflows again in pytest's own code and sends its signal after the
	test's handler is gone (seen: pytest killed by SIGUSR1)."""
	fd = pc.open(0, 0x1)	# VPERFCTR_OPEN_CREAT
	yield fd
	pc.unlink(fd)
	os.close(fd)


@pytest.fixture
def usr1():
	"""SIGUSR1 counted by a Python handler.  Ask for it before
	`counted`, so that it is set up first and torn down last: the
	counters go before the handler does."""
	got = []
	old = signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
	yield got
	signal.signal(signal.SIGUSR1, old)


def _sums(pc, fd):
	s = pc.read(fd)
	return s.status, s.ovf_mask, s.self.pmc[0]


def _signals_after_work(pc, fd, got, want):
	"""The signal normally comes from the overflow interrupt at once;
	under QEMU it has been seen to come at the thread's next entry into
	perfctr instead (vperfctr_pmc_test.c says so too): give it that."""
	if len(got) < want:
		pc.read(fd)
	return len(got)


def test_overflow_signal_suspends_and_iresume_restarts(pc, headers, pmu,
							usr1, counted):
	suspended = headers.const('VPERFCTR_STATUS_SUSPENDED')
	c = abi.instructions_control(pmu, headers, period=PERIOD,
				     signo=signal.SIGUSR1)
	pc.control(counted, c)
	work(ITERS)
	assert _signals_after_work(pc, counted, usr1, 1) == 1, \
		f'{len(usr1)} signals after {ITERS} iterations of Python'
	status, mask, at_signal = _sums(pc, counted)
	assert status & suspended, f'status {status:#x}'
	assert mask == 1, f'ovf_mask {mask:#x}: slot 0 overflowed'
	# The PMU freezes itself at the overflow: little overshoot.
	assert PERIOD <= at_signal < PERIOD + PERIOD // 20, at_signal
	work(ITERS)
	assert _sums(pc, counted)[2] == at_signal, 'counted while suspended'
	assert len(usr1) == 1

	pc.iresume(counted)
	status, mask, _ = _sums(pc, counted)
	assert not status & suspended and mask == 0, \
		f'after iresume: status {status:#x}, ovf_mask {mask:#x}'
	work(ITERS)
	assert _signals_after_work(pc, counted, usr1, 2) == 2
	total = _sums(pc, counted)[2]
	assert 2 * PERIOD <= total < 2 * PERIOD + PERIOD // 10, total
	pc.iresume(counted)
	with pytest.raises(OSError) as e:
		pc.iresume(counted)	# nothing suspended: nothing to resume
	assert e.value.errno == errno.EINVAL


def test_overflow_siginfo_names_the_slot(pc, headers, pmu):
	"""The signal as the kernel queues it: perfctr's own si_code
	(VPERFCTR_SI_OVERFLOW, never SI_KERNEL: review G7), no sender pid,
	the overflowed slots' mask in si_value (what Python's own
	signal.sigtimedwait() does not show: read through ctypes).  The
	counters are unlinked and any signal still pending taken before the
	signal is unblocked: SIGUSR2 has no handler, and a late one would
	kill pytest."""
	signo = signal.SIGUSR2
	old = signal.pthread_sigmask(signal.SIG_BLOCK, {signo})
	fd = pc.open(0, 0x1)	# VPERFCTR_OPEN_CREAT
	try:
		pc.control(fd, abi.instructions_control(
			pmu, headers, period=PERIOD, signo=signo))
		work(ITERS)
		if signo not in signal.sigpending():
			pc.read(fd)	# a late signal comes here
		si = abi.wait_signal(signo, 5.0)
	finally:
		pc.unlink(fd)
		os.close(fd)
		while abi.wait_signal(signo, 0) is not None:
			pass
		signal.pthread_sigmask(signal.SIG_SETMASK, old)
	assert si is not None, 'no overflow signal within 5 s'
	assert (si.si_signo, si.si_code, si.si_pid) == \
		(signo, headers.perfctr.get('VPERFCTR_SI_OVERFLOW', 0x81), 0)
	assert si.si_code != abi.SI_KERNEL
	assert si.si_value & 0xffffffff == 1, f'si_value {si.si_value:#x}'


def test_no_signal_asked_suspends_silently(pc, headers, pmu, usr1, counted):
	pc.control(counted, abi.instructions_control(pmu, headers,
						      period=PERIOD))
	work(ITERS)
	status, mask, n = _sums(pc, counted)
	assert not usr1
	assert status & headers.const('VPERFCTR_STATUS_SUSPENDED')
	assert mask == 1 and n >= PERIOD


def _random_control(rng, info, signo):
	"""Mostly what this PMU takes, sometimes a little off: the accepted
	path (loading, switching, overflowing, resuming) gets fuzzed, not
	only the refusals."""
	c = abi.tsc_control()
	cc = c.cpu_control
	n = info.nr_counters
	total = rng.choice([1, 1, 2, rng.randrange(1, n + 1),
			    rng.randrange(0, n + 2)])
	cc.nrictrs = rng.randrange(0, total + 1) if rng.random() < 0.5 else 0
	cc.nractrs = total - cc.nrictrs
	maps = rng.sample(range(n), min(total, n))
	if rng.random() < 0.05:
		maps = [rng.randrange(0, n + 2) for _ in range(total)]
	for i in range(total):
		pmc = maps[i] if i < len(maps) else rng.randrange(0, n + 2)
		cc.pmc_map[i] = pmc
		# POWER: PMC1-4 take a selector (0x02 instructions, 0x1e
		# cycles, PMC1 0xf0/0xfe, PMC4 0xfa); PMC5 and PMC6 none.
		sel = rng.choice([0x02, 0x1e, 0xf0, 0xfe, 0xfa, 0]) \
			if pmc < 4 else 0
		if rng.random() < 0.3:
			sel |= 0x100		# kernel mode too
		if rng.random() < 0.03:
			sel = rng.getrandbits(rng.choice([8, 12, 64]))
		cc.evntsel[i] = sel
		if i >= cc.nractrs:
			cc.ireset[i] = rng.choice([-PERIOD, -rng.randrange(1, 2**31),
						   -1, -(2**31)])
			if rng.random() < 0.03:
				cc.ireset[i] = rng.choice([0, 1, -(2**31) - 1])
	c.si_signo = rng.choice([signo, signo, 0])
	c.flags = rng.choice([0, 0, 0, 1])
	return c


def test_random_pmc_controls_are_accepted_or_defined(pc, headers, pmu,
						      usr1):
	"""A seeded fuzz of controls built for this PMU: each call returns
	0 or a documented errno, a good share is accepted, and an accepted
	control counts, overflows and resumes as documented."""
	seed = int(os.environ.get('PERFCTR_SEED', '2718'))
	rng = random.Random(seed)
	defined = {errno.EINVAL, errno.EPERM, errno.EOPNOTSUPP, errno.EBUSY}
	active = headers.const('VPERFCTR_STATUS_ACTIVE')
	suspended = headers.const('VPERFCTR_STATUS_SUSPENDED')
	calls, accepted, overflowed = 600, 0, 0
	fd = pc.open(0, 0x1)
	try:
		for n in range(calls):
			c = _random_control(rng, pmu, signal.SIGUSR1)
			cc = c.cpu_control
			what = (f'seed {seed} call {n}: nractrs {cc.nractrs} '
				f'nrictrs {cc.nrictrs} map '
				f'{list(cc.pmc_map[:cc.nractrs + cc.nrictrs])} '
				f'evntsel {[hex(x) for x in cc.evntsel[:4]]}')
			try:
				pc.control(fd, c)
			except OSError as e:
				assert e.errno in defined, f'{what}: {e}'
				continue
			accepted += 1
			work(rng.choice([0, 100, 2000]))
			s = pc.read(fd)
			assert s.status & active, f'{what}: status {s.status:#x}'
			assert s.nrctrs == cc.nractrs + cc.nrictrs, what
			if s.status & suspended:
				overflowed += 1
				assert s.ovf_mask, f'{what}: suspended, no mask'
				pc.iresume(fd)
			elif not cc.nrictrs:
				# nothing can overflow: nothing to resume
				with pytest.raises(OSError) as e:
					pc.iresume(fd)
				assert e.value.errno == errno.EINVAL, what
	finally:
		pc.unlink(fd)
		os.close(fd)
	print(f'seed {seed}: {calls} controls, {accepted} accepted, '
	      f'{overflowed} overflowed and resumed, {len(usr1)} signals')
	assert accepted >= calls // 4, \
		f'seed {seed}: only {accepted} of {calls} controls accepted'
	assert overflowed > 0, f'seed {seed}: no accepted control overflowed'
