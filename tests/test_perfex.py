# SPDX-License-Identifier: GPL-2.0
"""perfex's option handling (the counting itself is tested in the guest)."""

import pytest

from pytools.guest import abi, perfex


def test_parse_event_with_and_without_counter():
	assert perfex.parse_event('0x100c0', 0) == (0x100c0, 0)
	assert perfex.parse_event('0x100c0@3', 0) == (0x100c0, 3)
	assert perfex.parse_event('0x1003c@0x40000001', 1) == (0x1003c, 0x40000001)


def test_bad_event_says_what_is_wanted():
	with pytest.raises(SystemExit, match='EVNTSEL'):
		perfex.parse_event('cycles-please', 0)


def _info(cpu_type, nr_counters):
	return abi.PerfctrInfo(cpu_type=cpu_type, nr_counters=nr_counters)


@pytest.fixture
def headers(tmp_path):
	(tmp_path / 'linux').mkdir()
	(tmp_path / 'linux' / 'perfctr.h').write_text(
		'#define PERFCTR_CPU_GENERIC 0\n'
		'#define PERFCTR_CPU_X86_INTEL_ARCH 1\n'
		'#define PERFCTR_CPU_X86_AMD_CORE 2\n'
		'#define PERFCTR_CPU_PPC64_BOOK3S 3\n')
	return abi.Headers(tmp_path)


def test_named_instructions_event_per_cpu(headers):
	# POWER: PMC5 (map 4), no selector; 0x100 adds kernel mode
	assert perfex.parse_event('instructions', 0, _info(3, 6), headers) \
		== (0, 4)
	assert perfex.parse_event('instructions:k', 0, _info(3, 6), headers) \
		== (0x100, 4)
	# x86: architectural event 0xc0, USR; OS added for :k
	assert perfex.parse_event('instructions', 0, _info(1, 8), headers) \
		== (0x100c0, 0)
	assert perfex.parse_event('instructions:k', 0, _info(2, 6), headers) \
		== (0x300c0, 0)


def test_named_event_on_a_tsc_only_machine_says_so(headers):
	with pytest.raises(SystemExit, match='no counter for it.*cpu_type 0'):
		perfex.parse_event('instructions', 0, _info(0, 0), headers)


def test_interrupt_mode_control(headers):
	c = abi.instructions_control(_info(3, 6), headers, period=1000,
				     signo=10)
	cc = c.cpu_control
	assert (cc.nractrs, cc.nrictrs, cc.pmc_map[0], cc.ireset[0],
		c.si_signo) == (0, 1, 4, -1000, 10)
	c = abi.instructions_control(_info(3, 6), headers)
	assert (c.cpu_control.nractrs, c.cpu_control.nrictrs) == (1, 0)
	assert abi.instructions_control(_info(0, 0), headers) is None


def test_build_control():
	c = perfex.build_control([(0x100c0, 0), (0x1003c, 1)], inherit=True)
	assert c.flags == 1
	assert c.cpu_control.tsc_on == 1
	assert c.cpu_control.nractrs == 2
	assert list(c.cpu_control.evntsel[:2]) == [0x100c0, 0x1003c]
	assert list(c.cpu_control.pmc_map[:2]) == [0, 1]


def test_no_command_is_a_usage_error(capsys):
	with pytest.raises(SystemExit) as e:
		perfex.main([])
	assert e.value.code == 2
	assert 'no command given' in capsys.readouterr().err
