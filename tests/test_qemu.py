# SPDX-License-Identifier: GPL-2.0
"""The QEMU choice: version parsing, and when a backport is needed."""

import pytest

from pytools import arches, qemu


@pytest.mark.parametrize('text,want', [
	('QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)',
	 (7, 2, 22)),
	('QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2)', (10, 0, 2)),
	('QEMU emulator version 8.1', (8, 1, 0)),
	('not qemu at all', ()),
])
def test_parse_version(text, want):
	assert qemu.parse_version(text) == want


def test_ppc_needs_pmi_capable_qemu():
	# 7.2 < 8.1 < 10.0: the version tuples order as QEMU releases do.
	assert arches.get('ppc64le').qemu_min == (8, 1)
	assert (7, 2, 22) < (8, 1) <= (10, 0, 2)
	assert arches.get('x86_64').qemu_min == ()


def test_system_qemu_used_when_new_enough(monkeypatch):
	class FakeOps:
		def require(self, name, package):
			return f'/usr/bin/{name}'

		def run(self, argv, **kw):
			class R:
				output = 'QEMU emulator version 10.0.2'
			return R()

	q = qemu.choose(arches.get('ppc64le'), FakeOps())
	assert q.origin == 'system' and q.version == (10, 0, 2)
	assert qemu.argv_prefix(q) == ['/usr/bin/qemu-system-ppc64']


def test_private_copy_gets_its_firmware_dir():
	q = qemu.Qemu('/c/usr/bin/qemu-system-ppc64', (10, 0, 2),
		      'debian bookworm-backports 1:10.0.2', '/c/usr/share/qemu')
	assert qemu.argv_prefix(q) == ['/c/usr/bin/qemu-system-ppc64',
				       '-L', '/c/usr/share/qemu']
	assert q.as_dict()['version'] == '10.0.2'
