# SPDX-License-Identifier: GPL-2.0
"""Step a ppc64le guest through calls.c's calls, one instruction at a time.

Run by gdb-multiarch against QEMU's gdbstub (see README.md):

  TRACE_BINARY=.../calls TRACE_OUT=trace.json gdb-multiarch -batch -x gdb_trace.py

For each call (the instructions between two marker functions) it keeps
the program counter of every instruction, the shortest of TRACE_ROUNDS
rounds, in TRACE_OUT as {"mark_vread": [pc, ...], ...}.  A round longer
than TRACE_CAP instructions is cut there (see README.md: interrupts).
"""

import json
import os
import subprocess

import gdb

BINARY = os.environ['TRACE_BINARY']
OUT = os.environ.get('TRACE_OUT', 'trace.json')
ROUNDS = int(os.environ.get('TRACE_ROUNDS', '3'))
CAP = int(os.environ.get('TRACE_CAP', '6000'))
NM = os.environ.get('TRACE_NM', 'powerpc64le-linux-gnu-nm')
ORDER = ['mark_vread', 'mark_pread', 'mark_getpid', 'mark_vctl',
	 'mark_penable', 'mark_fast', 'mark_end']


def markers():
	out = subprocess.run([NM, BINARY], capture_output=True, text=True,
			     check=True).stdout
	return {n: int(a, 16) for a, _, n in
		(line.split() for line in out.splitlines()
		 if len(line.split()) == 3) if n.startswith('mark_')}


def run_to(addr):
	gdb.execute('break *%#x' % addr, to_string=True)
	gdb.execute('continue', to_string=True)
	gdb.execute('delete', to_string=True)


def pc():
	return int(gdb.parse_and_eval('$pc')) & 0xffffffffffffffff


def main():
	marks = markers()
	gdb.execute('set architecture powerpc:common64')
	gdb.execute('set endian little')
	gdb.execute('set pagination off')
	gdb.execute('target remote %s' % os.environ.get('TRACE_GDBSTUB', ':1234'))
	best = {}
	for _ in range(ROUNDS):
		run_to(marks[ORDER[0]])
		for cur, nxt in zip(ORDER, ORDER[1:]):
			pcs, stop = [], marks[nxt]
			while len(pcs) <= CAP:
				gdb.execute('stepi', to_string=True)
				if pc() == stop:
					break
				pcs.append(pc())
			else:
				run_to(stop)
			if cur not in best or len(pcs) < len(best[cur]):
				best[cur] = pcs
			print(f'{cur}: {len(pcs)} instructions', flush=True)
	with open(OUT, 'w') as f:
		json.dump(best, f)
	gdb.execute('detach')


main()
