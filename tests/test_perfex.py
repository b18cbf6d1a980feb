# SPDX-License-Identifier: GPL-2.0
"""perfex's option handling (the counting itself is tested in the guest)."""

import pytest

from pytools.guest import perfex


def test_parse_event_with_and_without_counter():
	assert perfex.parse_event('0x100c0', 0) == (0x100c0, 0)
	assert perfex.parse_event('0x100c0@3', 0) == (0x100c0, 3)
	assert perfex.parse_event('0x1003c@0x40000001', 1) == (0x1003c, 0x40000001)


def test_bad_event_says_what_is_wanted():
	with pytest.raises(SystemExit, match='EVNTSEL'):
		perfex.parse_event('instructions', 0)


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
