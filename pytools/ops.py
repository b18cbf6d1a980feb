# SPDX-License-Identifier: GPL-2.0
"""The one module that runs other programs.

Everything that starts a process (make, apt-get, dpkg-deb, tar, QEMU through
vng) goes through an Ops object, so the tool's own tests replace one object
and replay captured output instead of building kernels.  A failing command
becomes the tools' own error here, at the edge, with the log path in it.
"""

import codecs
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, Sequence

from .errors import InfraError


@dataclass(frozen=True)
class Completed:
	"""What a finished command left behind."""
	argv: tuple
	returncode: int
	output: str
	duration: float
	timed_out: bool = False


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
					 time.monotonic() - start, True)
		res = Completed(tuple(argv), proc.returncode, proc.stdout,
				time.monotonic() - start)
		if check and proc.returncode != 0:
			tail = '\n'.join(proc.stdout.splitlines()[-20:])
			raise InfraError(f'{" ".join(argv)} failed with status '
					 f'{proc.returncode}:\n{tail}')
		return res

	def stream(self, argv: Sequence[str], log: Path,
		   cwd: Optional[Path] = None,
		   env: Optional[Mapping[str, str]] = None,
		   timeout: Optional[float] = None,
		   on_line: Optional[Callable[[str], None]] = None) -> Completed:
		"""Run with output appended to log line by line as it arrives.

		on_line sees every line (for progress); the timeout kills the
		whole process group so a hung QEMU never outlives the tool.
		"""
		start = time.monotonic()
		full_env = dict(os.environ, **(env or {}))
		log.parent.mkdir(parents=True, exist_ok=True)
		timed_out = False
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
			assert proc.stdout is not None
			fd = proc.stdout.fileno()
			decoder = codecs.getincrementaldecoder('utf-8')('replace')
			buf = ''
			try:
				while True:
					ready, _, _ = select.select([fd], [], [], 0.2)
					chunk = os.read(fd, 65536) if ready else b''
					if chunk:
						buf += decoder.decode(chunk)
						*done, buf = buf.split('\n')
						for line in done:
							f.write(line + '\n')
							lines.append(line)
							if on_line:
								on_line(line)
						f.flush()
					elif ready:
						break		# EOF: every writer is gone
					if deadline and time.monotonic() > deadline:
						timed_out = True
						_kill_group(proc)
						f.write(f'*** killed after {timeout:.0f} s '
							'timeout ***\n')
						break
			except BaseException:
				# Interrupted (^C, SIGTERM turned into an exit): the
				# child runs in a session of its own, so it would
				# outlive us and race the next run in the same tree.
				_kill_group(proc)
				proc.wait()
				raise
			if buf:
				f.write(buf + '\n')
				lines.append(buf)
			proc.wait()
		return Completed(tuple(argv), proc.returncode, '\n'.join(lines),
				 time.monotonic() - start, timed_out)


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
