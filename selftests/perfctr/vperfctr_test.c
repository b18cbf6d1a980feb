// SPDX-License-Identifier: GPL-2.0
/*
 * Virtual per-thread counters: every call's normal and error paths, and
 * the counting semantics (only while the thread runs, inheritance,
 * remote control, lifetime after exit).
 *
 * Timing checks compare the TSC sums with CLOCK_THREAD_CPUTIME_ID, both
 * kept by the guest, with a stated tolerance (TOLERANCE_PCT): they check
 * that counting follows the thread, not how fast anything is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "perfctr_syscalls.h"

#ifndef __NR_vperfctr_open
#error "__NR_vperfctr_open missing: build against the perfctr kernel's headers"
#endif

#define TOLERANCE_PCT	25
#define MS		1000000ULL

static struct perfctr_info info;

static int load_info(void)
{
	return sys_perfctr_info(&info, sizeof(info), 0);
}

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Burn ns of this thread's CPU time. */
static void spin_ns(uint64_t ns)
{
	uint64_t end = thread_ns() + ns;

	while (thread_ns() < end)
		;
}

/*
 * A child that waits for a byte on @go[0], spins @ns of its own CPU time
 * and exits 0 (2 if the pipe closed first): a target that runs only once
 * the parent has set up its counters.  Returns fork()'s result.
 */
static pid_t fork_gated_spinner(int go[2], uint64_t ns)
{
	pid_t pid = fork();
	char b;

	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(2);
		spin_ns(ns);
		_exit(0);
	}
	return pid;
}

static uint64_t tsc_to_ns(uint64_t tsc)
{
	return tsc * 1000000ULL / info.cpu_khz;
}

static void tsc_control(struct vperfctr_control *c)
{
	memset(c, 0, sizeof(*c));
	c->cpu_control.tsc_on = 1;
}

static int open_self_counting(unsigned int flags)
{
	struct vperfctr_control c;
	int fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT | flags);

	if (fd < 0)
		return fd;
	tsc_control(&c);
	if (sys_vperfctr_control(fd, &c, sizeof(c), 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

static uint64_t read_tsc_sum(int fd)
{
	struct vperfctr_sums s;

	if (sys_vperfctr_read(fd, &s, sizeof(s), 0))
		return ~0ULL;
	return s.self.tsc;
}

static int within(uint64_t got, uint64_t want, unsigned int pct)
{
	return got * 100 >= want * (100 - pct) && got * 100 <= want * (100 + pct);
}

FIXTURE(vperfctr) {
	int fd;
	long page;
	void *none;
};

FIXTURE_SETUP(vperfctr)
{
	self->fd = -1;
	self->page = sysconf(_SC_PAGESIZE);
	self->none = mmap(NULL, self->page, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->none);
	if (load_info()) {
		if (errno == ENOSYS)
			SKIP(return, "perfctr not in this kernel");
		if (errno == ENODEV)
			SKIP(return, "perfctr found no usable counters");
	}
	ASSERT_NE(0, info.cpu_features & PERFCTR_FEATURE_TSC);
	self->fd = open_self_counting(0);
	ASSERT_LE(0, self->fd) TH_LOG("%m - open and TSC control");
}

FIXTURE_TEARDOWN(vperfctr)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->none && self->none != MAP_FAILED)
		munmap(self->none, self->page);
}

/* open(0, CREAT) gives an fd without close-on-exec; CLOEXEC sets it. */
TEST_F(vperfctr, open_fd_flags)
{
	int fd2;

	EXPECT_EQ(0, fcntl(self->fd, F_GETFD) & FD_CLOEXEC);
	fd2 = sys_vperfctr_open(0, VPERFCTR_OPEN_CLOEXEC);
	ASSERT_LE(0, fd2) TH_LOG("%m");
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd2, F_GETFD) & FD_CLOEXEC);
	close(fd2);
}

/* Two fds of one thread are one object: a control through one shows in both. */
TEST_F(vperfctr, open_twice_same_object)
{
	struct vperfctr_sums s;
	int fd2 = sys_vperfctr_open(0, 0);

	ASSERT_LE(0, fd2) TH_LOG("%m");
	spin_ns(5 * MS);
	ASSERT_EQ(0, sys_vperfctr_read(fd2, &s, sizeof(s), 0));
	EXPECT_NE(0, s.status & VPERFCTR_STATUS_ACTIVE);
	EXPECT_GT(s.self.tsc, 0);
	close(fd2);
}

/* Unknown open flags and a negative tid are EINVAL. */
TEST_F(vperfctr, open_bad_args_einval)
{
	EXPECT_EQ(-1, sys_vperfctr_open(0, 1u << 2));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, sys_vperfctr_open(0, ~0u));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, sys_vperfctr_open(-1, 0));
	EXPECT_EQ(EINVAL, errno);
}

/* A thread that does not exist is ESRCH. */
TEST_F(vperfctr, open_no_such_thread_esrch)
{
	EXPECT_EQ(-1, sys_vperfctr_open(0x3ffffff0, VPERFCTR_OPEN_CREAT));
	EXPECT_EQ(ESRCH, errno);
}

/* Without CREAT, a thread with no counters is ENOENT. */
TEST_F(vperfctr, open_without_creat_enoent)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0)	/* no INHERIT: the child has no counters */
		_exit(sys_vperfctr_open(0, 0) == -1 && errno == ENOENT ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* A TSC-only control loads: active, counting the TSC, no hardware counters. */
TEST_F(vperfctr, control_tsc_only)
{
	struct vperfctr_sums s;

	ASSERT_EQ(0, sys_vperfctr_read(self->fd, &s, sizeof(s), 0));
	EXPECT_EQ(VPERFCTR_STATUS_ACTIVE | VPERFCTR_STATUS_TSC, s.status);
	EXPECT_EQ(0, s.nrctrs);
}

/* More counters than the CPU has is EINVAL. */
TEST_F(vperfctr, control_too_many_counters_einval)
{
	struct vperfctr_control c;

	tsc_control(&c);
	c.cpu_control.nractrs = info.nr_counters + info.nr_fixed_counters + 1;
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, &c, sizeof(c), 0));
	EXPECT_EQ(EINVAL, errno);
}

/* Reserved fields, unknown control flags and tsc_on > 1 are EINVAL. */
TEST_F(vperfctr, control_unknown_bits_einval)
{
	struct vperfctr_control c;

	tsc_control(&c);
	c.cpu_control.__reserved = 1;
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, &c, sizeof(c), 0));
	EXPECT_EQ(EINVAL, errno);
	tsc_control(&c);
	c.flags = 1u << 7;
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, &c, sizeof(c), 0));
	EXPECT_EQ(EINVAL, errno);
	tsc_control(&c);
	c.cpu_control.tsc_on = 2;
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, &c, sizeof(c), 0));
	EXPECT_EQ(EINVAL, errno);
	tsc_control(&c);
	c.cpu_control.evntsel[3] = 1;	/* an unused slot */
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, &c, sizeof(c), 0));
	EXPECT_EQ(EINVAL, errno);
}

/* A non-zero syscall flags argument is EINVAL. */
TEST_F(vperfctr, control_flags_arg_einval)
{
	struct vperfctr_control c;

	tsc_control(&c);
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, &c, sizeof(c), 1));
	EXPECT_EQ(EINVAL, errno);
}

/* An invalid overflow signal is EINVAL. */
TEST_F(vperfctr, control_bad_signal_einval)
{
	struct vperfctr_control c;

	tsc_control(&c);
	c.si_signo = 1000;
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, &c, sizeof(c), 0));
	EXPECT_EQ(EINVAL, errno);
	c.si_signo = -1;
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, &c, sizeof(c), 0));
	EXPECT_EQ(EINVAL, errno);
	c.si_signo = SIGIO;
	EXPECT_EQ(0, sys_vperfctr_control(self->fd, &c, sizeof(c), 0));
}

/* Sizes: short is EINVAL, over a page E2BIG, unknown tail E2BIG, zero tail fine. */
TEST_F(vperfctr, control_sizes)
{
	size_t big = sizeof(struct vperfctr_control) + 16;
	struct vperfctr_control *c = calloc(1, 2 * self->page);

	ASSERT_NE(NULL, c);
	tsc_control(c);
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, c, VPERFCTR_CONTROL_SIZE_VER0 - 1, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, c, self->page + 1, 0));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(0, sys_vperfctr_control(self->fd, c, big, 0)) TH_LOG("%m");
	((char *)c)[big - 1] = 1;
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, c, big, 0));
	EXPECT_EQ(E2BIG, errno);
	free(c);
}

/* Bad pointers are EFAULT. */
TEST_F(vperfctr, control_efault)
{
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, NULL,
					   sizeof(struct vperfctr_control), 0));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, self->none,
					   sizeof(struct vperfctr_control), 0));
	EXPECT_EQ(EFAULT, errno);
}

/* A closed fd, -1, and an fd of another type are EBADF, for every call. */
TEST_F(vperfctr, bad_fds_ebadf)
{
	struct vperfctr_control c;
	struct vperfctr_sums s;
	int p[2], fds[3], i;

	ASSERT_EQ(0, pipe(p));
	close(p[1]);
	fds[0] = -1;
	fds[1] = p[0];		/* a pipe */
	fds[2] = 1000;		/* not open */
	tsc_control(&c);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(-1, sys_vperfctr_control(fds[i], &c, sizeof(c), 0));
		EXPECT_EQ(EBADF, errno) TH_LOG("fd %d", fds[i]);
		EXPECT_EQ(-1, sys_vperfctr_read(fds[i], &s, sizeof(s), 0));
		EXPECT_EQ(EBADF, errno);
		EXPECT_EQ(-1, sys_vperfctr_iresume(fds[i]));
		EXPECT_EQ(EBADF, errno);
		EXPECT_EQ(-1, sys_vperfctr_unlink(fds[i]));
		EXPECT_EQ(EBADF, errno);
	}
	close(p[0]);
}

/* Interrupt-mode counters: EOPNOTSUPP without an overflow interrupt. */
TEST_F(vperfctr, control_interrupt_mode)
{
	struct vperfctr_control c;
	int ret;

	if (!info.nr_counters && !info.nr_fixed_counters)
		SKIP(return, "no hardware counters here (TSC only): interrupt mode needs one");
	tsc_control(&c);
	c.cpu_control.nrictrs = 1;
	if (info.cpu_type == PERFCTR_CPU_PPC64_BOOK3S)
		c.cpu_control.pmc_map[0] = 4;	/* PMC5: instructions */
	else
		c.cpu_control.evntsel[0] = 0xc0 | (1 << 16);
	c.cpu_control.ireset[0] = -1000000;
	ret = sys_vperfctr_control(self->fd, &c, sizeof(c), 0);
	if (info.cpu_features & PERFCTR_FEATURE_PCINT) {
		EXPECT_EQ(0, ret) TH_LOG("%m");
	} else {
		EXPECT_EQ(-1, ret);
		EXPECT_EQ(EOPNOTSUPP, errno);
	}
}

/* Read: flags EINVAL, short EINVAL, over a page E2BIG, EFAULT, longer zeroed. */
TEST_F(vperfctr, read_args)
{
	size_t big = sizeof(struct vperfctr_sums) + 32;
	unsigned char *buf = malloc(big);
	size_t k;

	ASSERT_NE(NULL, buf);
	EXPECT_EQ(-1, sys_vperfctr_read(self->fd, buf, sizeof(struct vperfctr_sums), 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, sys_vperfctr_read(self->fd, buf, VPERFCTR_SUMS_SIZE_VER0 - 1, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, sys_vperfctr_read(self->fd, buf, self->page + 1, 0));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(-1, sys_vperfctr_read(self->fd, self->none, sizeof(struct vperfctr_sums), 0));
	EXPECT_EQ(EFAULT, errno);
	memset(buf, 0xa5, big);
	EXPECT_EQ(0, sys_vperfctr_read(self->fd, buf, big, 0));
	for (k = sizeof(struct vperfctr_sums); k < big; k++)
		EXPECT_EQ(0, buf[k]) TH_LOG("byte %zu", k);
	free(buf);
}

/* A busy thread accumulates its CPU time in TSC cycles. */
TEST_F(vperfctr, busy_thread_counts_its_cpu_time)
{
	uint64_t t0, t1, c0, c1;

	t0 = read_tsc_sum(self->fd);
	c0 = thread_ns();
	spin_ns(100 * MS);
	c1 = thread_ns();
	t1 = read_tsc_sum(self->fd);
	TH_LOG("cpu %llu ns, tsc %llu ns", (unsigned long long)(c1 - c0),
	       (unsigned long long)tsc_to_ns(t1 - t0));
	EXPECT_TRUE(within(tsc_to_ns(t1 - t0), c1 - c0, TOLERANCE_PCT));
}

/* A sleeping thread accumulates about nothing. */
TEST_F(vperfctr, sleeping_thread_counts_little)
{
	uint64_t t0, t1;

	t0 = read_tsc_sum(self->fd);
	usleep(200 * 1000);
	t1 = read_tsc_sum(self->fd);
	TH_LOG("slept 200 ms, counted %llu ns",
	       (unsigned long long)tsc_to_ns(t1 - t0));
	EXPECT_LT(tsc_to_ns(t1 - t0), 20 * MS);
}

struct spinner {
	uint64_t spin, cpu, tsc;
	int err;
};

static void *spinner_main(void *arg)
{
	struct spinner *s = arg;
	int fd = open_self_counting(0);
	uint64_t c0, t0;

	if (fd < 0) {
		s->err = errno;
		return NULL;
	}
	t0 = read_tsc_sum(fd);
	c0 = thread_ns();
	spin_ns(s->spin);
	s->cpu = thread_ns() - c0;
	s->tsc = read_tsc_sum(fd) - t0;
	close(fd);
	return NULL;
}

/* Two threads sharing one CPU each count only their own time. */
TEST_F(vperfctr, two_threads_one_cpu_count_themselves)
{
	struct spinner a = { .spin = 150 * MS }, b = { .spin = 75 * MS };
	pthread_t ta, tb;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	ASSERT_EQ(0, pthread_create(&ta, NULL, spinner_main, &a));
	ASSERT_EQ(0, pthread_create(&tb, NULL, spinner_main, &b));
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	ASSERT_EQ(0, a.err);
	ASSERT_EQ(0, b.err);
	TH_LOG("A: cpu %llu tsc %llu ns; B: cpu %llu tsc %llu ns",
	       (unsigned long long)a.cpu, (unsigned long long)tsc_to_ns(a.tsc),
	       (unsigned long long)b.cpu, (unsigned long long)tsc_to_ns(b.tsc));
	EXPECT_TRUE(within(tsc_to_ns(a.tsc), a.cpu, TOLERANCE_PCT));
	EXPECT_TRUE(within(tsc_to_ns(b.tsc), b.cpu, TOLERANCE_PCT));
}

#if defined(__x86_64__) || defined(__powerpc64__)
#define HAVE_FAST_READ
/* The lock-free user-space read, as the uapi header publishes it. */
static uint64_t fast_tsc(const volatile struct vperfctr_state *st)
{
	__u64 tsc = 0;

	vperfctr_state_read((const struct vperfctr_state *)st, &tsc, NULL, 0);
	return tsc;
}
#endif

/* The fast user-space read agrees with the system call. */
TEST_F(vperfctr, fast_read_agrees_with_syscall)
{
#ifdef HAVE_FAST_READ
	const struct vperfctr_state *st;
	uint64_t before, fast, after;
	int i;

	st = mmap(NULL, self->page, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, st) TH_LOG("%m");
	for (i = 0; i < 100; i++) {
		spin_ns(MS / 10);
		before = read_tsc_sum(self->fd);
		fast = fast_tsc(st);
		after = read_tsc_sum(self->fd);
		ASSERT_LE(before, fast) TH_LOG("round %d", i);
		ASSERT_LE(fast, after) TH_LOG("round %d", i);
		/* The one-value read of the TSC sum agrees as well. */
		before = read_tsc_sum(self->fd);
		fast = vperfctr_state_read_tsc(st);
		after = read_tsc_sum(self->fd);
		ASSERT_LE(before, fast) TH_LOG("vperfctr_state_read_tsc, round %d", i);
		ASSERT_LE(fast, after) TH_LOG("vperfctr_state_read_tsc, round %d", i);
	}
	munmap((void *)st, self->page);
#else
	SKIP(return, "no fast read written for this arch (x86_64 and ppc64le only)");
#endif
}

/* mmap: read-only, one page at offset 0; writable or larger is refused. */
TEST_F(vperfctr, mmap_rules)
{
	struct vperfctr_state *st;

	/* The fd is read-only, so the VFS refuses a shared writable map... */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, self->page, PROT_READ | PROT_WRITE,
				   MAP_SHARED, self->fd, 0));
	EXPECT_EQ(EACCES, errno);
	/* ...and the driver a private writable one. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, self->page, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE, self->fd, 0));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, self->page, PROT_READ, MAP_SHARED,
				   self->fd, self->page));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * self->page, PROT_READ, MAP_SHARED,
				   self->fd, 0));
	EXPECT_EQ(EINVAL, errno);
	st = mmap(NULL, self->page, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, st) TH_LOG("%m");
	EXPECT_EQ(VPERFCTR_STATUS_ACTIVE | VPERFCTR_STATUS_TSC, st->status);
	EXPECT_EQ(-1, mprotect(st, self->page, PROT_READ | PROT_WRITE));
	munmap(st, self->page);
}

/* unlink stops counting, keeps the sums, and is final. */
TEST_F(vperfctr, unlink_stops_counting)
{
	struct vperfctr_control c;
	struct vperfctr_sums s;
	uint64_t t0;

	spin_ns(5 * MS);
	ASSERT_EQ(0, sys_vperfctr_unlink(self->fd)) TH_LOG("%m");
	t0 = read_tsc_sum(self->fd);
	EXPECT_GT(t0, 0);
	spin_ns(20 * MS);
	ASSERT_EQ(0, sys_vperfctr_read(self->fd, &s, sizeof(s), 0));
	EXPECT_EQ(t0, s.self.tsc);
	EXPECT_NE(0, s.status & VPERFCTR_STATUS_DETACHED);
	EXPECT_EQ(-1, sys_vperfctr_unlink(self->fd));
	EXPECT_EQ(ESRCH, errno);
	tsc_control(&c);
	EXPECT_EQ(-1, sys_vperfctr_control(self->fd, &c, sizeof(c), 0));
	EXPECT_EQ(ESRCH, errno);
	EXPECT_EQ(-1, sys_vperfctr_open(0, 0));
	EXPECT_EQ(ENOENT, errno);
}

/* Closing the last fd stops counting: the thread has no counters after. */
TEST_F(vperfctr, close_stops_counting)
{
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(-1, sys_vperfctr_open(0, 0));
	EXPECT_EQ(ENOENT, errno);
}

/* iresume of counters that did not overflow is EINVAL. */
TEST_F(vperfctr, iresume_not_suspended_einval)
{
	EXPECT_EQ(-1, sys_vperfctr_iresume(self->fd));
	EXPECT_EQ(EINVAL, errno);
}

/* Remote control of an own child is allowed; its fd reads the final sums after it exits. */
TEST_F(vperfctr, remote_child_and_final_sums)
{
	struct vperfctr_control c;
	struct vperfctr_sums s1, s2;
	int go[2], fd, status;
	pid_t pid;

	ASSERT_EQ(0, pipe(go));
	pid = fork_gated_spinner(go, 60 * MS);
	ASSERT_LE(0, pid);
	close(go[0]);
	fd = sys_vperfctr_open(pid, VPERFCTR_OPEN_CREAT);
	ASSERT_LE(0, fd) TH_LOG("%m - open of own child");
	tsc_control(&c);
	ASSERT_EQ(0, sys_vperfctr_control(fd, &c, sizeof(c), 0)) TH_LOG("%m");
	ASSERT_EQ(1, write(go[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, sys_vperfctr_read(fd, &s1, sizeof(s1), 0));
	TH_LOG("child counted %llu ns", (unsigned long long)tsc_to_ns(s1.self.tsc));
	EXPECT_GT(tsc_to_ns(s1.self.tsc), 30 * MS);
	EXPECT_NE(0, s1.status & VPERFCTR_STATUS_DETACHED);
	usleep(10000);
	ASSERT_EQ(0, sys_vperfctr_read(fd, &s2, sizeof(s2), 0));
	EXPECT_EQ(s1.self.tsc, s2.self.tsc);
	close(fd);
	close(go[1]);
}

/*
 * A monitor reading a thread that runs on another CPU: the read goes to
 * that CPU by IPI and adds what the running counters counted so far
 * (perfctr_cpu_peek(), nothing stopped).  Successive reads must never go
 * back, must grow while the thread spins, and the final sums after its
 * exit must be at least the last live read.
 */
TEST_F(vperfctr, remote_live_reads_only_grow)
{
	struct vperfctr_control c;
	struct vperfctr_sums s;
	uint64_t last = 0, first = 0;
	int go[2], fd, status, i, grew = 0;
	pid_t pid;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs for the reader and the spinner");
	ASSERT_EQ(0, pipe(go));
	pid = fork_gated_spinner(go, 200 * MS);
	ASSERT_LE(0, pid);
	close(go[0]);
	fd = sys_vperfctr_open(pid, VPERFCTR_OPEN_CREAT);
	ASSERT_LE(0, fd) TH_LOG("%m");
	tsc_control(&c);
	ASSERT_EQ(0, sys_vperfctr_control(fd, &c, sizeof(c), 0)) TH_LOG("%m");
	ASSERT_EQ(1, write(go[1], "x", 1));
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, sys_vperfctr_read(fd, &s, sizeof(s), 0)) TH_LOG("%m");
		ASSERT_GE(s.self.tsc, last) TH_LOG("read %d went back", i);
		if (i == 0)
			first = s.self.tsc;
		grew += s.self.tsc > last;
		last = s.self.tsc;
		usleep(500);
	}
	EXPECT_GT(last, first) TH_LOG("live reads never grew");
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, sys_vperfctr_read(fd, &s, sizeof(s), 0));
	EXPECT_GE(s.self.tsc, last);
	TH_LOG("%d of 200 live reads grew", grew);
	close(fd);
	close(go[1]);
}

/*
 * The lifetime the 2004 review asked about, as a race: task A (a child)
 * counts; B (this process) holds A's fd and has the state page mapped;
 * while A exits and is reaped, two threads of B hammer the fd with reads,
 * controls, iresume, unlink and page reads.  Every call must return 0 or
 * the documented ESRCH (detached) / EINVAL (iresume of running counters),
 * and the final sums must stay readable after the fd's last holder closes
 * its mapping.  Repeated, so the exit lands at many points of the calls.
 */
struct hammer {
	int fd;
	const volatile struct vperfctr_state *st;
	volatile int stop;
	int bad_errno;
	long calls;
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	struct vperfctr_control c;
	struct vperfctr_sums s;
	long i = 0;

	tsc_control(&c);
	while (!h->stop) {
		long r;
		int ok;

		switch (i++ % 5) {
		case 0:
			r = sys_vperfctr_read(h->fd, &s, sizeof(s), 0);
			ok = r == 0;
			break;
		case 1:
			r = sys_vperfctr_control(h->fd, &c, sizeof(c), 0);
			ok = r == 0 || errno == ESRCH;
			break;
		case 2:
			r = sys_vperfctr_iresume(h->fd);
			ok = r == -1 && (errno == EINVAL || errno == ESRCH);
			break;
		case 3:
			(void)h->st->seq;
			(void)h->st->tsc_sum;
			ok = 1;
			break;
		default:
			if (i % 97)
				continue;
			r = sys_vperfctr_unlink(h->fd);
			ok = r == 0 || errno == ESRCH;
			break;
		}
		h->calls++;
		if (!ok && !h->bad_errno)
			h->bad_errno = errno ? errno : -1;
	}
	return NULL;
}

TEST_F(vperfctr, lifetime_race_exit_while_held)
{
	long calls = 0;
	int round;

	for (round = 0; round < 40; round++) {
		struct hammer h = { 0 };
		struct vperfctr_control c;
		struct vperfctr_sums s;
		pthread_t t[2];
		pid_t pid;
		int i;

		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			spin_ns((round % 5) * MS);
			_exit(0);
		}
		h.fd = sys_vperfctr_open(pid, VPERFCTR_OPEN_CREAT);
		if (h.fd < 0 && errno == ESRCH) {	/* it was quicker */
			waitpid(pid, NULL, 0);
			continue;
		}
		ASSERT_LE(0, h.fd) TH_LOG("%m - open of own child");
		tsc_control(&c);
		sys_vperfctr_control(h.fd, &c, sizeof(c), 0);	/* may be ESRCH */
		h.st = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED,
			    h.fd, 0);
		ASSERT_NE(MAP_FAILED, h.st);
		for (i = 0; i < 2; i++)
			ASSERT_EQ(0, pthread_create(&t[i], NULL, hammer_main, &h));
		ASSERT_EQ(pid, waitpid(pid, NULL, 0));	/* exited and reaped */
		usleep(2000);
		h.stop = 1;
		for (i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		EXPECT_EQ(0, h.bad_errno) TH_LOG("round %d: errno %d (%s)",
						 round, h.bad_errno,
						 strerror(h.bad_errno));
		/* Detached now; the page stays mapped after the fd goes. */
		ASSERT_EQ(0, sys_vperfctr_read(h.fd, &s, sizeof(s), 0));
		EXPECT_NE(0, s.status & VPERFCTR_STATUS_DETACHED);
		close(h.fd);
		(void)h.st->tsc_sum;
		munmap((void *)h.st, sysconf(_SC_PAGESIZE));
		calls += h.calls;
	}
	TH_LOG("%ld calls against fds of exiting children in 40 rounds", calls);
}

/* Another uid's thread is EPERM without CAP_SYS_PTRACE. */
TEST_F(vperfctr, remote_other_uid_eperm)
{
	pid_t target, opener;
	int status;

	if (geteuid() != 0)
		SKIP(return, "needs root to create two unprivileged uids");
	target = fork();
	ASSERT_LE(0, target);
	if (target == 0) {
		if (setresuid(65001, 65001, 65001))
			_exit(2);
		pause();
		_exit(0);
	}
	opener = fork();
	ASSERT_LE(0, opener);
	if (opener == 0) {
		usleep(100 * 1000);	/* let the target drop its uid */
		if (setresuid(65002, 65002, 65002))
			_exit(2);
		_exit(sys_vperfctr_open(target, VPERFCTR_OPEN_CREAT) == -1 &&
		      errno == EPERM ? 0 : 1);
	}
	ASSERT_EQ(opener, waitpid(opener, &status, 0));
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* With INHERIT a child counts and its sums reach the parent's children sums. */
TEST_F(vperfctr, inherit_merges_children)
{
	struct vperfctr_control c;
	struct vperfctr_sums s;
	int status;
	pid_t pid;

	tsc_control(&c);
	c.flags = VPERFCTR_CONTROL_INHERIT;
	ASSERT_EQ(0, sys_vperfctr_control(self->fd, &c, sizeof(c), 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = sys_vperfctr_open(0, 0);	/* the inherited one */

		spin_ns(60 * MS);
		_exit(fd >= 0 ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, sys_vperfctr_read(self->fd, &s, sizeof(s), 0));
	TH_LOG("children counted %llu ns",
	       (unsigned long long)tsc_to_ns(s.children.tsc));
	EXPECT_GT(tsc_to_ns(s.children.tsc), 30 * MS);
}

/* Without INHERIT the children sums stay zero. */
TEST_F(vperfctr, no_inherit_no_children_sums)
{
	struct vperfctr_sums s;
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		spin_ns(20 * MS);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, sys_vperfctr_read(self->fd, &s, sizeof(s), 0));
	EXPECT_EQ(0, s.children.tsc);
}

TEST_HARNESS_MAIN
