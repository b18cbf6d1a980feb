# SPDX-License-Identifier: GPL-2.0
"""The ctypes structures have the C compiler's layout, field by field."""

import ctypes
import shutil
import subprocess

import pytest

from pytools.guest import abi


def _c_layout(headers, tmp_path, name, struct):
	lines = ['#include <stdio.h>', '#include <stddef.h>',
		 '#include <linux/perfctr.h>', 'int main(void) {',
		 f'\tprintf("sizeof %zu\\n", sizeof(struct {name}));']
	for field, _ in struct._fields_:
		lines.append(f'\tprintf("{field} %zu %zu\\n", '
			     f'offsetof(struct {name}, {field}), '
			     f'sizeof(((struct {name} *)0)->{field}));')
	lines += ['\treturn 0;', '}']
	src = tmp_path / f'{name}.c'
	src.write_text('\n'.join(lines) + '\n')
	exe = tmp_path / name
	cc = shutil.which('cc') or shutil.which('gcc')
	assert cc, 'no C compiler in the guest to compare layouts with'
	subprocess.run([cc, '-I', str(headers.root), '-o', str(exe), str(src)],
		       check=True, capture_output=True, text=True)
	out = subprocess.run([str(exe)], check=True, capture_output=True,
			     text=True).stdout
	return dict((l.split(' ', 1)[0], l.split(' ', 1)[1])
		    for l in out.splitlines())


@pytest.mark.parametrize('name', sorted(abi.STRUCTS))
def test_layout_matches_c(headers, tmp_path, name):
	struct = abi.STRUCTS[name]
	c = _c_layout(headers, tmp_path, name, struct)
	assert int(c['sizeof']) == ctypes.sizeof(struct), 'sizeof differs'
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
