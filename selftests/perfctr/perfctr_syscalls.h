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

#endif /* __PERFCTR_SYSCALLS_H */
