# SPDX-License-Identifier: GPL-2.0
"""perfex: run a command under virtual counters and print the counts.

    perfex [--inherit] [-e EVENT ...] [--json] -- COMMAND [ARGS...]

Like the perfex of the original perfctr package: the command runs in a
child whose counters are set up (remote control, from this process)
before it execs, so nothing of perfex itself is counted.  The time-stamp
counter is always counted; -e adds a hardware counter, where the CPU has
counters: "instructions" (user mode; "instructions:k" adds kernel mode)
on any CPU the binding knows (pytools/abi.py), or a raw EVNTSEL[@PMC]
(x86: the IA32_PERFEVTSELx value without the enable bit, e.g. 0x100c0
for user-mode instructions retired; POWER: 0@4 for PMC5, instructions).
With --inherit, the command's own children are counted too and reported
as "children".  Exit status is the command's.
"""

import argparse
import json
import os
import sys

from . import abi


NAMED = ('instructions', 'instructions:k')


def parse_event(text: str, slot: int, info=None, headers=None):
	"""(evntsel, pmc_map) of -e TEXT; a named event needs the CPU's
	perfctr_info and the headers, and a CPU that has it."""
	if text in NAMED:
		ev = abi.instructions_event(info, headers,
					    kernel=text.endswith(':k')) \
			if info is not None else None
		if ev is None:
			raise SystemExit(
				f'perfex: {text}: this CPU has no counter for it '
				f'(perfctr cpu_type {getattr(info, "cpu_type", "?")}, '
				f'{getattr(info, "nr_counters", 0)} counters)')
		return ev
	sel, _, pmc = text.partition('@')
	try:
		return int(sel, 0), int(pmc, 0) if pmc else slot
	except ValueError:
		raise SystemExit(f'perfex: bad event {text!r}: want '
				 f'{" or ".join(NAMED)} or EVNTSEL[@PMC], '
				 'numbers in C syntax (0x100c0@0)')


def build_control(events, inherit: bool) -> abi.VperfctrControl:
	c = abi.tsc_control(flags=1 if inherit else 0)
	for i, (sel, pmc) in enumerate(events):
		c.cpu_control.evntsel[i] = sel
		c.cpu_control.pmc_map[i] = pmc
	c.cpu_control.nractrs = len(events)
	return c


def report(sums, info, events, inherit: bool) -> dict:
	out = {'tsc': sums.self.tsc,
	       'ms': sums.self.tsc / info.cpu_khz if info.cpu_khz else None,
	       'pmc': [sums.self.pmc[i] for i in range(len(events))]}
	if inherit:
		out['children'] = {'tsc': sums.children.tsc,
				   'pmc': [sums.children.pmc[i]
					   for i in range(len(events))]}
	return out


def main(argv=None) -> int:
	ap = argparse.ArgumentParser(prog='perfex', description=__doc__.split('\n\n')[0])
	ap.add_argument('-e', '--event', action='append', default=[],
			help='instructions, instructions:k, or EVNTSEL[@PMC]: '
			     'a raw event on a hardware counter')
	ap.add_argument('--inherit', action='store_true',
			help="count the command's children too")
	ap.add_argument('--json', action='store_true', help='print JSON')
	ap.add_argument('command', nargs=argparse.REMAINDER)
	args = ap.parse_args(argv)
	cmd = args.command[1:] if args.command[:1] == ['--'] else args.command
	if not cmd:
		ap.error('no command given: perfex [options] -- COMMAND [ARGS...]')
	try:
		pc = abi.Perfctr()
		info = pc.info()
	except (FileNotFoundError, LookupError) as e:
		print(f'perfex: {e}', file=sys.stderr)
		return 2
	except OSError as e:
		print(f'perfex: perfctr_info: {e.strerror}; is this a perfctr '
		      'kernel?', file=sys.stderr)
		return 2
	events = [parse_event(e, i, info, pc.h)
		  for i, e in enumerate(args.event)]
	control = build_control(events, args.inherit)

	go_r, go_w = os.pipe()
	pid = os.fork()
	if pid == 0:
		os.close(go_w)
		if os.read(go_r, 1) != b'g':
			os._exit(127)
		try:
			os.execvp(cmd[0], cmd)
		except OSError as e:
			print(f'perfex: {cmd[0]}: {e.strerror}', file=sys.stderr)
			os._exit(127)
	os.close(go_r)
	try:
		fd = pc.open(pid, 0x1)	# VPERFCTR_OPEN_CREAT
		pc.control(fd, control)
	except OSError as e:
		os.kill(pid, 9)
		os.waitpid(pid, 0)
		print(f'perfex: cannot set up the counters: {e.strerror}',
		      file=sys.stderr)
		return 2
	os.write(go_w, b'g')
	os.close(go_w)
	_, status = os.waitpid(pid, 0)
	sums = pc.read(fd)
	os.close(fd)
	out = report(sums, info, events, args.inherit)
	if args.json:
		print(json.dumps(out))
	else:
		ms = f' ({out["ms"]:.3f} ms at {info.cpu_khz} kHz)' \
			if out['ms'] is not None else ''
		print(f'tsc\t{out["tsc"]}{ms}', file=sys.stderr)
		for i, v in enumerate(out['pmc']):
			print(f'pmc{i}\t{v}\t({args.event[i]}: evntsel '
			      f'{events[i][0]:#x} on counter {events[i][1]:#x})',
			      file=sys.stderr)
		if args.inherit:
			print(f'children tsc\t{out["children"]["tsc"]}',
			      file=sys.stderr)
	return os.waitstatus_to_exitcode(status) & 0xff if \
		os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == '__main__':
	sys.exit(main())
