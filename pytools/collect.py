# SPDX-License-Identifier: GPL-2.0
"""Turn what the guest left behind into TestCases.

KTAP (KUnit at boot, kselftests) is parsed with the kernel tree's own
tools/testing/kunit/kunit_parser.py; pytest's JUnit XML with ElementTree;
the kernel log is scanned for reports.  Nothing here raises on bad input:
a missing or garbled file becomes a failing TestCase that says so.
"""

import contextlib
import importlib
import inspect
import io
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterable, List, Optional

from .results import Status, TestCase

# Reports that fail a run wherever they appear in the kernel log.
KERNEL_REPORTS = [
	r'\bBUG: ', r'\bWARNING: ', r'\bOops\b', r'Kernel panic',
	r'kernel BUG at', r'general protection fault', r'UBSAN: ',
	r'KASAN: ', r'possible circular locking dependency',
	r'possible recursive locking', r'inconsistent lock state',
	r'suspicious RCU usage', r'unreferenced object 0x',
	r'INFO: task .* blocked for more than', r'rcu: INFO: ',
	r'Call Trace:',
]
_REPORT_RE = re.compile('|'.join(KERNEL_REPORTS))


def load_kunit_parser(tree: Path):
	"""Import kunit_parser from the tree under test."""
	kdir = tree / 'tools' / 'testing' / 'kunit'
	if not (kdir / 'kunit_parser.py').exists():
		return None
	# The parser imports its siblings by name: make sure this tree's
	# copies are the ones loaded, not another tree's from earlier.
	for name in ('kunit_parser', 'kunit_printer'):
		mod = sys.modules.get(name)
		if mod is not None and \
		   Path(getattr(mod, '__file__', '') or '').parent != kdir:
			del sys.modules[name]
	if str(kdir) in sys.path:
		sys.path.remove(str(kdir))
	sys.path.insert(0, str(kdir))
	return importlib.import_module('kunit_parser')


# KUnit's lines come from the console, after a printk timestamp.
_SKIP = re.compile(r'^\s*(?:\[[^]]*\]\s*)?ok \d+ (.+?) # SKIP ?(.*)$')


# The lines that say why a test failed, put first in its message (the
# summary shows a failure's first lines, and a test that printed a lot
# before failing would otherwise hide them): kselftest_harness.h's
# "file.c:line:test:" assertions and TH_LOG()s, its timeout, KUnit's
# expectation and assertion failures.
_WHY = re.compile(r'^#?\s*[\w.-]+\.c:\d+:|EXPECTATION FAILED|ASSERTION FAILED|'
		  r'terminated by timeout|Test terminated')


def _flatten(parser, test, prefix: str, family: str,
	     out: List[TestCase], reasons: dict) -> None:
	name = f'{prefix}.{test.name}' if prefix else test.name
	if test.subtests:
		for sub in test.subtests:
			_flatten(parser, sub, name, family, out, reasons)
		if test.counts.errors and not test.ok_status():
			out.append(TestCase(family, name, Status.FAIL,
					    'KTAP parse errors:\n' +
					    '\n'.join(test.log[-30:])))
		return
	st = test.status
	if st == parser.TestStatus.SUCCESS:
		status, msg = Status.PASS, ''
	elif st == parser.TestStatus.SKIPPED:
		status = Status.SKIP
		msg = reasons.get(test.name) or 'skipped, no reason given'
	else:
		status = Status.FAIL
		why = [l for l in test.log if _WHY.search(l)][:8]
		msg = '\n'.join([st.name] + why + (['--- log:'] if why else []) +
				 test.log[-40:])
	out.append(TestCase(family, name, status, msg))


def parse_ktap(lines: Iterable[str], family: str, top: str,
	       parser, quiet: bool = True) -> List[TestCase]:
	lines = list(lines)
	if parser is None:
		return [TestCase(family, top, Status.FAIL,
				 'no tools/testing/kunit/kunit_parser.py in '
				 'the tree under test: cannot parse KTAP')]
	sink = io.StringIO()
	with contextlib.redirect_stdout(sink) if quiet else \
	     contextlib.nullcontext():
		if len(inspect.signature(parser.parse_run_tests).parameters) > 1:
			# newer kunit_parser (7.x) takes the printer to use
			printer = sys.modules['kunit_printer'].Printer(
				print=True, output=sink if quiet else sys.stdout)
			test = parser.parse_run_tests(lines, printer)
		else:
			old = getattr(parser.stdout, '_output', None)
			if quiet and old is not None:
				parser.stdout._output = sink
			try:
				test = parser.parse_run_tests(lines)
			finally:
				if quiet and old is not None:
					parser.stdout._output = old
	if test.status in (parser.TestStatus.FAILURE_TO_PARSE_TESTS,
			   parser.TestStatus.NO_TESTS) and not test.subtests:
		return [TestCase(family, top, Status.FAIL,
				 f'no KTAP results found ({test.status.name})'
				 '\n' + '\n'.join(lines[-30:]))]
	out: List[TestCase] = []
	reasons = {m.group(1): m.group(2).strip()
		   for m in map(_SKIP.match, lines) if m}
	if test.name in ('', 'main'):
		for sub in test.subtests:
			_flatten(parser, sub, top, family, out, reasons)
	else:
		_flatten(parser, test, top, family, out, reasons)
	if test.counts.errors and not out:
		out.append(TestCase(family, top, Status.FAIL,
				    'KTAP parse errors:\n' + sink.getvalue()[-2000:]))
	if test.expected_count and len(test.subtests) < test.expected_count:
		out.append(TestCase(family, f'{top}.plan', Status.FAIL,
				    f'planned {test.expected_count} tests, '
				    f'{len(test.subtests)} reported (crashed?)'))
	return out


def parse_pytest_junit(path: Path, family: str = 'pytest') -> List[TestCase]:
	if not path.exists():
		return [TestCase(family, 'pytest', Status.FAIL,
				 f'{path.name} missing: pytest did not run '
				 'to the end')]
	try:
		root = ET.parse(path).getroot()
	except ET.ParseError as e:
		return [TestCase(family, 'pytest', Status.FAIL,
				 f'{path.name} is not valid XML: {e}')]
	out = []
	for tc in root.iter('testcase'):
		mod = tc.get('classname', '').split('.')[-1]
		name = f'{mod}::{tc.get("name")}'
		fail = tc.find('failure')
		if fail is None:
			fail = tc.find('error')
		skip = tc.find('skipped')
		if fail is not None:
			out.append(TestCase(family, name, Status.FAIL,
					    (fail.get('message') or '') + '\n' +
					    (fail.text or '')[-3000:]))
		elif skip is not None:
			out.append(TestCase(family, name, Status.SKIP,
					    skip.get('message') or ''))
		else:
			out.append(TestCase(family, name, Status.PASS))
	if not out:
		out.append(TestCase(family, 'pytest', Status.FAIL,
				    'pytest collected no tests'))
	return out


# vperfctr_fault_test brackets its injected allocation failures with
# these; between them the page allocator's own warning about a failure
# (a "page allocation failure" line and its stack) is what the test asked
# for.  Nothing else is excused: a WARN, a KASAN or lockdep report, any
# other stack between the markers still fails the run.
FAULT_BEGIN = 'perfctr-fault-test: injecting allocation failures'
FAULT_END = 'perfctr-fault-test: injections done'


def _injected_alloc_failure(lines: List[str], i: int) -> bool:
	"""Is the "Call Trace:" at @i the stack of warn_alloc()?"""
	return 'Call Trace:' in lines[i] and \
		any('page allocation failure:' in l for l in lines[max(0, i - 5):i])


def kernel_reports(lines: Iterable[str]) -> List[str]:
	"""Lines of the kernel log that report a bug, with some context."""
	lines = list(lines)
	hits = []
	injecting = False
	for i, line in enumerate(lines):
		if FAULT_BEGIN in line:
			injecting = True
		elif FAULT_END in line:
			injecting = False
		if injecting and _injected_alloc_failure(lines, i):
			continue
		if _REPORT_RE.search(line):
			hits.append('\n'.join(l.rstrip()
					      for l in lines[i:i + 8]))
	return hits


_KLINE = re.compile(r'^\[\s*\d+\.\d+\]')


def kernel_only(console: List[str]) -> List[str]:
	"""The kernel's lines of a console log (PRINTK_TIME stamps them)."""
	return [l for l in console if _KLINE.match(l)]


def kernel_log_case(lines: Iterable[str], source: str,
		    complete: bool = True) -> TestCase:
	"""The kernel log's verdict.  A log that is not @complete (the guest
	never finished) can show a report, but its silence proves nothing:
	then no report is a SKIP, never a PASS."""
	lines = list(lines)
	hits = kernel_reports(lines)
	name = 'no WARN/BUG/Oops/panic/KASAN/lockdep/UBSAN reports'
	if hits:
		return TestCase('kernel-log', name, Status.FAIL,
				f'{len(hits)} report(s) in {source}:\n' +
				'\n---\n'.join(hits[:5]))
	if not complete:
		return TestCase('kernel-log', name, Status.SKIP,
				'not checked: the guest never finished, so its '
				f'kernel log is incomplete ({len(lines)} kernel '
				f'lines in {source}, none of them a report)')
	return TestCase('kernel-log', name, Status.PASS)


NO_KUNIT_REASON = ('no KUnit suite is built at this point of the series '
		   'for this arch (a later patch adds one)')
NO_USERSPACE_REASON = ('not at this point of the series: the system calls '
		       'they need, or the kselftests themselves, come with '
		       'a later patch; KUnit and the kernel log only')


def collect(outdir: Path, console_log: Path, tree: Path,
	    expect_pytest: bool = True,
	    userspace: bool = True, kunit: bool = True,
	    stopped: str = '') -> List[TestCase]:
	"""Every family's TestCases.  @stopped is why the tools killed the
	guest, if they did (silence, timeout, a KVM error): it heads the
	failure when the guest never finished."""
	parser = load_kunit_parser(tree)
	tests: List[TestCase] = []
	dmesg = outdir / 'dmesg.txt'
	console = console_log.read_text(errors='replace').splitlines() \
		if console_log.exists() else []
	guest_json = outdir / 'guest.json'
	if not guest_json.exists():
		tail = '\n'.join(console[-40:])
		why = f'killed: {stopped}' if stopped else \
			'panic, hang or boot failure'
		tests.append(TestCase('boot', 'guest ran the tests', Status.FAIL,
				      f'the guest never finished its test run '
				      f'({why}); the end of the console log:\n'
				      f'{tail}'))
		tests.append(kernel_log_case(kernel_only(console),
					     console_log.name, complete=False))
		return tests
	kernel_lines = dmesg.read_text(errors='replace').splitlines() \
		if dmesg.exists() else console
	ktap = parse_ktap(kernel_lines, 'kunit', 'kunit', parser)
	if not kunit and [c.name for c in ktap] == ['kunit'] and \
	   ktap[0].status is Status.FAIL:
		# nothing to find, and nothing found: not a failure
		ktap = [TestCase('kunit', 'kunit', Status.SKIP, NO_KUNIT_REASON)]
	tests += ktap
	summary = json.loads(guest_json.read_text())
	for name, run in sorted(summary['families'].get('kselftest', {})
				.items()):
		tap_path = outdir / run['output']
		if not tap_path.exists():
			tests.append(TestCase('kselftest', name, Status.FAIL,
					      f'{tap_path.name} missing: the '
					      'guest lost its output (exit status '
					      f'{run["rc"]})'))
			continue
		tap = tap_path.read_text(errors='replace')
		cases = parse_ktap(tap.splitlines(), 'kselftest', name, parser)
		if run['rc'] not in (0, 4) and \
		   all(c.status is not Status.FAIL for c in cases):
			cases.append(TestCase('kselftest', f'{name}.exit',
					      Status.FAIL,
					      f'exit status {run["rc"]}\n' +
					      tap[-2000:]))
		tests += cases
	if not userspace:
		tests.append(TestCase('kselftest', 'kselftests and Python checks',
				      Status.SKIP, NO_USERSPACE_REASON))
	elif 'kselftest' not in summary['families']:
		tests.append(TestCase('kselftest', 'kselftest', Status.FAIL,
				      'no kselftests were run'))
	if expect_pytest and userspace:
		tests += parse_pytest_junit(outdir / 'pytest.xml')
	# The whole console counts too: a report printed before dmesg was
	# read, or after, is still a report.
	tests.append(kernel_log_case(kernel_lines + kernel_only(console),
				     'the kernel log'))
	leak = kmemleak_case(outdir / 'kmemleak.txt')
	if leak:
		tests.append(leak)
	return tests


def kmemleak_case(path: Path) -> Optional[TestCase]:
	"""The guest's kmemleak list after the tests; None without kmemleak."""
	if not path.exists():
		return None
	text = path.read_text(errors='replace')
	name = 'kmemleak: no unreferenced objects after the tests'
	objs = text.count('unreferenced object 0x')
	if objs or text.startswith('# perfctr: cannot'):
		return TestCase('kernel-log', name, Status.FAIL,
				f'{objs} unreferenced object(s):\n{text[:4000]}')
	return TestCase('kernel-log', name, Status.PASS)
