# SPDX-License-Identifier: GPL-2.0
from . import ArchParams, Guest

ARCH = ArchParams(
	name='x86_64',
	linux_arch='x86',
	cross_compile='',
	cross_package='gcc',
	image='arch/x86/boot/bzImage',
	make_target='bzImage',
	fragments=('common.config', 'vng.config', 'x86_64.config', 'perfctr.config'),
	qemu_binary='qemu-system-x86_64',
	qemu_package='qemu-system-x86',
	unistd_header='usr/include/asm/unistd_64.h',
	# Debian's name of the arch (packages for a LAVA ramdisk)
	debian_arch='amd64',
	# The serial console outside virtme-ng (a LAVA QEMU device, a
	# board); virtme-ng's TCG CPU model (under KVM it asks for "host")
	guest=Guest(console='ttyS0', cpu='max'),
	# The in-guest runner prints a line every 30 s while a test runs;
	# the debug kernel boots for 160 s under TCG, KASAN and lockdep
	# printing little, and kmemleak scans take minutes.
	silence={'default': 120.0, 'debug': 600.0},
)
