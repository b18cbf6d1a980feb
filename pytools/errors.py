# SPDX-License-Identifier: GPL-2.0
"""Error families of the perfctr tools.

Two families, as tuxmake separates them: a UserError is bad input (a missing
tree, a dirty work tree, a patch that conflicts) and says what to do about
it; an InfraError is the machine lacking something (a tool, a package, a
network answer) and says which.  Both exit with status 2.  A test that ran
and failed is not an exception: it is a result, and the run exits 1.
"""

EXIT_OK = 0
EXIT_TEST_FAILED = 1
EXIT_CANNOT_RUN = 2


class PerfctrError(Exception):
	"""Base of every error the tools report; carries a hint for the user."""

	kind = 'error'
	exit_code = EXIT_CANNOT_RUN

	def __init__(self, message: str, hint: str = '') -> None:
		super().__init__(message)
		self.message = message
		self.hint = hint

	def __str__(self) -> str:
		if self.hint:
			return f'{self.message}\n  fix: {self.hint}'
		return self.message


class UserError(PerfctrError):
	"""The request cannot be carried out as given; the user can fix it."""

	kind = 'user error'


class InfraError(PerfctrError):
	"""A tool, package or resource the run needs is missing or broken."""

	kind = 'infrastructure error'


class GitError(Exception):
	"""A git command that failed where the tools expected it to work.

	Not a PerfctrError on purpose: it is a bug or a broken repository,
	reported as an internal error with its traceback in a log (exit 2);
	the callers that expect a failure (a patch that does not apply)
	catch it and say what to do.
	"""

	def __init__(self, argv, status: int, stderr: str, stdout: str = '') \
			-> None:
		self.argv = list(argv)
		self.status = status
		self.stderr = stderr
		self.stdout = stdout
		super().__init__(f'{" ".join(self.argv)} failed with status '
				 f'{status}: {(stderr or stdout).strip()[:500]}')


class PatchConflict(UserError):
	"""A patch of the series did not apply."""

	def __init__(self, patch: str, files: list, message: str,
		     hint: str) -> None:
		super().__init__(message, hint)
		self.patch = patch
		self.files = files
