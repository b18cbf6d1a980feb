// SPDX-License-Identifier: GPL-2.0
/*
 * A loop of a known instruction count, for perfex's check
 * (abi_checks/test_perfex.py): POWER's bdnz decrements CTR and branches,
 * one instruction an iteration; x86's dec/jnz, two.  Built static by the
 * host (pytools/progs.py), so an exec of it maps no shared library.
 */
#include <stdlib.h>

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], 0, 0) : 0;

	if (!n)
		return 0;
#if defined(__powerpc64__)
	asm volatile("mtctr %0\n1: bdnz 1b" : : "r"(n) : "ctr");
#elif defined(__x86_64__)
	asm volatile("1: dec %0\n jnz 1b" : "+r"(n));
#else
#error "no known loop for this arch"
#endif
	return 0;
}
