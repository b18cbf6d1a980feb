# SPDX-License-Identifier: GPL-2.0
"""Two checkouts on one cache each run the kselftests of their own
series: the build's inputs are named by content, not by file times
(issue 24's repro 2: a clone whose sources were older than another
clone's binaries got "Nothing to be done" and ran the other clone's
tests).  The sources are the tree's tools/testing/selftests/perfctr,
which each checkout's apply writes; here a stand-in kernel selftests
Makefile with the same install interface, and real make."""

import os
import time
from pathlib import Path

from pytools import arches, kernel
from pytools.bases import BaseTree
from pytools.ops import Ops

# make -C tools/testing/selftests TARGETS=perfctr O=.. KSFT_INSTALL_PATH=..
# install, as the kernel's: objects under $(O)/kselftest, programs
# installed with the list
TOP = '''\
$(KSFT_INSTALL_PATH)/perfctr/t: $(O)/kselftest/perfctr/t
\tmkdir -p $(dir $@) && cp $< $@
\techo perfctr:t > $(KSFT_INSTALL_PATH)/kselftest-list.txt
$(O)/kselftest/perfctr/t: perfctr/t.c
\tmkdir -p $(dir $@) && cp $< $@
install: $(KSFT_INSTALL_PATH)/perfctr/t
'''


def _request(tmp_path):
	tree = tmp_path / 'linux'
	kst = tree / 'tools' / 'testing' / 'selftests'
	(kst / 'perfctr').mkdir(parents=True)
	(kst / 'lib.mk').write_text('')
	(kst / 'Makefile').write_text(TOP)
	(kst / 'perfctr' / 'Makefile').write_text('include ../lib.mk\n')
	t = BaseTree(name='lts', path=tree, ref='b', commit='0' * 40,
		     version='6.12', origin='o', patches='patches')
	return kernel.BuildRequest(tree=t, arch=arches.get('x86_64'),
				   fragments=(), build_dir=tmp_path / 'build',
				   jobs=1)


def _apply(req, text: str, age: float = 0) -> None:
	"""A checkout's series applied: its test source in the tree, with
	the file time @age seconds back (git checkout sets the time of
	the files it writes; an old one is the worst case for make)."""
	src = kernel.selftests_source(req.tree) / 't.c'
	src.write_text(text)
	t = time.time() - age
	os.utime(src, (t, t))


def test_each_checkout_runs_its_own_kselftests(tmp_path):
	req = _request(tmp_path)
	runs = []
	for text, age in (('ASSERT_EQ(1, 2); /* clone A */', 0),
			  ('untouched clone B', 3600),	# older than A's build
			  ('ASSERT_EQ(1, 2); /* clone A */', 7200),
			  ('untouched clone B', 3600)):
		_apply(req, text, age)
		runs.append(kernel.build_selftests(req, Ops()))
	texts = [p.read_text() for r in runs for p in r.programs()]
	assert texts == ['ASSERT_EQ(1, 2); /* clone A */',
			 'untouched clone B'] * 2
	assert runs[0] == runs[2] and runs[1] == runs[3] and runs[0] != runs[1]
	# alternating checkouts rebuild nothing: make found each one's build
	log = (req.build_dir / 'kselftest.log').read_text()
	assert "is up to date" in log or 'Nothing to be done' in log


def test_an_uapi_header_change_is_a_new_build(tmp_path):
	req = _request(tmp_path)
	_apply(req, 'x')
	h = req.build_dir / 'usr' / 'include' / 'linux' / 'perfctr.h'
	h.parent.mkdir(parents=True)
	h.write_text('#define A 1\n')
	first = kernel.build_selftests(req, Ops())
	h.write_text('#define A 2\n')
	assert kernel.build_selftests(req, Ops()) != first


def test_only_the_newest_builds_are_kept(tmp_path):
	req = _request(tmp_path)
	dirs = set()
	for i in range(kernel.KEEP_SELFTEST_BUILDS + 2):
		_apply(req, f'{i}')
		dirs.add(kernel.build_selftests(req, Ops()).install.parent)
		time.sleep(0.01)
	left = [p for p in (req.build_dir / 'kselftest').iterdir()]
	assert len(left) == kernel.KEEP_SELFTEST_BUILDS and len(dirs) == 6


def test_a_tree_without_the_selftests_patch_is_told(tmp_path):
	req = _request(tmp_path)
	(kernel.selftests_source(req.tree) / 'Makefile').unlink()
	try:
		kernel.build_selftests(req, Ops())
	except kernel.UserError as e:
		assert 'selftests patch is not applied' in str(e)
		assert 'inv apply' in e.hint
	else:
		raise AssertionError('built with no selftests in the tree')
