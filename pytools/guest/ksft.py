# SPDX-License-Identifier: GPL-2.0
"""What run_kselftest.sh printed, program by program.

The kernel's runner (tools/testing/selftests/kselftest/runner.sh) prints
one TAP stream for a collection: for each program a header line
("# selftests: perfctr: NAME"), the program's own output with "# "
before every line, and a result line ("ok N selftests: perfctr: NAME",
"... # SKIP", "not ok N ... # exit=RC", "not ok N ... # TIMEOUT S
seconds").  This cuts it back into each program's own KTAP and exit
status, the shape the host's collector reads for every guest
(pytools/collect.py; the initramfs guests' /init writes the same).
Nothing is judged here: a program's verdict is the host's to make from
its TAP and its status.  Standard library only: it runs in the guest.
"""

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Union

SKIP_RC = 4	# kselftest's KSFT_SKIP, runner.sh's skip_rc

_HEADER = re.compile(r'^# selftests: (?P<coll>\S+): (?P<name>\S+)$')
_RESULT = re.compile(r'^(?P<not>not )?ok \d+ selftests: (?P<coll>\S+): '
		     r'(?P<name>\S+)(?: # (?P<directive>.*))?$')

Status = Union[int, str]	# an exit status, 'timeout' or 'cannot-run'


@dataclass
class Program:
	name: str
	rc: Status = 'cannot-run'
	lines: List[str] = field(default_factory=list)
	seconds: float = 0.0


def status(ok: bool, directive: str) -> Status:
	"""The program's exit status, as the result line tells it."""
	d = (directive or '').strip()
	if d.startswith('TIMEOUT'):
		return 'timeout'
	m = re.match(r'exit=(-?\d+)', d)
	if m:
		return int(m.group(1))
	if ok:
		return SKIP_RC if d.upper().startswith('SKIP') else 0
	return 'cannot-run'	# "file missing", "not executable"


def _unprefix(line: str) -> str:
	"""Undo tap_prefix (prefix.pl or sed 's/^/# /')."""
	if line.startswith('# '):
		return line[2:]
	return line[1:] if line == '#' else line


def split(lines: Iterable[str], collection: str,
	  times: Dict[int, float] = None) -> Dict[str, Program]:
	"""@lines of run_kselftest.sh's output -> each program of
	@collection, in the order run.  @times (line index -> seconds since
	the start), if given, times each program from its header to its
	result.  A program whose result line never came (the runner itself
	was killed) keeps 'cannot-run' and what it printed."""
	progs: Dict[str, Program] = {}
	cur = None
	start = 0.0
	for i, raw in enumerate(lines):
		line = raw.rstrip('\n')
		h = _HEADER.match(line)
		if h and h['coll'] == collection:
			cur = progs.setdefault(h['name'], Program(h['name']))
			start = (times or {}).get(i, 0.0)
			continue
		r = _RESULT.match(line)
		if r and r['coll'] == collection:
			p = progs.setdefault(r['name'], Program(r['name']))
			p.rc = status(not r['not'], r['directive'])
			p.seconds = round((times or {}).get(i, 0.0) - start, 3)
			cur = None
			continue
		if cur is not None:
			cur.lines.append(_unprefix(line))
	return progs
