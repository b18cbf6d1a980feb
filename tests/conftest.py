# SPDX-License-Identifier: GPL-2.0
"""Shared fixtures of the tools' own tests (no kernel needed)."""

import os
import subprocess
from pathlib import Path

import pytest

from pytools.ops import Completed, Ops

DATA = Path(__file__).parent / 'data'


class FakeOps(Ops):
	"""Records commands; answers from a table of (argv prefix -> result)."""

	def __init__(self, answers=None, which=None):
		self.calls = []
		self.streams = []
		self.interactive_calls = []
		self.answers = answers or []
		self._which = which if which is not None else {}

	def which(self, name):
		return self._which.get(name, f'/usr/bin/{name}')

	def _answer(self, argv):
		joined = ' '.join(argv)
		for needle, res in self.answers:
			if needle in joined:
				return res(argv) if callable(res) else res
		return (0, '')

	def run(self, argv, cwd=None, env=None, check=True, timeout=None):
		self.calls.append(list(argv))
		rc, out = self._answer(argv)
		return Completed(tuple(argv), rc, out, 0.0)

	def interactive(self, argv, env=None):
		"""A terminal's command (inv shell): recorded, its answer's
		status returned."""
		self.calls.append(list(argv))
		self.interactive_calls.append((list(argv), env))
		rc, _ = self._answer(argv)
		return Completed(tuple(argv), rc, '', 0.0)

	def stream(self, argv, log, cwd=None, env=None, timeout=None,
		   on_line=None, idle_timeout=None, on_quiet=None,
		   quiet_every=15.0, cancel=None):
		"""Replays the answer's lines through on_line as Ops.stream
		does (stopping where on_line gives a reason); rc 'timeout' and
		'silent' stand for the two bounds."""
		self.calls.append(list(argv))
		self.streams.append(dict(argv=list(argv), timeout=timeout,
					 idle_timeout=idle_timeout))
		rc, out = self._answer(argv)
		log.parent.mkdir(parents=True, exist_ok=True)
		seen, stopped = [], ''
		for line in out.splitlines():
			seen.append(line)
			why = on_line(line) if on_line else None
			if why:
				stopped = why
				break
		if rc == 'silent' and on_quiet and not stopped:
			on_quiet(15.0, seen[-1] if seen else '')
		text = '\n'.join(seen) + ('\n' if seen else '')
		with open(log, 'a') as f:
			f.write(text)
		if stopped:
			return Completed(tuple(argv), -9, text, 0.0, False, stopped)
		if rc == 'timeout':
			return Completed(tuple(argv), rc, text, 0.0, True,
					 f'did not finish within {timeout} s')
		if rc == 'silent':
			return Completed(tuple(argv), rc, text, 0.0, False,
					 f'no output for {idle_timeout} s (silence '
					 f'bound {idle_timeout} s)', True)
		return Completed(tuple(argv), rc, text, 0.0)


@pytest.fixture
def fake_ops():
	return FakeOps


def git(cwd, *args, env=None):
	full = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@t',
		    GIT_COMMITTER_NAME='t', GIT_COMMITTER_EMAIL='t@t')
	full.update(env or {})
	return subprocess.run(['git', '-C', str(cwd), *args], check=True,
			      capture_output=True, text=True, env=full).stdout


@pytest.fixture
def kernel_repo(tmp_path):
	"""A tiny git repo shaped like a kernel tree, with a base tag."""
	d = tmp_path / 'linux'
	d.mkdir()
	(d / 'Makefile').write_text('all:\n')
	(d / 'Kconfig').write_text('mainmenu "fake"\n')
	(d / 'drivers').mkdir()
	(d / 'drivers' / 'Makefile').write_text(
		''.join(f'obj-y += d{i}/\n' for i in range(20)))
	git(d, 'init', '-q', '-b', 'base')
	git(d, 'add', '-A')
	git(d, 'commit', '-q', '-m', 'base',
	    env={'GIT_AUTHOR_DATE': '2000-01-01T00:00:00Z',
		 'GIT_COMMITTER_DATE': '2000-01-01T00:00:00Z'})
	git(d, 'tag', 'base/linux-source-9.9/9.9.1-1')
	return d


@pytest.fixture(autouse=True)
def private_cache(request, tmp_path_factory, monkeypatch):
	"""No unit test reads or writes the real cache (the accelerator
	verdict lives there); the end-to-end runs use the real one."""
	if request.node.get_closest_marker('e2e') is None:
		monkeypatch.setenv('PERFCTR_CACHE',
				   str(tmp_path_factory.mktemp('cache')))


@pytest.fixture
def with_kvm(monkeypatch):
	"""The machine has a /dev/kvm (whether it works is the probe's job)."""
	real = Path.exists
	monkeypatch.setattr(Path, 'exists', lambda p: True if str(p) ==
			    '/dev/kvm' else real(p))
