/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Raw perfctr system calls.  The numbers come from the installed headers
 * of the kernel under test, never from this file.
 */
#ifndef __PERFCTR_SYSCALLS_H
#define __PERFCTR_SYSCALLS_H

#include <errno.h>
#include <stddef.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perfctr.h>

#ifndef __NR_perfctr_info
#error "__NR_perfctr_info missing: build against the perfctr kernel's headers (KHDR_INCLUDES)"
#endif

static inline int sys_perfctr_info(void *info, size_t size, unsigned int flags)
{
	return syscall(__NR_perfctr_info, info, size, flags);
}

#ifdef __NR_vperfctr_open
static inline int sys_vperfctr_open(pid_t tid, unsigned int flags)
{
	return syscall(__NR_vperfctr_open, tid, flags);
}

static inline int sys_vperfctr_control(int fd, const void *ctl, size_t size,
				       unsigned int flags)
{
	return syscall(__NR_vperfctr_control, fd, ctl, size, flags);
}

static inline int sys_vperfctr_read(int fd, void *sums, size_t size,
				    unsigned int flags)
{
	return syscall(__NR_vperfctr_read, fd, sums, size, flags);
}

static inline int sys_vperfctr_iresume_flags(int fd, unsigned int flags)
{
	return syscall(__NR_vperfctr_iresume, fd, flags);
}

static inline int sys_vperfctr_iresume(int fd)
{
	return sys_vperfctr_iresume_flags(fd, 0);
}

static inline int sys_vperfctr_unlink_flags(int fd, unsigned int flags)
{
	return syscall(__NR_vperfctr_unlink, fd, flags);
}

static inline int sys_vperfctr_unlink(int fd)
{
	return sys_vperfctr_unlink_flags(fd, 0);
}

/*
 * Create @tid's counters and load @c: the fd, or -1 with the failing
 * call's errno (the fd closed again).
 */
static inline int vperfctr_open_control(pid_t tid,
					const struct vperfctr_control *c)
{
	int fd = sys_vperfctr_open(tid, VPERFCTR_OPEN_CREAT);

	if (fd < 0)
		return -1;
	if (sys_vperfctr_control(fd, c, sizeof(*c), 0)) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}
#endif

#endif /* __PERFCTR_SYSCALLS_H */
