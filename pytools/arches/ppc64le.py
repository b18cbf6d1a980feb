# SPDX-License-Identifier: GPL-2.0
from . import ArchParams, Guest

ARCH = ArchParams(
	name='ppc64le',
	linux_arch='powerpc',
	cross_compile='powerpc64le-linux-gnu-',
	cross_package='gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross',
	image='vmlinux',
	make_target='vmlinux',
	fragments=('common.config', 'ppc64le.config', 'perfctr.config'),
	qemu_binary='qemu-system-ppc64',
	qemu_package='qemu-system-ppc',
	unistd_header='usr/include/asm/unistd_64.h',
	debian_arch='ppc64el',
	boot='initramfs',
	guest=Guest(
		machine='pseries', cpu='power9', console='hvc0',
		# Passed to /init's environment on the kernel command line.
		# Emulated POWER runs about 5,000 perfctr calls a second, so
		# the fuzzer's 10^6-call run is x86_64's; here 3 x 10^5, with
		# the real PMU (interrupt-mode controls accepted).  The debug
		# kernel's figures are in pytools/data/configs.toml.
		env=(('PERFCTR_FUZZ_CALLS', '300000'),)),
	# QEMU raises the pseries PMU's overflow interrupt from 8.1
	qemu_min=(8, 1),
	qemu_min_why='the POWER PMU overflow interrupt needs',
	# PMC5 counts instructions in either boot and wall time under TCG
	# says little: one boot, under -icount, has every instrument.
	bench_boots=('icount',),
	# /init prints each test's output as it comes but no heartbeat; a
	# test may run 300 s (its bound in guest/init.c) quietly.
	silence={'default': 360.0, 'debug': 900.0},
)
