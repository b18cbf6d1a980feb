// SPDX-License-Identifier: GPL-2.0
/*
 * perfctr's costs side by side with perf_events', in one run, so that the
 * ratios mean something even where wall time does not (under QEMU TCG).
 *
 * Reads: the bare time-stamp counter (rdtsc; mftb on powerpc), perfctr's
 * fast user-space read of its state page, vperfctr_read(2), read(2) of a
 * perf_event task-clock counter, clock_gettime(CLOCK_THREAD_CPUTIME_ID),
 * and getpid(2) as the system-call floor: ns per operation, and where a
 * hardware instructions counter exists (powerpc pseries: PMC5), the
 * instructions each takes, measured with perfctr's own fast read.
 *
 * Start: vperfctr_control(2) against perf's PERF_EVENT_IOC_ENABLE.
 *
 * Context switches: two threads on one CPU bounce a byte through pipes,
 * with no counters; with the static key on but these threads unmonitored
 * (another thread holds a vperfctr); with a vperfctr on both; with a perf
 * task-clock counter on both.
 *
 * Output: one JSON object per metric on stdout: name, value, unit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/perfctr.h>

#define N_READ		200000
#define ROUNDS		20000

static struct perfctr_info info;

static inline uint64_t tsc(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;

	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__powerpc64__)
	uint64_t v;

	asm volatile("mftb %0" : "=r"(v));
	return v;
#else
	return 0;
#endif
}


static const volatile struct vperfctr_state *st;
static int vfd = -1, pfd = -1;
static int has_pmc;		/* slot 0 counts instructions */

/*
 * The fast read: slot 0 if there is one, else the TSC sum, through the
 * loop the uapi header publishes (vperfctr_state_read()), so that what is
 * measured is what users run.
 */
static uint64_t fast_read(void)
{
	uint64_t t, p[PERFCTR_MAX_COUNTERS];

	vperfctr_state_read((const struct vperfctr_state *)st, &t,
			    has_pmc ? p : NULL);
	return has_pmc ? p[0] : t;
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void metric(const char *name, double value, const char *unit)
{
	printf("{\"name\": \"%s\", \"value\": %.3f, \"unit\": \"%s\"}\n",
	       name, value, unit);
	fflush(stdout);
}

static int open_vperfctr(int with_pmc)
{
	struct vperfctr_control c;
	int fd = syscall(__NR_vperfctr_open, 0, VPERFCTR_OPEN_CREAT);

	if (fd < 0)
		return -1;
	memset(&c, 0, sizeof(c));
	c.cpu_control.tsc_on = 1;
	if (with_pmc && info.cpu_type == PERFCTR_CPU_PPC64_BOOK3S) {
		c.cpu_control.nractrs = 1;
		c.cpu_control.pmc_map[0] = 4;		/* PMC5: instructions */
	}
	if (syscall(__NR_vperfctr_control, fd, &c, sizeof(c), 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int perf_task_clock(int disabled)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.disabled = disabled;
	return syscall(__NR_perf_event_open, &a, 0, -1, -1, 0);
}

enum op { OP_TSC, OP_FAST, OP_VREAD, OP_PERF, OP_CLOCK, OP_GETPID, NR_OPS };
static const char *const op_names[NR_OPS] = {
	"rdtsc", "perfctr_fast_read", "vperfctr_read", "perf_read_task_clock",
	"clock_gettime_thread_cputime", "getpid",
};

static void do_op(enum op op)
{
	struct vperfctr_sums s;
	struct timespec ts;
	uint64_t v;

	switch (op) {
	case OP_TSC:
		v = tsc();
		asm volatile("" : : "r"(v));
		break;
	case OP_FAST:
		v = fast_read();
		asm volatile("" : : "r"(v));
		break;
	case OP_VREAD:
		syscall(__NR_vperfctr_read, vfd, &s, sizeof(s), 0);
		break;
	case OP_PERF:
		if (read(pfd, &v, sizeof(v)) != sizeof(v))
			exit(20);
		break;
	case OP_CLOCK:
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		break;
	default:
		syscall(SYS_getpid);
		break;
	}
}

static void reads(void)
{
	double ns[NR_OPS], insns[NR_OPS] = { 0 };
	int op, i;

	for (op = 0; op < NR_OPS; op++) {
		double t0;

		for (i = 0; i < N_READ / 10; i++)	/* warm up */
			do_op(op);
		t0 = now_ns();
		for (i = 0; i < N_READ; i++)
			do_op(op);
		ns[op] = (now_ns() - t0) / N_READ;
		if (has_pmc) {
			/* instructions, by perfctr's fast read of PMC5 */
			uint64_t a = fast_read(), b;

			for (i = 0; i < N_READ / 10; i++)
				do_op(op);
			b = fast_read();
			insns[op] = (double)(b - a) / (N_READ / 10);
		}
	}
	for (op = 0; op < NR_OPS; op++) {
		char name[96];

		snprintf(name, sizeof(name), "read_%s_ns", op_names[op]);
		metric(name, ns[op], "ns");
		snprintf(name, sizeof(name), "read_%s_vs_rdtsc", op_names[op]);
		metric(name, ns[op] / ns[OP_TSC], "ratio");
		snprintf(name, sizeof(name), "read_%s_vs_getpid", op_names[op]);
		metric(name, ns[op] / ns[OP_GETPID], "ratio");
		if (has_pmc) {
			snprintf(name, sizeof(name), "read_%s_instructions",
				 op_names[op]);
			metric(name, insns[op], "instructions");
		}
	}
}

static void starts(void)
{
	struct vperfctr_control c;
	double t0, vc, pe;
	int i, fd = syscall(__NR_vperfctr_open, 0, VPERFCTR_OPEN_CREAT);

	memset(&c, 0, sizeof(c));
	c.cpu_control.tsc_on = 1;
	t0 = now_ns();
	for (i = 0; i < N_READ / 20; i++)
		syscall(__NR_vperfctr_control, fd, &c, sizeof(c), 0);
	vc = (now_ns() - t0) / (N_READ / 20);
	t0 = now_ns();
	for (i = 0; i < N_READ / 20; i++) {
		ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0);
	}
	pe = (now_ns() - t0) / (N_READ / 20);
	metric("start_vperfctr_control_ns", vc, "ns");
	metric("start_perf_ioc_enable_ns", pe, "ns");
	metric("start_vperfctr_control_vs_perf_enable", vc / pe, "ratio");
	(void)fd;
}

/* Context switches. */
static int p1[2], p2[2], mode;
enum { CS_NONE, CS_KEY_ON, CS_VPERFCTR, CS_PERF };

static void pin0(void)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

static int monitor_self(void)
{
	if (mode == CS_VPERFCTR)
		return open_vperfctr(0) < 0 ? -1 : 0;
	if (mode == CS_PERF)
		return perf_task_clock(0) < 0 ? -1 : 0;
	return 0;
}

static void *echo(void *arg)
{
	char b;
	int i;

	pin0();
	if (monitor_self())
		exit(30);
	for (i = 0; i < ROUNDS; i++)
		if (read(p1[0], &b, 1) != 1 || write(p2[1], &b, 1) != 1)
			exit(31);
	return NULL;
}

static double pingpong(int m)
{
	double t0, t1;
	pthread_t t;
	char b = 'x';
	int i;

	mode = m;
	if (pipe(p1) || pipe(p2))
		exit(32);
	pthread_create(&t, NULL, echo, NULL);
	t0 = now_ns();
	for (i = 0; i < ROUNDS; i++)
		if (write(p1[1], &b, 1) != 1 || read(p2[0], &b, 1) != 1)
			exit(33);
	t1 = now_ns();
	pthread_join(t, NULL);
	close(p1[0]); close(p1[1]); close(p2[0]); close(p2[1]);
	return (t1 - t0) / (2.0 * ROUNDS);
}

static int holder_pipe[2];

static void *holder(void *arg)
{
	int fd = open_vperfctr(0);
	char b;

	if (fd < 0)
		exit(34);
	if (read(holder_pipe[0], &b, 1) != 1)
		exit(35);
	close(fd);
	return NULL;
}

/* Each configuration in a child process, so counters never leak across. */
static double in_child(int m)
{
	int p[2];
	double v = -1;
	pid_t pid;

	if (pipe(p))
		exit(36);
	pid = fork();
	if (pid == 0) {
		pthread_t h;

		pin0();
		if (m == CS_KEY_ON) {
			if (pipe(holder_pipe))
				_exit(37);
			pthread_create(&h, NULL, holder, NULL);
			usleep(100000);
		}
		if (monitor_self())
			_exit(38);
		pingpong(CS_NONE);		/* warm up */
		v = pingpong(m);
		if (write(p[1], &v, sizeof(v)) != sizeof(v))
			_exit(39);
		_exit(0);
	}
	if (read(p[0], &v, sizeof(v)) != sizeof(v))
		v = -1;
	waitpid(pid, NULL, 0);
	close(p[0]);
	close(p[1]);
	return v;
}

#define CS_REPEATS	7

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The four configurations in interleaved rounds, the median of each: a
 * burst of host noise (TCG runs on a shared machine) lands in one round
 * of each configuration rather than in all of one.
 */
static void switches(void)
{
	double t[4][CS_REPEATS], none, keyon, vpc, perf;
	int r, m;

	for (r = 0; r < CS_REPEATS; r++)
		for (m = CS_NONE; m <= CS_PERF; m++)
			t[m][r] = in_child(m);
	for (m = CS_NONE; m <= CS_PERF; m++)
		qsort(t[m], CS_REPEATS, sizeof(double), cmp_double);
	none = t[CS_NONE][CS_REPEATS / 2];
	keyon = t[CS_KEY_ON][CS_REPEATS / 2];
	vpc = t[CS_VPERFCTR][CS_REPEATS / 2];
	perf = t[CS_PERF][CS_REPEATS / 2];
	metric("ctxsw_rounds", CS_REPEATS, "count");
	metric("ctxsw_none_spread", t[CS_NONE][CS_REPEATS - 1] / t[CS_NONE][0],
	       "ratio");
	metric("ctxsw_none_ns", none, "ns");
	metric("ctxsw_key_on_unmonitored_ns", keyon, "ns");
	metric("ctxsw_vperfctr_both_ns", vpc, "ns");
	metric("ctxsw_perf_task_clock_both_ns", perf, "ns");
	metric("ctxsw_key_on_vs_none", keyon / none, "ratio");
	metric("ctxsw_vperfctr_vs_none", vpc / none, "ratio");
	metric("ctxsw_perf_vs_none", perf / none, "ratio");
}

int main(void)
{
	if (syscall(__NR_perfctr_info, &info, sizeof(info), 0)) {
		fprintf(stderr, "perfctr_info: %s\n", strerror(errno));
		return 2;
	}
	pin0();
	vfd = open_vperfctr(1);
	if (vfd < 0) {
		fprintf(stderr, "vperfctr: %s\n", strerror(errno));
		return 2;
	}
	has_pmc = info.cpu_type == PERFCTR_CPU_PPC64_BOOK3S;
	st = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, vfd, 0);
	pfd = perf_task_clock(0);
	if (st == MAP_FAILED || pfd < 0) {
		fprintf(stderr, "mmap or perf_event_open: %s\n", strerror(errno));
		return 2;
	}
	metric("counters_are_hardware", has_pmc, "bool");
	reads();
	starts();
	close(vfd);
	sleep(2);	/* the static key's decrement is deferred by a second */
	switches();
	return 0;
}
