# SPDX-License-Identifier: GPL-2.0
"""One lock per shared thing of the cache, so that runs can share it.

Two runs (two clones, or two terminals) may use one PERFCTR_CACHE at once.
What they share is locked, one flock(2) per thing: the apt lists and
downloads, a base tree's import, a base tree's work tree and branch (apply
writes it, make reads it), a build directory (make writes it, the guest
reads the kernel, kselftests and programs in it), an arch's root, QEMU's
unpacked package.  A run that finds a lock taken says whose run holds it
and waits.

The tactic: flock locks belong to an open file, so they go when the
process goes, however it ends (kill -9 included); nothing to clean up, no
stale lock.  The file is opened close-on-exec, so a child never holds it.
The holder writes its pid, checkout and what it does into the file, for
the waiting message only: the lock itself is the flock.  Locks are
reentrant per process (a second take of a held lock is a no-op), and the
order is fixed to avoid a deadlock: apt, base, tree, build, then the
leaves (root, QEMU) that take no other lock while held.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Dict, Iterator, Optional

from . import paths
from .ops import progress

_held: Dict[tuple, int] = {}	# (lock file, thread) -> fd
_guard = threading.Lock()


def lock_file(name: str) -> Path:
	"""The lock file of a shared thing named @name (e.g. build-lts-x86_64-default)."""
	return paths.cache_dir() / 'locks' / f'{name}.lock'


def holder(path: Path) -> Optional[dict]:
	"""Who wrote itself into the lock file last (the holder while it is
	held): {'pid', 'checkout', 'what'}, None if nobody did."""
	try:
		return json.loads(path.read_text() or 'null')
	except (OSError, ValueError):
		return None


def describe(h: Optional[dict]) -> str:
	if not h:
		return 'another run'
	if h.get('pid') == os.getpid():
		return 'this run\'s other thread'
	return f'the run of PID {h.get("pid")} in {h.get("checkout")}'


def _key(path: Path) -> tuple:
	# Per thread: the rootfs prefetch thread and the main thread wait
	# for each other on the root's lock as two processes would.
	return (str(path), threading.get_ident())


def take(path: Path, what: str) -> None:
	"""Hold the lock @path until release() or this process's end;
	@what says what for (\"the x86_64 build\").  Waits, saying for
	whom, while another process (or thread) holds it."""
	if _key(path) in _held:
		return
	path.parent.mkdir(parents=True, exist_ok=True)
	fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
	try:
		try:
			fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
		except BlockingIOError:
			progress(f'waiting for {describe(holder(path))} to finish '
				 f'with {what} (lock {path})')
			fcntl.flock(fd, fcntl.LOCK_EX)
		me = json.dumps({'pid': os.getpid(), 'checkout': str(paths.REPO),
				 'what': what}).encode()
		os.ftruncate(fd, 0)
		os.pwrite(fd, me, 0)
	except BaseException:
		os.close(fd)
		raise
	with _guard:
		_held[_key(path)] = fd


def release(path: Path) -> None:
	"""Let the lock @path go before this process ends (no-op if this
	thread does not hold it)."""
	with _guard:
		fd = _held.pop(_key(path), None)
	if fd is not None:
		with contextlib.suppress(OSError):
			os.ftruncate(fd, 0)
		os.close(fd)


def held(path: Path) -> bool:
	return _key(path) in _held


@contextlib.contextmanager
def hold(path: Path, what: str) -> Iterator[None]:
	"""The lock @path for a with-block (released at its end unless it
	was already held when the block began)."""
	mine = not held(path)
	take(path, what)
	try:
		yield
	finally:
		if mine:
			release(path)


def tree_lock(tree_path: Path) -> Path:
	"""The lock of a base tree's work tree and branch."""
	return lock_file('tree-' + slug(tree_path))


def build_lock(build_dir: Path) -> Path:
	"""The lock of a build directory."""
	return lock_file('build-' + build_dir.name)


def slug(p: Path) -> str:
	"""A file name for a lock of the thing at @p."""
	return f'{p.name}-{hashlib.sha1(str(p).encode()).hexdigest()[:8]}'
