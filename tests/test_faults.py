# SPDX-License-Identifier: GPL-2.0
"""Fault injection, for real: `kill -9` of inv during the guest and during
the base tree's unpack leaves no process of the run behind, and the next
run passes (issue 24's repros 1 and 5).

Cheap on purpose: the guest kill reuses the build test_e2e.py made in
the default cache (an inv check with nothing to rebuild); the unpack kill
uses a cache of its own that borrows the default cache's apt lists and
.deb, so it downloads nothing and builds no kernel.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytools import paths

pytestmark = pytest.mark.e2e


def _env(**extra):
	env = dict(os.environ)
	env['PATH'] = f'{Path(sys.executable).parent}:{env["PATH"]}'
	env.update(extra)
	return env


def _descendants(pid):
	"""Every live process below @pid (by parent links)."""
	children = {}
	for d in Path('/proc').iterdir():
		if not d.name.isdigit():
			continue
		try:
			stat = (d / 'stat').read_text().rsplit(')', 1)[1].split()
		except OSError:
			continue
		children.setdefault(int(stat[1]), []).append(int(d.name))
	out, todo = [], [pid]
	while todo:
		for c in children.get(todo.pop(), []):
			out.append(c)
			todo.append(c)
	return out


def _alive(pid):
	try:
		stat = Path(f'/proc/{pid}/stat').read_text()
	except OSError:
		return False
	return stat.rsplit(')', 1)[1].split()[0] != 'Z'


def _cmd(pid):
	try:
		return Path(f'/proc/{pid}/cmdline').read_bytes() \
			.replace(b'\0', b' ').decode(errors='replace')
	except OSError:
		return '?'


def _kill_9_when(argv, env, marker, timeout=1800):
	"""Start inv; once @marker is in its stderr, note every process of
	the run and kill -9 inv alone.  The processes that were its
	descendants (and that outlived it for 15 s)."""
	errf = open(Path(env['PERFCTR_RESULTS']) / 'killed.err', 'w+')
	inv = subprocess.Popen(['inv', *argv], cwd=paths.REPO, env=env,
			       stdout=subprocess.DEVNULL, stderr=errf)
	end = time.monotonic() + timeout
	try:
		while marker not in Path(errf.name).read_text():
			assert inv.poll() is None, Path(errf.name).read_text()
			assert time.monotonic() < end, f'no {marker!r} in time'
			time.sleep(0.5)
		time.sleep(2)
		run = [p for p in _descendants(inv.pid) if _alive(p)]
		assert run, 'nothing of the run was running when it was killed'
		os.kill(inv.pid, signal.SIGKILL)
		inv.wait()
		until = time.monotonic() + 15
		while time.monotonic() < until and any(_alive(p) for p in run):
			time.sleep(0.2)
		return {p: _cmd(p) for p in run if _alive(p)}
	finally:
		if inv.poll() is None:
			inv.kill()
			inv.wait()


def test_kill_9_during_the_guest_leaves_no_qemu_and_the_next_run_passes(
		tmp_path):
	env = _env(PERFCTR_RESULTS=str(tmp_path))
	left = _kill_9_when(['check', '--arch', 'x86_64'], env,
			    '[perfctr] guest:')
	assert not left, f'left running after kill -9: {left}'
	assert not (tmp_path / 'latest').exists(), \
		'results/latest points at a run with no results'
	# The next run on the same cache boots the same kernel (inv run: the
	# same stages and guest as inv check, one command instead of the
	# whole suite, which test_e2e.py runs anyway)
	again = subprocess.run(['inv', 'run', '--arch', 'x86_64', '--',
				'true'],
			       cwd=paths.REPO, env=env, text=True,
			       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
			       timeout=3600)
	assert again.returncode == 0, again.stdout[-4000:]


def test_kill_9_during_the_unpack_leaves_no_tar_and_the_next_run_imports(
		tmp_path):
	real = paths.cache_dir()
	debs = sorted((real / 'debs').glob('linux-source-6.12_*.deb'))
	if not debs or not (real / 'apt' / 'lists').is_dir():
		pytest.skip('the default cache has no linux-source .deb yet '
			    '(test_e2e.py fetches it)')
	cache = tmp_path / 'cache'
	(cache / 'debs').mkdir(parents=True)
	for d in debs:
		(cache / 'debs' / d.name).symlink_to(d)
	shutil.copytree(real / 'apt', cache / 'apt', symlinks=True)
	env = _env(PERFCTR_CACHE=str(cache), PERFCTR_RESULTS=str(tmp_path))
	left = _kill_9_when(['base'], env, 'unpacking', timeout=600)
	assert not left, f'left running after kill -9: {left}'
	again = subprocess.run(['inv', 'base'], cwd=paths.REPO, env=env,
			       text=True, stdout=subprocess.PIPE,
			       stderr=subprocess.STDOUT, timeout=1800)
	assert again.returncode == 0, again.stdout[-4000:]
	assert (cache / 'trees' / 'lts' / '.git').is_dir()
	assert not (cache / 'trees' / 'lts.importing').exists()
	assert not list((cache / 'runs').glob('*.json'))
