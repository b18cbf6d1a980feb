# SPDX-License-Identifier: GPL-2.0
"""What runs in the guest lives in pytools/guest/, and the host names it
where it is: every file the guest needs exists at the path the host
copies (the initramfs) or hands the guest (the vng command line), and
nothing there imports the host's modules."""

import ast
import importlib.util
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytools import arches, initramfs, kernel, lava, paths, pipeline

GUEST_FILES = sorted(p for p in paths.GUEST.rglob('*.py'))


def test_the_vng_guest_command_names_files_that_exist(tmp_path):
	opts = pipeline.Options(guest_env=(('PERFCTR_CHAIN', '10'),))
	plan = pipeline.GuestPlan(python=sys.executable, repo=str(paths.REPO),
				  out=str(tmp_path / 'out'), build_dir=tmp_path,
				  build=str(tmp_path))
	argv = shlex.split(pipeline.guest_command(
		plan, opts, kernel.Kselftests(tmp_path / 'ksel'), tmp_path / 'progs',
		pipeline.guest_env(opts, arches.get('x86_64'))))
	assert argv[:2] == ['cd', str(paths.REPO)]
	m = argv.index('-m')
	assert argv[m - 1] == sys.executable
	module = argv[m + 1]
	spec = importlib.util.find_spec(f'{module}.__main__')
	# run from this repository (cd REPO), not from an installed copy
	assert spec and Path(spec.origin).is_relative_to(paths.GUEST)
	checks = Path(argv[argv.index('--pytest') + 1])
	assert checks == paths.ABI_CHECKS and (checks / 'conftest.py').exists()
	assert sorted(p.name for p in checks.glob('test_*.py')) == [
		'test_info.py', 'test_layout.py', 'test_perfex.py',
		'test_pmu.py', 'test_vperfctr.py']
	assert 'PERFCTR_CHAIN=10' in argv


def test_the_initramfs_and_lava_compile_the_init_that_exists():
	assert initramfs.INIT_SRC == paths.INIT_SRC
	assert paths.INIT_SRC.is_file()
	assert '### perfctr-guest' in paths.INIT_SRC.read_text()
	assert lava.initramfs is initramfs	# LAVA's runner: compile_init


def test_the_checks_run_perfex_by_a_module_that_exists():
	text = (paths.ABI_CHECKS / 'test_perfex.py').read_text()
	assert "'-m', 'pytools.guest.perfex'" in text
	spec = importlib.util.find_spec('pytools.guest.perfex')
	assert Path(spec.origin).is_relative_to(paths.GUEST)


@pytest.mark.parametrize('path', GUEST_FILES,
			 ids=lambda p: str(p.relative_to(paths.GUEST)))
def test_guest_code_imports_nothing_of_the_host(path):
	allowed = set(sys.stdlib_module_names) | {'pytest', 'pytools'}
	for node in ast.walk(ast.parse(path.read_text())):
		if isinstance(node, ast.ImportFrom):
			if node.level:		# relative: inside pytools.guest
				continue
			names = [node.module]
		elif isinstance(node, ast.Import):
			names = [a.name for a in node.names]
		else:
			continue
		for name in names:
			assert name.split('.')[0] in allowed, f'{path}: {name}'
			if name.startswith('pytools'):
				assert name.startswith('pytools.guest'), \
					f'{path} imports the host\'s {name}'


def test_the_guest_runner_and_perfex_start_as_the_guest_starts_them():
	for module in (paths.GUEST_MODULE, 'pytools.guest.perfex'):
		r = subprocess.run([sys.executable, '-m', module, '--help'],
				   cwd=paths.REPO, capture_output=True, text=True,
				   timeout=60)
		assert r.returncode == 0, r.stderr
		assert 'usage' in r.stdout.lower()
