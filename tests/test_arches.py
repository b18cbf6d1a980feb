# SPDX-License-Identifier: GPL-2.0
"""Per-arch parameters are typed: a wrong field stops the arch's loading."""

import pytest

from pytools import arches
from pytools.errors import UserError

GOOD = '''
from pytools.arches import ArchParams, Guest
ARCH = ArchParams(
	name='toy', linux_arch='toy', cross_compile='', cross_package='gcc',
	image='vmlinux', make_target='vmlinux', fragments=('common.config',),
	qemu_binary='qemu-system-toy', qemu_package='qemu-system-misc',
	unistd_header='usr/include/asm/unistd.h', debian_arch='toy',
	guest=Guest({guest}),
	{more})
'''


def _load(tmp_path, guest="console='ttyS0', cpu='max'", more=''):
	f = tmp_path / 'toy.py'
	f.write_text(GOOD.format(guest=guest, more=more))
	return arches.load_file(f)


def test_every_arch_file_loads_with_its_typed_fields():
	for name, a in arches.known().items():
		assert a.name == name
		assert a.guest.console and a.guest.cpu and a.debian_arch
	ppc = arches.get('ppc64le')
	assert ppc.qemu_min == (8, 1) and ppc.qemu_min_text == '8.1'
	assert ppc.guest.machine == 'pseries'
	assert dict(ppc.guest.env) == {'PERFCTR_FUZZ_CALLS': '300000'}


def test_a_good_file_loads(tmp_path):
	assert _load(tmp_path).name == 'toy'


@pytest.mark.parametrize('guest,more,says', [
	# a misspelled field: caught when the arch is loaded, not mid-run
	("console='ttyS0', cpu='max'", "qemu_minimum=(8, 1),",
	 "unexpected keyword argument 'qemu_minimum'"),
	("console='ttyS0', cpus='max'", '', "unexpected keyword argument 'cpus'"),
	("console='ttyS0'", '', "missing 1 required positional argument: 'cpu'"),
	("console='ttyS0', cpu='max'", "boot='pxe',", "boot 'pxe'"),
	("console='ttyS0', cpu='max'", "boot='initramfs',", 'guest.machine'),
	("console='ttyS0', cpu='max'", "qemu_min=(8, 1),", 'qemu_min_why'),
	("console='ttyS0', cpu='max'", "silence={'debug': 9.0},", "'default'"),
])
def test_a_wrong_field_fails_at_load_naming_the_file(tmp_path, guest, more,
						     says):
	with pytest.raises(UserError) as e:
		_load(tmp_path, guest, more)
	assert says in str(e.value) and 'toy.py' in str(e.value)
	assert 'qemu_min' in e.value.hint	# the fields are listed


def test_a_file_without_an_arch_is_an_error(tmp_path):
	f = tmp_path / 'empty.py'
	f.write_text('X = 1\n')
	with pytest.raises(UserError, match='defines no ARCH'):
		arches.load_file(f)
