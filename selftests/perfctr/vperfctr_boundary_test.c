// SPDX-License-Identifier: GPL-2.0
/*
 * The privilege boundaries the 2026-12-01 core review found open (G1..G9):
 * the overflow signal's si_code and which signals it may be, a pid
 * namespace's init, file-capability exec, the signal across exec and
 * clone3(CLONE_CLEAR_SIGHAND), kernel-mode counts read by an unprivileged
 * target, PR_SET_TSC, io_uring workers, and what a mapping of the state
 * page keeps alive.  docs/design.md's threat model names these tests.
 *
 * Run as root: tests drop to uid 65534 where the point is what an
 * unprivileged user can do.  Tests that need a PMU with an overflow
 * interrupt (ppc64le here) or an x86 TSC skip elsewhere and say why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/io_uring.h>
#include <sys/mount.h>
#include <linux/sched.h>

#include "kselftest_harness.h"
#include "perfctr_syscalls.h"

#ifndef __NR_vperfctr_open
#error "__NR_vperfctr_open missing: build against the perfctr kernel's headers"
#endif

/* The overflow's own si_code (G7); older headers lack it. */
#ifndef VPERFCTR_SI_OVERFLOW
#define VPERFCTR_SI_OVERFLOW	0x81
#endif

#define NOBODY		65534
#define PARANOID	"/proc/sys/kernel/perf_event_paranoid"
#define SUID_DUMPABLE	"/proc/sys/fs/suid_dumpable"
#define PERIOD		100000L
#define LOOP_N		2000000UL	/* about 6 x 10^6 instructions */
#define HELPER_CAPS	"--caps-helper"
#define HELPER_SPIN	"--spin-helper"

static struct perfctr_info info;

static void __attribute__((noinline)) loop(unsigned long n)
{
	while (n--)
		asm volatile("" : "+r"(n));
}

static int read_int(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -100;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -100;
		fclose(f);
	}
	return v;
}

static int write_int(const char *path, int v)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%d\n", v) > 0;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

static int drop_privileges(void)
{
	if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
		return -1;
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

static void tsc_control(struct vperfctr_control *c)
{
	memset(c, 0, sizeof(*c));
	c->cpu_control.tsc_on = 1;
}

static int have_overflow(void)
{
	return info.cpu_type == PERFCTR_CPU_PPC64_BOOK3S &&
	       (info.cpu_features & PERFCTR_FEATURE_PCINT);
}

/* POWER: slot 0 on PMC5 (instructions), user mode, interrupt mode. */
static void overflow_control(struct vperfctr_control *c, int signo)
{
	tsc_control(c);
	c->cpu_control.nrictrs = 1;
	c->cpu_control.pmc_map[0] = 4;
	c->cpu_control.ireset[0] = -PERIOD;
	c->si_signo = signo;
}

static volatile sig_atomic_t ovf_signals;
static volatile int ovf_code, ovf_value;

static void on_overflow(int sig, siginfo_t *si, void *uc)
{
	ovf_signals++;
	ovf_code = si->si_code;
	ovf_value = si->si_value.sival_int;
}

static void catch_usr1(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_overflow;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	ovf_signals = 0;
}

/* A child's end, as text for the log. */
static const char *how(int status, char *buf, size_t n)
{
	if (WIFEXITED(status))
		snprintf(buf, n, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, n, "status %#x", status);
	return buf;
}

/*
 * G7: the overflow signal carries perfctr's own si_code, never SI_KERNEL
 * (which a fault or a kernel kill uses, and which forces SIGKILL and
 * SIGSTOP through a namespace init's protection), and si_value reaches a
 * native handler.
 */
TEST(overflow_si_code_is_perfctrs)
{
	struct vperfctr_control c;
	struct vperfctr_sums s;
	int fd;

	if (!have_overflow())
		SKIP(return, "needs a PMU with an overflow interrupt (ppc64le here)");
	catch_usr1();
	fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
	ASSERT_LE(0, fd) TH_LOG("%m");
	overflow_control(&c, SIGUSR1);
	ASSERT_EQ(0, sys_vperfctr_control(fd, &c, sizeof(c), 0)) TH_LOG("%m");
	loop(LOOP_N);
	if (!ovf_signals)
		sys_vperfctr_read(fd, &s, sizeof(s), 0);	/* a late one */
	ASSERT_EQ(1, ovf_signals);
	EXPECT_NE(SI_KERNEL, ovf_code);
	EXPECT_EQ(VPERFCTR_SI_OVERFLOW, ovf_code);
	EXPECT_EQ(1, ovf_value);
	close(fd);
	signal(SIGUSR1, SIG_DFL);
}

/*
 * G7: SIGKILL and SIGSTOP cannot be caught, so as an overflow signal they
 * are only a way to kill or stop the thread at a chosen instruction
 * count: EINVAL, for any control (checked before the counters are).
 */
TEST(uncatchable_overflow_signal_einval)
{
	static const int bad[] = { SIGKILL, SIGSTOP };
	struct vperfctr_control c;
	unsigned int i;
	int fd;

	fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
	ASSERT_LE(0, fd) TH_LOG("%m");
	for (i = 0; i < 2; i++) {
		tsc_control(&c);
		c.si_signo = bad[i];
		EXPECT_EQ(-1, sys_vperfctr_control(fd, &c, sizeof(c), 0))
			TH_LOG("si_signo %d accepted", bad[i]);
		EXPECT_EQ(EINVAL, errno);
	}
	/* The stop signals a handler can catch stay allowed. */
	tsc_control(&c);
	c.si_signo = SIGTSTP;
	EXPECT_EQ(0, sys_vperfctr_control(fd, &c, sizeof(c), 0)) TH_LOG("%m");
	close(fd);
}

/*
 * The init of a pid namespace ignores signals it has no handler for,
 * SIGKILL and SIGSTOP included, unless the kernel forces them (SI_KERNEL
 * did).  As the overflow's target it must survive its own overflows.
 */
static int pidns_init(void)
{
	struct vperfctr_control c;
	struct vperfctr_sums s;
	int fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);

	if (fd < 0 || getpid() != 1)
		return 10;
	overflow_control(&c, SIGKILL);
	if (!sys_vperfctr_control(fd, &c, sizeof(c), 0)) {
		loop(LOOP_N);		/* the old code: SIGKILL, forced */
		sys_vperfctr_read(fd, &s, sizeof(s), 0);
		return 11;
	}
	if (errno != EINVAL)
		return 12;
	/* A catchable signal with no handler: ignored by an init. */
	overflow_control(&c, SIGUSR2);
	if (sys_vperfctr_control(fd, &c, sizeof(c), 0))
		return 13;
	loop(LOOP_N);
	if (sys_vperfctr_read(fd, &s, sizeof(s), 0))
		return 14;
	return (s.status & VPERFCTR_STATUS_SUSPENDED) ? 0 : 15;
}

TEST(pidns_init_survives_overflow)
{
	char buf[64];
	int status;
	pid_t outer, inner;

	if (!have_overflow())
		SKIP(return, "needs a PMU with an overflow interrupt (ppc64le here)");
	if (geteuid() != 0)
		SKIP(return, "needs root for unshare(CLONE_NEWPID)");
	outer = fork();
	ASSERT_LE(0, outer);
	if (outer == 0) {
		if (unshare(CLONE_NEWPID))
			_exit(20);
		inner = fork();
		if (inner < 0)
			_exit(21);
		if (inner == 0)
			_exit(pidns_init());
		if (waitpid(inner, &status, 0) != inner)
			_exit(22);
		if (WIFSIGNALED(status))
			_exit(100 + WTERMSIG(status));
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 23);
	}
	ASSERT_EQ(outer, waitpid(outer, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 20)
		SKIP(return, "no pid namespaces in this kernel (CONFIG_PID_NS)");
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("the namespace's init: %s", WEXITSTATUS(status) > 100 ?
		       strsignal(WEXITSTATUS(status) - 100) :
		       how(status, buf, sizeof(buf)));
}

/* What the caps helper reports: 'C' with permitted capabilities. */
static int caps_helper(void)
{
	char line[256], c = 'N';
	unsigned long long prm;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapPrm: %llx", &prm) == 1 && prm)
			c = 'C';
	if (write(1, &c, 1) != 1)
		return 1;
	for (;;)
		pause();
	return 0;
}

/* The spin helper: user-mode work, then exit 0 (a signal kills it). */
static int spin_helper(void)
{
	loop(3 * LOOP_N);
	return 0;
}

FIXTURE(fcap)
{
	char dir[64];
	char helper[96];
	bool mounted;
	int saved_dumpable;
};

/* A vfs_cap_data, revision 2: CAP_NET_BIND_SERVICE permitted only. */
#define CAP_REV2		0x02000000
#define CAP_NET_BIND		10

FIXTURE_SETUP(fcap)
{
	uint32_t cap[5] = { CAP_REV2, 1U << CAP_NET_BIND, 0, 0, 0 };
	char buf[65536];
	ssize_t n;
	int in, out;

	self->mounted = false;
	self->saved_dumpable = -100;
	if (geteuid() != 0)
		SKIP(return, "needs root to set security.capability");
	strcpy(self->dir, "/tmp/perfctr-fcap-XXXXXX");
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
	if (setxattr(self->helper, "security.capability", cap, sizeof(cap), 0))
		SKIP(return, "cannot set security.capability on a tmpfs file (CONFIG_TMPFS_XATTR?): %m");
	/*
	 * fs.suid_dumpable = 1 keeps the capability exec dumpable, so that
	 * only bprm->secureexec says it crossed a boundary (as an LSM
	 * domain transition does).
	 */
	self->saved_dumpable = read_int(SUID_DUMPABLE);
	if (self->saved_dumpable == -100 || write_int(SUID_DUMPABLE, 1))
		SKIP(return, "cannot set %s", SUID_DUMPABLE);
}

FIXTURE_TEARDOWN(fcap)
{
	if (self->saved_dumpable != -100)
		write_int(SUID_DUMPABLE, self->saved_dumpable);
	if (self->mounted) {
		umount2(self->dir, MNT_DETACH);
		rmdir(self->dir);
	}
}

/*
 * G1: an exec that gains privilege but stays dumpable (file capabilities
 * with fs.suid_dumpable = 1; an LSM transition) detaches counters an
 * unprivileged monitor put on the thread, as a setuid exec does.
 * Result through a shared page: 'D' detached, 'A' still attached.
 */
TEST_F(fcap, file_caps_exec_detaches)
{
	volatile char *res;
	struct vperfctr_control c;
	struct vperfctr_sums s;
	int go[2], out[2], fd, status;
	char ch = 0;
	pid_t mon, t;

	res = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, res);
	res[0] = res[1] = 0;
	mon = fork();
	ASSERT_LE(0, mon);
	if (mon == 0) {
		if (drop_privileges() || pipe(go) || pipe(out))
			_exit(1);
		t = fork();
		if (t == 0) {
			dup2(out[1], 1);
			if (read(go[0], &ch, 1) != 1)
				_exit(1);
			execl(self->helper, self->helper, HELPER_CAPS, NULL);
			_exit(2);
		}
		fd = sys_vperfctr_open(t, VPERFCTR_OPEN_CREAT);
		if (fd < 0)
			_exit(3);
		tsc_control(&c);
		c.si_signo = SIGUSR1;
		if (sys_vperfctr_control(fd, &c, sizeof(c), 0))
			_exit(4);
		if (write(go[1], "x", 1) != 1 || read(out[0], &ch, 1) != 1)
			_exit(5);
		res[1] = ch;
		if (!sys_vperfctr_read(fd, &s, sizeof(s), 0))
			res[0] = (s.status & VPERFCTR_STATUS_DETACHED) ? 'D' : 'A';
		kill(t, SIGKILL);
		waitpid(t, NULL, 0);
		_exit(0);
	}
	ASSERT_EQ(mon, waitpid(mon, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	if (res[1] != 'C')
		SKIP(return, "the helper got no file capabilities (reported '%c')",
		     res[1]);
	EXPECT_EQ('D', res[0]) TH_LOG("the old fd reads %s after the exec",
				      res[0] == 'A' ? "attached" : "nothing");
}

/*
 * G1/G14: the overflow signal does not survive an exec: the new image
 * has no handler for it (as perf's sigtrap needs remove_on_exec).  The
 * thread loads an overflow control naming SIGUSR1 (default action:
 * terminate), then execs a helper that overflows many times and exits 0.
 */
TEST(signal_dropped_at_exec)
{
	struct vperfctr_control c;
	char buf[64];
	int status, fd;
	pid_t t;

	if (!have_overflow())
		SKIP(return, "needs a PMU with an overflow interrupt (ppc64le here)");
	t = fork();
	ASSERT_LE(0, t);
	if (t == 0) {
		catch_usr1();
		fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
		if (fd < 0)
			_exit(30);
		overflow_control(&c, SIGUSR1);
		if (sys_vperfctr_control(fd, &c, sizeof(c), 0))
			_exit(31);
		execl("/proc/self/exe", "helper", HELPER_SPIN, NULL);
		_exit(32);
	}
	ASSERT_EQ(t, waitpid(t, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("the exec'd program: %s", how(status, buf, sizeof(buf)));
}

/*
 * G14: a clone3(CLONE_CLEAR_SIGHAND) child starts with every handler at
 * SIG_DFL: it inherits the counters but not the overflow signal.
 */
TEST(clear_sighand_child_no_signal)
{
	struct clone_args ca;
	struct vperfctr_control c;
	char buf[64];
	int status, fd;
	long t;

	if (!have_overflow())
		SKIP(return, "needs a PMU with an overflow interrupt (ppc64le here)");
	catch_usr1();
	fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
	ASSERT_LE(0, fd) TH_LOG("%m");
	overflow_control(&c, SIGUSR1);
	c.flags = VPERFCTR_CONTROL_INHERIT;
	ASSERT_EQ(0, sys_vperfctr_control(fd, &c, sizeof(c), 0)) TH_LOG("%m");
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_CLEAR_SIGHAND;
	ca.exit_signal = SIGCHLD;
	t = syscall(__NR_clone3, &ca, sizeof(ca));
	if (t == 0) {
		loop(LOOP_N);
		syscall(__NR_exit, 0);
	}
	ASSERT_LT(0, t) TH_LOG("clone3: %m");
	ASSERT_EQ(t, waitpid(t, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("the CLONE_CLEAR_SIGHAND child: %s",
		       how(status, buf, sizeof(buf)));
	close(fd);
	signal(SIGUSR1, SIG_DFL);
}

static sigjmp_buf sigill_jmp;

static void on_sigill(int sig)
{
	siglongjmp(sigill_jmp, 1);
}

/*
 * A privileged monitor and an unprivileged target (G2 and the two tests
 * after it): perf_event_paranoid 2, a child that drops to nobody before
 * it does anything else, two pipes (the target says where it is on
 * "done", the monitor lets it go on with "go") and a shared page for
 * what the target saw.  The teardown restores the sysctl and reaps the
 * target whatever the test's end.
 */
FIXTURE(unpriv)
{
	volatile int *res;
	int go[2], done[2], sock[2];
	int saved_paranoid;
	pid_t target;
};

FIXTURE_SETUP(unpriv)
{
	self->target = -1;
	self->saved_paranoid = -100;
	if (info.cpu_type != PERFCTR_CPU_PPC64_BOOK3S || !info.nr_counters)
		SKIP(return, "needs POWER counters (ppc64le here)");
	if (geteuid() != 0)
		SKIP(return, "needs root to set %s and drop to uid %d",
		     PARANOID, NOBODY);
	self->res = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->res);
	ASSERT_EQ(0, pipe(self->go));
	ASSERT_EQ(0, pipe(self->done));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM, 0, self->sock));
	self->saved_paranoid = read_int(PARANOID);
	if (self->saved_paranoid == -100 || write_int(PARANOID, 2)) {
		self->saved_paranoid = -100;
		SKIP(return, "cannot set %s to 2", PARANOID);
	}
}

FIXTURE_TEARDOWN(unpriv)
{
	if (self->target > 0) {
		kill(self->target, SIGKILL);
		waitpid(self->target, NULL, 0);
	}
	if (self->saved_paranoid != -100)
		write_int(PARANOID, self->saved_paranoid);
}

/* The target's side: report @step to the monitor, wait for its go. */
static int target_step(FIXTURE_DATA(unpriv) *self, char step)
{
	char ch;

	if (write(self->done[1], &step, 1) != 1 || read(self->go[0], &ch, 1) != 1)
		return -1;
	return 0;
}

/* The monitor's side: wait for the target's next step, then let it go on. */
static char monitor_wait(FIXTURE_DATA(unpriv) *self)
{
	char ch = 0;

	return read(self->done[0], &ch, 1) == 1 ? ch : 0;
}

static int monitor_go(FIXTURE_DATA(unpriv) *self)
{
	return write(self->go[1], "g", 1) == 1 ? 0 : -1;
}

/*
 * Fork the target: it drops to nobody and runs @body, whose return is
 * its exit status (0: what the test expects from the target's side).
 */
static pid_t start_unprivileged_target(FIXTURE_DATA(unpriv) *self,
				       int (*body)(FIXTURE_DATA(unpriv) *))
{
	pid_t t = fork();

	if (t == 0)
		_exit(drop_privileges() ? 100 : body(self));
	self->target = t;
	return t;
}

/* Reap the target; its exit status, or -1 when it did not exit. */
static int target_exit(FIXTURE_DATA(unpriv) *self)
{
	int status;

	if (waitpid(self->target, &status, 0) != self->target)
		return -1;
	self->target = -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* PMC5 (instructions), user and kernel mode: what paranoid 2 denies. */
static void kernel_mode_control(struct vperfctr_control *c)
{
	tsc_control(c);
	c->cpu_control.nractrs = 1;
	c->cpu_control.pmc_map[0] = 4;
	c->cpu_control.evntsel[0] = 0x100;
}

/* The monitor creates @t's counters with a kernel-mode control: its fd, or -1. */
static int monitor_counts_kernel_mode(pid_t t)
{
	struct vperfctr_control c;

	kernel_mode_control(&c);
	return vperfctr_open_control(t, &c);
}

/*
 * This thread's direct read of PMC5 (mfspr UPMC5): 'T' it trapped
 * (SIGILL), 'Z' it read 0, 'R' it read a count.  After @spin system
 * calls, so that the counters have something to count.
 */
static char probe_upmc5(int spin)
{
	volatile uint64_t v = 0;
	int i;

	signal(SIGILL, on_sigill);
	if (sigsetjmp(sigill_jmp, 1))
		return 'T';
	for (i = 0; i < spin; i++)
		getppid();
#ifdef __powerpc64__
	asm volatile("mfspr %0, 775" : "=r"(v));
#endif
	return v ? 'R' : 'Z';
}

static const char *probe_result(char r)
{
	return r == 'T' ? "trapped" : r == 'Z' ? "read 0" : "read a count";
}

/*
 * G2: a privileged monitor counts user and kernel mode in an unprivileged
 * target.  The target may not read those counts itself: no fd of its
 * own (vperfctr_open(0) refused) and no direct read of the PMC (mfspr
 * UPMC5 traps, or reads nothing).  The target writes res[0], the open's
 * errno, and res[1], 'T' trapped, 'Z' read 0, 'R' read a count.
 */
static int read_kernel_counts(FIXTURE_DATA(unpriv) *self)
{
	int fd;

	if (target_step(self, 'r'))
		return 1;
	fd = sys_vperfctr_open(0, 0);
	self->res[0] = fd < 0 ? errno : 0;
	self->res[1] = probe_upmc5(100);
	return 0;
}

TEST_F(unpriv, target_cannot_read_kernel_counts)
{
	int fd;
	pid_t t;

	t = start_unprivileged_target(self, read_kernel_counts);
	ASSERT_LE(0, t);
	ASSERT_EQ('r', monitor_wait(self));
	fd = monitor_counts_kernel_mode(t);
	ASSERT_LE(0, fd) TH_LOG("%m");
	ASSERT_EQ(0, monitor_go(self));
	ASSERT_EQ(0, target_exit(self));
	close(fd);
	TH_LOG("target: vperfctr_open(0) %s, mfspr UPMC5 %s",
	       self->res[0] ? strerror(self->res[0]) : "succeeded",
	       probe_result(self->res[1]));
	EXPECT_EQ(EACCES, self->res[0]);
	EXPECT_NE('R', self->res[1]);
}

/*
 * The target's direct read of PMC5 after the monitor's control: res[1]
 * 'T' mfspr trapped, 'Z' read 0, 'R' read a count (as above).
 */
static int try_direct_read(FIXTURE_DATA(unpriv) *self)
{
	if (target_step(self, 'r'))
		return 1;
	self->res[1] = probe_upmc5(100);
	return 0;
}

static char direct_read_under(FIXTURE_DATA(unpriv) *self,
			      struct __test_metadata *_metadata,
			      int paranoid, bool kernel)
{
	struct vperfctr_control c;
	int fd;
	pid_t t;

	ASSERT_EQ(0, write_int(PARANOID, paranoid));
	t = start_unprivileged_target(self, try_direct_read);
	ASSERT_LE(0, t);
	ASSERT_EQ('r', monitor_wait(self));
	kernel_mode_control(&c);
	if (!kernel)
		c.cpu_control.evntsel[0] = 0;
	fd = vperfctr_open_control(t, &c);
	ASSERT_LE(0, fd) TH_LOG("%m");
	ASSERT_EQ(0, monitor_go(self));
	ASSERT_EQ(0, target_exit(self));
	close(fd);
	return self->res[1];
}

/*
 * At perf_event_paranoid 1 any thread may count the kernel itself, but
 * its LSM may deny it, and no LSM hook answers for another thread: a
 * kernel-mode control a monitor loads into a thread gives it no direct
 * read (the eighth blind pair's core RISK-2).
 */
TEST_F(unpriv, remote_kernel_control_no_direct_read)
{
	char r = direct_read_under(self, _metadata, 1, true);

	TH_LOG("paranoid 1, a monitor's kernel-mode control: the target's mfspr UPMC5 %s",
	       probe_result(r));
	EXPECT_NE('R', r);
}

/*
 * At Debian's level 3 perf gives a task without CAP_SYS_ADMIN nothing,
 * a direct read of its own event's counter included: nor does perfctr,
 * for a user-mode control a monitor loads (AMD's RDPMC reaches the
 * uncore counters too; the eighth blind pair's arch RISK 2).  At level 2
 * the same control reads.
 */
TEST_F(unpriv, paranoid3_no_direct_read)
{
	char r2, r3;

	if (write_int(PARANOID, 3))
		SKIP(return, "this kernel has no perf_event_paranoid level 3 (Debian's)");
	r3 = direct_read_under(self, _metadata, 3, false);
	r2 = direct_read_under(self, _metadata, 2, false);
	TH_LOG("a monitor's user-mode control: the target's mfspr UPMC5 at level 3 %s, at level 2 %s",
	       probe_result(r3), probe_result(r2));
	EXPECT_NE('R', r3);
	EXPECT_EQ('R', r2);
}

/*
 * A CLONE_NEWUSER child of a privileged thread inherits its kernel-mode
 * control, but has no capability in the initial user namespace: it may
 * not read those counts directly (the tenth blind pair's core BUG-1).
 */
TEST_F(unpriv, newuser_child_no_direct_kernel_read)
{
	struct vperfctr_control c;
	struct clone_args ca;
	char buf[64];
	int fd, status;
	long t;

	kernel_mode_control(&c);
	c.flags = VPERFCTR_CONTROL_INHERIT;
	fd = vperfctr_open_control(0, &c);
	ASSERT_LE(0, fd) TH_LOG("%m");
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_NEWUSER;
	ca.exit_signal = SIGCHLD;
	t = syscall(__NR_clone3, &ca, sizeof(ca));
	if (t == 0) {
		loop(1000);
		self->res[1] = probe_upmc5(0);
		syscall(__NR_exit, 0);
	}
	if (t < 0 && errno == EINVAL) {
		close(fd);
		SKIP(return, "no user namespaces in this kernel (CONFIG_USER_NS)");
	}
	ASSERT_LT(0, t) TH_LOG("clone3(CLONE_NEWUSER): %m");
	ASSERT_EQ(t, waitpid(t, &status, 0));
	sys_vperfctr_unlink(fd);
	close(fd);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("the child: %s", how(status, buf, sizeof(buf)));
	TH_LOG("the CLONE_NEWUSER child's mfspr UPMC5 %s",
	       probe_result(self->res[1]));
	EXPECT_NE('R', self->res[1]);
}

/*
 * A descriptor the target opened itself, unprivileged, would show the
 * sums of a kernel-mode control a privileged monitor loads later (the
 * fourth blind pair's core 4): the monitor's kernel-mode control is
 * refused (EACCES) while that descriptor exists, and loads once the
 * target closed it.
 */
static int hold_own_fd(FIXTURE_DATA(unpriv) *self)
{
	int own = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);

	if (own < 0)
		return 2;
	if (target_step(self, 'o'))
		return 3;
	close(own);
	if (target_step(self, 'c'))
		return 4;
	return 0;
}

TEST_F(unpriv, kernel_control_refused_while_target_holds_fd)
{
	struct vperfctr_control c;
	int fd, err_open, err_closed;
	pid_t t;

	t = start_unprivileged_target(self, hold_own_fd);
	ASSERT_LE(0, t);
	ASSERT_EQ('o', monitor_wait(self));
	fd = sys_vperfctr_open(t, 0);
	ASSERT_LE(0, fd) TH_LOG("%m");
	kernel_mode_control(&c);
	err_open = sys_vperfctr_control(fd, &c, sizeof(c), 0) ? errno : 0;
	ASSERT_EQ(0, monitor_go(self));
	ASSERT_EQ('c', monitor_wait(self));	/* the target closed its fd */
	err_closed = sys_vperfctr_control(fd, &c, sizeof(c), 0) ? errno : 0;
	ASSERT_EQ(0, monitor_go(self));
	ASSERT_EQ(0, target_exit(self));
	close(fd);
	TH_LOG("kernel-mode control while the target holds its own fd: %s; after its close: %s",
	       err_open ? strerror(err_open) : "loaded",
	       err_closed ? strerror(err_closed) : "loaded");
	EXPECT_EQ(EACCES, err_open);
	EXPECT_EQ(0, err_closed);
}

/*
 * A privileged monitor's kernel-mode control, replaced by a TSC-only one:
 * the target may then open and map its counters, and must find nothing
 * of the old control there, the start values included (after a suspend
 * they held the counters' last kernel+user reading; the sixth blind
 * pair's core 1).  The target's exit: 2 no open, 3 no mapping, 4 the old
 * control's start values or sums on its page.
 */
static int count_then_map(FIXTURE_DATA(unpriv) *self)
{
	const struct vperfctr_state *st;
	int own, i;

	if (target_step(self, 'r'))
		return 1;
	loop(100000);		/* counted, kernel mode too */
	if (target_step(self, 's'))
		return 1;
	own = sys_vperfctr_open(0, 0);
	if (own < 0)
		return 2;
	st = mmap(NULL, 4096, PROT_READ, MAP_SHARED, own, 0);
	if (st == MAP_FAILED)
		return 3;
	for (i = 0; i < PERFCTR_MAX_COUNTERS; i++)
		if (st->pmc_start[i] || st->pmc_sum[i])
			return 4;
	return 0;
}

TEST_F(unpriv, replaced_kernel_control_leaves_no_start_values)
{
	struct vperfctr_control c;
	int fd;
	pid_t t;

	t = start_unprivileged_target(self, count_then_map);
	ASSERT_LE(0, t);
	ASSERT_EQ('r', monitor_wait(self));
	fd = monitor_counts_kernel_mode(t);
	ASSERT_LE(0, fd) TH_LOG("%m");
	ASSERT_EQ(0, monitor_go(self));
	ASSERT_EQ('s', monitor_wait(self));	/* it counted, and waits */
	tsc_control(&c);
	ASSERT_EQ(0, sys_vperfctr_control(fd, &c, sizeof(c), 0)) TH_LOG("%m");
	ASSERT_EQ(0, monitor_go(self));
	EXPECT_EQ(0, target_exit(self))
		TH_LOG("the target's exit: 2 no open, 3 no mapping, 4 the old control's values on its page");
	close(fd);
}

/* The monitor passes @fd to the target over the fixture's socket. */
static int send_fd(FIXTURE_DATA(unpriv) *self, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte = 'f';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(self->sock[0], &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(FIXTURE_DATA(unpriv) *self)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(self->sock[1], &msg, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/*
 * The target's fast reads, on the page of the descriptor its monitor
 * passed it, until the monitor says stop (res[2]): res[1] 'T' when an
 * mfspr trapped, 'Z' when none did; res[3] the reads that came back
 * direct, res[4] those that said "use the call".  Its exit: 2 no
 * descriptor, 3 no mapping.
 */
static int read_under_swaps(FIXTURE_DATA(unpriv) *self)
{
	volatile int direct = 0, refused = 0;
	const struct vperfctr_state *st;
	__u64 tsc, pmc[1];
	int fd;

	fd = recv_fd(self);
	if (fd < 0)
		return 2;
	st = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (st == MAP_FAILED)
		return 3;
	close(fd);
	signal(SIGILL, on_sigill);
	if (sigsetjmp(sigill_jmp, 1)) {
		self->res[1] = 'T';
	} else {
		if (target_step(self, 'm'))
			return 1;
		while (!self->res[2]) {
			if (vperfctr_state_read(st, &tsc, pmc, 1) == 0)
				direct++;
			else
				refused++;
		}
		self->res[1] = 'Z';
	}
	self->res[3] = direct;
	self->res[4] = refused;
	return 0;
}

/*
 * A monitor that switches an unprivileged target between a control it
 * may read (user mode) and one it may not (kernel mode: PMCC 0b01) while
 * the target reads its counters with the fast read: a read whose check
 * of caps came before the switch and its mfspr after raised SIGILL (the
 * tenth blind pair's arch BUG-1).  It must read 0 there, and the read
 * retry, as the x86 RDPMC does.  ppc64le, real PMU; two vCPUs, so that
 * most switches reach the running target by IPI.
 */
TEST_F(unpriv, control_switch_under_fast_read)
{
	struct vperfctr_control user, kernel;
	int fd, i, loads = 0;
	pid_t t;

	kernel_mode_control(&kernel);
	user = kernel;
	user.cpu_control.evntsel[0] = 0;
	t = start_unprivileged_target(self, read_under_swaps);
	ASSERT_LE(0, t);
	fd = vperfctr_open_control(t, &user);
	ASSERT_LE(0, fd) TH_LOG("%m");
	ASSERT_EQ(0, send_fd(self, fd));
	ASSERT_EQ('m', monitor_wait(self));
	ASSERT_EQ(0, monitor_go(self));
	for (i = 0; i < 4000 && !self->res[1]; i++) {
		struct vperfctr_control *c = i & 1 ? &kernel : &user;

		ASSERT_EQ(0, sys_vperfctr_control(fd, c, sizeof(*c), 0))
			TH_LOG("load %d: %m", i);
		loads++;
	}
	self->res[2] = 1;
	ASSERT_EQ(0, target_exit(self))
		TH_LOG("the target's exit: 2 no descriptor, 3 no mapping");
	close(fd);
	TH_LOG("%d control loads: the target's mfspr %s; %d reads direct, %d refused",
	       loads, self->res[1] == 'T' ? "trapped" : "never trapped",
	       self->res[3], self->res[4]);
	EXPECT_EQ('Z', self->res[1]);
	/* both kinds of read happened, or the switches never met a read */
	EXPECT_LT(0, self->res[3]);
	EXPECT_LT(0, self->res[4]);
}

/*
 * G4: a mapping of the state page holds the file, so closing the last
 * fd does not detach: the counters keep counting, the page updates,
 * and the thread can open them again, until munmap (or exit, or exec).
 */
TEST(mapping_keeps_counters_attached)
{
	const volatile struct vperfctr_state *st;
	struct vperfctr_control c;
	struct vperfctr_sums s;
	uint64_t before;
	int fd, i;

	fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
	ASSERT_LE(0, fd) TH_LOG("%m");
	tsc_control(&c);
	ASSERT_EQ(0, sys_vperfctr_control(fd, &c, sizeof(c), 0)) TH_LOG("%m");
	st = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, st) TH_LOG("%m");
	ASSERT_EQ(0, close(fd));
	before = st->tsc_sum;
	for (i = 0; i < 20; i++) {
		loop(100000);
		usleep(1000);		/* a switch-out adds to the sum */
	}
	EXPECT_FALSE(st->status & VPERFCTR_STATUS_DETACHED);
	EXPECT_LT(before, st->tsc_sum);
	fd = sys_vperfctr_open(0, 0);
	ASSERT_LE(0, fd) TH_LOG("the mapped counters: %m");
	ASSERT_EQ(0, sys_vperfctr_read(fd, &s, sizeof(s), 0));
	EXPECT_TRUE(s.status & VPERFCTR_STATUS_ACTIVE);
	ASSERT_EQ(0, sys_vperfctr_unlink(fd));
	close(fd);
	munmap((void *)st, 4096);
}

/*
 * G8: after prctl(PR_SET_TSC, PR_TSC_SIGSEGV) the thread cannot execute
 * RDTSC: the page must not say it can (VPERFCTR_CAP_USER_TSC), and the
 * header's fast read then says "use the call" (-1, ~0) without a
 * SIGSEGV, not a sum that lacks the current run.
 */
TEST(notsc_thread_no_user_tsc)
{
	char buf[64];
	int status;
	pid_t t;

#if !defined(__x86_64__)
	SKIP(return, "PR_SET_TSC is x86's");
#endif
	t = fork();
	ASSERT_LE(0, t);
	if (t == 0) {
		const struct vperfctr_state *st;
		struct vperfctr_control c;
		__u64 tsc;
		int fd;

		if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0))
			_exit(40);
		fd = sys_vperfctr_open(0, VPERFCTR_OPEN_CREAT);
		if (fd < 0)
			_exit(41);
		tsc_control(&c);
		if (sys_vperfctr_control(fd, &c, sizeof(c), 0))
			_exit(42);
		st = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
		if (st == MAP_FAILED)
			_exit(43);
		if (st->running && (st->caps & VPERFCTR_CAP_USER_TSC))
			_exit(44);
#ifdef __VPERFCTR_FAST_READ
		/* Not a sum without the current run: the call's. */
		if (st->running && vperfctr_state_read_tsc(st) != ~(__u64)0)
			_exit(45);
		if (st->running && vperfctr_state_read(st, &tsc, NULL, 0) != -1)
			_exit(46);
#endif
		_exit(0);
	}
	ASSERT_EQ(t, waitpid(t, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("the PR_TSC_SIGSEGV thread: %s (44: the page says RDTSC is readable; 45, 46: the fast read returned a TSC sum without the current run)",
		       how(status, buf, sizeof(buf)));
}

/*
 * G9: io_uring's workers (the SQPOLL thread here) run kernel code only:
 * no counters for them, as for kernel threads, although they are in our
 * thread group and ptrace allows it.
 */
TEST(io_uring_worker_refused)
{
	struct io_uring_params p;
	char path[300], comm[64];
	struct dirent *d;
	DIR *dir;
	pid_t worker = 0;
	int ring, fd, i;

	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SQPOLL;
	p.sq_thread_idle = 10000;
	ring = syscall(__NR_io_uring_setup, 4, &p);
	if (ring < 0)
		SKIP(return, "no io_uring SQPOLL here (CONFIG_IO_URING?): %m");
	for (i = 0; i < 100 && !worker; i++) {
		dir = opendir("/proc/self/task");
		ASSERT_NE(NULL, dir);
		while ((d = readdir(dir))) {
			FILE *f;

			if (d->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
				 d->d_name);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (fgets(comm, sizeof(comm), f) &&
			    !strncmp(comm, "iou-sqp-", 8))
				worker = atoi(d->d_name);
			fclose(f);
		}
		closedir(dir);
		if (!worker)
			usleep(10000);
	}
	if (!worker) {
		close(ring);
		SKIP(return, "no iou-sqp- thread found");
	}
	fd = sys_vperfctr_open(worker, VPERFCTR_OPEN_CREAT);
	EXPECT_EQ(-1, fd) TH_LOG("the SQPOLL thread %d got counters", worker);
	EXPECT_EQ(EPERM, errno);
	if (fd >= 0)
		close(fd);
	close(ring);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], HELPER_CAPS))
		return caps_helper();
	if (argc > 1 && !strcmp(argv[1], HELPER_SPIN))
		return spin_helper();
	sys_perfctr_info(&info, sizeof(info), 0);
	return test_harness_run(argc, argv);
}
