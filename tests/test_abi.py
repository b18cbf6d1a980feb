# SPDX-License-Identifier: GPL-2.0
"""The binding's header parsing (the syscalls themselves run in the guest)."""

import pytest

from pytools.guest import abi

HEADER = '''
#define PERFCTR_ABI_VERSION		3
#define PERFCTR_FEATURE_RDPMC		(1ULL << 1)	/* user reads */
#define PERFCTR_INFO_SIZE_VER0		96	/* sizeof first */
#define DERIVED				(PERFCTR_ABI_VERSION + 1)
#define NOT_A_NUMBER			"x"
'''


def test_parse_defines():
	d = abi.parse_defines(HEADER)
	assert d['PERFCTR_ABI_VERSION'] == 3
	assert d['PERFCTR_FEATURE_RDPMC'] == 2
	assert d['PERFCTR_INFO_SIZE_VER0'] == 96
	assert d['DERIVED'] == 4
	assert 'NOT_A_NUMBER' not in d


def test_headers_take_numbers_from_unistd(tmp_path):
	(tmp_path / 'linux').mkdir()
	(tmp_path / 'asm').mkdir()
	(tmp_path / 'linux' / 'perfctr.h').write_text(HEADER)
	(tmp_path / 'asm' / 'unistd_64.h').write_text(
		'#define __NR_read 0\n#define __NR_perfctr_info 463\n')
	h = abi.Headers(tmp_path)
	assert h.syscall_nr('perfctr_info') == 463
	assert h.const('PERFCTR_ABI_VERSION') == 3
	with pytest.raises(LookupError):
		h.syscall_nr('vperfctr_open')


def test_missing_headers_say_what_to_set(tmp_path):
	with pytest.raises(FileNotFoundError, match='PERFCTR_HEADERS'):
		abi.Headers(tmp_path)


def test_every_struct_size_is_a_multiple_of_8():
	import ctypes
	for name, s in abi.STRUCTS.items():
		assert ctypes.sizeof(s) % 8 == 0, name


def test_wait_signal_reads_the_whole_siginfo():
	"""sigtimedwait through ctypes: a queued signal's si_value comes
	back (Python's signal.sigtimedwait() has no field for it)."""
	import os
	import signal
	old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
	try:
		assert abi.wait_signal(signal.SIGUSR2, 0.05) is None
		os.kill(os.getpid(), signal.SIGUSR2)
		si = abi.wait_signal(signal.SIGUSR2, 5)
	finally:
		signal.pthread_sigmask(signal.SIG_SETMASK, old)
	assert si.si_signo == signal.SIGUSR2
	assert si.si_pid == os.getpid() and si.si_code == 0	# SI_USER
	import ctypes
	assert ctypes.sizeof(abi.Siginfo) == 128
	assert abi.Siginfo.si_value.offset == 24
