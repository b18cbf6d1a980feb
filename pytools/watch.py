# SPDX-License-Identifier: GPL-2.0
"""Progress of a guest run, read from its console line by line.

Pure: lines in, progress messages out (through @say), so the tools' tests
replay captured consoles.  It understands the in-guest runner's markers
(pytools.guest on vng guests, guest/init.c on initramfs guests), KUnit's
KTAP at boot, and each failing test as its line goes by.  A KVM guest is
also watched for QEMU's KVM errors: on_line() then returns the reason, and
ops.stream kills the guest at once.
"""

import re
import time
from typing import Callable, List, Optional

from .boot import kvm_failure

MARK = '### perfctr-guest'
_STAMP = re.compile(r'^\s*\[\s*\d+\.\d+\] ?')
_KUNIT_SUITE = re.compile(r'^\s{4}# Subtest: (\S+)')
_KUNIT_END = re.compile(r'^(not ok|ok) \d+ (\S+)')
_NOT_OK = re.compile(r'^\s*not ok \d+ (.+?)(?:\s+#\s*(.*))?$')
_PYTEST_FAIL = re.compile(r'^(\S+::\S+) (FAILED|ERROR)\b')


class GuestWatch:
	"""Turns console lines into progress; spots KVM failures."""

	def __init__(self, say: Callable[[str], None], kvm: bool = False,
		     clock: Callable[[], float] = time.monotonic) -> None:
		self.say = say
		self.kvm = kvm
		self.clock = clock
		self.start = clock()
		self.family = ''	# what runs now, for "still running"
		self.failures: List[str] = []
		self.last = ''
		self._quiet_said = 0.0

	def on_line(self, raw: str) -> Optional[str]:
		line = _STAMP.sub('', raw.rstrip('\r'))
		if line.strip():
			self.last = line.strip()
		if self.kvm:
			why = kvm_failure(line)
			if why:
				self.say(f'guest: {why}; stopping it')
				return why
		if MARK in line:
			self._marker(line[line.index(MARK) + len(MARK):].strip())
			return None
		m = _KUNIT_SUITE.match(line)
		if m:
			self._start(f'kunit {m.group(1)}')
			return None
		m = _KUNIT_END.match(line)
		if m and self.family == f'kunit {m.group(2)}':
			# a suite's own line, after its cases' (indented) lines
			self._end(self.family, m.group(1) == 'ok')
			return None
		m = _NOT_OK.match(line)
		if m and 'SKIP' not in (m.group(2) or '').upper() and \
		   'TODO' not in (m.group(2) or '').upper():
			self._fail(m.group(1))
			return None
		m = _PYTEST_FAIL.match(line)
		if m:
			self._fail(m.group(1))
		return None

	def on_quiet(self, seconds: float, last: str) -> None:
		"""Called by ops.stream every 15 s without output."""
		now = self._elapsed()
		what = f' ({self.family})' if self.family else ''
		self.say(f'guest: still running{what}, {now:.0f} s, quiet for '
			 f'{seconds:.0f} s, last line: {(last or self.last)[:100]}')

	def _elapsed(self) -> float:
		return self.clock() - self.start

	def _marker(self, rest: str) -> None:
		# pytools.guest: "start FAMILY NAME", "end FAMILY NAME RC",
		# "alive FAMILY NAME SECONDS"; init.c: "file NAME", "end",
		# "done"
		words = rest.split()
		if not words:
			return
		if words[0] == 'start' and len(words) >= 3:
			self._start(f'{words[1]} {words[2]}')
		elif words[0] == 'end' and len(words) >= 4:
			self._end(f'{words[1]} {words[2]}', words[3] in ('0', '4'),
				  f'exit status {words[3]}')
		elif words[0] == 'alive' and len(words) >= 4:
			self.say(f'guest: {words[1]} {words[2]} still running, '
				 f'{words[3]} s')
		elif words[0] == 'file' and len(words) >= 2:
			name = words[1]
			if name.startswith('kselftest-') and name.endswith('.tap'):
				self._start(f'kselftest {name[10:-4]}')
			else:
				self.family = ''
		elif words[0] == 'end' and self.family:
			self._end(self.family, True, '')
		elif words[0] == 'done':
			self.say(f'guest: done after {self._elapsed():.0f} s, '
				 f'{len(self.failures)} failing tests seen')

	def _start(self, what: str) -> None:
		self.family = what
		self.say(f'guest: {what} started at {self._elapsed():.0f} s')

	def _end(self, what: str, ok: bool, detail: str = '') -> None:
		state = 'ended' if ok else 'FAILED'
		extra = f' ({detail})' if detail and not ok else ''
		self.say(f'guest: {what} {state}{extra} at {self._elapsed():.0f} s')
		self.family = ''

	def _fail(self, name: str) -> None:
		where = f'{self.family}: ' if self.family else ''
		self.failures.append(f'{where}{name}')
		self.say(f'guest: FAIL {where}{name}')
