// SPDX-License-Identifier: GPL-2.0
/*
 * Hardware event counters through vperfctr: real counts where the guest
 * has a PMU (QEMU's pseries machine emulates POWER8/9/10 counting of
 * instructions and cycles; x86 guests here have none, so every test
 * skips there, saying so).
 *
 * QEMU does not honour the freeze-in-supervisor-state bit, so counts
 * include the kernel's instructions around each system call: the checks
 * compare differences of long loops, where that overhead is constant.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "kselftest_harness.h"
#include "perfctr_syscalls.h"

#define LOOP_N		2000000UL

static struct perfctr_info info;

/* A loop whose instruction count per iteration does not vary. */
static void __attribute__((noinline)) loop(unsigned long n)
{
	while (n--)
		asm volatile("" : "+r"(n));
}

/* An instructions-retired control for this CPU; 0 if there is none. */
static int instructions_control(struct vperfctr_control *c, int kernel)
{
	memset(c, 0, sizeof(*c));
	c->cpu_control.tsc_on = 1;
	c->cpu_control.nractrs = 1;
	switch (info.cpu_type) {
	case PERFCTR_CPU_PPC64_BOOK3S:
		c->cpu_control.pmc_map[0] = 4;	/* PMC5: instructions */
		c->cpu_control.evntsel[0] = kernel ? 0x100 : 0;
		return 1;
	case PERFCTR_CPU_X86_INTEL_ARCH:
	case PERFCTR_CPU_X86_AMD_CORE:
		c->cpu_control.pmc_map[0] = 0;
		c->cpu_control.evntsel[0] = 0xc0 | (1 << 16) | (kernel ? 1 << 17 : 0);
		return 1;
	}
	return 0;
}

static uint64_t read_pmc0(int fd)
{
	struct vperfctr_sums s;

	if (sys_vperfctr_read(fd, &s, sizeof(s), 0))
		return ~0ULL;
	return s.self.pmc[0];
}

static int open_counting(void)
{
	struct vperfctr_control c;
	int fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);

	if (fd < 0 || !instructions_control(&c, 0))
		return -1;
	if (sys_vperfctr_control(fd, &c, sizeof(c), 0)) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

static uint64_t counted(int fd, unsigned long n)
{
	uint64_t a = read_pmc0(fd);

	loop(n);
	return read_pmc0(fd) - a;
}

FIXTURE(pmc) {
	int fd;
};

FIXTURE_SETUP(pmc)
{
	self->fd = -1;
	if (sys_perfctr_info(&info, sizeof(info), 0))
		SKIP(return, "perfctr_info failed: %s", strerror(errno));
	if (!info.nr_counters)
		SKIP(return, "no hardware counters in this machine (cpu_type %u, TSC only)",
		     info.cpu_type);
	self->fd = open_counting();
	ASSERT_LE(0, self->fd) TH_LOG("%m - instructions control");
}

FIXTURE_TEARDOWN(pmc)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* Instructions for N and 2N iterations scale by 2 within 2%. */
TEST_F(pmc, instructions_scale)
{
	uint64_t one, two;

	counted(self->fd, LOOP_N / 10);		/* warm up */
	one = counted(self->fd, LOOP_N);
	two = counted(self->fd, 2 * LOOP_N);
	TH_LOG("N=%lu: %llu instructions; 2N: %llu; ratio %.4f", LOOP_N,
	       (unsigned long long)one, (unsigned long long)two,
	       (double)two / one);
	EXPECT_GT(one, LOOP_N);
	EXPECT_LT(two * 100, one * 204);
	EXPECT_GT(two * 100, one * 196);
}

struct hog {
	unsigned long n;
};

static void *hog_main(void *arg)
{
	loop(((struct hog *)arg)->n);
	return NULL;
}

/* Another busy thread on the same CPU is not counted. */
TEST_F(pmc, other_thread_not_counted)
{
	struct hog h = { .n = 4 * LOOP_N };
	uint64_t alone, shared;
	pthread_t t;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	alone = counted(self->fd, LOOP_N);
	ASSERT_EQ(0, pthread_create(&t, NULL, hog_main, &h));
	shared = counted(self->fd, LOOP_N);
	pthread_join(t, NULL);
	TH_LOG("alone %llu, with a 4x busier thread on the CPU %llu",
	       (unsigned long long)alone, (unsigned long long)shared);
	/* The hog alone would add about 4 x alone. */
	EXPECT_LT(shared * 100, alone * 120);
}

static inline uint64_t read_counter(uint32_t index)
{
#if defined(__powerpc64__)
	uint64_t v = 0;

	switch (index) {
	case 1: asm volatile("mfspr %0, 771" : "=r"(v)); break;
	case 2: asm volatile("mfspr %0, 772" : "=r"(v)); break;
	case 3: asm volatile("mfspr %0, 773" : "=r"(v)); break;
	case 4: asm volatile("mfspr %0, 774" : "=r"(v)); break;
	case 5: asm volatile("mfspr %0, 775" : "=r"(v)); break;
	case 6: asm volatile("mfspr %0, 776" : "=r"(v)); break;
	}
	return v;
#elif defined(__x86_64__)
	uint32_t lo, hi;

	asm volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(index));
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

static uint64_t fast_pmc0(const volatile struct vperfctr_state *st)
{
	uint64_t mask = st->counter_width >= 64 ? ~0ULL :
			(1ULL << st->counter_width) - 1;
	uint32_t seq;
	uint64_t v;

	do {
		seq = st->seq;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		v = st->pmc_sum[0];
		if (st->running)
			v += (read_counter(st->rdpmc_index[0]) - st->pmc_start[0]) & mask;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while ((seq & 1) || st->seq != seq);
	return v;
}

/* The fast user-space read (mfspr/rdpmc) agrees with the system call. */
TEST_F(pmc, fast_read_agrees_with_syscall)
{
	const struct vperfctr_state *st;
	uint64_t before, fast, after;
	int i;

	st = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, st) TH_LOG("%m");
	for (i = 0; i < 50; i++) {
		loop(LOOP_N / 100);
		before = read_pmc0(self->fd);
		fast = fast_pmc0(st);
		after = read_pmc0(self->fd);
		ASSERT_LE(before, fast) TH_LOG("round %d", i);
		ASSERT_LE(fast, after) TH_LOG("round %d", i);
	}
	TH_LOG("last: syscall %llu <= fast %llu <= syscall %llu",
	       (unsigned long long)before, (unsigned long long)fast,
	       (unsigned long long)after);
	munmap((void *)st, sysconf(_SC_PAGESIZE));
}

static int perf_instructions(void)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	return syscall(__NR_perf_event_open, &a, 0, -1, -1, 0);
}

/* perf and perfctr exclude each other with EBUSY, and both recover. */
TEST_F(pmc, perf_and_perfctr_exclude_each_other)
{
	struct vperfctr_control c;
	int pfd, fd;

	pfd = perf_instructions();
	EXPECT_EQ(-1, pfd);
	EXPECT_EQ(EBUSY, errno) TH_LOG("perf_event_open while perfctr holds the PMU");
	if (pfd >= 0)
		close(pfd);

	close(self->fd);		/* last fd: counters released */
	self->fd = -1;
	pfd = perf_instructions();
	ASSERT_LE(0, pfd) TH_LOG("%m - perf after perfctr let go");

	fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
	ASSERT_LE(0, fd);
	instructions_control(&c, 0);
	EXPECT_EQ(-1, sys_vperfctr_control(fd, &c, sizeof(c), 0));
	EXPECT_EQ(EBUSY, errno) TH_LOG("vperfctr_control while perf holds the PMU");
	close(pfd);
	EXPECT_EQ(0, sys_vperfctr_control(fd, &c, sizeof(c), 0)) TH_LOG("%m");
	close(fd);
}

/* Kernel-mode counting needs CAP_PERFMON: an unprivileged uid gets EPERM. */
TEST_F(pmc, kernel_mode_needs_cap_perfmon)
{
	struct vperfctr_control c;
	int status;
	pid_t pid;

	if (geteuid() != 0)
		SKIP(return, "needs root, to compare with an unprivileged uid");
	instructions_control(&c, 1);
	EXPECT_EQ(0, sys_vperfctr_control(self->fd, &c, sizeof(c), 0)) TH_LOG("%m");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		if (setresuid(65003, 65003, 65003))
			_exit(2);
		fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
		if (fd < 0)
			_exit(3);
		_exit(sys_vperfctr_control(fd, &c, sizeof(c), 0) == -1 &&
		      errno == EPERM ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
