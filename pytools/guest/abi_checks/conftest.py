# SPDX-License-Identifier: GPL-2.0
"""Fixtures of the in-guest Python ABI checks."""

import ctypes
import mmap
import os
from pathlib import Path

import pytest

from pytools.guest import abi
from pytools.guest.runner import local_copy

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
		       ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


@pytest.fixture(scope='session')
def headers():
	return abi.Headers()


@pytest.fixture(scope='session')
def progs():
	"""The checks' C programs, built static by the host for this arch
	(pytools/progs.py), copied into the guest's memory: an exec from
	the 9p share faults every page in over virtio, and perfex's known
	loop should count the loop, not the share."""
	src = Path(os.environ.get('PERFCTR_PROGS', ''))
	failed = src / 'BUILD_FAILED'
	assert not (src.name and failed.is_file()), \
		f'the host could not build the checks\' C programs:\n' + \
		failed.read_text()
	assert src.name and (src / 'layout_probe').is_file(), \
		f'PERFCTR_PROGS={src}: no layout_probe there; the host builds ' \
		'the programs (pytools/progs.py) and the runner passes --progs'
	return local_copy(src)


@pytest.fixture(scope='session')
def pc(headers):
	return abi.Perfctr(headers)


@pytest.fixture
def unmapped_page():
	"""Address of a PROT_NONE page: any access faults."""
	addr = _libc.mmap(None, mmap.PAGESIZE, 0,	# PROT_NONE
			  mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
	assert addr not in (None, ctypes.c_void_p(-1).value)
	yield addr
	_libc.munmap(addr, mmap.PAGESIZE)
