// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation failures injected into every perfctr call, the way syzkaller
 * does it: /proc/thread-self/fail-nth makes the Nth allocation this thread
 * attempts fail (failslab and fail_page_alloc, GFP_KERNEL included).  For
 * each call N runs 1, 2, 3, ... until the call completes without reaching
 * its Nth allocation; every injected failure must end in the call's
 * ordinary result (the failure was absorbed) or in ENOMEM, and the thread
 * must work as before afterwards: a fresh open, control and read succeed
 * and no stale attachment is left behind.
 *
 * Needs CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC and
 * CONFIG_FAULT_INJECTION_DEBUG_FS (the debug kernel has them); elsewhere
 * it skips and says which is missing.  Leaks are judged by kmemleak after
 * the run and splats by the kernel log check: an injected page-allocation
 * failure prints the allocator's own warning, so the test brackets its
 * injections with markers in the kernel log, and the log check excuses
 * those warnings (and nothing else) between them.
 *
 * An armed countdown outlives the call: what the kernel allocates on the
 * way back to user space counts too.  There rseq's update of the
 * thread's rseq area, when a fork left that page copy-on-write, takes a
 * page, and a failure there is rseq's force_sigsegv(), not the call's
 * result (1 run in 6 under load died so).  The test thread therefore
 * unregisters glibc's rseq area first: nothing it tests uses it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "perfctr_syscalls.h"

#ifndef __NR_vperfctr_open
#error "__NR_vperfctr_open missing: build against the perfctr kernel's headers"
#endif

/* Kept in step with pytools/collect.py, which reads them in the log. */
#define MARK_BEGIN	"perfctr-fault-test: injecting allocation failures"
#define MARK_END	"perfctr-fault-test: injections done"

/* No perfctr call makes this many allocations: a bound, not a goal. */
#define MAX_POINTS	400

static const char *const knobs[][2] = {
	/* count GFP_KERNEL allocations too, and order-0 pages, quietly */
	{ "/sys/kernel/debug/failslab/ignore-gfp-wait", "N" },
	{ "/sys/kernel/debug/failslab/verbose", "0" },
	{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N" },
	{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", "N" },
	{ "/sys/kernel/debug/fail_page_alloc/min-order", "0" },
	{ "/sys/kernel/debug/fail_page_alloc/verbose", "0" },
};

/* The thread pointer __rseq_offset is relative to (selftests/rseq's). */
static void *thread_pointer(void)
{
#if defined(__powerpc64__)
	register void *tp __asm__("r13");

	__asm__ ("" : "=r" (tp));
	return tp;
#else
	return __builtin_thread_pointer();
#endif
}

/* glibc registered this thread's rseq area (2.35 and later): take it back. */
static int rseq_off(void)
{
	if (!__rseq_size)
		return 0;
	return syscall(__NR_rseq, (char *)thread_pointer() + __rseq_offset,
		       __rseq_size < 32 ? 32 : __rseq_size, RSEQ_FLAG_UNREGISTER,
		       RSEQ_SIG);
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

static void kmsg(const char *msg)
{
	char line[128];

	snprintf(line, sizeof(line), "<4>%s\n", msg);
	write_file("/dev/kmsg", line);
}

/* What one operation needs between its setup, run and cleanup. */
struct ctx {
	int fd;			/* a vperfctr fd of this thread, or -1 */
	int res;		/* what run() returned */
	void *map;
	pid_t target;		/* a stopped child for the remote open */
	long page;
};

struct op {
	const char *name;
	int (*setup)(struct ctx *c);	/* 0 or -1; never injected */
	int (*run)(struct ctx *c);	/* 0 on success, else -1 and errno */
	void (*cleanup)(struct ctx *c);
};

static void tsc_control(struct vperfctr_control *c, unsigned int flags)
{
	memset(c, 0, sizeof(*c));
	c->cpu_control.tsc_on = 1;
	c->flags = flags;
}

static int open_counting(struct ctx *c, unsigned int flags)
{
	struct vperfctr_control ctl;

	c->fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
	if (c->fd < 0)
		return -1;
	tsc_control(&ctl, flags);
	return sys_vperfctr_control(c->fd, &ctl, sizeof(ctl), 0);
}

static int setup_none(struct ctx *c)
{
	return 0;
}

static int setup_open(struct ctx *c)
{
	c->fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
	return c->fd < 0 ? -1 : 0;
}

static int setup_counting(struct ctx *c)
{
	return open_counting(c, 0);
}

static int setup_inheriting(struct ctx *c)
{
	return open_counting(c, VPERFCTR_CONTROL_INHERIT);
}

static int setup_target(struct ctx *c)
{
	c->target = fork();
	if (c->target < 0)
		return -1;
	if (c->target == 0) {
		for (;;)
			pause();
	}
	return 0;
}

static void cleanup_fd(struct ctx *c)
{
	if (c->map && c->map != MAP_FAILED)
		munmap(c->map, c->page);
	c->map = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static void cleanup_target(struct ctx *c)
{
	cleanup_fd(c);
	if (c->target > 0) {
		kill(c->target, SIGKILL);
		waitpid(c->target, NULL, 0);
	}
	c->target = 0;
}

/* After the last close the thread has no counters: nothing left behind. */
static int attached(void)
{
	int fd = sys_vperfctr_open(0, 0);

	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return errno == ENOENT ? 0 : -1;
}

static int run_info(struct ctx *c)
{
	struct perfctr_info info;

	memset(&info, 0, sizeof(info));		/* no CPU mask buffers */
	return sys_perfctr_info(&info, sizeof(info), 0);
}

static int run_open(struct ctx *c)
{
	c->fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
	return c->fd < 0 ? -1 : 0;
}

static int run_open_remote(struct ctx *c)
{
	c->fd = sys_vperfctr_open(c->target, VPERFCTR_OPEN_CREAT);
	return c->fd < 0 ? -1 : 0;
}

static int run_control(struct ctx *c)
{
	struct vperfctr_control ctl;

	tsc_control(&ctl, 0);
	return sys_vperfctr_control(c->fd, &ctl, sizeof(ctl), 0);
}

static int run_read(struct ctx *c)
{
	struct vperfctr_sums s;

	return sys_vperfctr_read(c->fd, &s, sizeof(s), 0);
}

static int run_iresume(struct ctx *c)
{
	return sys_vperfctr_iresume(c->fd);
}

static int run_unlink(struct ctx *c)
{
	return sys_vperfctr_unlink(c->fd);
}

static int run_mmap(struct ctx *c)
{
	c->map = mmap(NULL, c->page, PROT_READ, MAP_SHARED, c->fd, 0);
	return c->map == MAP_FAILED ? -1 : 0;
}

static int run_fork(struct ctx *c)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* The inherited counters must be this child's own. */
		struct vperfctr_sums s;
		int fd = sys_vperfctr_open(0, 0);

		_exit(fd >= 0 && !sys_vperfctr_read(fd, &s, sizeof(s), 0) ?
		      0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		errno = EPROTO;		/* not an errno the kernel would give */
		return -1;
	}
	return 0;
}

static int run_close(struct ctx *c)
{
	int err = close(c->fd);

	c->fd = -1;
	return err;
}

static const struct op ops[] = {
	{ "perfctr_info", setup_none, run_info, cleanup_fd },
	{ "vperfctr_open(self)", setup_none, run_open, cleanup_fd },
	{ "vperfctr_open(other process)", setup_target, run_open_remote,
	  cleanup_target },
	{ "vperfctr_control", setup_open, run_control, cleanup_fd },
	{ "vperfctr_control(reload)", setup_counting, run_control, cleanup_fd },
	{ "vperfctr_read", setup_counting, run_read, cleanup_fd },
	{ "vperfctr_iresume", setup_counting, run_iresume, cleanup_fd },
	{ "vperfctr_unlink", setup_counting, run_unlink, cleanup_fd },
	{ "mmap(state page)", setup_counting, run_mmap, cleanup_fd },
	{ "fork(inheriting)", setup_inheriting, run_fork, cleanup_fd },
	{ "close(last fd)", setup_counting, run_close, cleanup_fd },
};

FIXTURE(fault)
{
	int nth;		/* /proc/thread-self/fail-nth */
	struct ctx c;
};

FIXTURE_SETUP(fault)
{
	struct stat st;
	size_t i;

	self->nth = -1;
	memset(&self->c, 0, sizeof(self->c));
	self->c.fd = -1;
	self->c.page = sysconf(_SC_PAGESIZE);
	if (geteuid() != 0)
		SKIP(return, "needs root for the fault-injection knobs");
	self->nth = open("/proc/thread-self/fail-nth", O_RDWR);
	if (self->nth < 0)
		SKIP(return, "no /proc/thread-self/fail-nth: a kernel without "
		     "CONFIG_FAULT_INJECTION (the debug kernel has it)");
	if (stat("/sys/kernel/debug/failslab", &st))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		if (write_file(knobs[i][0], knobs[i][1]))
			SKIP(return, "cannot set %s (%m): a kernel without "
			     "CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC or "
			     "CONFIG_FAULT_INJECTION_DEBUG_FS", knobs[i][0]);
	ASSERT_EQ(0, rseq_off()) TH_LOG("rseq unregistration: %m");
	/* The thread must work before anything is injected. */
	ASSERT_EQ(0, open_counting(&self->c, 0)) TH_LOG("%m");
	cleanup_fd(&self->c);
}

FIXTURE_TEARDOWN(fault)
{
	if (self->nth >= 0)
		close(self->nth);
}

static void set_nth(int fd, unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	if (pwrite(fd, buf, len, 0) != len)
		abort();
}

/* What is left of the countdown: 0 once the failure was injected. */
static unsigned int get_nth(int fd)
{
	char buf[16] = "";

	if (pread(fd, buf, sizeof(buf) - 1, 0) <= 0)
		abort();
	return strtoul(buf, NULL, 10);
}

TEST_F(fault, every_allocation_of_every_call)
{
	unsigned int total = 0;
	size_t i;

	kmsg(MARK_BEGIN);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		const struct op *op = &ops[i];
		struct ctx *c = &self->c;
		unsigned int n, points = 0, enomem = 0, absorbed = 0;
		int want, want_errno, got, got_errno, left;

		/* The call's ordinary result, nothing injected. */
		ASSERT_EQ(0, op->setup(c)) TH_LOG("%s: setup: %m", op->name);
		want = op->run(c);
		want_errno = want ? errno : 0;
		op->cleanup(c);
		ASSERT_EQ(0, attached()) TH_LOG("%s: %m", op->name);

		for (n = 1; n <= MAX_POINTS; n++) {
			ASSERT_EQ(0, op->setup(c))
				TH_LOG("%s: setup after %u injections: %m",
				       op->name, n - 1);
			set_nth(self->nth, n);
			got = op->run(c);
			got_errno = got ? errno : 0;
			left = get_nth(self->nth);
			set_nth(self->nth, 0);
			op->cleanup(c);
			EXPECT_EQ(0, attached())
				TH_LOG("%s: allocation %u failed: counters "
				       "left attached (%m)", op->name, n);
			if (left) {
				/* Done before its nth allocation: no failure. */
				EXPECT_EQ(want, got);
				EXPECT_EQ(want_errno, got_errno)
					TH_LOG("%s: %s uninjected", op->name,
					       strerror(got_errno));
				break;
			}
			points++;
			if (got == want && got_errno == want_errno) {
				absorbed++;
			} else {
				EXPECT_EQ(-1, got);
				EXPECT_EQ(ENOMEM, got_errno)
					TH_LOG("%s: allocation %u failed: got "
					       "%d (%s), want ENOMEM", op->name,
					       n, got, strerror(got_errno));
				enomem++;
			}
			/* And the thread works as before: no stale state. */
			ASSERT_EQ(0, open_counting(c, 0))
				TH_LOG("%s: after allocation %u failed: %m",
				       op->name, n);
			EXPECT_EQ(0, run_read(c)) TH_LOG("%m");
			cleanup_fd(c);
		}
		EXPECT_GT(MAX_POINTS, points) TH_LOG("%s never finished", op->name);
		ksft_print_msg("%s: %u allocation points failed in turn: "
			       "%u gave ENOMEM, %u were absorbed\n",
			       op->name, points, enomem, absorbed);
		total += points;
	}
	kmsg(MARK_END);
	ksft_print_msg("%u injected failures in all\n", total);
	/* The calls that create state allocate: a kernel that injects must
	 * have failed some of them, or this test saw nothing. */
	EXPECT_LT(0, total);
}

TEST_HARNESS_MAIN
