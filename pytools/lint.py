# SPDX-License-Identifier: GPL-2.0
"""Quality gates on the series: checkpatch, kernel-doc, sparse and W=1.

Each gate runs the base tree's own tools on the applied series and turns
their output into Findings; the verdict is one rule: no ERROR and no
WARNING anywhere (a checkpatch CHECK is reported, and must be fixed or
justified in the commit message).
"""

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

from .ops import Ops, progress

# checkpatch's SPDX check runs scripts/spdxcheck.py with "python3" from
# PATH; Debian's python3-ply and python3-git live with /usr/bin/python3.
SYSTEM_PATH = '/usr/bin:/bin'


@dataclass(frozen=True)
class Finding:
	gate: str		# checkpatch, kernel-doc, sparse, W=1
	where: str		# patch or file
	level: str		# ERROR, WARNING, CHECK
	text: str


@dataclass
class LintResult:
	findings: List[Finding] = field(default_factory=list)
	checked: List[str] = field(default_factory=list)

	@property
	def failed(self) -> List[Finding]:
		return [f for f in self.findings if f.level in ('ERROR', 'WARNING')]


_CP = re.compile(r'^(ERROR|WARNING|CHECK): (.*)$')


def parse_checkpatch(where: str, output: str) -> List[Finding]:
	out = []
	lines = output.splitlines()
	for i, line in enumerate(lines):
		m = _CP.match(line)
		if m:
			ctx = ' | '.join(l.strip() for l in lines[i + 1:i + 3]
					 if l.strip())
			out.append(Finding('checkpatch', where, m.group(1),
					   f'{m.group(2)} [{ctx}]'))
	return out


def justified(finding: Finding, patch_text: str) -> bool:
	"""Does the patch's commit message answer this checkpatch finding?

	The convention: the message says "checkpatch" and names every
	<header> or identifier in angle brackets that the finding names, or,
	for a finding that names nothing, quotes its text.
	"""
	message = patch_text.split('\n---\n', 1)[0]
	text = finding.text.split(' [', 1)[0]
	names = re.findall(r'<[^>\s]+>', text)
	if 'checkpatch' not in message:
		return False
	if names:
		return all(n in message for n in names)
	# A finding that names nothing (e.g. "added, moved or deleted
	# file(s), does MAINTAINERS need updating?") is answered by quoting
	# it in the message.
	flat = ' '.join(message.split())
	return ' '.join(text.split()) in flat


def checkpatch(tree: Path, patches: List[Path], ops: Ops) -> LintResult:
	res = LintResult()
	for p in patches:
		progress(f'checkpatch --strict {p.name}')
		r = ops.run(['perl', str(tree / 'scripts/checkpatch.pl'), '--strict',
			     '--no-summary', '-q', str(p)], cwd=tree, check=False,
			    env={'PATH': SYSTEM_PATH})
		res.checked.append(p.name)
		text = p.read_text(errors='replace')
		for f in parse_checkpatch(p.name, r.output):
			if f.level != 'ERROR' and justified(f, text):
				f = Finding(f.gate, f.where, 'JUSTIFIED', f.text)
			res.findings.append(f)
		if 'Traceback' in r.output:
			res.findings.append(Finding(
				'checkpatch', p.name, 'ERROR',
				'a checkpatch helper crashed (python3-ply and '
				'python3-git installed?): ' + r.output[-300:]))
	return res


_KDOC = re.compile(r'^(\S+?):(\d+): (warning|error): (.*)$')


def kernel_doc(tree: Path, files: List[str], ops: Ops) -> LintResult:
	res = LintResult(checked=list(files))
	r = ops.run(['perl', str(tree / 'scripts/kernel-doc'), '-none', '-Wall',
		     *files], cwd=tree, check=False)
	for line in r.output.splitlines():
		m = _KDOC.match(line.strip())
		if m:
			res.findings.append(Finding(
				'kernel-doc', f'{m.group(1)}:{m.group(2)}',
				'WARNING' if m.group(3) == 'warning' else 'ERROR',
				m.group(4)))
	return res


_CC = re.compile(r'^(\S+?):(\d+):(\d+): (warning|error): (.*)$')


def compiler_gates(make: List[str], directory: str, ops: Ops,
		   log: Path) -> LintResult:
	"""sparse (C=2: every file, rebuilt or not) and W=1 on a directory."""
	res = LintResult(checked=[directory])
	progress(f'sparse and W=1 on {directory}')
	r = ops.stream([*make, 'C=2', 'W=1', directory + '/'], log)
	for line in r.output.splitlines():
		m = _CC.match(line.strip())
		if m and '/perfctr' in m.group(1):
			# gcc names its warning option, [-Wfoo]; sparse does not
			gate = 'W=1' if re.search(r'\[-W[^]]+\]$', line) \
				else 'sparse'
			res.findings.append(Finding(
				gate, f'{m.group(1)}:{m.group(2)}',
				'WARNING' if m.group(4) == 'warning' else 'ERROR',
				m.group(5)))
	if r.returncode != 0 and not res.findings:
		res.findings.append(Finding('W=1', directory, 'ERROR',
					    f'make failed; see {log}'))
	return res


_SPHINX = re.compile(r'^(\S+?)(?::(\d+))?: (WARNING|ERROR|CRITICAL|SEVERE): '
		     r'(.*)$')


def parse_htmldocs(output: str, tree: Path, ours: List[str]) -> List[Finding]:
	"""The Sphinx and kernel-doc warnings that name a file the series touches.

	Everything else in the directory (other subsystems' broken links) is
	the base tree's and not ours to fix: only new warnings count.
	"""
	out = []
	for line in output.splitlines():
		m = _SPHINX.match(line.strip())
		if not m:
			continue
		path = m.group(1)
		rel = path[len(str(tree)) + 1:] if path.startswith(f'{tree}/') \
			else path
		if rel not in ours:
			continue
		where = f'{rel}:{m.group(2)}' if m.group(2) else rel
		out.append(Finding('htmldocs', where,
				   'WARNING' if m.group(3) == 'WARNING' else 'ERROR',
				   m.group(4)))
	return out


def htmldocs(tree: Path, out: Path, jobs: int, touched: List[str], ops: Ops,
	     sphinx_build: Path) -> LintResult:
	"""The kernel's own "make htmldocs" on the directories the series
	documents (SPHINXDIRS), with the kernel's conf.py and extensions,
	built in @out (its log: htmldocs.log there)."""
	docs = [f for f in touched if f.startswith('Documentation/')
		and f.endswith('.rst')]
	res = LintResult(checked=docs)
	if not docs:
		return res
	if not sphinx_build.exists():
		res.findings.append(Finding(
			'htmldocs', 'sphinx-build', 'ERROR',
			f'{sphinx_build} is missing: re-run ./bootstrap, which '
			'installs Sphinx into .venv'))
		return res
	dirs = sorted({f.split('/')[1] for f in docs if f.count('/') >= 2})
	# Sphinx builds incrementally and warns only about pages it reads
	# again: make it read ours every time (their content is unchanged).
	for f in docs:
		if (tree / f).exists():
			os.utime(tree / f)
	progress(f'make htmldocs SPHINXDIRS="{" ".join(dirs)}" (about 2 '
		 'minutes for userspace-api)')
	env = {'PATH': f'{sphinx_build.parent}:{os.environ.get("PATH", "")}'}
	log = out / 'htmldocs.log'
	r = ops.stream(['make', '-C', str(tree), f'O={out}', f'-j{jobs}',
			f'SPHINXBUILD={sphinx_build}',
			f'SPHINXDIRS={" ".join(dirs)}', 'htmldocs'], log, env=env)
	res.findings += parse_htmldocs(r.output, tree, touched)
	if r.returncode != 0:
		res.findings.append(Finding('htmldocs', ' '.join(dirs), 'ERROR',
					    f'make htmldocs failed; see {log}'))
	for f in docs:
		page = out / 'Documentation/output' / \
			f[len('Documentation/'):].replace('.rst', '.html')
		if not page.exists():
			res.findings.append(Finding(
				'htmldocs', f, 'ERROR',
				f'{page} was not generated: is the page in a '
				'toctree, and did Sphinx run? see ' + str(log)))
	return res


# The files kernel-doc reads besides drivers/perfctr/*.[ch]
KDOC_HEADERS = ('include/uapi/linux/perfctr.h', 'include/linux/perfctr.h')


def run(opts, ops: Ops) -> int:
	"""inv lint: every gate on the applied series; print the findings.

	0 nothing to fix, 1 an ERROR or WARNING (a test failure, as a
	failing gate of a CI run is)."""
	from . import kernel, pipeline, series
	t = pipeline.resolve_base(opts, ops)
	s = pipeline.series_for(t)
	s.apply()
	results = [checkpatch(t.path, series.read_series(s.patches), ops),
		   kernel_doc(t.path, [*KDOC_HEADERS, *sorted(
			   str(p.relative_to(t.path)) for p in
			   (t.path / 'drivers/perfctr').glob('*.[ch]'))], ops)]
	req = pipeline.build_request(opts, t)
	kernel.configure(req, ops)
	results.append(compiler_gates(
		[*kernel.make_args(req, ops), f'-j{req.jobs}'],
		'drivers/perfctr', ops, req.build_dir / 'lint.log'))
	doc_out = req.build_dir.parent / f'{req.build_dir.name}-htmldocs'
	results.append(htmldocs(t.path, doc_out, req.jobs, s.touched_files(),
				ops, Path(sys.executable).parent / 'sphinx-build'))
	return report(results)


def report(results: List[LintResult]) -> int:
	"""Print every finding and the verdict; the exit code."""
	bad = 0
	for r in results:
		for f in r.findings:
			print(f'{f.level:7} {f.gate:10} {f.where}: {f.text}')
		bad += len(r.failed)
	checked = sum(len(r.checked) for r in results)
	print(f'lint: {checked} items checked, {bad} errors/warnings, '
	      f'{sum(len(r.findings) for r in results) - bad} CHECK or '
	      'justified')
	return 1 if bad else 0
