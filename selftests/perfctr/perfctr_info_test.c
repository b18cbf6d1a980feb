// SPDX-License-Identifier: GPL-2.0
/*
 * perfctr_info(2): the normal path and every error path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "perfctr_syscalls.h"

#define BIG_MASK_BYTES	1024

FIXTURE(info) {
	struct perfctr_info info;
	long page;
	void *none;		/* a PROT_NONE page, for EFAULT */
	void *ro;		/* a read-only page */
};

FIXTURE_SETUP(info)
{
	memset(&self->info, 0, sizeof(self->info));
	self->page = sysconf(_SC_PAGESIZE);
	self->none = mmap(NULL, self->page, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->none);
	self->ro = mmap(NULL, self->page, PROT_READ,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->ro);
	if (sys_perfctr_info(&self->info, sizeof(self->info), 0) < 0) {
		if (errno == ENOSYS)
			SKIP(return, "perfctr_info(2) not in this kernel");
		if (errno == ENODEV)
			SKIP(return, "perfctr found no usable counters");
	}
}

FIXTURE_TEARDOWN(info)
{
	if (self->none && self->none != MAP_FAILED)
		munmap(self->none, self->page);
	if (self->ro && self->ro != MAP_FAILED)
		munmap(self->ro, self->page);
}

/* The current size is accepted and describes a sane driver. */
TEST_F(info, basic)
{
	struct perfctr_info *i = &self->info;

	ASSERT_EQ(0, sys_perfctr_info(i, sizeof(*i), 0)) TH_LOG("%m");
	EXPECT_EQ(PERFCTR_ABI_VERSION, i->abi_version);
	EXPECT_NE(0, i->driver_version[0]);
	EXPECT_NE(NULL, memchr(i->driver_version, 0, sizeof(i->driver_version)));
	EXPECT_GE(i->cpu_id_limit, sysconf(_SC_NPROCESSORS_CONF));
	EXPECT_EQ(0, i->cpumask_size % sizeof(long));
	EXPECT_GE(i->cpumask_size * 8, i->cpu_id_limit);
	EXPECT_EQ(0, i->__reserved);
	TH_LOG("driver %s, cpu_type %u, features %#llx, %u kHz, %u+%u counters",
	       i->driver_version, i->cpu_type,
	       (unsigned long long)i->cpu_features, i->cpu_khz,
	       i->nr_counters, i->nr_fixed_counters);
}

/* The CPU type and the counter fields agree with each other. */
TEST_F(info, cpu_type_consistent)
{
	struct perfctr_info *i = &self->info;

	ASSERT_EQ(0, sys_perfctr_info(i, sizeof(*i), 0));
	if (i->cpu_features & PERFCTR_FEATURE_TSC)
		EXPECT_GT(i->cpu_khz, 0);
	if (i->cpu_type == PERFCTR_CPU_GENERIC) {
		EXPECT_EQ(0, i->nr_counters);
		EXPECT_EQ(0, i->nr_fixed_counters);
		EXPECT_EQ(0, i->cpu_features & PERFCTR_FEATURE_RDPMC);
	} else {
		EXPECT_GT(i->nr_counters, 0);
		EXPECT_GE(i->counter_width, 32);
		EXPECT_LE(i->counter_width, 64);
		EXPECT_NE(0, i->cpu_features & PERFCTR_FEATURE_RDPMC);
	}
	EXPECT_EQ(0, i->cpu_features & ~(PERFCTR_FEATURE_TSC |
					  PERFCTR_FEATURE_RDPMC |
					  PERFCTR_FEATURE_PCINT));
}

/* Unknown flags are refused, never ignored. */
TEST_F(info, unknown_flags_einval)
{
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		EXPECT_EQ(-1, sys_perfctr_info(&self->info, sizeof(self->info),
					       1u << bit));
		EXPECT_EQ(EINVAL, errno) TH_LOG("flag bit %u", bit);
	}
}

/* A size below the first published version is EINVAL. */
TEST_F(info, size_too_small_einval)
{
	EXPECT_EQ(-1, sys_perfctr_info(&self->info, PERFCTR_INFO_SIZE_VER0 - 1, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, sys_perfctr_info(&self->info, 0, 0));
	EXPECT_EQ(EINVAL, errno);
}

/* A newer caller's larger struct with a zero tail works; the tail stays 0. */
TEST_F(info, larger_size_zero_tail)
{
	size_t size = sizeof(struct perfctr_info) + 64;
	unsigned char *buf = calloc(1, size);
	size_t k;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, sys_perfctr_info(buf, size, 0)) TH_LOG("%m");
	EXPECT_EQ(PERFCTR_ABI_VERSION, ((struct perfctr_info *)buf)->abi_version);
	for (k = sizeof(struct perfctr_info); k < size; k++)
		EXPECT_EQ(0, buf[k]) TH_LOG("tail byte %zu", k);
	free(buf);
}

/* A newer caller that set fields this kernel does not know gets E2BIG. */
TEST_F(info, larger_size_nonzero_tail_e2big)
{
	size_t size = sizeof(struct perfctr_info) + 8;
	unsigned char *buf = calloc(1, size);

	ASSERT_NE(NULL, buf);
	buf[size - 1] = 1;
	EXPECT_EQ(-1, sys_perfctr_info(buf, size, 0));
	EXPECT_EQ(E2BIG, errno);
	free(buf);
}

/* More than a page is E2BIG. */
TEST_F(info, size_over_page_e2big)
{
	unsigned char *buf = calloc(1, 2 * self->page);

	ASSERT_NE(NULL, buf);
	EXPECT_EQ(-1, sys_perfctr_info(buf, self->page + 1, 0));
	EXPECT_EQ(E2BIG, errno);
	free(buf);
}

/* NULL, unmapped and read-only structs are EFAULT. */
TEST_F(info, bad_pointers_efault)
{
	EXPECT_EQ(-1, sys_perfctr_info(NULL, sizeof(self->info), 0));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, sys_perfctr_info(self->none, sizeof(self->info), 0));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, sys_perfctr_info(self->ro, sizeof(self->info), 0));
	EXPECT_EQ(EFAULT, errno);
}

/* The reserved field must be zero on input. */
TEST_F(info, reserved_nonzero_einval)
{
	self->info.__reserved = 1;
	EXPECT_EQ(-1, sys_perfctr_info(&self->info, sizeof(self->info), 0));
	EXPECT_EQ(EINVAL, errno);
}

static int parse_cpu_list(const char *path, unsigned long *mask, size_t bytes)
{
	char buf[4096], *p;
	FILE *f = fopen(path, "r");
	size_t len;

	if (!f)
		return -1;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	memset(mask, 0, bytes);
	for (p = buf; *p && *p != '\n';) {
		unsigned long a = strtoul(p, &p, 10), b = a, c;

		if (*p == '-')
			b = strtoul(p + 1, &p, 10);
		for (c = a; c <= b && c < bytes * 8; c++)
			mask[c / (8 * sizeof(long))] |= 1UL << (c % (8 * sizeof(long)));
		if (*p == ',')
			p++;
	}
	return 0;
}

/* The online mask is /sys/devices/system/cpu/online; forbidden is a subset. */
TEST_F(info, cpumasks)
{
	unsigned long cpus[BIG_MASK_BYTES / sizeof(long)];
	unsigned long forbidden[BIG_MASK_BYTES / sizeof(long)];
	unsigned long online[BIG_MASK_BYTES / sizeof(long)];
	size_t w;

	memset(cpus, 0xa5, sizeof(cpus));
	memset(forbidden, 0xa5, sizeof(forbidden));
	self->info.cpus = (uintptr_t)cpus;
	self->info.forbidden_cpus = (uintptr_t)forbidden;
	self->info.cpumask_size = sizeof(cpus);
	ASSERT_EQ(0, sys_perfctr_info(&self->info, sizeof(self->info), 0))
		TH_LOG("%m");
	ASSERT_EQ(0, parse_cpu_list("/sys/devices/system/cpu/online", online,
				    sizeof(online)));
	for (w = 0; w < self->info.cpumask_size / sizeof(long); w++) {
		EXPECT_EQ(online[w], cpus[w]) TH_LOG("word %zu", w);
		EXPECT_EQ(0, forbidden[w] & ~cpus[w]) TH_LOG("word %zu", w);
	}
	/* Bytes past the kernel's mask size are not written. */
	EXPECT_EQ(0xa5a5a5a5a5a5a5a5UL & ~0UL,
		  cpus[self->info.cpumask_size / sizeof(long)]);
}

/* A mask buffer too small is EOVERFLOW, with the needed size written back. */
TEST_F(info, cpumask_too_small_eoverflow)
{
	unsigned long one = 0;
	struct perfctr_info *i = &self->info;

	i->cpus = (uintptr_t)&one;
	i->cpumask_size = 1;
	EXPECT_EQ(-1, sys_perfctr_info(i, sizeof(*i), 0));
	EXPECT_EQ(EOVERFLOW, errno);
	EXPECT_GE(i->cpumask_size, sizeof(long));
	EXPECT_EQ(PERFCTR_ABI_VERSION, i->abi_version);
	EXPECT_EQ(0, one);
}

/* A mask pointer into unmapped memory is EFAULT. */
TEST_F(info, cpumask_bad_pointer_efault)
{
	self->info.forbidden_cpus = (uintptr_t)self->none;
	self->info.cpumask_size = BIG_MASK_BYTES;
	EXPECT_EQ(-1, sys_perfctr_info(&self->info, sizeof(self->info), 0));
	EXPECT_EQ(EFAULT, errno);
}

/* No mask pointers: any cpumask_size is fine and nothing is written. */
TEST_F(info, no_masks_any_size)
{
	self->info.cpumask_size = 0;
	EXPECT_EQ(0, sys_perfctr_info(&self->info, sizeof(self->info), 0));
	EXPECT_GE(self->info.cpumask_size, sizeof(long));
}

TEST_HARNESS_MAIN
