# SPDX-License-Identifier: GPL-2.0
"""The main job end to end: fetch, apply, build, boot, test (minutes).

Runs `inv check --arch x86_64` exactly as README's first command does and
checks what it reports.  Deselect with -m 'not e2e' for a quick run.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytools import paths

pytestmark = pytest.mark.e2e

# The least each family must report; fewer means tests went missing.
MIN_PASSED = {'kunit': 25, 'kselftest': 39, 'pytest': 28, 'kernel-log': 1}


@pytest.fixture(scope='module')
def check_run():
	env = dict(os.environ)
	env['PATH'] = f'{Path(sys.executable).parent}:{env["PATH"]}'
	proc = subprocess.run(['inv', 'check', '--arch', 'x86_64'],
			      cwd=paths.REPO, env=env, text=True,
			      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
			      timeout=3600)
	sys.stdout.write(proc.stdout[-6000:])
	return proc


def test_check_passes(check_run):
	assert check_run.returncode == 0, check_run.stdout[-4000:]


def test_last_line_is_the_results_file(check_run):
	last = check_run.stdout.strip().splitlines()[-1]
	path = Path(last)
	assert path.name == 'results.json' and path.exists(), last
	assert (path.parent / 'results.junit.xml').exists()


def _results(check_run):
	return json.loads(Path(check_run.stdout.strip().splitlines()[-1])
			  .read_text())


def test_every_family_ran_and_passed(check_run):
	r = _results(check_run)
	assert r['result'] == 'PASS'
	for fam, least in MIN_PASSED.items():
		n = sum(1 for t in r['tests'] if t['family'] == fam and
			t['status'] == 'PASS')
		assert n >= least, f'{fam}: {n} passed, expected >= {least}'
	assert not [t for t in r['tests'] if t['status'] == 'FAIL']


def test_results_name_what_ran(check_run):
	r = _results(check_run)
	assert r['arch'] == 'x86_64'
	assert r['base']['origin'].startswith('linux-source-6.12 ')
	assert len(r['base']['commit']) == 40
	assert r['kernel_release'].startswith('6.12.')
	assert r['accelerator']['accel'] in ('kvm', 'tcg')
	assert r['accelerator']['reason']
	assert r['config_fragments']
	assert {'base', 'apply', 'build', 'boot_and_test'} <= set(r['durations'])
	assert r['command'].startswith('inv check')
