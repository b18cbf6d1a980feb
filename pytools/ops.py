# SPDX-License-Identifier: GPL-2.0
"""The one module that runs other programs.

Everything that starts a process (make, apt-get, dpkg-deb, tar, git, QEMU
through vng) goes through an Ops object, so the tool's own tests replace one object
and replay captured output instead of building kernels.  A failing command
becomes the tools' own error here, at the edge, with the log path in it.
"""

import codecs
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, List, Mapping, Optional, Sequence, Union

from . import paths
from .errors import GitError, InfraError


@dataclass(frozen=True)
class Completed:
	"""What a finished command left behind."""
	argv: tuple
	returncode: int
	output: str
	duration: float
	timed_out: bool = False
	# Why the tool killed the command before it ended by itself, in
	# words ('' when it ended on its own): the total timeout, a silence
	# longer than the idle bound, or a reason on_line returned.
	stopped: str = ''
	silent: bool = False		# killed by the idle bound


class Ops:
	"""Runs commands.  Tests subclass this and override run()/stream()."""

	def which(self, name: str) -> Optional[str]:
		return shutil.which(name)

	def require(self, name: str, package: str) -> str:
		path = self.which(name)
		if not path:
			raise InfraError(f'{name} is not installed',
					 f'apt-get install {package} '
					 '(or run ./bootstrap, which installs it)')
		return path

	def run(self, argv: Sequence[str], cwd: Optional[Path] = None,
		env: Optional[Mapping[str, str]] = None,
		check: bool = True, timeout: Optional[float] = None) -> Completed:
		"""Run to completion, capturing stdout and stderr together."""
		start = time.monotonic()
		full_env = dict(os.environ, **(env or {}))
		try:
			proc = subprocess.Popen(list(argv), cwd=cwd, env=full_env,
						stdin=subprocess.DEVNULL,
						stdout=subprocess.PIPE,
						stderr=subprocess.STDOUT,
						text=True, errors='replace',
						start_new_session=True)
		except FileNotFoundError as e:
			raise InfraError(f'cannot run {argv[0]}: {e.strerror}',
					 'run ./bootstrap to install the tools') from e
		CHILDREN.started(proc, argv)
		try:
			out, _ = proc.communicate(timeout=timeout)
		except subprocess.TimeoutExpired:
			_kill_group(proc)
			out, _ = proc.communicate()
			return Completed(tuple(argv), -1, out or '',
					 time.monotonic() - start, True,
					 f'did not finish within {timeout:.0f} s')
		except BaseException:
			_kill_group(proc)
			raise
		finally:
			CHILDREN.ended(proc)
		res = Completed(tuple(argv), proc.returncode, out,
				time.monotonic() - start)
		if check and proc.returncode != 0:
			tail = '\n'.join(out.splitlines()[-20:])
			if NO_SPACE in out:
				raise no_space(argv, tail)
			raise InfraError(f'{" ".join(argv)} failed with status '
					 f'{proc.returncode}:\n{tail}')
		return res

	def git(self, repo: Path, *args: str,
		env: Optional[Mapping[str, str]] = None,
		input: Union[str, bytes, None] = None,
		keep_newline: bool = False) -> str:
		"""git -C @repo ARGS: its stdout (without its last newline
		unless @keep_newline), stderr apart; @input on its stdin.  A
		failure raises GitError with git's stderr.

		GitPython (a dependency the project's users named) runs it:
		this is the one place that calls it, so every git command
		still starts here, as every other program does."""
		try:
			import git as gitpython
		except ImportError as e:
			raise InfraError(f'cannot import GitPython: {e}',
					 'run ./bootstrap (it installs gitpython '
					 'into .venv)') from e
		argv = ['git', '-C', str(repo), *args]
		data = input.encode() if isinstance(input, str) else input
		# Only a call with input needs a file for git's stdin.
		with (tempfile.TemporaryFile() if data is not None
		      else contextlib.nullcontext(subprocess.DEVNULL)) as stdin:
			if data is not None:
				stdin.write(data)
				stdin.seek(0)
			try:
				rc, out, err = gitpython.Git().execute(
					argv, istream=stdin,
					with_extended_output=True,
					with_exceptions=False,
					stdout_as_string=False,
					strip_newline_in_stdout=False,
					env=dict(os.environ, **(env or {})))
			except gitpython.GitCommandNotFound as e:
				raise InfraError(f'cannot run git: {e}',
						 'apt-get install git (or run '
						 './bootstrap)') from e
		out = out.decode(errors='replace')
		err = err.decode(errors='replace') \
			if isinstance(err, bytes) else err
		if rc != 0:
			raise GitError(argv, rc, err, out)
		return out if keep_newline or not out.endswith('\n') else out[:-1]

	def stream(self, argv: Sequence[str], log: Path,
		   cwd: Optional[Path] = None,
		   env: Optional[Mapping[str, str]] = None,
		   timeout: Optional[float] = None,
		   on_line: Optional[Callable[[str], Optional[str]]] = None,
		   idle_timeout: Optional[float] = None,
		   on_quiet: Optional[Callable[[float, str], None]] = None,
		   quiet_every: float = 15.0,
		   cancel: Optional[threading.Event] = None) -> Completed:
		"""Run with output appended to log line by line as it arrives.

		on_line sees every line (for progress); when it returns a
		string, the command is killed at once and that string is the
		reason (a guest QEMU reporting a KVM internal error).  The
		timeout bounds the whole run, idle_timeout the time without a
		line of output; either kills the whole process group, so a
		hung QEMU never outlives the tool.  on_quiet(seconds, last
		line) is called every quiet_every seconds without output.
		Setting @cancel (from another thread: a run stopped while
		this one works in the background) kills it the same way.
		"""
		start = time.monotonic()
		full_env = dict(os.environ, **(env or {}))
		log.parent.mkdir(parents=True, exist_ok=True)
		timed_out = silent = False
		stopped = ''
		lines = []
		with open(log, 'a', encoding='utf-8') as f:
			f.write(f'$ {" ".join(argv)}\n')
			f.flush()
			try:
				proc = subprocess.Popen(
					list(argv), cwd=cwd, env=full_env,
					stdin=subprocess.DEVNULL,
					stdout=subprocess.PIPE,
					stderr=subprocess.STDOUT,
					start_new_session=True)
			except FileNotFoundError as e:
				raise InfraError(
					f'cannot run {argv[0]}: {e.strerror}',
					'run ./bootstrap to install the tools') from e
			CHILDREN.started(proc, argv)
			deadline = None if timeout is None else start + timeout
			last_out = start
			next_quiet = quiet_every
			assert proc.stdout is not None
			fd = proc.stdout.fileno()
			decoder = codecs.getincrementaldecoder('utf-8')('replace')
			buf = ''
			try:
				while True:
					ready, _, _ = select.select([fd], [], [], 0.2)
					chunk = os.read(fd, 65536) if ready else b''
					now = time.monotonic()
					if chunk:
						last_out, next_quiet = now, quiet_every
						buf += decoder.decode(chunk)
						*done, buf = buf.split('\n')
						for line in done:
							f.write(line + '\n')
							lines.append(line)
							why = on_line(line) if on_line \
								else None
							if why and not stopped:
								stopped = why
						f.flush()
					elif ready:
						break		# EOF: every writer is gone
					if cancel is not None and cancel.is_set() \
					   and not stopped:
						stopped = 'cancelled'
					if stopped:
						_kill_group(proc)
						f.write(f'*** killed: {stopped} ***\n')
						break
					if deadline and now > deadline:
						timed_out = True
						stopped = (f'did not finish within '
							   f'{timeout:.0f} s')
						_kill_group(proc)
						f.write(f'*** killed after {timeout:.0f} s '
							'timeout ***\n')
						break
					quiet = now - last_out
					if idle_timeout and quiet > idle_timeout:
						silent = True
						stopped = (f'no output for {quiet:.0f} s '
							   f'(silence bound {idle_timeout:.0f} s)')
						_kill_group(proc)
						f.write(f'*** killed: {stopped} ***\n')
						break
					if on_quiet and quiet >= next_quiet:
						next_quiet += quiet_every
						on_quiet(quiet, next((l for l in
								      reversed(lines)
								      if l.strip()),
								     buf))
			except BaseException:
				# Interrupted (^C, SIGTERM turned into an exception
				# by pipeline.guarded): the child runs in a session
				# of its own, so it would outlive us and race the
				# next run in the same tree.
				_kill_group(proc)
				proc.wait()
				CHILDREN.ended(proc)
				raise
			if buf:
				f.write(buf + '\n')
				lines.append(buf)
			proc.wait()
			CHILDREN.ended(proc)
		return Completed(tuple(argv), proc.returncode, '\n'.join(lines),
				 time.monotonic() - start, timed_out, stopped,
				 silent)

	def interactive(self, argv: Sequence[str],
			env: Optional[Mapping[str, str]] = None) -> Completed:
		"""Run on the terminal (a guest's shell: inv shell), the
		keyboard its, until it ends.

		The child gets a process group of its own, made the terminal's
		foreground group as a shell's job would be: ^C and ^Z reach it,
		not us.  If we are stopped first (SIGTERM turned into an
		exception by pipeline.guarded, ^C before the guest owns the
		terminal), the group is killed, QEMU with it, and the terminal
		is ours again."""
		start = time.monotonic()
		full_env = dict(os.environ, **(env or {}))
		try:
			tty = os.open('/dev/tty', os.O_RDWR) \
				if sys.stdin.isatty() else None
		except OSError:
			tty = None
		try:
			proc = subprocess.Popen(list(argv), env=full_env,
						process_group=0)
		except FileNotFoundError as e:
			if tty is not None:
				os.close(tty)
			raise InfraError(f'cannot run {argv[0]}: {e.strerror}',
					 'run ./bootstrap to install the tools') from e
		# the watchdog ends the group if we die (kill -9 included)
		CHILDREN.started(proc, argv)
		old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
		try:
			if tty is not None:
				os.tcsetpgrp(tty, proc.pid)
				# it may have read the terminal before it was
				# its, and been stopped for that
				os.killpg(proc.pid, signal.SIGCONT)
			rc = proc.wait()
		except BaseException:
			_kill_group(proc)
			proc.wait()
			raise
		finally:
			if tty is not None:
				os.tcsetpgrp(tty, os.getpgrp())
				os.close(tty)
			signal.signal(signal.SIGTTOU, old)
			CHILDREN.ended(proc)
		return Completed(tuple(argv), rc, '', time.monotonic() - start)


NO_SPACE = 'No space left on device'


def no_space(argv: Sequence[str], tail: str) -> InfraError:
	"""A command that failed because its disk is full, said once with
	the fix (not twenty lines of tar)."""
	where = next((l for l in tail.splitlines() if NO_SPACE in l), '')
	return InfraError(
		f'{Path(argv[0]).name} ran out of disk space '
		f'({where.strip()[:200]})',
		'free some space, or point PERFCTR_CACHE (and PERFCTR_RESULTS) '
		'at a bigger disk, and run the same command again: what is '
		'half-written is redone')


# The watchdog: one process per tool process, in a session of its own,
# reading a pipe whose only write end this process holds.  The tool tells
# it each child process group it starts ("+PGID") and each one it has
# reaped ("-PGID").  When this process dies, however it dies (kill -9 and
# the OOM killer included), the pipe reads end-of-file and the watchdog
# ends every group still on its list: SIGTERM, then SIGKILL 5 s later.
# PR_SET_PDEATHSIG would only reach a direct child (vng, not the QEMU it
# starts) and needs a preexec_fn, unsafe next to the rootfs prefetch
# thread; a process group reaches QEMU as well.
_WATCHDOG = r"""
import os, signal, sys, time
groups = set()
buf = b''
while True:
	try:
		chunk = os.read(0, 4096)
	except OSError:
		chunk = b''
	if not chunk:
		break
	buf += chunk
	*lines, buf = buf.split(b'\n')
	for l in lines:
		if l[:1] == b'+':
			groups.add(int(l[1:]))
		elif l[:1] == b'-':
			groups.discard(int(l[1:]))
def alive(g):
	try:
		os.killpg(g, 0)
		return True
	except OSError:
		return False
for sig in (signal.SIGTERM, signal.SIGKILL):
	for g in list(groups):
		try:
			os.killpg(g, sig)
		except OSError:
			groups.discard(g)
	for _ in range(50):
		groups = {g for g in groups if alive(g)}
		if not groups:
			sys.exit(0)
		time.sleep(0.1)
"""


def _start_time(pid: int) -> Optional[str]:
	"""The start time of process @pid (clock ticks since boot, the
	22nd field of /proc/PID/stat): with the pid, it names one process
	for good, where a pid alone may be reused."""
	try:
		stat = Path(f'/proc/{pid}/stat').read_text()
	except OSError:
		return None
	return stat.rsplit(')', 1)[1].split()[19]


class Children:
	"""The process groups this tool process has started and not yet
	reaped: given to the watchdog (they end when this process ends),
	and written to the cache's runs/PID.json, so that a later run can
	end what an earlier one left if even the watchdog was killed."""

	def __init__(self) -> None:
		self._lock = threading.Lock()
		self._pipe: Optional[int] = None
		self._pid = 0
		self._live: dict = {}

	def _tell(self, line: str) -> None:
		if self._pid != os.getpid():	# first child, or a fork's
			self._pipe, self._pid, self._live = None, os.getpid(), {}
			r, w = os.pipe()
			try:
				subprocess.Popen([sys.executable, '-c', _WATCHDOG],
						 stdin=r, stdout=subprocess.DEVNULL,
						 stderr=subprocess.DEVNULL,
						 start_new_session=True)
			except OSError:
				os.close(w)
				return
			finally:
				os.close(r)
			self._pipe = w
		if self._pipe is not None:
			try:
				os.write(self._pipe, line.encode() + b'\n')
			except OSError:
				pass

	def started(self, proc: subprocess.Popen, argv: Sequence[str]) -> None:
		with self._lock:
			self._tell(f'+{proc.pid}')
			self._live[proc.pid] = {'pgid': proc.pid,
						'start': _start_time(proc.pid),
						'argv': ' '.join(argv)[:300]}
			self._record()

	def ended(self, proc: subprocess.Popen) -> None:
		with self._lock:
			self._tell(f'-{proc.pid}')
			self._live.pop(proc.pid, None)
			self._record()

	def record_file(self) -> Path:
		return runs_dir() / f'{os.getpid()}.json'

	def _record(self) -> None:
		"""runs/PID.json: this run (pid, start time, checkout) and its
		live groups; removed when none is left.  Best effort: a cache
		that cannot be written must not stop the command itself."""
		path = self.record_file()
		try:
			if not self._live:
				path.unlink(missing_ok=True)
				return
			path.parent.mkdir(parents=True, exist_ok=True)
			tmp = path.with_name(path.name + '.tmp')
			tmp.write_text(json.dumps({
				'pid': os.getpid(), 'start': _start_time(os.getpid()),
				'checkout': str(paths.REPO),
				'groups': list(self._live.values())}))
			os.replace(tmp, path)
		except OSError:
			pass


CHILDREN = Children()


def runs_dir() -> Path:
	return paths.cache_dir() / 'runs'


@dataclass(frozen=True)
class Leftover:
	"""A process group an earlier run started and did not end."""
	pgid: int
	argv: str
	run_pid: int
	checkout: str


def reap_leftovers(runs: Optional[Path] = None) -> List[Leftover]:
	"""End the process groups earlier runs of this cache left running
	(a run killed with its watchdog: kill -9 of the whole session); the
	groups ended.  A record of a run still alive is left alone; a group
	whose leader's pid now names another process is not touched."""
	runs = runs or runs_dir()
	ended = []
	try:
		records = sorted(runs.glob('*.json'))
	except OSError:
		return ended
	for rec in records:
		try:
			data = json.loads(rec.read_text())
		except (OSError, ValueError):
			continue
		pid = data.get('pid', 0)
		if pid == os.getpid() or (_start_time(pid) is not None and
					  _start_time(pid) == data.get('start')):
			continue		# that run is still going
		for g in data.get('groups', []):
			pgid = g['pgid']
			# A pid is not reused while a group of that id has a
			# member: a leader alive but started at another time
			# means the group is gone; a leader gone may have left
			# members (vng's QEMU), which killpg still reaches.
			now = _start_time(pgid)
			if now is not None and now != g.get('start'):
				continue
			try:
				os.killpg(pgid, signal.SIGKILL)
			except OSError:
				continue
			ended.append(Leftover(pgid, g.get('argv', ''), pid,
					      data.get('checkout', '')))
		rec.unlink(missing_ok=True)
	return ended


def _kill_group(proc: subprocess.Popen) -> None:
	for sig in (signal.SIGTERM, signal.SIGKILL):
		try:
			os.killpg(proc.pid, sig)
		except ProcessLookupError:
			return
		try:
			proc.wait(timeout=5)
			return
		except subprocess.TimeoutExpired:
			continue


def progress(msg: str) -> None:
	"""One line of progress on stderr, so stdout stays parseable."""
	print(f'[perfctr] {msg}', file=sys.stderr, flush=True)
