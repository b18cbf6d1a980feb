// SPDX-License-Identifier: GPL-2.0
/*
 * Context-switch cost with and without virtual counters: two threads
 * pinned to one CPU bounce a byte through two pipes, ROUNDS times, in
 * four configurations, in one run (so only the ratios mean anything):
 *
 *   idle     no vperfctr anywhere: perfctr's static key is off
 *   key-on   a third thread holds a vperfctr, the two do not: the hooks
 *            are live but find no counters
 *   counted  both threads count the TSC
 *
 * Prints one JSON object per configuration: ns per switch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perfctr.h>

#define ROUNDS	20000

static int counted;
static int p1[2], p2[2];

static int count_self(void)
{
	struct vperfctr_control c;
	int fd = syscall(__NR_vperfctr_open, 0, VPERFCTR_OPEN_CREAT);

	if (fd < 0)
		return -1;
	memset(&c, 0, sizeof(c));
	c.cpu_control.tsc_on = 1;
	if (syscall(__NR_vperfctr_control, fd, &c, sizeof(c), 0))
		return -1;
	return fd;
}

static void pin0(void)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

static void *echo(void *arg)
{
	char b;
	int i;

	pin0();
	if (counted && count_self() < 0)
		exit(2);
	for (i = 0; i < ROUNDS; i++) {
		if (read(p1[0], &b, 1) != 1 || write(p2[1], &b, 1) != 1)
			exit(3);
	}
	return NULL;
}

static int stop_holder[2];

static void *holder(void *arg)
{
	int fd = count_self();
	char b;

	if (fd < 0)
		exit(4);
	if (read(stop_holder[0], &b, 1) != 1)
		exit(8);
	close(fd);	/* the last fd: the vperfctr goes, the key follows */
	return NULL;
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static double run(int count)
{
	pthread_t t;
	double t0, t1;
	char b = 'x';
	int i;

	counted = count;
	if (pipe(p1) || pipe(p2))
		exit(5);
	pin0();
	if (count && count_self() < 0)
		exit(6);
	pthread_create(&t, NULL, echo, NULL);
	t0 = now_ns();
	for (i = 0; i < ROUNDS; i++) {
		if (write(p1[1], &b, 1) != 1 || read(p2[0], &b, 1) != 1)
			exit(7);
	}
	t1 = now_ns();
	pthread_join(t, NULL);
	close(p1[0]); close(p1[1]); close(p2[0]); close(p2[1]);
	return (t1 - t0) / (2.0 * ROUNDS);	/* two switches a round */
}

int main(void)
{
	double idle, keyon, both, idle2;
	pthread_t h;

	run(0);		/* warm up */
	idle = run(0);
	if (pipe(stop_holder))
		exit(9);
	pthread_create(&h, NULL, holder, NULL);
	usleep(100000);
	keyon = run(0);
	both = run(1);
	if (write(stop_holder[1], "x", 1) != 1)
		exit(10);
	pthread_join(h, NULL);
	sleep(2);	/* the key's decrement is deferred by a second */
	idle2 = run(0);
	printf("{\"name\": \"ctxsw_idle_after\", \"value\": %.1f, \"unit\": \"ns\"}\n", idle2);
	printf("{\"name\": \"ctxsw_idle\", \"value\": %.1f, \"unit\": \"ns\"}\n", idle);
	printf("{\"name\": \"ctxsw_key_on_unmonitored\", \"value\": %.1f, \"unit\": \"ns\"}\n", keyon);
	printf("{\"name\": \"ctxsw_counted\", \"value\": %.1f, \"unit\": \"ns\"}\n", both);
	printf("{\"name\": \"ctxsw_counted_over_idle\", \"value\": %.3f, \"unit\": \"ratio\"}\n", both / idle);
	printf("{\"name\": \"ctxsw_key_on_over_idle\", \"value\": %.3f, \"unit\": \"ratio\"}\n", keyon / idle);
	return 0;
}
