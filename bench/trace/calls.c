// SPDX-License-Identifier: GPL-2.0
/*
 * The calls bench/trace/gdb_trace.py steps through, one after another,
 * each between two marker functions, forever.  Runs as /init of an
 * initramfs (see bench/trace/README.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <linux/perfctr.h>

#define M(n) __attribute__((noinline)) void n(void) { asm volatile("" ::: "memory"); }
M(mark_vread) M(mark_pread) M(mark_getpid) M(mark_vctl) M(mark_penable) M(mark_fast) M(mark_end)

int main(void)
{
	struct vperfctr_control c;
	struct vperfctr_sums s;
	struct perf_event_attr a;
	uint64_t v, t, p[PERFCTR_MAX_COUNTERS];
	int vfd, pfd;
	void *st;

	memset(&c, 0, sizeof(c));
	c.cpu_control.tsc_on = 1;
	c.cpu_control.nractrs = 1;
	c.cpu_control.pmc_map[0] = 4;
	vfd = syscall(__NR_vperfctr_open, 0, VPERFCTR_OPEN_CREAT);
	if (vfd < 0 || syscall(__NR_vperfctr_control, vfd, &c, sizeof(c), 0))
		printf("PROF: vperfctr: %s\n", strerror(errno));
	st = mmap(NULL, 4096, PROT_READ, MAP_SHARED, vfd, 0);
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	pfd = syscall(__NR_perf_event_open, &a, 0, -1, -1, 0);
	if (pfd < 0)
		printf("PROF: perf: %s\n", strerror(errno));
	printf("PROF: ready\n");
	fflush(stdout);
	for (;;) {
		mark_vread();
		syscall(__NR_vperfctr_read, vfd, &s, sizeof(s), 0);
		mark_pread();
		read(pfd, &v, sizeof(v));
		mark_getpid();
		syscall(__NR_getpid);
		mark_vctl();
		syscall(__NR_vperfctr_control, vfd, &c, sizeof(c), 0);
		mark_penable();
		ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0);
		mark_fast();
		vperfctr_state_read(st, &t, p, PERFCTR_MAX_COUNTERS);
		mark_end();
	}
}
