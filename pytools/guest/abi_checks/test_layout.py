# SPDX-License-Identifier: GPL-2.0
"""The ctypes structures have the C compiler's layout, field by field:
the compiler that built the guest's programs (the cross compiler for
ppc64le; pytools/progs.py generates the probe from abi.STRUCTS)."""

import ctypes
import subprocess

import pytest

from pytools.guest import abi


@pytest.fixture(scope='module')
def c_layout(progs):
	"""{struct: {'sizeof': 'N', field: 'OFFSET SIZE'}} as C says."""
	out = subprocess.run([str(progs / 'layout_probe')], check=True,
			     capture_output=True, text=True).stdout
	layout = {}
	for line in out.splitlines():
		name, field, rest = line.split(' ', 2)
		layout.setdefault(name, {})[field] = rest
	return layout


@pytest.mark.parametrize('name', sorted(abi.STRUCTS))
def test_layout_matches_c(c_layout, name):
	struct = abi.STRUCTS[name]
	c = c_layout.get(name)
	assert c, f'the probe printed nothing of struct {name}: rebuild it'
	assert int(c['sizeof']) == ctypes.sizeof(struct), \
		f'sizeof differs: C {c["sizeof"]}, ctypes {ctypes.sizeof(struct)}'
	for field, _ in struct._fields_:
		desc = getattr(struct, field)
		assert c[field] == f'{desc.offset} {desc.size}', \
			f'{name}.{field}: C says offset/size {c[field]}, ' \
			f'ctypes {desc.offset} {desc.size}'


def test_info_size_ver0_is_the_struct(headers):
	assert headers.const('PERFCTR_INFO_SIZE_VER0') == \
		ctypes.sizeof(abi.PerfctrInfo)


def test_syscall_number_comes_from_headers(headers):
	nr = headers.syscall_nr('perfctr_info')
	assert nr > 0
	with pytest.raises(LookupError):
		headers.syscall_nr('perfctr_no_such_call')
