// SPDX-License-Identifier: GPL-2.0
/*
 * Object lifetimes of the virtual counters against every concurrent
 * actor: fork while a sibling unlinks or closes the last fd, a remote
 * attach racing the target's exit, and CPU hotplug while counting.
 *
 * On the default kernel these check what user space can see (errno
 * values, DETACHED status, memory held, counts continuing); on the debug
 * kernel (KASAN, lockdep, kmemleak) the same runs are what lets those
 * tools see a use-after-free or a leak.  The number of racing iterations
 * is PERFCTR_RACE_ITERS (default 2000; the debug run sets fewer).  The
 * inheritance chain is vperfctr_chain_test, a program of its own (it
 * needs its own time).
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

/* An empty fixture, for TEST_F_TIMEOUT: these run longer than 30 s. */
FIXTURE(lt) {};
FIXTURE_SETUP(lt) {}
FIXTURE_TEARDOWN(lt) {}

#ifndef __NR_vperfctr_open
#error "__NR_vperfctr_open missing: build against the perfctr kernel's headers"
#endif

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 0) : dflt;
}

static void tsc_control(struct vperfctr_control *c, unsigned int flags)
{
	memset(c, 0, sizeof(*c));
	c->flags = flags;
	c->cpu_control.tsc_on = 1;
}

static int open_counting(pid_t tid, unsigned int flags)
{
	struct vperfctr_control c;
	int fd = sys_vperfctr_open(tid, VPERFCTR_OPEN_CREAT);

	if (fd < 0)
		return -1;
	tsc_control(&c, flags);
	if (sys_vperfctr_control(fd, &c, sizeof(c), 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

struct churn {
	volatile int stop;
	long iterations;
	int bad_errno;
};

/* A sibling thread: attach inheriting counters, then unlink or close. */
static void *churn_main(void *arg)
{
	struct churn *ch = arg;
	long i;

	for (i = 0; !ch->stop; i++) {
		int fd = open_counting(0, VPERFCTR_CONTROL_INHERIT);

		if (fd < 0) {
			/* Another thread's counters are per thread: EEXIST is impossible. */
			ch->bad_errno = errno;
			break;
		}
		if (i & 1)
			sys_vperfctr_unlink(fd);
		close(fd);	/* the last fd: detaches if unlink did not */
	}
	ch->iterations = i;
	return NULL;
}

/*
 * The forking thread carries inheriting counters that another thread
 * unlinks through the shared fd at the same time: fork must hold its
 * reference before it sleeps (allocating the child's counters, taking the
 * parent's mutex), or the unlink frees them under it.
 */
struct unlinker {
	pthread_mutex_t lock;	/* fd: never unlink a number main reused */
	volatile int stop;
	int fd;
	long unlinks;
};

static void *unlinker_main(void *arg)
{
	struct unlinker *u = arg;

	while (!u->stop) {
		pthread_mutex_lock(&u->lock);
		if (u->fd >= 0 && !sys_vperfctr_unlink(u->fd))
			u->unlinks++;
		pthread_mutex_unlock(&u->lock);
		sched_yield();
	}
	return NULL;
}

TEST_F_TIMEOUT(lt, fork_vs_unlink, 600)
{
	long n = env_long("PERFCTR_RACE_ITERS", 2000);
	struct unlinker u = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };
	pthread_t th;
	long i, forks = 0;
	int status;

	ASSERT_EQ(0, pthread_create(&th, NULL, unlinker_main, &u));
	for (i = 0; i < n; i++) {
		int fd = open_counting(0, VPERFCTR_CONTROL_INHERIT);
		pid_t pid;

		ASSERT_LE(0, fd) TH_LOG("iteration %ld: %m", i);
		pthread_mutex_lock(&u.lock);
		u.fd = fd;
		pthread_mutex_unlock(&u.lock);
		pid = fork();	/* races the unlinker detaching our counters */
		ASSERT_LE(0, pid) TH_LOG("%m");
		if (pid == 0)
			_exit(0);
		forks++;
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		pthread_mutex_lock(&u.lock);
		u.fd = -1;
		pthread_mutex_unlock(&u.lock);
		sys_vperfctr_unlink(fd);	/* ESRCH if the unlinker won */
		close(fd);
	}
	u.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%ld forks, %ld of them raced by a successful unlink", forks,
	       u.unlinks);
}

/* Sibling threads attach and detach their own inheriting counters while
 * the main thread forks: fork reads only its own thread's counters. */
TEST_F_TIMEOUT(lt, fork_vs_sibling_last_close, 600)
{
	long n = env_long("PERFCTR_RACE_ITERS", 2000) / 2;
	struct churn ch = { 0 };
	pthread_t th;
	long i;
	int fd;

	fd = open_counting(0, VPERFCTR_CONTROL_INHERIT);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pthread_create(&th, NULL, churn_main, &ch));
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0)
			_exit(0);
		ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	}
	ch.stop = 1;
	pthread_join(th, NULL);
	EXPECT_EQ(0, ch.bad_errno) TH_LOG("%s", strerror(ch.bad_errno));
	close(fd);
	TH_LOG("%ld forks against %ld attach/detach cycles", n, ch.iterations);
}

/*
 * A monitor attaches to a thread that is exiting.  Whatever the
 * interleaving, once the target is reaped any fd the monitor got must
 * show DETACHED and refuse a control (ESRCH): an attach after the exit
 * hook ran would leave the counters owned by a reaped task.
 */
TEST_F_TIMEOUT(lt, attach_vs_exit, 600)
{
	long n = env_long("PERFCTR_RACE_ITERS", 2000);
	long i, got = 0, late = 0;

	for (i = 0; i < n; i++) {
		struct vperfctr_control c;
		struct vperfctr_sums s;
		pid_t pid = fork();
		int fd;

		ASSERT_LE(0, pid);
		if (pid == 0)
			_exit(0);
		/* Race the child's exit; it is not reaped yet, so the tid stays. */
		fd = sys_vperfctr_open(pid, VPERFCTR_OPEN_CREAT);
		ASSERT_EQ(pid, waitpid(pid, NULL, 0));
		if (fd < 0) {
			ASSERT_EQ(ESRCH, errno) TH_LOG("open: %m");
			continue;
		}
		got++;
		ASSERT_EQ(0, sys_vperfctr_read(fd, &s, sizeof(s), 0));
		EXPECT_TRUE(s.status & VPERFCTR_STATUS_DETACHED)
			TH_LOG("iteration %ld: counters of a reaped thread are not detached", i);
		tsc_control(&c, 0);
		if (!sys_vperfctr_control(fd, &c, sizeof(c), 0))
			late++;
		else
			EXPECT_EQ(ESRCH, errno);
		close(fd);
	}
	EXPECT_EQ(0, late) TH_LOG("%ld controls accepted for reaped threads", late);
	TH_LOG("%ld of %ld opens won the race with exit", got, n);
}

static int set_online(int cpu, int on)
{
	char path[64];
	int fd, ok;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, on ? "1" : "0", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

struct spinner {
	volatile int stop;
	int fd;
	uint64_t tsc_mid, tsc_end;
};

static void *spinner_main(void *arg)
{
	struct spinner *sp = arg;

	sp->fd = open_counting(0, 0);
	while (!sp->stop)
		;
	return NULL;
}

/*
 * CPU 1 goes offline and comes back while a thread counts: the thread
 * moves, its counters move with it and keep counting afterwards.
 */
TEST(cpu_hotplug_while_counting)
{
	struct spinner sp = { .fd = -1 };
	struct vperfctr_sums a, b;
	pthread_t th;
	cpu_set_t set;
	int i;

	if (geteuid() != 0 || access("/sys/devices/system/cpu/cpu1/online", W_OK))
		SKIP(return, "no CPU 1 that can go offline (CONFIG_HOTPLUG_CPU, root)");
	ASSERT_EQ(0, pthread_create(&th, NULL, spinner_main, &sp));
	while (sp.fd < 0)
		sched_yield();
	/* Pin the spinner to CPU 1 first, then take CPU 1 away under it. */
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	pthread_setaffinity_np(th, sizeof(set), &set);
	usleep(100000);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, set_online(1, 0)) TH_LOG("offline: %m");
		usleep(50000);
		ASSERT_EQ(0, set_online(1, 1)) TH_LOG("online: %m");
		usleep(50000);
	}
	ASSERT_EQ(0, sys_vperfctr_read(sp.fd, &a, sizeof(a), 0));
	usleep(200000);
	ASSERT_EQ(0, sys_vperfctr_read(sp.fd, &b, sizeof(b), 0));
	sp.stop = 1;
	pthread_join(th, NULL);
	EXPECT_GT(b.self.tsc, a.self.tsc) TH_LOG("counting stopped after hotplug");
	EXPECT_FALSE(b.status & VPERFCTR_STATUS_DETACHED);
	close(sp.fd);
}

TEST_HARNESS_MAIN
