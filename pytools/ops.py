# SPDX-License-Identifier: GPL-2.0
"""The one module that runs other programs.

Everything that starts a process (make, apt-get, dpkg-deb, tar, git, QEMU
through vng) goes through an Ops object, so the tool's own tests replace one object
and replay captured output instead of building kernels.  A failing command
becomes the tools' own error here, at the edge, with the log path in it.
"""

import codecs
import contextlib
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
from typing import Callable, Iterable, Mapping, Optional, Sequence, Union

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
			proc = subprocess.run(list(argv), cwd=cwd, env=full_env,
					      stdout=subprocess.PIPE,
					      stderr=subprocess.STDOUT,
					      text=True, errors='replace',
					      timeout=timeout)
		except FileNotFoundError as e:
			raise InfraError(f'cannot run {argv[0]}: {e.strerror}',
					 'run ./bootstrap to install the tools') from e
		except subprocess.TimeoutExpired as e:
			out = e.output or ''
			if isinstance(out, bytes):
				out = out.decode(errors='replace')
			return Completed(tuple(argv), -1, out,
					 time.monotonic() - start, True,
					 f'did not finish within {timeout:.0f} s')
		res = Completed(tuple(argv), proc.returncode, proc.stdout,
				time.monotonic() - start)
		if check and proc.returncode != 0:
			tail = '\n'.join(proc.stdout.splitlines()[-20:])
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
				raise
			if buf:
				f.write(buf + '\n')
				lines.append(buf)
			proc.wait()
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
		return Completed(tuple(argv), rc, '', time.monotonic() - start)


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
