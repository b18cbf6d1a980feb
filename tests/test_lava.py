# SPDX-License-Identifier: GPL-2.0
"""inv lava: the matrix, tuxlava's jobs checked by LAVA's real dispatcher
(lava-run --validate, about a second a job), the ramdisk's layout, and
reading a real dispatcher log back into results.

Running a job for real takes minutes (a whole guest under TCG): that is
test_lava_run_e2e, opt-in (PERFCTR_LAVA_RUN=1, marker lava)."""

import dataclasses
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml
from invoke import Context, Exit

import tasks
from pytools import arches, initramfs, kernel, lava, matrix, qemu, results
from pytools.errors import UserError
from pytools.ops import Ops
from pytools.results import Status, TestCase

from conftest import DATA

M = matrix.load()
needs_lava_run = pytest.mark.skipif(
	not shutil.which('lava-run'),
	reason='lava-run (Debian lava-dispatcher) is not installed: '
	       'run ./bootstrap')


def test_the_matrix_is_valid_and_covers_both_arches():
	assert {c.arch for c in M.cells} == set(arches.known())
	assert len({c.name for c in M.cells}) == len(M.cells)
	assert {'x86_64', 'ppc64le'} <= set(M.boards)
	cell = M.select('ppc64le')[0]
	assert cell.check_command() == 'inv check --arch ppc64le'
	p10 = M.select(names=['ppc64le-lts-default-power10'])[0]
	assert p10.check_command() == 'inv check --arch ppc64le --cpu power10'


@pytest.mark.parametrize('text,says', [
	('[[cells]]\narch = "arm64"\nbase = "lts"\nconfig = "default"\n'
	 'cpu = "max"\n', "unknown arch 'arm64'"),
	('[[cells]]\narch = "x86_64"\nbase = "lts"\nconfig = "fast"\n'
	 'cpu = "max"\n', "unknown config 'fast'"),
	('[[cells]]\narch = "x86_64"\nbase = "lts"\n', "missing 'config'"),
	('[[cells]]\narch = "x86_64"\nbase = "lts"\nconfig = "default"\n'
	 'cpu = "max"\n' * 2, 'there twice'),
	('[[cells]\n', 'matrix.toml'),
])
def test_a_bad_matrix_says_where(tmp_path, text, says):
	p = tmp_path / 'matrix.toml'
	p.write_text(text)
	with pytest.raises(UserError, match=says):
		matrix.load(p)


def test_an_unknown_cell_names_the_known_ones():
	with pytest.raises(UserError) as e:
		M.select(names=['x86_64-lts-default-pentium'])
	assert 'x86_64-lts-default-max' in str(e.value)


def _stub_cell_files(cell, d):
	"""A kernel and a ramdisk to point the job at: validation reads
	the job and the device, not the images."""
	d.mkdir(parents=True)
	kern = d / Path(arches.get(cell.arch).image).name
	kern.write_bytes(b'\0' * 64)
	rd = d / lava.RAMDISK
	rd.write_bytes(initramfs.cpio([('init', 0o100755, b'')]))
	base = d.resolve().as_uri()
	return lava.Urls(f'{base}/{kern.name}', f'{base}/{rd.name}')


@needs_lava_run
@pytest.mark.parametrize('cell', M.cells, ids=lambda c: c.name)
def test_every_cell_job_is_valid_for_the_dispatcher(cell, tmp_path):
	"""tuxlava's job and device dictionary for each cell, checked by
	lava-run --validate (the dispatcher builds the whole pipeline)."""
	urls = _stub_cell_files(cell, tmp_path / cell.name)
	job, device = lava.qemu_job(cell, urls, lava.guest_env(cell),
				    tmp_path / 'work')
	assert job['context']['arch'] == cell.arch
	assert job['context']['cpu'] == cell.cpu
	assert job['context']['no_kvm'] is True		# /dev/kvm fails here
	boot = next(a['boot'] for a in job['actions'] if 'boot' in a)
	assert boot['parameters']['kernel-start-message'] == lava.START_MESSAGE
	assert lava.PROMPT in boot['prompts']
	steps = next(a['test'] for a in job['actions'] if 'test' in a)[
		'definitions'][0]['repository']['run']['steps']
	assert steps[0].endswith(lava.RUNNER)
	for k, v in lava.guest_env(cell):
		assert f'{k}={v}' in steps[0]
	assert '-enable-kvm' not in str(device)
	j = lava._dump(job, tmp_path / 'qemu.yaml')
	d = lava._dump(device, tmp_path / 'qemu-device.yaml')
	v = lava.validate(j, d, Ops())
	assert v.ok, v.errors


@needs_lava_run
def test_validation_can_fail(tmp_path):
	"""The check is real: a job for an arch the device lacks is refused
	with the dispatcher's reason."""
	cell = M.cells[0]
	urls = _stub_cell_files(cell, tmp_path / 'c')
	job, device = lava.qemu_job(cell, urls, (), tmp_path / 'work')
	device['available_architectures'].remove(cell.arch)
	v = lava.validate(lava._dump(job, tmp_path / 'j.yaml'),
			  lava._dump(device, tmp_path / 'd.yaml'), Ops())
	assert not v.ok
	assert any('architecture' in e for e in v.errors), v.errors


def test_board_jobs_for_a_lab(tmp_path):
	for arch, board in M.boards.items():
		cell = M.select(arch)[0]
		urls = lava.Urls('https://files.example.org/k',
				 'https://files.example.org/rootfs.cpio')
		job = lava.board_job(cell, board, urls, lava.guest_env(cell),
				     tmp_path)
		assert job['device_type'] == board.device_type
		deploy = job['actions'][0]['deploy']
		assert deploy['to'] == 'tftp'
		assert deploy['ramdisk']['url'] == urls.ramdisk
		assert any('test' in a for a in job['actions'])


def test_the_backport_qemu_goes_into_the_device_dictionary(tmp_path):
	cell = M.select('ppc64le')[0]
	urls = _stub_cell_files(cell, tmp_path / 'c')
	_, device = lava.qemu_job(cell, urls, (), tmp_path / 'w')
	q = qemu.Qemu('/opt/q/bin/qemu-system-ppc64', (10, 0, 2), 'debian x',
		      datadir='/opt/q/share/qemu')
	params = lava.use_qemu(device, q)['actions']['boot']['methods'][
		'qemu']['parameters']
	assert params['command'] == q.binary
	assert params['options'][0] == '-L /opt/q/share/qemu'


def _cpio_names(data: bytes) -> dict:
	"""name -> (mode, data) of a newc archive."""
	out, i = {}, 0
	while True:
		hdr = data[i:i + 110]
		f = [int(hdr[6 + 8 * k:14 + 8 * k], 16) for k in range(13)]
		mode, size, nlen = f[1], f[6], f[11]
		name = data[i + 110:i + 110 + nlen - 1].decode()
		j = i + 110 + nlen
		j += -j % 4
		if name == 'TRAILER!!!':
			return out
		out[name] = (mode, data[j:j + size])
		i = j + size + (-(j + size) % 4)


@pytest.mark.parametrize('arch', ['x86_64', 'ppc64le'])
def test_the_ramdisk(arch, tmp_path, monkeypatch):
	"""busybox as init, a getty on the arch's console, root without a
	password, the runner compiled from guest/init.c, the tests."""
	fake_bb = tmp_path / 'busybox'
	fake_bb.write_bytes(b'BUSYBOX')
	monkeypatch.setattr(lava, 'busybox', lambda a, ops: fake_bb)
	tests = kernel.Kselftests(tmp_path / 'install')
	tests.collection.mkdir(parents=True)
	(tests.install / 'kselftest-list.txt').write_text('perfctr:vperfctr_test\n')
	(tests.collection / 'vperfctr_test').write_bytes(b'ELF')
	(tests.collection / 'vperfctr_test').chmod(0o755)
	(tests.collection / 'settings').write_text('timeout=900\n')
	(tests.collection / 'notes.txt').write_text('not a test')
	rd = lava.ramdisk(arch, tests, tmp_path / 'rootfs.cpio', Ops())
	files = _cpio_names(rd.read_bytes())
	console = arches.get(arch).guest.console
	assert stat.S_ISLNK(files['init'][0])
	assert files['init'][1] == b'bin/busybox'
	assert files['bin/busybox'][1] == b'BUSYBOX'
	assert f'{console}::respawn:/sbin/getty -L {console}' in \
		files['etc/inittab'][1].decode()
	assert files['etc/passwd'][1].startswith(b'root::0:0:')
	assert b'perfctr-ramdisk: Linux' in files['etc/init.d/rcS'][1]
	assert files['perfctr/run'][1][:4] == b'\x7fELF'
	assert 'tests/vperfctr_test' in files
	assert files['tests/settings'][1] == b'timeout=900\n'
	assert 'tests/notes.txt' not in files
	assert 'tests/notes.txt' not in files


LOG = DATA / 'lava' / 'lava-x86_64.log'


def test_reading_a_real_dispatcher_log(tmp_path):
	"""A log lava-run 2023.01 wrote for the x86_64 cell here (on a host
	so loaded that the guest's TSC calibration went 8.7 times low and
	RCU stalled): the console (with LAVA's '\\"' undone), LAVA's own
	verdicts, and the tests cut out of it as inv check does."""
	outcome = lava.read_log(LOG.read_text())
	assert outcome.job_result == 'pass'
	assert lava.runner_case(outcome)['result'] == 'pass'
	assert any('perfctr login:' in l for l in outcome.console)
	assert not any('\\"' in l for l in outcome.console)
	console = tmp_path / 'console.log'
	console.write_text('\n'.join(outcome.console) + '\n')
	sizes = initramfs.split_console(console.read_text(), tmp_path / 'g')
	assert 'guest.json' in sizes and 'dmesg.txt' in sizes
	json.loads((tmp_path / 'g' / 'guest.json').read_text())
	from pytools import collect
	tests = collect.collect(tmp_path / 'g', console, DATA / 'fake-tree',
				expect_pytest=False)
	count = {f: sum(t.family == f for t in tests)
		 for f in ('kunit', 'kselftest', 'kernel-log')}
	assert count == {'kunit': 50, 'kselftest': 65, 'kernel-log': 1}
	assert sorted(t.name for t in tests if t.status is Status.FAIL) == [
		'no WARN/BUG/Oops/panic/KASAN/lockdep/UBSAN reports',
		'vperfctr_test.vperfctr.busy_thread_counts_its_cpu_time',
		'vperfctr_test.vperfctr.two_threads_one_cpu_count_themselves']
	assert sum(t.status is Status.SKIP for t in tests) == 13


def test_a_broken_job_is_a_problem_not_a_pass(tmp_path):
	text = ('{"dt": "x", "lvl": "error", "msg": "JobCanceled: The job was '
		'canceled"}\n{"dt": "x", "lvl": "results", "msg": {"case": '
		'"job", "definition": "lava", "result": "fail"}}\n')
	outcome = lava.read_log(text)
	assert outcome.job_result == 'fail'
	run = results.RunResult(arch='x86_64', base={}, logs={'lava_log': 'l'},
				tests=[TestCase('kunit', 'a', Status.PASS)])
	lava._lava_problems(run, outcome, 0, '')
	assert not run.passed
	assert any('job failed' in p for p in run.problems)
	assert any('no result for the perfctr test case' in p
		   for p in run.problems)


def test_compare_test_by_test():
	ref = results.load(DATA / 'results' / 'x86_64-lts.json')
	same = dataclasses.replace(ref, runner={'kind': 'lava'})
	c = lava.compare(ref, same)
	assert c.agrees and c.same == len(ref.tests)
	pytests = [t for t in ref.tests if t.family == 'pytest']
	other = [t for t in ref.tests if t.family != 'pytest']
	flipped = dataclasses.replace(other[0], status=Status.FAIL)
	lava_run = dataclasses.replace(ref, tests=[
		flipped, *other[2:],
		TestCase('kselftest', 'new.case', Status.PASS),
		TestCase('pytest', 'python ABI checks', Status.SKIP,
			 lava.NO_PYTHON_REASON)])
	c = lava.compare(ref, lava_run)
	assert not c.agrees
	assert c.differ == ((f'{flipped.family}: {flipped.name}',
			     other[0].status.value, 'FAIL'),)
	assert c.only_reference == (f'{other[1].family}: {other[1].name}',)
	assert c.only_lava == ('kselftest: new.case',)
	assert c.not_comparable[0].startswith(f'{len(pytests)} pytest tests')


@pytest.mark.parametrize('kw,says', [
	({'cell': 'x86_64-lts-default-pentium'}, 'no cell'),
	({'arch': 'arm64'}, "unknown arch 'arm64'"),
	({'reference': 'r.json'}, '--reference is for --run'),
	({'url': 'files.example.org/x'}, 'not a URL'),
])
def test_inv_lava_bad_options_exit_2(kw, says, capsys, monkeypatch):
	def slow(*a, **k):
		raise AssertionError('reached a build with bad options')
	monkeypatch.setattr(lava, 'main', slow)
	with pytest.raises(Exit) as e:
		tasks.lava(Context(), **kw)
	assert e.value.code == 2
	assert says in capsys.readouterr().err


@pytest.mark.e2e
@pytest.mark.lava
@pytest.mark.skipif(os.environ.get('PERFCTR_LAVA_RUN') != '1',
		    reason='runs a whole guest under LAVA (minutes): '
			   'PERFCTR_LAVA_RUN=1 pytest -m lava')
@needs_lava_run
@pytest.mark.parametrize('arch', ['x86_64', 'ppc64le'])
def test_lava_run_e2e(arch, tmp_path, monkeypatch):
	"""inv lava --run for the arch's first cell: the dispatcher boots
	the kernel inv check builds and the verdicts agree with inv check's
	(run it first; the newest run of the same kernel is the reference)."""
	assert tasks.lava(Context(), arch=arch, run=True,
			  out=str(tmp_path)) is None	# exit 0


def test_the_reference_is_the_newest_check_of_the_same_kernel_and_cpu(
		tmp_path, monkeypatch):
	monkeypatch.setenv('PERFCTR_RESULTS', str(tmp_path))
	ref = results.load(DATA / 'results' / 'ppc64le-lts.json')

	def put(name, **changes):
		r = dataclasses.replace(ref, **changes)
		results.write(r, tmp_path / name)
	put('20260101-000000-ppc64le-lts')
	put('20260102-000000-ppc64le-lts')			# newest match
	put('20260103-000000-ppc64le-lts', cpu='power10',
	    qemu=dict(ref.qemu, cpu='power10'))
	put('20260104-000000-ppc64le-lts', kernel_release='7.2.13')
	put('20260105-000000-ppc64le-lts-lava', runner={'kind': 'lava'})
	(tmp_path / 'latest').symlink_to('20260105-000000-ppc64le-lts-lava')
	found = lava.find_reference(ref, 'power9')
	assert found == tmp_path / '20260102-000000-ppc64le-lts' / 'results.json'
	assert lava.find_reference(ref, 'power8') is None
