// SPDX-License-Identifier: GPL-2.0
/*
 * perfctr's costs side by side with perf_events', in one run.
 *
 * Every figure is measured with every instrument that can observe it:
 *
 *  pmc5    the calling thread's own instructions, read with perfctr's
 *          fast read of PMC5 (powerpc only: QEMU's pseries PMU counts
 *          instructions exactly, kernel mode included because QEMU
 *          ignores the freeze-in-supervisor bit).  The instrument is a
 *          vperfctr on this thread, so it cannot observe anything that
 *          loads a control on this thread (vperfctr_control, iresume)
 *          or that needs the PMU for perf (perfctr holds it).
 *  icount  the guest's time-stamp counter (rdtsc; mftb on powerpc) when
 *          QEMU runs with -icount shift=0: virtual time then advances
 *          by one fixed step per executed guest instruction, so a clock
 *          difference is the number of instructions the guest executed
 *          in between, on every CPU, user and kernel, interrupts
 *          included.  Calibrated here against a loop of known length.
 *          The host says it is on with PERFCTR_BENCH_ICOUNT=1.
 *  wall    CLOCK_MONOTONIC nanoseconds (only without -icount: there the
 *          clock is the instruction count).
 *  cpu0    context switches only: a perf_event_open() count of
 *          instructions on CPU 0, all tasks, user and kernel (root),
 *          where a hardware instructions event exists and perfctr does
 *          not hold the PMU.
 *
 * A figure is the cost of one operation: the instrument's difference
 * over N operations divided by N, in several rounds interleaved with the
 * other figures' (host noise lands in one round of each rather than in
 * all of one).  "loop" figures time the whole loop and name loop_empty as
 * their measuring overhead; "bracket" figures read the instrument around
 * each call (set-up between calls untimed) and name bracket_empty.  The
 * host (pytools/bench.py) subtracts the overhead and reduces the rounds.
 *
 * Output, one JSON object a line on stdout:
 *   {"name", "unit", "instrument", "samples": [...], "overhead"}  a figure
 *   {"name", "unit", "instrument", "unobservable": "why"}          none
 *   {"name", "value", "unit"}                                     a fact
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

#define ROUNDS		5	/* interleaved rounds of every figure */

static struct perfctr_info info;
static int has_pmc;		/* powerpc: PMC5 counts instructions */
static int icount;		/* QEMU -icount: the TSC counts instructions */
static double ticks_per_insn = 1.0;

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

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

/* -- output ---------------------------------------------------------------- */

static void fact(const char *name, double value, const char *unit)
{
	printf("{\"name\": \"%s\", \"value\": %.4f, \"unit\": \"%s\"}\n",
	       name, value, unit);
	fflush(stdout);
}

static void figure(const char *name, const char *unit, const char *instr,
		   const double *samples, int n, const char *overhead)
{
	int i;

	printf("{\"name\": \"%s\", \"unit\": \"%s\", \"instrument\": \"%s\", "
	       "\"samples\": [", name, unit, instr);
	for (i = 0; i < n; i++)
		printf("%s%.4f", i ? ", " : "", samples[i]);
	printf("]");
	if (overhead)
		printf(", \"overhead\": \"%s\"", overhead);
	printf("}\n");
	fflush(stdout);
}

static void unobservable(const char *name, const char *unit,
			 const char *instr, const char *why)
{
	printf("{\"name\": \"%s\", \"unit\": \"%s\", \"instrument\": \"%s\", "
	       "\"unobservable\": \"%s\"}\n", name, unit, instr, why);
	fflush(stdout);
}

/* -- instruments ----------------------------------------------------------- */

enum instr { I_PMC5, I_ICOUNT, I_WALL, NR_INSTR };
static const char *const instr_names[NR_INSTR] = { "pmc5", "icount", "wall" };
static const char *const instr_units[NR_INSTR] = {
	"instructions", "instructions", "ns" };
static int instr_on[NR_INSTR];

static const volatile struct vperfctr_state *st;	/* the pmc5 page */

static uint64_t pmc5(void)
{
	__u64 t, p[PERFCTR_MAX_COUNTERS];

	if (vperfctr_state_read((const struct vperfctr_state *)st, &t, p,
				PERFCTR_MAX_COUNTERS))
		return 0;
	return p[0];
}

static void read_all(uint64_t *v)
{
	if (instr_on[I_PMC5])
		v[I_PMC5] = pmc5();
	if (instr_on[I_ICOUNT])
		v[I_ICOUNT] = tsc();
	if (instr_on[I_WALL])
		v[I_WALL] = now_ns();
}

/* The same instruments read in the reverse order, so brackets nest. */
static void read_all_rev(uint64_t *v)
{
	if (instr_on[I_WALL])
		v[I_WALL] = now_ns();
	if (instr_on[I_ICOUNT])
		v[I_ICOUNT] = tsc();
	if (instr_on[I_PMC5])
		v[I_PMC5] = pmc5();
}

static double in_units(int i, uint64_t d)
{
	return i == I_ICOUNT ? d / ticks_per_insn : (double)d;
}

/* A loop of known length: 1 instruction an iteration (+2) on powerpc,
 * 2 on x86. */
static double known_loop(unsigned long n)
{
#if defined(__powerpc64__)
	asm volatile("mtctr %0\n1: bdnz 1b" : : "r"(n) : "ctr");
	return n + 1;
#elif defined(__x86_64__)
	asm volatile("1: dec %0\n jnz 1b" : "+r"(n));
	return 0;	/* caller knows: 2 an iteration */
#else
	return 0;
#endif
}

static double loop_insns(unsigned long n)
{
#if defined(__powerpc64__)
	return n;
#else
	return 2.0 * n;
#endif
}

/*
 * Ticks of the clock per instruction: the slope between two loop lengths
 * (so fixed costs cancel), the least of several tries for each length.
 */
static void calibrate_icount(void)
{
	unsigned long n1 = 100000, n2 = 300000;	/* short: few ticks land */
	uint64_t best1 = ~0ull, best2 = ~0ull, pbest = ~0ull, a, b, pa, pb;
	int r;

	for (r = 0; r < 9; r++) {
		a = tsc();
		known_loop(n1);
		b = tsc();
		if (b - a < best1)
			best1 = b - a;
		pa = has_pmc ? pmc5() : 0;
		a = tsc();
		known_loop(n2);
		b = tsc();
		pb = has_pmc ? pmc5() : 0;
		if (b - a < best2)
			best2 = b - a;
		if (pb - pa < pbest)
			pbest = pb - pa;
	}
	ticks_per_insn = (double)(best2 - best1) /
			 (loop_insns(n2) - loop_insns(n1));
	fact("icount_ticks_per_instruction", ticks_per_insn, "ticks");
	fact("icount_calibration_loop_instructions",
	     best2 / ticks_per_insn, "instructions");
	fact("icount_calibration_loop_expected", loop_insns(n2),
	     "instructions");
	if (has_pmc && st)
		fact("pmc5_calibration_loop_instructions", (double)pbest,
		     "instructions");
}

/* -- perfctr and perf helpers --------------------------------------------- */

static int sys_vopen(int creat)
{
	return syscall(__NR_vperfctr_open, 0, creat ? VPERFCTR_OPEN_CREAT : 0);
}

static int sys_vcontrol(int fd, const struct vperfctr_control *c)
{
	return syscall(__NR_vperfctr_control, fd, c, sizeof(*c), 0);
}

static void control_tsc(struct vperfctr_control *c)
{
	memset(c, 0, sizeof(*c));
	c->cpu_control.tsc_on = 1;
}

/* TSC and, on powerpc, PMC5 (instructions) in slot 0. */
static int control_pmc(struct vperfctr_control *c)
{
	control_tsc(c);
	if (!has_pmc)
		return -1;
	c->cpu_control.nractrs = 1;
	c->cpu_control.pmc_map[0] = 4;		/* PMC5: instructions */
	return 0;
}

static int open_vperfctr(const struct vperfctr_control *c)
{
	int fd = sys_vopen(1);

	if (fd < 0)
		return -1;
	if (sys_vcontrol(fd, c)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void drop_vperfctr(int fd)
{
	if (fd < 0)
		return;
	syscall(__NR_vperfctr_unlink, fd, 0);
	close(fd);
}

static int perf_open(uint32_t type, uint64_t config, int disabled,
		     uint64_t period, pid_t pid, int cpu, uint64_t format)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.disabled = disabled;
	a.sample_period = period;
	a.read_format = format;
	return syscall(__NR_perf_event_open, &a, pid, cpu, -1, 0);
}

static int perf_task_clock(int disabled)
{
	return perf_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK,
			 disabled, 0, 0, -1, 0);
}

static int perf_hw_insns(int disabled)
{
	return perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS,
			 disabled, 0, 0, -1, 0);
}

/* Why no perf hardware event opens here, or NULL if one does. */
static char perf_hw_why[160];

static void probe_perf_hw(void)
{
	int fd = perf_hw_insns(1);

	if (fd >= 0) {
		close(fd);
		return;
	}
	snprintf(perf_hw_why, sizeof(perf_hw_why),
		 "no perf hardware instructions event here (perf_event_open: %s)",
		 strerror(errno));
}

/* -- the operations --------------------------------------------------------- */

struct op {
	const char *name;
	int bracket;		/* time each call; else the whole loop */
	int n;			/* calls a round */
	int pmc5_ok;		/* the pmc5 instrument may run alongside */
	const char *no_pmc5;	/* else: why not */
	int needs_hw;		/* a perf hardware event or a PMU */
	int (*setup)(void);	/* 0 or -errno; run before each round */
	void (*pre)(int i);	/* untimed, before each call (bracket) */
	void (*call)(int i);
	void (*post)(int i);	/* untimed, after each call (bracket) */
	void (*teardown)(void);
	int failures;		/* calls that returned an error */
	char why[256];		/* setup's failure */
};

static int vfd = -1;		/* this thread's vperfctr (reads) */
static int pfd = -1, hfd = -1;	/* perf task-clock, hardware events */
static int ofd = -1;		/* opened by a call, closed after it */
static struct vperfctr_control ctl_a, ctl_b;

static void nothing(int i) { (void)i; }

static void c_tsc(int i)
{
	uint64_t v = tsc();

	asm volatile("" : : "r"(v));
}

static void c_fast(int i)
{
	__u64 t, p[PERFCTR_MAX_COUNTERS];

	vperfctr_state_read((const struct vperfctr_state *)st, &t,
			    has_pmc ? p : NULL, has_pmc ? PERFCTR_MAX_COUNTERS : 0);
	asm volatile("" : : "r"(t));
}

/* The one-value reads: the TSC sum; slot 0 (PMC5 on powerpc). */
static void c_fast_tsc(int i)
{
	__u64 t = vperfctr_state_read_tsc((const struct vperfctr_state *)st);

	asm volatile("" : : "r"(t));
}

static void c_fast_pmc(int i)
{
	__u64 p;

	if (!vperfctr_state_read_pmc((const struct vperfctr_state *)st, 0, &p))
		asm volatile("" : : "r"(p));
}

static struct op *cur;

static void fail_if(int bad)
{
	if (bad)
		cur->failures++;
}

static void c_vread(int i)
{
	struct vperfctr_sums s;

	fail_if(syscall(__NR_vperfctr_read, vfd, &s, sizeof(s), 0) != 0);
}

static void c_perf_read(int i)
{
	uint64_t v;

	fail_if(read(pfd, &v, sizeof(v)) != sizeof(v));
}

static void c_perf_read_hw(int i)
{
	uint64_t v;

	fail_if(read(hfd, &v, sizeof(v)) != sizeof(v));
}

static void c_clock(int i)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
}

static void c_getpid(int i)
{
	syscall(SYS_getpid);
}

static int s_vfd_for_reads(void)
{
	return vfd >= 0 ? 0 : -ENODEV;
}

static int s_vfd_pmc(void)
{
	return vfd >= 0 && has_pmc ? 0 : -ENODEV;
}

static int s_pfd(void)
{
	return pfd >= 0 ? 0 : -ENODEV;
}

static int s_hfd(void)
{
	if (hfd < 0)
		hfd = perf_hw_insns(0);
	return hfd >= 0 ? 0 : -errno;
}

static void t_hfd(void)
{
	if (hfd >= 0)
		close(hfd);
	hfd = -1;
}

/* vperfctr_control(): a new control each call, or the same again. */
static int cfd = -1;

static int s_control(void)
{
	control_tsc(&ctl_a);
	control_tsc(&ctl_b);
	if (has_pmc) {
		control_pmc(&ctl_a);
		control_pmc(&ctl_b);
		ctl_b.cpu_control.nractrs = 2;
		ctl_b.cpu_control.pmc_map[1] = 5;	/* PMC6: cycles */
	} else {
		ctl_b.flags = VPERFCTR_CONTROL_INHERIT;
	}
	cfd = open_vperfctr(&ctl_a);
	return cfd >= 0 ? 0 : -errno;
}

static void t_control(void)
{
	drop_vperfctr(cfd);
	cfd = -1;
}

static void c_control_new(int i)
{
	fail_if(sys_vcontrol(cfd, (i & 1) ? &ctl_a : &ctl_b) != 0);
}

static void c_control_same(int i)
{
	fail_if(sys_vcontrol(cfd, &ctl_a) != 0);
}

/* vperfctr_open() + vperfctr_control(): counters from nothing. */
static int s_ctl_a(void)
{
	if (has_pmc)
		control_pmc(&ctl_a);
	else
		control_tsc(&ctl_a);
	return 0;
}

static void c_vopen_control(int i)
{
	ofd = open_vperfctr(&ctl_a);
	fail_if(ofd < 0);
}

static void p_vdrop(int i)
{
	drop_vperfctr(ofd);
	ofd = -1;
}

/* perf's ioctls on an event this thread counts itself with. */
static int efd = -1;

static void c_enable(int i)
{
	fail_if(ioctl(efd, PERF_EVENT_IOC_ENABLE, 0) != 0);
}

static void c_disable(int i)
{
	fail_if(ioctl(efd, PERF_EVENT_IOC_DISABLE, 0) != 0);
}

static void p_enable(int i)
{
	ioctl(efd, PERF_EVENT_IOC_ENABLE, 0);
}

static void p_disable(int i)
{
	ioctl(efd, PERF_EVENT_IOC_DISABLE, 0);
}

static int s_efd_sw(void)
{
	efd = perf_task_clock(1);
	return efd >= 0 ? 0 : -errno;
}

static int s_efd_hw(void)
{
	efd = perf_hw_insns(1);
	return efd >= 0 ? 0 : -errno;
}

static void t_efd(void)
{
	if (efd >= 0)
		close(efd);
	efd = -1;
}

static void c_open_enable_sw(int i)
{
	ofd = perf_task_clock(1);
	fail_if(ofd < 0 || ioctl(ofd, PERF_EVENT_IOC_ENABLE, 0) != 0);
}

static void c_open_enable_hw(int i)
{
	ofd = perf_hw_insns(1);
	fail_if(ofd < 0 || ioctl(ofd, PERF_EVENT_IOC_ENABLE, 0) != 0);
}

static int s_hw(void)
{
	return perf_hw_why[0] ? -ENOENT : 0;
}

static void p_close(int i)
{
	if (ofd >= 0)
		close(ofd);
	ofd = -1;
}

/*
 * Re-arming after an overflow.  perfctr: an interrupt-mode instructions
 * counter with a period of one instruction and no signal, so it
 * overflows inside every vperfctr_iresume() and the counters are
 * suspended again before the next; one loop iteration is iresume + the
 * overflow interrupt + the suspension.  perf: a sampling instructions
 * event with a period of one and an event limit, re-armed with
 * PERF_EVENT_IOC_REFRESH(1); one iteration is the ioctl + the overflow
 * interrupt + the disable the limit causes.
 */
static int ifd = -1;

static int s_iresume(void)
{
	struct vperfctr_control c;

	if (!has_pmc)
		return -EOPNOTSUPP;
	control_pmc(&c);
	c.cpu_control.nractrs = 0;
	c.cpu_control.nrictrs = 1;
	c.cpu_control.ireset[0] = -1;
	ifd = open_vperfctr(&c);
	return ifd >= 0 ? 0 : -errno;
}

/* After a round: the last call must have re-armed an overflow. */
static int rearm_unverified[2];

static void t_iresume(void)
{
	struct vperfctr_sums s;

	if (syscall(__NR_vperfctr_read, ifd, &s, sizeof(s), 0) ||
	    !(s.status & VPERFCTR_STATUS_SUSPENDED))
		rearm_unverified[0]++;
	drop_vperfctr(ifd);
	ifd = -1;
}

/*
 * perf disables the event at the overflow the limit allows: its count
 * stands still afterwards.  A throttled event (too many overflows in a
 * tick) would keep counting instead.
 */
static void t_refresh(void)
{
	uint64_t a = 0, b = 0;

	if (read(efd, &a, sizeof(a)) != sizeof(a) ||
	    (known_loop(10000), read(efd, &b, sizeof(b))) != sizeof(b) ||
	    b != a)
		rearm_unverified[1]++;
	t_efd();
}

static void c_iresume(int i)
{
	fail_if(syscall(__NR_vperfctr_iresume, ifd, 0) != 0);
}

static int s_refresh(void)
{
	efd = perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1, 1,
			0, -1, 0);
	return efd >= 0 ? 0 : -errno;
}

static void c_refresh(int i)
{
	fail_if(ioctl(efd, PERF_EVENT_IOC_REFRESH, 1) != 0);
}

#define LOOP(nm, nn, fn, su, ok, why)	\
	{ .name = nm, .n = nn, .call = fn, .setup = su, .pmc5_ok = ok, \
	  .no_pmc5 = why }
#define BRACKET(nm, nn, pr, fn, po, su, td, ok, why)	\
	{ .name = nm, .bracket = 1, .n = nn, .pre = pr, .call = fn, \
	  .post = po, .setup = su, .teardown = td, .pmc5_ok = ok, \
	  .no_pmc5 = why }

#define NOT_SELF "the pmc5 instrument is this thread's vperfctr: loading a control here would reset it"
#define NOT_HW "perf's hardware events cannot open while perfctr (the pmc5 instrument) holds the PMU"

static struct op ops[] = {
	LOOP("loop_empty", 20000, nothing, NULL, 1, NULL),
	BRACKET("bracket_empty", 2000, nothing, nothing, nothing, NULL, NULL,
		1, NULL),
	LOOP("read_rdtsc", 20000, c_tsc, NULL, 1, NULL),
	LOOP("read_perfctr_fast_read", 20000, c_fast, s_vfd_for_reads, 1, NULL),
	LOOP("read_perfctr_fast_tsc", 20000, c_fast_tsc, s_vfd_for_reads, 1, NULL),
	LOOP("read_perfctr_fast_pmc", 20000, c_fast_pmc, s_vfd_pmc, 1, NULL),
	LOOP("read_vperfctr_read", 2000, c_vread, s_vfd_for_reads, 1, NULL),
	LOOP("read_perf_read_task_clock", 2000, c_perf_read, s_pfd, 1, NULL),
	{ .name = "read_perf_read_hw_instructions", .n = 2000,
	  .call = c_perf_read_hw, .setup = s_hfd, .teardown = t_hfd,
	  .needs_hw = 1, .no_pmc5 = NOT_HW },
	LOOP("read_clock_gettime_thread_cputime", 2000, c_clock, NULL, 1, NULL),
	LOOP("read_getpid", 2000, c_getpid, NULL, 1, NULL),
	BRACKET("start_vperfctr_control_new", 500, nothing, c_control_new,
		nothing, s_control, t_control, 0, NOT_SELF),
	BRACKET("start_vperfctr_control_same", 500, nothing, c_control_same,
		nothing, s_control, t_control, 0, NOT_SELF),
	BRACKET("start_vperfctr_open_control", 300, nothing, c_vopen_control,
		p_vdrop, s_ctl_a, NULL, 0, NOT_SELF),
	BRACKET("start_perf_ioc_enable_task_clock", 500, p_disable, c_enable,
		nothing, s_efd_sw, t_efd, 1, NULL),
	BRACKET("stop_perf_ioc_disable_task_clock", 500, p_enable, c_disable,
		nothing, s_efd_sw, t_efd, 1, NULL),
	BRACKET("start_perf_open_enable_task_clock", 300, nothing,
		c_open_enable_sw, p_close, NULL, NULL, 1, NULL),
	{ .name = "start_perf_ioc_enable_hw_instructions", .bracket = 1,
	  .n = 500, .pre = p_disable, .call = c_enable, .post = nothing,
	  .setup = s_efd_hw, .teardown = t_efd, .needs_hw = 1,
	  .no_pmc5 = NOT_HW },
	{ .name = "stop_perf_ioc_disable_hw_instructions", .bracket = 1,
	  .n = 500, .pre = p_enable, .call = c_disable, .post = nothing,
	  .setup = s_efd_hw, .teardown = t_efd, .needs_hw = 1,
	  .no_pmc5 = NOT_HW },
	{ .name = "start_perf_open_enable_hw_instructions", .bracket = 1,
	  .n = 300, .pre = nothing, .call = c_open_enable_hw, .post = p_close,
	  .setup = s_hw, .needs_hw = 1, .no_pmc5 = NOT_HW },
	{ .name = "rearm_vperfctr_iresume", .n = 500, .call = c_iresume,
	  .setup = s_iresume, .teardown = t_iresume, .needs_hw = 1,
	  .no_pmc5 = NOT_SELF },
	{ .name = "rearm_perf_ioc_refresh", .n = 500, .call = c_refresh,
	  .setup = s_refresh, .teardown = t_refresh, .needs_hw = 1,
	  .no_pmc5 = NOT_HW },
};
#define NR_OPS	(int)(sizeof(ops) / sizeof(ops[0]))

/* One round of one operation: its cost per call on each instrument. */
static int measure(struct op *o, int with_pmc5, double *out)
{
	uint64_t a[NR_INSTR] = { 0 }, b[NR_INSTR] = { 0 };
	double sum[NR_INSTR] = { 0 };
	int on_pmc5 = instr_on[I_PMC5], i, k, err = 0;

	cur = o;
	instr_on[I_PMC5] = with_pmc5;
	if (o->setup && (err = o->setup()) != 0)
		goto out;
	for (i = 0; i < o->n / 10 + 1; i++) {	/* warm up */
		if (o->pre)
			o->pre(i);
		o->call(i);
		if (o->post)
			o->post(i);
	}
	o->failures = 0;
	if (!o->bracket) {
		read_all(a);
		for (i = 0; i < o->n; i++)
			o->call(i);
		read_all_rev(b);
		for (k = 0; k < NR_INSTR; k++)
			sum[k] = in_units(k, b[k] - a[k]);
	} else {
		for (i = 0; i < o->n; i++) {
			o->pre(i);
			read_all(a);
			o->call(i);
			read_all_rev(b);
			o->post(i);
			for (k = 0; k < NR_INSTR; k++)
				sum[k] += in_units(k, b[k] - a[k]);
		}
	}
	for (k = 0; k < NR_INSTR; k++)
		out[k] = sum[k] / o->n;
	if (o->teardown)
		o->teardown();
out:
	instr_on[I_PMC5] = on_pmc5;
	return err;
}


static void why_failed(struct op *o, int err)
{
	snprintf(o->why, sizeof(o->why), "%s%s",
		 o->needs_hw && !has_pmc ? "this machine has no PMU (perfctr counts the TSC only): " : "",
		 o->needs_hw && perf_hw_why[0] && o->setup != s_iresume ?
		 perf_hw_why : strerror(-err));
}

/*
 * Two passes.  First, with the pmc5 instrument (this thread's vperfctr
 * on PMC5), the operations that allow it, measured by every instrument;
 * then, with this thread's vperfctr gone (and with it perfctr's hold on
 * the PMU), the others by the clocks.  Rounds interleave the operations.
 */
static double samples[NR_OPS][NR_INSTR][ROUNDS];
static int failed_calls[NR_OPS], calls[NR_OPS];

static void run_pass(int pass)
{
	double v[NR_INSTR];
	int r, j, k, err;

	for (r = 0; r < ROUNDS; r++)
		for (j = 0; j < NR_OPS; j++) {
			struct op *o = &ops[j];

			if ((pass == 0) != !!o->pmc5_ok || o->why[0])
				continue;
			memset(v, 0, sizeof(v));
			err = measure(o, pass == 0 && instr_on[I_PMC5], v);
			if (err) {
				why_failed(o, err);
				continue;
			}
			for (k = 0; k < NR_INSTR; k++)
				samples[j][k][r] = v[k];
			failed_calls[j] += o->failures;
			calls[j] += o->n;
		}
}

static void report_ops(int had_pmc5)
{
	char name[128];
	int j, k;

	for (j = 0; j < NR_OPS; j++) {
		struct op *o = &ops[j];

		for (k = 0; k < NR_INSTR; k++) {
			int on = k == I_PMC5 ? had_pmc5 : instr_on[k];

			if (!on)
				continue;
			if (o->why[0])
				unobservable(o->name, instr_units[k],
					     instr_names[k], o->why);
			else if (calls[j] && failed_calls[j] == calls[j])
				unobservable(o->name, instr_units[k],
					     instr_names[k],
					     "every call failed: what was timed is the error path");
			else if (k == I_PMC5 && !o->pmc5_ok)
				unobservable(o->name, instr_units[k],
					     instr_names[k], o->no_pmc5);
			else
				figure(o->name, instr_units[k], instr_names[k],
				       samples[j][k], ROUNDS,
				       j < 2 ? NULL : o->bracket ?
				       "bracket_empty" : "loop_empty");
		}
		if (failed_calls[j]) {
			snprintf(name, sizeof(name), "%s_failed_calls", o->name);
			fact(name, (double)failed_calls[j] / calls[j], "fraction");
		}
	}
}

/* -- context switches ------------------------------------------------------ */

enum cfg { CS_NONE, CS_KEY_ON, CS_VPERFCTR_TSC, CS_VPERFCTR_PMC,
	   CS_PERF_TASK_CLOCK, CS_PERF_HW, NR_CFG };
static const char *const cfg_names[NR_CFG] = {
	"ctxsw_none", "ctxsw_key_on_unmonitored", "ctxsw_vperfctr_tsc_both",
	"ctxsw_vperfctr_pmc_both", "ctxsw_perf_task_clock_both",
	"ctxsw_perf_hw_instructions_both",
};

enum obs { O_CPU0, O_CLOCK, NR_OBS };

#define CS_WARM		100
#define CS_REPEATS	5

static int p1[2], p2[2], cs_rounds, echo_err;
static enum cfg cs_cfg;

static void pin0(void)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

/* Count this thread as the configuration says; 0 or -errno. */
static int monitor_self(enum cfg m)
{
	struct vperfctr_control c;
	int fd = 0;

	switch (m) {
	case CS_VPERFCTR_TSC:
		control_tsc(&c);
		fd = open_vperfctr(&c);
		break;
	case CS_VPERFCTR_PMC:
		if (control_pmc(&c))
			return -EOPNOTSUPP;
		fd = open_vperfctr(&c);
		break;
	case CS_PERF_TASK_CLOCK:
		fd = perf_task_clock(0);
		break;
	case CS_PERF_HW:
		fd = perf_hw_insns(0);
		break;
	default:
		break;
	}
	return fd < 0 ? -errno : 0;
}

static void *echo(void *arg)
{
	char b;
	int i;

	pin0();
	echo_err = monitor_self(cs_cfg);
	for (i = 0; i < CS_WARM + cs_rounds + 1; i++)
		if (read(p1[0], &b, 1) != 1 ||
		    (i < CS_WARM + cs_rounds && write(p2[1], &b, 1) != 1))
			exit(31);
	return NULL;
}

static int holder_pipe[2];

static void *holder(void *arg)
{
	struct vperfctr_control c;
	int fd;
	char b;

	control_tsc(&c);
	fd = open_vperfctr(&c);
	if (fd < 0)
		exit(34);
	if (read(holder_pipe[0], &b, 1) != 1)
		exit(35);
	close(fd);
	return NULL;
}

struct cs_result {
	int err;		/* -errno */
	int where;		/* 0 the configuration, 1 the observer */
	double v;		/* per switch */
};

static uint64_t observe(enum obs o, int ofd, int *multiplexed)
{
	uint64_t v[3];

	if (o == O_CLOCK)
		return icount ? tsc() : now_ns();
	if (read(ofd, v, sizeof(v)) != sizeof(v))
		exit(40);
	if (v[1] != v[2])
		*multiplexed = 1;
	return v[0];
}

static struct cs_result pingpong(enum cfg m, enum obs o)
{
	struct cs_result res = { 0 };
	int ofd = -1, i, mux = 0;
	uint64_t a, b;
	pthread_t t;
	char x = 'x';

	res.err = monitor_self(m);
	if (res.err)
		return res;
	if (o == O_CPU0) {
		ofd = perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS,
				0, 0, -1, 0,
				PERF_FORMAT_TOTAL_TIME_ENABLED |
				PERF_FORMAT_TOTAL_TIME_RUNNING);
		if (ofd < 0) {
			res.err = -errno;
			res.where = 1;
			return res;
		}
	}
	cs_cfg = m;
	if (pipe(p1) || pipe(p2))
		exit(32);
	pthread_create(&t, NULL, echo, NULL);
	for (i = 0; i < CS_WARM; i++)
		if (write(p1[1], &x, 1) != 1 || read(p2[0], &x, 1) != 1)
			exit(33);
	a = observe(o, ofd, &mux);
	for (i = 0; i < cs_rounds; i++)
		if (write(p1[1], &x, 1) != 1 || read(p2[0], &x, 1) != 1)
			exit(33);
	b = observe(o, ofd, &mux);
	if (write(p1[1], &x, 1) != 1)
		exit(33);
	pthread_join(t, NULL);
	if (echo_err) {
		res.err = echo_err;
		return res;
	}
	if (mux) {
		res.err = -EAGAIN;
		res.where = 2;
		return res;
	}
	res.v = (o == O_CLOCK && icount ? (b - a) / ticks_per_insn :
		 (double)(b - a)) / (2.0 * cs_rounds);
	return res;
}

/* Each run in a child process, so counters never leak across. */
static struct cs_result in_child(enum cfg m, enum obs o)
{
	struct cs_result res = { .err = -ECHILD };
	int p[2];
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
		res = pingpong(m, o);
		if (write(p[1], &res, sizeof(res)) != sizeof(res))
			_exit(39);
		_exit(0);
	}
	if (read(p[0], &res, sizeof(res)) != sizeof(res))
		res.err = -ECHILD;
	waitpid(pid, NULL, 0);
	close(p[0]);
	close(p[1]);
	return res;
}

static void switches(void)
{
	static double v[NR_CFG][NR_OBS][CS_REPEATS];
	static struct cs_result bad[NR_CFG][NR_OBS];
	int use[NR_OBS] = { !perf_hw_why[0], 1 };
	const char *oname[NR_OBS] = { "cpu0", icount ? "icount" : "wall" };
	const char *ounit = icount ? "instructions" : "ns";
	char why[256];
	int r, m, o;

	cs_rounds = icount ? 2000 : 20000;
	fact("ctxsw_round_trips", cs_rounds, "count");
	for (r = 0; r < CS_REPEATS; r++)
		for (m = 0; m < NR_CFG; m++)
			for (o = 0; o < NR_OBS; o++) {
				struct cs_result res;

				if (!use[o] || bad[m][o].err)
					continue;
				/*
				 * perfctr's static key and perf's
				 * perf_sched_events drop a second after
				 * the last user: no counters means none
				 * of the previous runs' either.
				 */
				if (m == CS_NONE && (r || o))
					sleep(2);
				res = in_child(m, o);
				if (res.err)
					bad[m][o] = res;
				v[m][o][r] = res.v;
			}
	for (m = 0; m < NR_CFG; m++)
		for (o = 0; o < NR_OBS; o++) {
			struct cs_result *b = &bad[m][o];

			if (!use[o]) {
				unobservable(cfg_names[m], "instructions",
					     oname[o], perf_hw_why);
				continue;
			}
			if (!b->err) {
				figure(cfg_names[m], o == O_CPU0 ?
				       "instructions" : ounit, oname[o],
				       v[m][o], CS_REPEATS, NULL);
				continue;
			}
			if (b->where == 2)
				snprintf(why, sizeof(why),
					 "the observer was multiplexed (time running < enabled)");
			else if (b->where == 1 && b->err == -EBUSY)
				snprintf(why, sizeof(why),
					 "perf cannot count while perfctr holds the PMU (perf_event_open: %s)",
					 strerror(-b->err));
			else if (b->where == 1)
				snprintf(why, sizeof(why),
					 "the observer cannot open: %s",
					 strerror(-b->err));
			else
				snprintf(why, sizeof(why),
					 "%sthe configuration cannot be set up: %s",
					 has_pmc ? "" : "no PMU here (TSC only): ",
					 strerror(-b->err));
			unobservable(cfg_names[m], o == O_CPU0 ? "instructions" :
				     ounit, oname[o], why);
		}
}

static int write_proc(const char *path, const char *v)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fputs(v, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

int main(void)
{
	const char *ic = getenv("PERFCTR_BENCH_ICOUNT");
	struct vperfctr_control c;

	if (syscall(__NR_perfctr_info, &info, sizeof(info), 0)) {
		fprintf(stderr, "perfctr_info: %s\n", strerror(errno));
		return 2;
	}
	has_pmc = info.cpu_type == PERFCTR_CPU_PPC64_BOOK3S;
	icount = ic && atoi(ic) == 1;
	pin0();
	/*
	 * perf throttles an event that overflows more than
	 * max_sample_rate / HZ times in a tick, and lowers the rate when
	 * its interrupts take long: the REFRESH cycle (an overflow every
	 * call) would measure a throttled event.  Lift both, as root.
	 */
	fact("perf_throttle_lifted",	/* the rate first: it is refused
					 * once the percent is 0 */
	     write_proc("/proc/sys/kernel/perf_event_max_sample_rate",
			"10000000") == 0 &&
	     write_proc("/proc/sys/kernel/perf_cpu_time_max_percent", "0") == 0,
	     "bool");
	probe_perf_hw();	/* before perfctr takes the PMU */
	if (control_pmc(&c))
		control_tsc(&c);
	vfd = open_vperfctr(&c);
	if (vfd < 0) {
		fprintf(stderr, "vperfctr: %s\n", strerror(errno));
		return 2;
	}
	st = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, vfd, 0);
	pfd = perf_task_clock(0);
	if (st == MAP_FAILED || pfd < 0) {
		fprintf(stderr, "mmap or perf_event_open: %s\n", strerror(errno));
		return 2;
	}
	instr_on[I_PMC5] = has_pmc;
	instr_on[I_ICOUNT] = icount;
	instr_on[I_WALL] = !icount;
	fact("counters_are_hardware", has_pmc, "bool");
	fact("icount", icount, "bool");
	fact("rounds", ROUNDS, "count");
	if (icount)
		calibrate_icount();
	run_pass(0);
	munmap((void *)st, sysconf(_SC_PAGESIZE));
	st = NULL;
	drop_vperfctr(vfd);
	vfd = -1;
	run_pass(1);
	report_ops(has_pmc);
	if (!ops[NR_OPS - 2].why[0])
		fact("rearm_vperfctr_iresume_rounds_not_suspended",
		     rearm_unverified[0], "count");
	if (!ops[NR_OPS - 1].why[0])
		fact("rearm_perf_ioc_refresh_rounds_still_counting",
		     rearm_unverified[1], "count");
	close(pfd);
	sleep(2);	/* the static key's decrement is deferred by a second */
	switches();
	return 0;
}
