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

	def stream(self, argv, log, cwd=None, env=None, timeout=None,
		   on_line=None):
		self.calls.append(list(argv))
		rc, out = self._answer(argv)
		log.parent.mkdir(parents=True, exist_ok=True)
		log.write_text(out)
		return Completed(tuple(argv), rc, out, 0.0, rc == 'timeout')


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
