// SPDX-License-Identifier: GPL-2.0
/*
 * Privilege boundaries of the virtual counters: what an exec of a setuid
 * program does to counters set up by an unprivileged monitor, the
 * perf_event_paranoid levels, kernel threads, and what the state page's
 * mapping allows (never executable, never copied into a fork child).
 *
 * Run as root: each test drops to an unprivileged uid (65534) in a child
 * where the point is what an unprivileged user can do.  Tests that need
 * what the guest lacks (a tmpfs for the setuid helper, a PMU) skip and say
 * why.
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "kselftest_harness.h"
#include "perfctr_syscalls.h"

#ifndef __NR_vperfctr_open
#error "__NR_vperfctr_open missing: build against the perfctr kernel's headers"
#endif

#define NOBODY		65534
#define PARANOID	"/proc/sys/kernel/perf_event_paranoid"

static struct perfctr_info info;

static void tsc_control(struct vperfctr_control *c)
{
	memset(c, 0, sizeof(*c));
	c->cpu_control.tsc_on = 1;
}

static int drop_privileges(void)
{
	if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
		return -1;
	/* A uid change clears "dumpable"; an ordinary user's process has it. */
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

static int read_paranoid(void)
{
	FILE *f = fopen(PARANOID, "r");
	int v = -100;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -100;
		fclose(f);
	}
	return v;
}

static int write_paranoid(int v)
{
	FILE *f = fopen(PARANOID, "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%d\n", v) > 0;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

/*
 * Run fn in a child as uid NOBODY; the child's exit status is fn's return
 * value (an errno, or 0), 255 if privileges could not be dropped.
 */
static int as_nobody(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (drop_privileges())
			_exit(255);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* The setuid helper: this very binary, copied to a tmpfs, mode 04755. */
#define HELPER_ARG	"--setuid-helper"

static int setuid_helper(void)
{
	/* Report what we run as, then spin until killed. */
	char c = geteuid() == 0 ? 'R' : 'U';

	if (write(1, &c, 1) != 1)
		return 1;
	for (;;)
		pause();
	return 0;
}

FIXTURE(suid)
{
	char dir[64];
	char helper[96];
	bool mounted;
};

FIXTURE_SETUP(suid)
{
	char buf[65536];
	ssize_t n;
	int in, out;

	self->mounted = false;
	if (geteuid() != 0)
		SKIP(return, "needs root to make a setuid-root helper");
	strcpy(self->dir, "/tmp/perfctr-suid-XXXXXX");
	if (!mkdtemp(self->dir))
		SKIP(return, "no writable /tmp: %m");
	if (mount("perfctr", self->dir, "tmpfs", 0, "mode=0755"))
		SKIP(return, "cannot mount a tmpfs for the helper: %m");
	self->mounted = true;
	snprintf(self->helper, sizeof(self->helper), "%s/helper", self->dir);
	in = open("/proc/self/exe", O_RDONLY);
	ASSERT_LE(0, in) TH_LOG("%m");
	out = open(self->helper, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ASSERT_LE(0, out) TH_LOG("%m");
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ASSERT_EQ(n, write(out, buf, n));
	close(in);
	close(out);
	ASSERT_EQ(0, chown(self->helper, 0, 0)) TH_LOG("%m");
	ASSERT_EQ(0, chmod(self->helper, 04755)) TH_LOG("%m");
}

FIXTURE_TEARDOWN(suid)
{
	if (self->mounted) {
		umount2(self->dir, MNT_DETACH);
		rmdir(self->dir);
	}
}

struct suid_case {
	const char *helper;
	/* results, as errno values or flags, reported through a pipe */
	int status_detached;	/* the old fd's status after the exec */
	int control_errno;	/* a new control through the old fd */
	int reopen_errno;	/* a fresh vperfctr_open() of the target */
	int saw_root;		/* the target did run as euid 0 */
};

/*
 * As uid NOBODY: fork a target, put counters with a signal and
 * inheritance on it from outside, let it exec the setuid-root helper,
 * then see what the old fd can still do.
 */
static int suid_monitor(void *arg)
{
	struct suid_case *sc = arg;
	struct vperfctr_control c;
	struct vperfctr_sums s;
	int go[2], out[2], fd, report[4];
	char ch = 0;
	pid_t t;

	if (pipe(go) || pipe(out))
		return 1;
	t = fork();
	if (t == 0) {
		dup2(out[1], 1);
		if (read(go[0], &ch, 1) != 1)
			_exit(1);
		execl(sc->helper, sc->helper, HELPER_ARG, NULL);
		_exit(2);
	}
	fd = sys_vperfctr_open(t, VPERFCTR_OPEN_CREAT);
	if (fd < 0)
		return 3;
	tsc_control(&c);
	c.flags = VPERFCTR_CONTROL_INHERIT;
	c.si_signo = SIGUSR1;
	if (sys_vperfctr_control(fd, &c, sizeof(c), 0))
		return 4;
	if (write(go[1], "x", 1) != 1 || read(out[0], &ch, 1) != 1)
		return 5;
	report[3] = ch == 'R';
	report[0] = 0;
	if (!sys_vperfctr_read(fd, &s, sizeof(s), 0))
		report[0] = !!(s.status & VPERFCTR_STATUS_DETACHED);
	report[1] = sys_vperfctr_control(fd, &c, sizeof(c), 0) ? errno : 0;
	fd = sys_vperfctr_open(t, 0);
	report[2] = fd < 0 ? errno : 0;
	kill(t, SIGKILL);
	waitpid(t, NULL, 0);
	/* sc is a shared mapping: the parent sees these. */
	sc->status_detached = report[0];
	sc->control_errno = report[1];
	sc->reopen_errno = report[2];
	sc->saw_root = report[3];
	return 0;
}

/*
 * An exec of a setuid program detaches counters an unprivileged monitor
 * put on the thread before (as perf_event_exit_task() does for perf):
 * the old fd sees DETACHED, cannot load a control, and a fresh open is
 * refused.  The review's D5 measured the opposite on the old code.
 */
TEST_F(suid, setuid_exec_detaches)
{
	struct suid_case *sc;

	sc = mmap(NULL, sizeof(*sc), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sc);
	memset(sc, 0, sizeof(*sc));
	sc->helper = self->helper;
	ASSERT_EQ(0, as_nobody(suid_monitor, sc));
	if (!sc->saw_root)
		SKIP(return, "the helper did not run setuid root (nosuid /tmp?)");
	EXPECT_EQ(1, sc->status_detached);
	EXPECT_EQ(ESRCH, sc->control_errno);
	EXPECT_EQ(EPERM, sc->reopen_errno);
	munmap(sc, sizeof(*sc));
}

struct paranoid_case {
	int level;
	int open_errno;		/* vperfctr_open(0, CREAT) */
	int pmc_errno;		/* a control using one hardware counter */
};

static int paranoid_try(void *arg)
{
	struct paranoid_case *pc = arg;
	struct vperfctr_control c;
	int fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);

	pc->open_errno = fd < 0 ? errno : 0;
	pc->pmc_errno = -1;
	if (fd < 0 || !info.nr_counters)
		return 0;
	tsc_control(&c);
	c.cpu_control.nractrs = 1;
#if defined(__powerpc64__)
	c.cpu_control.pmc_map[0] = 4;		/* PMC5: instructions */
#else
	c.cpu_control.evntsel[0] = 0xc0 | (1 << 16);	/* user instructions */
#endif
	pc->pmc_errno = sys_vperfctr_control(fd, &c, sizeof(c), 0) ? errno : 0;
	return 0;
}

/*
 * perf_event_paranoid, as perf applies it: above 2 (Debian's "no
 * unprivileged perf at all") an unprivileged open is EACCES; a control
 * using hardware counters takes the PMU of every CPU exclusively, so it
 * needs CAP_PERFMON at every level, -1 included (review G3): no
 * unprivileged user can lock root's perf, KVM or the NMI watchdog out of
 * the PMU.
 */
TEST(paranoid_levels)
{
	static const int levels[] = { 3, 2, 1, 0, -1 };
	struct paranoid_case *pc;
	int saved = read_paranoid();
	unsigned int i;

	if (geteuid() != 0 || saved == -100)
		SKIP(return, "needs root and %s", PARANOID);
	pc = mmap(NULL, sizeof(*pc), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pc);
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		if (write_paranoid(levels[i])) {
			TH_LOG("level %d not accepted by this kernel: %m", levels[i]);
			continue;
		}
		memset(pc, 0, sizeof(*pc));
		pc->level = levels[i];
		ASSERT_EQ(0, as_nobody(paranoid_try, pc));
		TH_LOG("paranoid %d: open %s, hardware-counter control %s",
		       levels[i], pc->open_errno ? strerror(pc->open_errno) : "ok",
		       pc->pmc_errno < 0 ? (pc->open_errno ? "not tried (open refused)" :
					    "not tried (no counters)") :
		       pc->pmc_errno ? strerror(pc->pmc_errno) : "ok");
		if (levels[i] > 2) {
			EXPECT_EQ(EACCES, pc->open_errno);
			continue;
		}
		EXPECT_EQ(0, pc->open_errno);
		/* G3: exclusive use of the PMU needs CAP_PERFMON at every level. */
		if (pc->pmc_errno >= 0)
			EXPECT_EQ(EACCES, pc->pmc_errno);
	}
	write_paranoid(saved);
	munmap(pc, sizeof(*pc));
	if (!info.nr_counters)
		TH_LOG("no hardware counters here: the PMU lockout rule is checked where there are (ppc64le)");
}

/*
 * Run fn in a child as uid NOBODY that keeps CAP_PERFMON and nothing
 * else; its exit status as as_nobody()'s.
 */
static int as_perfmon_only(int (*fn)(void *), void *arg)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2] = {};
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		d[CAP_TO_INDEX(CAP_PERFMON)].effective = CAP_TO_MASK(CAP_PERFMON);
		d[CAP_TO_INDEX(CAP_PERFMON)].permitted = CAP_TO_MASK(CAP_PERFMON);
		if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || drop_privileges() ||
		    syscall(SYS_capset, &h, d))
			_exit(255);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * Debian's level 3 refuses perf_event_open() without CAP_SYS_ADMIN,
 * CAP_PERFMON included (kernel/events/core.c, perf_paranoid_any()): so
 * does perfctr, or a CAP_PERFMON-only service could take the whole PMU
 * where the admin said only root may touch it (the eighth blind pair's
 * core 1).  At level 2 the same process opens, and may load a control
 * using hardware counters.
 */
TEST(paranoid3_perfmon_is_not_enough)
{
	static const int levels[] = { 3, 2 };
	struct paranoid_case *pc;
	int saved = read_paranoid();
	unsigned int i;

	if (geteuid() != 0 || saved == -100)
		SKIP(return, "needs root and %s", PARANOID);
	if (write_paranoid(3)) {
		write_paranoid(saved);
		SKIP(return, "this kernel has no perf_event_paranoid level 3 (Debian's)");
	}
	pc = mmap(NULL, sizeof(*pc), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, pc);
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		ASSERT_EQ(0, write_paranoid(levels[i]));
		memset(pc, 0, sizeof(*pc));
		pc->level = levels[i];
		ASSERT_EQ(0, as_perfmon_only(paranoid_try, pc))
			TH_LOG("could not become uid %d with CAP_PERFMON only", NOBODY);
		TH_LOG("paranoid %d, CAP_PERFMON only: open %s, hardware-counter control %s",
		       levels[i], pc->open_errno ? strerror(pc->open_errno) : "ok",
		       pc->pmc_errno < 0 ? "not tried" :
		       pc->pmc_errno ? strerror(pc->pmc_errno) : "ok");
		if (levels[i] > 2) {
			EXPECT_EQ(EACCES, pc->open_errno);
			continue;
		}
		EXPECT_EQ(0, pc->open_errno);
		if (pc->pmc_errno >= 0)
			EXPECT_EQ(0, pc->pmc_errno);
	}
	write_paranoid(saved);
	munmap(pc, sizeof(*pc));
}

/*
 * The right to load a control into another thread, or to iresume it, is
 * checked at every call, not only at the open: a descriptor that
 * reaches a process without ptrace rights over the target (inherited
 * here; SCM_RIGHTS alike) still reads, but loads and re-arms nothing
 * (EPERM), the overflow signal included (the eighth blind pair's core
 * RISK-1, DESIGN-2; the ninth's core RISK 2).
 */
TEST(control_needs_ptrace_rights_now)
{
	struct vperfctr_control c;
	struct vperfctr_sums s;
	int fd, status, go[2];
	pid_t t, other;
	char ch;

	if (geteuid() != 0)
		SKIP(return, "needs root to run the target and the other user");
	ASSERT_EQ(0, pipe(go));
	t = fork();
	ASSERT_LE(0, t);
	if (t == 0) {
		close(go[1]);
		if (drop_privileges())
			_exit(1);
		_exit(read(go[0], &ch, 1) == 0 ? 0 : 2);	/* until EOF */
	}
	close(go[0]);
	fd = sys_vperfctr_open(t, VPERFCTR_OPEN_CREAT);
	ASSERT_LE(0, fd) TH_LOG("%m");
	tsc_control(&c);
	ASSERT_EQ(0, sys_vperfctr_control(fd, &c, sizeof(c), 0)) TH_LOG("%m");
	other = fork();
	ASSERT_LE(0, other);
	if (other == 0) {
		/* Another user, without rights over the target. */
		if (setresgid(NOBODY - 1, NOBODY - 1, NOBODY - 1) ||
		    setresuid(NOBODY - 1, NOBODY - 1, NOBODY - 1))
			_exit(10);
		if (sys_vperfctr_read(fd, &s, sizeof(s), 0))
			_exit(11);
		c.si_signo = SIGUSR1;
		if (!sys_vperfctr_control(fd, &c, sizeof(c), 0))
			_exit(12);
		if (errno != EPERM)
			_exit(13);
		/* The authority is asked before the state (not suspended: EINVAL). */
		if (!sys_vperfctr_iresume(fd) || errno != EPERM)
			_exit(14);
		_exit(0);
	}
	ASSERT_EQ(other, waitpid(other, &status, 0));
	close(go[1]);
	waitpid(t, NULL, 0);
	close(fd);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("the other user: %s", WEXITSTATUS(status) == 12 ?
		       "loaded a control into a thread it may not ptrace" :
		       WEXITSTATUS(status) == 13 ? "refused, but not with EPERM" :
		       WEXITSTATUS(status) == 14 ? "its iresume was not refused with EPERM" :
		       WEXITSTATUS(status) == 11 ? "could not read through the descriptor" :
		       "could not become another user");
}

/* Kernel threads never run user code: no counters for them. */
TEST(kernel_thread_refused)
{
	int fd;

	if (geteuid() != 0)
		SKIP(return, "needs root (ptrace rights over kthreadd)");
	fd = sys_vperfctr_open(2, VPERFCTR_OPEN_CREAT);	/* kthreadd */
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EPERM, errno);
	if (fd >= 0)
		close(fd);
}

FIXTURE(page)
{
	int fd;
};

FIXTURE_SETUP(page)
{
	struct vperfctr_control c;

	self->fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
	ASSERT_LE(0, self->fd) TH_LOG("%m");
	tsc_control(&c);
	ASSERT_EQ(0, sys_vperfctr_control(self->fd, &c, sizeof(c), 0));
}

FIXTURE_TEARDOWN(page)
{
	if (self->fd >= 0) {
		sys_vperfctr_unlink(self->fd);
		close(self->fd);
	}
}

/* The state page is data: PROT_EXEC is refused, and so is a later mprotect. */
TEST_F(page, never_executable)
{
	long psz = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, psz, PROT_READ | PROT_EXEC, MAP_SHARED, self->fd, 0);

	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, psz, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("%m");
	EXPECT_EQ(-1, mprotect(p, psz, PROT_READ | PROT_EXEC));
	munmap(p, psz);
}

/*
 * A fork child does not inherit the mapping (VM_DONTCOPY, as perf's user
 * page): it would read its parent's sums with its own start values.
 */
TEST_F(page, not_copied_into_fork_child)
{
	long psz = sysconf(_SC_PAGESIZE);
	const volatile struct vperfctr_state *st;
	int status;
	pid_t pid;

	st = mmap(NULL, psz, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, st) TH_LOG("%m");
#ifdef VPERFCTR_CAP_USER_TSC	/* absent from headers before the review's fixes */
	EXPECT_EQ(sizeof(struct vperfctr_state), st->size);
	EXPECT_TRUE(st->caps & VPERFCTR_CAP_USER_TSC);
#endif
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		(void)st->seq;	/* must fault */
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		TH_LOG("child status %#x: the mapping was copied", status);
	munmap((void *)st, psz);
}

/* iresume and unlink take flags, and unknown ones are EINVAL. */
TEST_F(page, flags_checked)
{
	EXPECT_EQ(-1, sys_vperfctr_iresume_flags(self->fd, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, sys_vperfctr_unlink_flags(self->fd, 1));
	EXPECT_EQ(EINVAL, errno);
	/* Still attached: the refused unlink did nothing. */
	EXPECT_EQ(0, sys_vperfctr_unlink(self->fd));
}

/* perfctr_info never echoes the caller's bytes after the version's NUL. */
TEST(info_no_echo)
{
	struct perfctr_info i;
	size_t n;

	memset(&i, 0, sizeof(i));
	memset(i.driver_version, 'A', sizeof(i.driver_version));
	i.__reserved = 0;
	i.cpus = i.forbidden_cpus = 0;
	/* driver_version is out-only but copied in: the kernel must pad. */
	ASSERT_EQ(0, sys_perfctr_info(&i, sizeof(i), 0)) TH_LOG("%m");
	n = strnlen(i.driver_version, sizeof(i.driver_version));
	ASSERT_LT(n, sizeof(i.driver_version));
	for (; n < sizeof(i.driver_version); n++)
		EXPECT_EQ(0, i.driver_version[n]);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], HELPER_ARG))
		return setuid_helper();
	sys_perfctr_info(&info, sizeof(info), 0);
	return test_harness_run(argc, argv);
}
