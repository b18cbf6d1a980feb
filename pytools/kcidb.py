# SPDX-License-Identifier: GPL-2.0
"""A run's results as KCIDB I/O data (KernelCI's common report schema).

Any results.json (inv check, inv lava --run, a bisect prefix) becomes one
KCIDB document: one checkout (the base tree with the series applied: its
tip commit, the base named in misc), one build (arch x config) and one
test for every TestCase, with a dotted path, its status and the URL of
its log.  The document is validated with the kcidb-io package's schema
before it is written: what this module emits is what KernelCI accepts.

Test paths depend only on the family and the name of a test, never on
how the guest ran (vng, an initramfs, a LAVA job): two runs of the same
kernel give the same paths, so KernelCI lines them up.
"""

import datetime
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from .errors import UserError
from .results import RunResult, Status, TestCase

ORIGIN = 'perfctr'
PATH_ROOT = 'perfctr'
# KCIDB wants an excerpt, not the whole log (the log is at log_url).
EXCERPT_MAX = 16384
_ORIGIN_RE = re.compile(r'^[a-z0-9_]+$')
_SEGMENT_BAD = re.compile(r'[^A-Za-z0-9_-]+')
_HASH_RE = re.compile(r'^[0-9a-f]{40}$|^[0-9a-f]{64}$')

# Where each family's output lies in a results directory (log_url).
FAMILY_LOGS = {
	'kunit': 'guest/dmesg.txt',
	'kernel-log': 'guest/dmesg.txt',
	'pytest': 'guest/pytest.log',
	'boot': 'console.log',
}


@dataclass(frozen=True)
class Report:
	"""Where the KCIDB document of a run went, and what it holds."""
	path: Path
	document: dict

	@property
	def counts(self) -> Dict[str, int]:
		return {k: len(self.document.get(k, []))
			for k in ('checkouts', 'builds', 'tests')}


def test_path(test: TestCase) -> str:
	"""The KCIDB path of a test: perfctr.<family>.<name>, every part
	made of letters, digits, '_' and '-' (the schema's alphabet).

	kunit names already start with 'kunit.'; pytest's 'file::test'
	becomes 'file.test'; anything else outside the alphabet is '_'.
	"""
	name = test.name
	if not (name == test.family or name.startswith(test.family + '.')):
		name = f'{test.family}.{name}'
	parts = [_SEGMENT_BAD.sub('_', p).strip('_') or '_'
		 for p in re.split(r'\.|::', name) if p]
	return '.'.join([PATH_ROOT, *parts])


def _log_file(test: TestCase) -> str:
	if test.family == 'kselftest':
		program = test.name.split('.', 1)[0]
		return f'guest/kselftest-{program}.tap'
	return FAMILY_LOGS.get(test.family, 'console.log')


def _url(base: str, rel: str) -> str:
	return f'{base.rstrip("/")}/{rel}'


def _time(stamp: str) -> Optional[str]:
	"""An ISO 8601 time with its zone (results.json keeps local time)."""
	if not stamp:
		return None
	try:
		t = datetime.datetime.fromisoformat(stamp)
	except ValueError:
		return None
	return t.astimezone().isoformat(timespec='seconds')


def config_name(run: RunResult) -> str:
	"""The build's configuration, as the matrix names it (a RunResult
	read from an older results.json has it filled in by results)."""
	from .results import config_of
	return config_of({'config': run.config,
			  'config_fragments': run.config_fragments})


def run_id(run: RunResult, results_dir: Path) -> str:
	"""What tells this run from every other: its results directory's
	name (time, arch, base) and a hash of what it started with."""
	h = hashlib.sha256(f'{run.started} {run.arch} {run.base} '
			   f'{run.command}'.encode()).hexdigest()[:10]
	return f'{results_dir.name}-{h}'


def document(run: RunResult, results_dir: Path, url_base: str = '',
	     origin: str = ORIGIN) -> dict:
	"""The KCIDB I/O document of one run.  @url_base is where the
	results directory is published (default: its file:// URI)."""
	if not _ORIGIN_RE.match(origin):
		raise UserError(f'--origin {origin!r}: KCIDB origins are lower-'
				'case letters, digits and "_"',
				'give the name KernelCI knows your CI system by, '
				'e.g. --origin perfctr')
	url_base = url_base or results_dir.resolve().as_uri()
	base = run.base or {}
	tip = base.get('series_tip', '')
	base_commit = base.get('commit', '')
	checkout_key = f'{base.get("name", "?")}-{base_commit[:12]}-{tip[:12]}'
	checkout: dict = {
		'id': f'{origin}:{checkout_key}',
		'origin': origin,
		'tree_name': base.get('name', ''),
		'git_commit_name': f'{base.get("origin", "?")} + perfctr series',
		'misc': {k: v for k, v in base.items() if v},
	}
	if _HASH_RE.match(tip):
		checkout['git_commit_hash'] = tip
	if base.get('ref'):
		checkout['git_commit_tags'] = [base['ref']]
	start = _time(run.started)
	if start:
		checkout['start_time'] = start
	cfg = config_name(run)
	build: dict = {
		'id': f'{origin}:{checkout_key}-{run.arch}-{cfg}',
		'checkout_id': checkout['id'],
		'origin': origin,
		'architecture': run.arch,
		'config_name': cfg,
		'status': 'PASS',
		'misc': {'kernel_release': run.kernel_release,
			 'config_fragments': run.config_fragments},
	}
	if 'build' in run.durations:
		build['duration'] = float(run.durations['build'])
	if start:
		build['start_time'] = start
	if run.logs.get('build'):
		build['log_url'] = Path(run.logs['build']).resolve().as_uri()
	env = _environment(run)
	rid = run_id(run, results_dir)
	tests: List[dict] = []
	seen: Dict[str, int] = {}
	for t in run.tests:
		path = test_path(t)
		n = seen[path] = seen.get(path, 0) + 1
		if n > 1:		# two names that differ only in '_' and ' '
			path = f'{path}_{n}'
		test = {
			'id': f'{origin}:{rid}:{path}',
			'build_id': build['id'],
			'origin': origin,
			'path': path,
			'status': t.status.value,
			'log_url': _url(url_base, _log_file(t)),
			'environment': env,
			'misc': {'family': t.family, 'name': t.name},
		}
		if t.message:
			test['log_excerpt'] = t.message[-EXCERPT_MAX:]
		if start:
			test['start_time'] = start
		tests.append(test)
	for i, p in enumerate(run.problems):
		# a problem of the run (a guest killed) is not any one test's
		tests.append({
			'id': f'{origin}:{rid}:problem{i}',
			'build_id': build['id'], 'origin': origin,
			'path': f'{PATH_ROOT}.run', 'status': 'ERROR',
			'log_url': _url(url_base, 'console.log'),
			'log_excerpt': p[-EXCERPT_MAX:], 'environment': env})
	return {'version': {'major': 5, 'minor': 3},
		'checkouts': [checkout], 'builds': [build], 'tests': tests}


def _environment(run: RunResult) -> dict:
	accel = run.accelerator.get('accel', '?')
	where = f'LAVA {run.runner["device_type"]}' \
		if run.runner.get('device_type') else 'QEMU'
	cpu = run.cpu or run.qemu.get('cpu', '')
	comment = f'{where} {run.arch}' + (f' {cpu}' if cpu else '') + \
		f', {accel.upper()}'
	misc = {'accelerator': run.accelerator}
	if run.runner:
		misc['runner'] = run.runner
	if run.qemu:
		misc['qemu'] = run.qemu
	return {'comment': comment, 'misc': misc}


def validate(doc: dict) -> None:
	"""Raise a UserError naming the first place @doc breaks the KCIDB
	schema of the installed kcidb-io (the newest version it knows)."""
	import jsonschema
	from kcidb_io import schema
	try:
		schema.LATEST.validate_exactly(doc)
	except jsonschema.exceptions.ValidationError as e:
		where = '/'.join(str(p) for p in e.absolute_path) or '(top)'
		raise UserError(f'the KCIDB document breaks schema '
				f'{schema.LATEST}: at {where}: {e.message[:300]}',
				'this is a bug of pytools/kcidb.py: report it '
				'with the results.json it was given') from None


def schema_version() -> str:
	from kcidb_io import schema
	return str(schema.LATEST)


def write(run: RunResult, results_dir: Path, out: Optional[Path] = None,
	  url_base: str = '', origin: str = ORIGIN) -> Report:
	"""Build, validate and write the document (default: kcidb.json
	beside results.json)."""
	doc = document(run, results_dir, url_base, origin)
	validate(doc)
	out = out or results_dir / 'kcidb.json'
	out.write_text(json.dumps(doc, indent=1) + '\n')
	return Report(out, doc)


def statuses(doc: dict) -> Dict[str, str]:
	"""path -> status of a document's tests (for comparing two runs)."""
	return {t['path']: t['status'] for t in doc.get('tests', [])}


def main(results: Optional[Path] = None, kcidb: bool = False,
	 out: Optional[Path] = None, url_base: str = '',
	 origin: str = ORIGIN) -> int:
	"""inv report: print a run's summary (results/latest by default);
	with @kcidb also write it as KCIDB JSON.  0 the run passed, else 1."""
	from . import results as R
	path = R.locate(results)
	r = R.load(path)
	print(R.summary(r))
	if kcidb:
		rep = write(r, path.parent, out, url_base, origin)
		c = rep.counts
		print(f'KCIDB: {c["checkouts"]} checkout, {c["builds"]} '
		      f'build, {c["tests"]} tests; valid against kcidb-io '
		      f'schema {schema_version()}')
		print(rep.path)
	return 0 if r.passed else 1


__all__ = ['document', 'validate', 'write', 'test_path', 'statuses',
	   'Report', 'Status']
