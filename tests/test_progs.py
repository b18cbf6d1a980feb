# SPDX-License-Identifier: GPL-2.0
"""The checks' C programs, built on the host: the layout probe names every
field the binding declares, and both programs build and run here (x86_64,
the host's compiler) as they do for ppc64le with the cross compiler."""

import ctypes
import shutil
import subprocess

import pytest

from pytools import arches, progs
from pytools.ops import Ops


def test_probe_prints_every_field_of_every_struct():
	from pytools.guest import abi
	src = progs.layout_source()
	for name, struct in abi.STRUCTS.items():
		assert f'sizeof(struct {name})' in src
		for field, _ in struct._fields_:
			assert f'offsetof(struct {name}, {field})' in src


def _headers(tmp_path):
	"""A uapi header with one struct, standing in for a build's."""
	inc = tmp_path / 'include' / 'linux'
	inc.mkdir(parents=True)
	(inc / 'perfctr.h').write_text(
		'struct perfctr_info { unsigned int a; unsigned long long b; };\n')
	return tmp_path / 'include'


class Info(ctypes.Structure):
	_fields_ = [('a', ctypes.c_uint), ('b', ctypes.c_ulonglong)]


@pytest.mark.skipif(not shutil.which('gcc'), reason='no gcc on this host')
def test_programs_build_static_and_run(tmp_path):
	out = progs.build(arches.get('x86_64'), _headers(tmp_path),
			  tmp_path / 'progs', Ops(), {'perfctr_info': Info})
	text = subprocess.run([str(out / progs.LAYOUT)], check=True,
			      capture_output=True, text=True).stdout
	assert text.splitlines() == ['perfctr_info sizeof 16',
				     'perfctr_info a 0 4', 'perfctr_info b 8 8']
	assert subprocess.run([str(out / progs.LOOP), '1000']).returncode == 0
	# static: no program interpreter (ld.so) to map at exec
	headers = subprocess.run(['readelf', '-lW', str(out / progs.LOOP)],
				 capture_output=True, text=True).stdout
	assert 'LOAD' in headers and 'INTERP' not in headers


@pytest.mark.skipif(not shutil.which('gcc'), reason='no gcc on this host')
def test_a_header_that_does_not_compile_is_a_finding_not_a_crash(tmp_path):
	"""The series' header failing to compile is what the layout check
	is for: the build says so in BUILD_FAILED and the checks fail with
	the compiler's words; the run goes on."""
	inc = tmp_path / 'linux'
	inc.mkdir()
	(inc / 'perfctr.h').write_text('struct perfctr_info { broken };\n')
	out = progs.build(arches.get('x86_64'), tmp_path, tmp_path / 'o',
			  Ops(), {'perfctr_info': Info})
	text = (out / progs.FAILED).read_text()
	assert 'layout_probe.c' in text and 'perfctr.h' in text
	assert not (out / progs.LAYOUT).exists()
	assert (out / progs.LOOP).exists()	# the loop needs no header
