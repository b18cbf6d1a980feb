# SPDX-License-Identifier: GPL-2.0
"""The test matrix as data (data/matrix.toml): arch x base x config x CPU.

One description for every consumer: inv lava writes a LAVA job per cell,
inv docs shows the newest result of each cell, and the real boards a lab
would use stand beside the QEMU cells with what they would add.
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from . import arches, bases, configs
from .errors import UserError

MATRIX_FILE = Path(__file__).parent / 'data' / 'matrix.toml'


@dataclass(frozen=True)
class Cell:
	arch: str
	base: str
	config: str
	cpu: str
	ci: bool = False

	@property
	def name(self) -> str:
		return f'{self.arch}-{self.base}-{self.config}-{self.cpu}'

	def check_command(self) -> str:
		"""The inv check that runs this cell without LAVA."""
		a = arches.get(self.arch)
		cmd = f'inv check --arch {self.arch}'
		if self.base != bases_default():
			cmd += f' --base {self.base}'
		if self.config == 'debug':
			cmd += ' --debug'
		if a.picks_cpu and self.cpu != a.guest.cpu:
			cmd += f' --cpu {self.cpu}'
		return cmd


@dataclass(frozen=True)
class Board:
	"""A real machine a lab would boot the same kernel and ramdisk on."""
	arch: str
	tuxlava_device: str
	device_type: str
	boot: str
	adds: str


@dataclass(frozen=True)
class Matrix:
	cells: Tuple[Cell, ...]
	boards: Dict[str, Board]

	def select(self, arch: str = 'all',
		   names: Iterable[str] = ()) -> List[Cell]:
		"""The cells of an arch ('all': every one), or those named."""
		names = [n for n in names if n]
		if names:
			known = {c.name: c for c in self.cells}
			bad = [n for n in names if n not in known]
			if bad:
				raise UserError(f'no cell {", ".join(bad)} in the matrix',
						'use one of: ' + ', '.join(known) +
						f' ({MATRIX_FILE})')
			return [known[n] for n in names]
		if arch != 'all':
			arches.get(arch)	# an unknown arch: a UserError
		return [c for c in self.cells if arch in ('all', c.arch)]


def bases_default() -> str:
	return tomllib.loads(bases.BASES_FILE.read_text()).get('default', 'lts')


def load(path: Optional[Path] = None) -> Matrix:
	"""Read and check the matrix: every arch, base and config it names
	exists, no cell twice."""
	path = path or MATRIX_FILE
	try:
		data = tomllib.loads(path.read_text())
	except (OSError, tomllib.TOMLDecodeError) as e:
		raise UserError(f'{path}: {e}', 'fix the matrix file') from None
	known_arches = arches.known()
	known_bases = tomllib.loads(bases.BASES_FILE.read_text())['bases']
	cells: List[Cell] = []
	for i, c in enumerate(data.get('cells', [])):
		where = f'{path.name}: cell {i + 1}'
		try:
			cell = Cell(arch=c['arch'], base=c['base'],
				    config=c['config'], cpu=c['cpu'],
				    ci=bool(c.get('ci', False)))
		except (KeyError, TypeError) as e:
			raise UserError(f'{where}: missing {e}',
					'every cell has arch, base, config and cpu') \
				from None
		for what, value, choices in (
				('arch', cell.arch, known_arches),
				('base', cell.base, known_bases),
				('config', cell.config, configs.names())):
			if value not in choices:
				raise UserError(f'{where}: unknown {what} {value!r}',
						f'use one of: {", ".join(sorted(choices))}')
		if cell.name in (x.name for x in cells):
			raise UserError(f'{where}: {cell.name} is there twice',
					'drop one of them')
		cells.append(cell)
	boards = {}
	for arch, b in data.get('boards', {}).items():
		if arch not in known_arches:
			raise UserError(f'{path.name}: board for unknown arch {arch!r}',
					f'use one of: {", ".join(sorted(known_arches))}')
		boards[arch] = Board(arch, b['tuxlava_device'], b['device_type'],
				     b['boot'], ' '.join(b['adds'].split()))
	return Matrix(tuple(cells), boards)
