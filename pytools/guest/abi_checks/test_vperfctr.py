# SPDX-License-Identifier: GPL-2.0
"""vperfctr calls from Python: contracts, and a seeded fuzz of controls."""

import ctypes
import errno
import mmap
import os
import random
import time

import pytest

from pytools.guest import abi


@pytest.fixture
def fd(pc):
	f = pc.open(0, 0x1)	# VPERFCTR_OPEN_CREAT
	pc.control(f, abi.tsc_control())
	yield f
	os.close(f)


def test_max_counters_matches_header(headers):
	assert headers.const('PERFCTR_MAX_COUNTERS') == abi.MAX_COUNTERS


def test_size_constants_are_the_structs(headers):
	assert headers.const('VPERFCTR_CONTROL_SIZE_VER0') == \
		ctypes.sizeof(abi.VperfctrControl)
	assert headers.const('VPERFCTR_SUMS_SIZE_VER0') == \
		ctypes.sizeof(abi.VperfctrSums)


def test_busy_counts_and_sleep_does_not(pc, fd, headers):
	khz = pc.info().cpu_khz
	t0 = pc.read(fd).self.tsc
	end = time.thread_time() + 0.05
	while time.thread_time() < end:
		pass
	t1 = pc.read(fd).self.tsc
	time.sleep(0.1)
	t2 = pc.read(fd).self.tsc
	busy_ms = (t1 - t0) / khz
	asleep_ms = (t2 - t1) / khz
	assert busy_ms > 25, f'busy 50 ms of CPU, counted {busy_ms:.1f} ms'
	assert asleep_ms < 20, f'asleep 100 ms, counted {asleep_ms:.1f} ms'


def test_unlink_then_everything_is_esrch(pc, fd):
	pc.unlink(fd)
	s = pc.read(fd)
	assert s.status & 0x4	# VPERFCTR_STATUS_DETACHED
	for call in (lambda: pc.unlink(fd),
		     lambda: pc.control(fd, abi.tsc_control())):
		with pytest.raises(OSError) as e:
			call()
		assert e.value.errno == errno.ESRCH


def test_pipe_fd_is_ebadf(pc):
	r, w = os.pipe()
	try:
		with pytest.raises(OSError) as e:
			pc.read(r)
		assert e.value.errno == errno.EBADF
	finally:
		os.close(r)
		os.close(w)


def test_mmap_page_reads_the_same_sums(pc, fd):
	import mmap
	m = mmap.mmap(fd, mmap.PAGESIZE, mmap.MAP_SHARED, mmap.PROT_READ)
	try:
		st = abi.VperfctrState.from_buffer_copy(m[:ctypes.sizeof(abi.VperfctrState)])
		assert st.seq % 2 == 0
		assert st.status & 0x1	# VPERFCTR_STATUS_ACTIVE
		assert st.nrctrs == 0
	finally:
		m.close()


def test_random_controls_give_defined_errnos(pc, fd, headers):
	"""A seeded fuzz of control structures: 0 or a documented errno."""
	seed = int(os.environ.get('PERFCTR_SEED', '4321'))
	rng = random.Random(seed)
	info = pc.info()
	defined = {errno.EINVAL, errno.E2BIG, errno.EPERM, errno.EOPNOTSUPP,
		   errno.EBUSY}
	ver0 = headers.const('VPERFCTR_CONTROL_SIZE_VER0')
	# over a page (4 KiB on x86_64, 64 KiB on ppc64le) is E2BIG; the
	# buffer covers every size tried
	page = mmap.PAGESIZE
	buf = ctypes.create_string_buffer(page + 8)
	for n in range(3000):
		c = abi.tsc_control()
		c.flags = rng.choice([0, 0, 1, rng.getrandbits(32)])
		c.si_signo = rng.choice([0, 10, 29, 64, 65, -1, rng.getrandbits(31)])
		cc = c.cpu_control
		cc.tsc_on = rng.choice([0, 1, 1, 2])
		cc.nractrs = rng.choice([0, 0, 1, info.nr_counters,
					 rng.randrange(0, 40)])
		cc.nrictrs = rng.choice([0, 0, 1, rng.randrange(0, 40)])
		cc.__reserved = rng.choice([0, 0, 0, 1])
		for i in range(abi.MAX_COUNTERS):
			if rng.random() < 0.1:
				cc.pmc_map[i] = rng.getrandbits(32)
				cc.evntsel[i] = rng.getrandbits(64)
				cc.ireset[i] = rng.randrange(-2**63, 2**63)
		size = rng.choice([ver0, ver0, ver0 - 8, ver0 + 8, page + 1])
		ctypes.memset(buf, 0, len(buf))
		ctypes.memmove(buf, ctypes.addressof(c), ctypes.sizeof(c))
		try:
			pc.control_raw(fd, buf, size)
		except OSError as e:
			assert e.errno in defined, \
				f'seed {seed} call {n}: {e} (size {size})'
