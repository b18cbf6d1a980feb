# SPDX-License-Identifier: GPL-2.0
"""Typed results of a run, and their JSON and JUnit forms."""

import enum
import json
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from .errors import UserError


class Status(enum.Enum):
	PASS = 'PASS'
	FAIL = 'FAIL'
	SKIP = 'SKIP'


@dataclass(frozen=True)
class TestCase:
	__test__ = False	# not a pytest class
	family: str		# kunit, kselftest, pytest, kernel-log
	name: str		# suite.case or file::test
	status: Status
	message: str = ''


@dataclass
class RunResult:
	arch: str
	base: Dict[str, str]
	accelerator: Dict[str, str] = field(default_factory=dict)
	# every probe and run of an accelerator, in order (boot.Attempt)
	accel_attempts: List[Dict[str, Any]] = field(default_factory=list)
	qemu: Dict[str, str] = field(default_factory=dict)
	# the guest's own root filesystem, if not the host's (rootfs.Rootfs)
	rootfs: Dict[str, Any] = field(default_factory=dict)
	kernel_release: str = ''
	# the kernel config's name (data/configs.toml: default, debug; a
	# bisect prefix's build says bisect) and its fragments
	config: str = ''
	config_fragments: List[str] = field(default_factory=list)
	# the QEMU CPU model the guest ran on (-cpu: power9, or virtme-ng's
	# max under TCG and host under KVM)
	cpu: str = ''
	durations: Dict[str, float] = field(default_factory=dict)
	command: str = ''
	tests: List[TestCase] = field(default_factory=list)
	problems: List[str] = field(default_factory=list)
	logs: Dict[str, str] = field(default_factory=dict)
	started: str = ''
	# what ran the guest when not the tools themselves (a LAVA
	# dispatcher: its device type, job, version)
	runner: Dict[str, str] = field(default_factory=dict)

	def counts(self) -> Dict[str, int]:
		c = {s.value: 0 for s in Status}
		for t in self.tests:
			c[t.status.value] += 1
		return c

	@property
	def passed(self) -> bool:
		return bool(self.tests) and not self.problems and \
			all(t.status is not Status.FAIL for t in self.tests)

	def to_json(self) -> str:
		d = asdict(self)
		d['tests'] = [dict(asdict(t), status=t.status.value)
			      for t in self.tests]
		d['counts'] = self.counts()
		d['result'] = 'PASS' if self.passed else 'FAIL'
		return json.dumps(d, indent=1) + '\n'


def config_of(d: Dict[str, Any]) -> str:
	"""A results.json's kernel config; files written before it was
	recorded say it by their fragments."""
	if d.get('config'):
		return d['config']
	return 'debug' if 'debug.config' in d.get('config_fragments', []) \
		else 'default'


def cpu_of(d: Dict[str, Any]) -> str:
	"""A results.json's CPU model; files written before it was recorded
	name it in 'qemu' (initramfs guests) or ran the arch's default."""
	if d.get('cpu'):
		return d['cpu']
	from . import arches
	cpu = (d.get('qemu') or {}).get('cpu', '')
	if not cpu and d.get('arch') in arches.known():
		cpu = arches.get(d['arch']).guest.cpu
	return cpu or 'max'


def from_json(text: str) -> RunResult:
	d = json.loads(text)
	d.pop('counts', None)
	d.pop('result', None)
	d['config'], d['cpu'] = config_of(d), cpu_of(d)
	d['tests'] = [TestCase(t['family'], t['name'], Status(t['status']),
			       t.get('message', '')) for t in d['tests']]
	return RunResult(**d)


def locate(given: Optional[Path] = None) -> Path:
	"""The results.json a user means: a file, a directory holding one,
	or (nothing given) the newest run's, results/latest."""
	from . import paths
	p = given or paths.results_dir() / 'latest'
	if p.is_dir():
		p = p / 'results.json'
	if not p.is_file():
		raise UserError(f'{p}: no such results file',
				'give --results a results.json, or the directory '
				'of a run (results/<time>-<arch>-<base>); '
				'"inv check" writes one')
	return p


def load(path: Path) -> RunResult:
	"""A results.json read back, or a UserError saying what is wrong."""
	try:
		return from_json(path.read_text())
	except (ValueError, KeyError, TypeError) as e:
		raise UserError(f'{path}: not a perfctr results file ({e})',
				'give the results.json an "inv check" wrote') \
			from None


def to_junit(run: RunResult) -> str:
	root = ET.Element('testsuites', name=f'perfctr-{run.arch}')
	by_family: Dict[str, List[TestCase]] = {}
	for t in run.tests:
		by_family.setdefault(t.family, []).append(t)
	for family, cases in by_family.items():
		suite = ET.SubElement(
			root, 'testsuite', name=f'{run.arch}.{family}',
			tests=str(len(cases)),
			failures=str(sum(c.status is Status.FAIL for c in cases)),
			skipped=str(sum(c.status is Status.SKIP for c in cases)))
		for c in cases:
			tc = ET.SubElement(suite, 'testcase', name=c.name,
					   classname=f'{run.arch}.{family}')
			if c.status is Status.FAIL:
				ET.SubElement(tc, 'failure',
					      message=c.message[:200]).text = \
					c.message
			elif c.status is Status.SKIP:
				ET.SubElement(tc, 'skipped',
					      message=c.message[:200])
	ET.indent(root)
	return ET.tostring(root, encoding='unicode') + '\n'


def summary(run: RunResult) -> str:
	c = run.counts()
	lines = [f'perfctr {run.arch} on {run.base.get("origin", "?")} '
		 f'(kernel {run.kernel_release or "?"}, '
		 f'{run.accelerator.get("accel", "?")})']
	kvm_failed = [a for a in run.accel_attempts
		      if a.get('accel') == 'kvm' and not a.get('ok')]
	if kvm_failed and run.accelerator.get('accel') == 'tcg':
		a = kvm_failed[-1]
		why = str(a.get('reason', '')).removeprefix('KVM failed: ')
		lines.append(f'  KVM failed ({a.get("what")}): {why}; ran under TCG')
	if run.qemu.get('origin', 'system') != 'system':
		lines.append(f'  qemu {run.qemu.get("version")} from '
			     f'{run.qemu["origin"]}: {run.qemu.get("reason")}')
	if run.rootfs:
		r = run.rootfs
		how = (f'built now in {r.get("build_seconds", 0):.0f} s'
		       if r.get('fresh') else
		       f'cached (built {r.get("built")} in '
		       f'{r.get("build_seconds", 0):.0f} s)')
		lines.append(f'  root filesystem: Debian {r.get("suite")} '
			     f'{r.get("debian_arch") or run.arch}, '
			     f'{r.get("size_mb")} MB, {how}')
	fams: Dict[str, Dict[str, int]] = {}
	for t in run.tests:
		f = fams.setdefault(t.family, {s.value: 0 for s in Status})
		f[t.status.value] += 1
	for fam, fc in fams.items():
		lines.append(f'  {fam:11} {fc["PASS"]:4} passed, '
			     f'{fc["FAIL"]:3} failed, {fc["SKIP"]:3} skipped')
	for t in run.tests:
		if t.status is Status.FAIL:
			first = t.message.strip().splitlines()[:6]
			lines.append(f'  FAIL {t.family}: {t.name}')
			lines += [f'       {l}' for l in first]
	for t in run.tests:
		if t.status is Status.SKIP:
			lines.append(f'  SKIP {t.family}: {t.name}: '
				     f'{t.message.strip()[:120]}')
	for p in run.problems:
		lines.append(f'  PROBLEM {p}')
	if run.durations:
		lines.append('  durations: ' + ', '.join(
			f'{k} {v:.1f} s' for k, v in run.durations.items()))
	lines.append(f'{c["PASS"]} passed, {c["FAIL"]} failed, '
		     f'{c["SKIP"]} skipped: '
		     f'{"PASS" if run.passed else "FAIL"}')
	return '\n'.join(lines)


def write(run: RunResult, directory: Path) -> Path:
	directory.mkdir(parents=True, exist_ok=True)
	path = directory / 'results.json'
	path.write_text(run.to_json())
	(directory / 'results.junit.xml').write_text(to_junit(run))
	return path
