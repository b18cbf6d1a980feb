# SPDX-License-Identifier: GPL-2.0
from . import ArchParams, Guest

ARCH = ArchParams(
	name='ppc64le',
	linux_arch='powerpc',
	cross_compile='powerpc64le-linux-gnu-',
	cross_package='gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross',
	image='vmlinux',
	make_target='vmlinux',
	fragments=('common.config', 'vng.config', 'ppc64le.config',
		   'perfctr.config'),
	qemu_binary='qemu-system-ppc64',
	qemu_package='qemu-system-ppc',
	unistd_header='usr/include/asm/unistd_64.h',
	debian_arch='ppc64el',
	# inv check: virtme-ng with a ppc64el Debian root of its own, so
	# the same runner as x86_64 (pytools.guest) runs every family, the
	# Python checks too.  Python and pytest for them; udev makes
	# virtme-ng's console ports (the command's output and exit status);
	# sysvinit-core's poweroff ends the guest.  The checks' C programs
	# (the layout probe, the known loop) come from the host's cross
	# compiler (pytools/progs.py): no compiler in the root.
	boot='vng',
	rootfs_packages=('python3', 'python3-pytest', 'udev', 'sysvinit-core'),
	# inv bench and inv bisect --boot: an initramfs of the static test
	# programs (guest/init.c), which boots in seconds and runs under
	# -icount with nothing else in the guest.
	fast_boot='initramfs',
	guest=Guest(
		machine='pseries', cpu='power9', console='hvc0',
		# The test programs' environment (an initramfs guest: on the
		# kernel command line; a vng guest: the runner's --env).
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
	# test may run 300 s (its bound in guest/init.c) quietly; a vng
	# guest's runner says it is alive every 30 s, but udev's coldplug of
	# emulated POWER and the debug kernel's boot are quiet for minutes.
	silence={'default': 360.0, 'debug': 900.0},
)
