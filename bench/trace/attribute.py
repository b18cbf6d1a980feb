#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Name the functions of a gdb_trace.py trace.

  attribute.py TRACE.json SYSTEM.map CALLS-BINARY [CALL] [--runs]

Per call: the instructions up to the first interrupt the kernel replays
(README.md says why the stepping makes those appear), then per function
(or, with --runs, in order as runs of one function).  User-space
functions are prefixed U:.
"""

import bisect
import collections
import json
import subprocess
import sys

INTERRUPT = ('irq_enter', '__replay_soft_interrupts', 'replay_soft_interrupts')


def symbols(system_map, binary, nm='powerpc64le-linux-gnu-nm'):
	syms = []
	with open(system_map) as f:
		for line in f:
			a, t, n = line.split()[:3]
			if t in 'tTwW':
				syms.append((int(a, 16), n))
	for line in subprocess.run([nm, binary], capture_output=True,
				   text=True, check=True).stdout.splitlines():
		p = line.split()
		if len(p) == 3 and p[1] in 'tTwW':
			syms.append((int(p[0], 16), 'U:' + p[2]))
	syms.sort()
	return [a for a, _ in syms], [n for _, n in syms]


def runs(pcs, addrs, names):
	out = []
	for pc in pcs:
		i = bisect.bisect_right(addrs, pc) - 1
		n = names[i] if i >= 0 else '?'
		if out and out[-1][0] == n:
			out[-1][1] += 1
		else:
			out.append([n, 1])
	return out


def until_interrupt(rs):
	for i, (n, _) in enumerate(rs):
		if n in INTERRUPT:
			return rs[:i], True
	return rs, False


def main(argv):
	as_runs = '--runs' in argv
	args = [a for a in argv if a != '--runs']
	trace = json.load(open(args[0]))
	addrs, names = symbols(args[1], args[2])
	for call in ([args[3]] if len(args) > 3 else trace):
		rs, cut = until_interrupt(runs(trace[call], addrs, names))
		total = sum(c for _, c in rs)
		print(f'== {call}: {total} instructions'
		      + (' up to the first replayed interrupt' if cut else ''))
		if as_runs:
			for n, c in rs:
				print(f'{c:6d} {n}')
			continue
		per = collections.Counter()
		for n, c in rs:
			per[n] += c
		for n, c in per.most_common():
			print(f'{c:6d} {n}')


if __name__ == '__main__':
	main(sys.argv[1:])
