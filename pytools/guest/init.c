// SPDX-License-Identifier: GPL-2.0
/*
 * /init of the initramfs guests (arches without a virtme-ng root): mount
 * what the tests need, run every /tests/ *_test program (each bounded by
 * the timeout of /tests/settings, the collection's kselftest settings
 * file, as run_kselftest.sh bounds it) and then every /bench/ program
 * (inv bench), print each output and the kernel log
 * between markers on the console, power off.  Not PID 1 (a LAVA job's
 * shell runs it as /perfctr/run): the same run, then exit 0.
 * The host cuts the console log back into the files pytools.guest would
 * have written (see pytools/initramfs.py).  Static, no libc beyond it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MARK		"### perfctr-guest"
#define KMEMLEAK	"/sys/kernel/debug/kmemleak"
/* kselftest/runner.sh's default, where no settings file says otherwise */
#define DEFAULT_TIMEOUT	45
#define MAX_TESTS	64
/* A benchmark's bound (inv bench): not a test, no settings file */
#define BENCH_TIMEOUT	300

/*
 * The timeout=N line of the collection's settings file, times the debug
 * kernel's PERFCTR_TIMEOUT_SCALE (from the kernel command line), as
 * pytools.guest passes run_kselftest.sh --override-timeout.
 */
static int test_timeout(void)
{
	const char *scale = getenv("PERFCTR_TIMEOUT_SCALE");
	FILE *f = fopen("/tests/settings", "r");
	int timeout = DEFAULT_TIMEOUT;
	char line[128];

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "timeout=", 8))
			timeout = atoi(line + 8);
	if (f)
		fclose(f);
	if (scale && atof(scale) > 0)
		timeout = (int)(timeout * atof(scale));
	return timeout > 0 ? timeout : DEFAULT_TIMEOUT;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

static int run(const char *path, int timeout)
{
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	pid_t pid = fork();
	int status, waited = 0;

	if (pid == 0) {
		execl(path, path, (char *)NULL);
		printf("cannot run %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (waited++ > timeout * 10) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			printf("# perfctr: killed after %d s\n", timeout);
			return -1;
		}
		/* A heartbeat, so that a long test is not taken for a hang. */
		if (waited % 300 == 0) {
			printf(MARK " alive kselftest %s %d\n", name, waited / 10);
			fflush(stdout);
		}
		usleep(100000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Write a command to kmemleak (a scan runs before the write returns). */
static int kmemleak(const char *cmd)
{
	int fd = open(KMEMLEAK, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd);
	close(fd);
	return ok ? 0 : -1;
}

/* Copy a file to the console between markers, as @name. */
static void print_file(const char *path, const char *name)
{
	char buf[4096];
	ssize_t got;
	int fd = open(path, O_RDONLY);

	printf("%s file %s\n", MARK, name);
	fflush(stdout);
	if (fd < 0) {
		printf("# perfctr: cannot read %s: %s\n", path, strerror(errno));
	} else {
		while ((got = read(fd, buf, sizeof(buf))) > 0)
			fwrite(buf, 1, got, stdout);
		close(fd);
	}
	fflush(stdout);
	printf("%s end\n", MARK);
}

int main(void)
{
	int leakcheck;
	char *names[MAX_TESTS], path[512], *log;
	int n = 0, i, rcs[MAX_TESTS], len, timeout = test_timeout();
	struct dirent *d;
	DIR *dir;

	/*
	 * As /init, mount what the tests need.  Started from a shell (the
	 * test runner of a LAVA job, whose ramdisk's rcS mounted them),
	 * the same run, without the mounts and without the power-off.
	 */
	if (getpid() == 1) {
		mount("proc", "/proc", "proc", 0, NULL);
		mount("sysfs", "/sys", "sysfs", 0, NULL);
		mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
		mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The kernel's last console line may lack its newline. */
	putchar('\n');
	/*
	 * A debug kernel's kmemleak: forget what boot left unreferenced,
	 * so that only the tests' leaks count (as pytools.guest does).
	 */
	leakcheck = access(KMEMLEAK, F_OK) == 0;
	if (leakcheck) {
		kmemleak("scan");
		kmemleak("clear");
	}

	dir = opendir("/tests");
	while (dir && (d = readdir(dir)) && n < MAX_TESTS) {
		len = strlen(d->d_name);
		if (len > 5 && !strcmp(d->d_name + len - 5, "_test"))
			names[n++] = strdup(d->d_name);
	}
	qsort(names, n, sizeof(*names), cmp);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/tests/%s", names[i]);
		printf("%s file kselftest-%s.tap\n", MARK, names[i]);
		fflush(stdout);
		rcs[i] = run(path, timeout);
		fflush(stdout);
		printf("%s end\n", MARK);
	}

	dir = opendir("/bench");
	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/bench/%s", d->d_name);
		printf("%s file bench-%s.jsonl\n", MARK, d->d_name);
		fflush(stdout);
		run(path, BENCH_TIMEOUT);
		fflush(stdout);
		printf("%s end\n", MARK);
	}

	/* Scan twice: an object must look leaked in both. */
	if (leakcheck) {
		for (i = 0; i < 2; i++) {
			kmemleak("scan");
			sleep(1);
		}
		print_file(KMEMLEAK, "kmemleak.txt");
	}

	len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	log = malloc(len > 0 ? len + 1 : 1);
	len = log ? klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, len) : -1;
	printf("%s file dmesg.txt\n", MARK);
	if (len > 0) {
		log[len] = 0;
		fputs(log, stdout);
		if (log[len - 1] != '\n')
			putchar('\n');
	}
	printf("%s end\n", MARK);

	printf("%s file guest.json\n", MARK);
	printf("{\"families\": {\"kselftest\": {");
	for (i = 0; i < n; i++)
		printf("%s\"%s\": {\"rc\": %d, \"output\": \"kselftest-%s.tap\"}",
		       i ? ", " : "", names[i], rcs[i], names[i]);
	printf("}}}\n%s end\n", MARK);
	printf("%s done\n", MARK);
	fflush(stdout);
	if (getpid() != 1)
		return 0;
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
