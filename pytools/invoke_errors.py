# SPDX-License-Identifier: GPL-2.0
"""invoke's own parse errors as the tools' user errors: exit 2 (invoke
says 1, the status of a failed test), the choices and a fix line.

`inv chek` and `inv check --bogus` are bad input, like a bad --arch.
invoke parses a task's options after it has loaded tasks.py, in
Program.parse_tasks, and turns an Exit raised there into its message and
status; install() (called by tasks.py) wraps that one method.  Errors
in the options before the task (`inv --bogus check`) come before
tasks.py is loaded and stay invoke's.
"""

import difflib
import re
from typing import Iterable, List, Optional

from invoke import Exit, ParseError, program

from .errors import EXIT_CANNOT_RUN


def message(err: ParseError, tasks: Iterable[str]) -> str:
	"""What a parse error means here, with the choices and a fix."""
	tasks = sorted(tasks)
	text = str(err)
	m = re.match(r"No idea what '(.*)' is!", text)
	token = m.group(1) if m else ''
	ctx = getattr(err, 'context', None)
	task = getattr(ctx, 'name', None)
	if m and token.startswith('-') and task:
		opts = options_of(ctx)
		near = difflib.get_close_matches(token, opts, 1, 0.75)
		return (f'perfctr: user error: inv {task}: no option {token}\n'
			f'  options of {task}: {", ".join(opts)}\n'
			f'  fix: {f"did you mean {near[0]}? " if near else ""}'
			f'inv --help {task} says what each does')
	if m:
		near = difflib.get_close_matches(token, tasks, 1, 0.75)
		where = f' (after inv {task})' if task else ''
		return (f'perfctr: user error: no task {token!r}{where}\n'
			f'  tasks: {", ".join(tasks)}\n'
			f'  fix: {f"did you mean {near[0]!r}? " if near else ""}'
			'inv --list says what each does')
	where = f'inv {task}: ' if task else ''
	return (f'perfctr: user error: {where}{text}\n'
		f'  fix: inv --help {task or ""}'.rstrip() +
		' says what the options take')


def options_of(ctx) -> List[str]:
	flags = getattr(ctx, 'flags', {}) or {}
	inverse = getattr(ctx, 'inverse_flags', {}) or {}
	return sorted(f for f in [*flags, *inverse] if f.startswith('--'))


def install(target: Optional[type] = None) -> None:
	"""Make Program.parse_tasks raise Exit(message, 2) for a parse error."""
	cls = target or program.Program
	orig = cls.parse_tasks
	if getattr(orig, 'perfctr_wrapped', False):
		return

	def parse_tasks(self) -> None:
		try:
			orig(self)
		except ParseError as e:
			names = getattr(self.collection, 'task_names', {}) or {}
			raise Exit(message(e, names), code=EXIT_CANNOT_RUN) \
				from None
	parse_tasks.perfctr_wrapped = True
	cls.parse_tasks = parse_tasks
