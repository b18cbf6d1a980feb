# SPDX-License-Identifier: GPL-2.0
"""Two clones on one cache each run the kselftests of their own sources:
the build's inputs are named by content, not by file times (issue 24's
repro 2: a clone with older sources got "Nothing to be done" and ran the
other clone's binaries).  Real make, a stand-in test Makefile."""

import os
import time
from pathlib import Path

from pytools import arches, kernel, paths
from pytools.bases import BaseTree
from pytools.ops import Ops

MAKEFILE = '$(OUTPUT)/t: t.c\n\tcp $< $@\n'


def _clone(root: Path, text: str, age: float) -> Path:
	src = root / 'selftests' / 'perfctr'
	src.mkdir(parents=True)
	(src / 'Makefile').write_text(MAKEFILE)
	(src / 't.c').write_text(text)
	t = time.time() - age
	os.utime(src / 't.c', (t, t))
	return root / 'selftests'


def _request(tmp_path):
	tree = tmp_path / 'linux'
	kst = tree / 'tools' / 'testing' / 'selftests'
	kst.mkdir(parents=True)
	(kst / 'lib.mk').write_text('')
	t = BaseTree(name='lts', path=tree, ref='b', commit='0' * 40,
		     version='6.12', origin='o', patches='patches')
	return kernel.BuildRequest(tree=t, arch=arches.get('x86_64'),
				   fragments=(), build_dir=tmp_path / 'build',
				   jobs=1)


def test_each_clone_runs_its_own_kselftests(tmp_path, monkeypatch):
	req = _request(tmp_path)
	a = _clone(tmp_path / 'a', 'ASSERT_EQ(1, 2); /* clone A */', 0)
	b = _clone(tmp_path / 'b', 'untouched clone B', 3600)	# older
	runs = []
	for clone in (a, b, a, b):
		monkeypatch.setattr(paths, 'SELFTESTS', clone)
		runs.append(kernel.build_selftests(req, Ops()))
	texts = [(d / 't').read_text() for d in runs]
	assert texts == ['ASSERT_EQ(1, 2); /* clone A */', 'untouched clone B'] * 2
	assert runs[0] == runs[2] and runs[1] == runs[3] and runs[0] != runs[1]
	# alternating clones rebuild nothing: make found each one's binary
	log = (req.build_dir / 'kselftest.log').read_text()
	assert "is up to date" in log or 'Nothing to be done' in log


def test_an_uapi_header_change_is_a_new_build(tmp_path, monkeypatch):
	req = _request(tmp_path)
	monkeypatch.setattr(paths, 'SELFTESTS',
			    _clone(tmp_path / 'a', 'x', 0))
	h = req.build_dir / 'usr' / 'include' / 'linux' / 'perfctr.h'
	h.parent.mkdir(parents=True)
	h.write_text('#define A 1\n')
	first = kernel.build_selftests(req, Ops())
	h.write_text('#define A 2\n')
	assert kernel.build_selftests(req, Ops()) != first


def test_only_the_newest_builds_are_kept(tmp_path, monkeypatch):
	req = _request(tmp_path)
	dirs = set()
	for i in range(kernel.KEEP_SELFTEST_BUILDS + 2):
		monkeypatch.setattr(paths, 'SELFTESTS',
				    _clone(tmp_path / f'c{i}', f'{i}', 0))
		dirs.add(kernel.build_selftests(req, Ops()).parent)
		time.sleep(0.01)
	left = [p for p in (req.build_dir / 'kselftest').iterdir()]
	assert len(left) == kernel.KEEP_SELFTEST_BUILDS and len(dirs) == 6
