# SPDX-License-Identifier: GPL-2.0
"""inv bench: what the guest prints becomes metrics and a table; the
guest program builds.  No figure is asserted: expectations are computed
from the fixtures' rounds (ppc64le-icount.jsonl is a real guest's output,
synthetic-x86_64-wall.jsonl is made up to exercise the noise verdict)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pytools import bench, bench_report, docs, paths
from pytools.ops import Ops

DATA = Path(__file__).parent / 'data' / 'bench'


def _metrics(*files):
	obs, facts = [], []
	for f, boot in files:
		o, fs = bench_report.parse((DATA / f).read_text(), boot=boot)
		obs += o
		facts += fs
	return bench_report.reduce(obs) + facts


PPC = 'ppc64le-icount.jsonl'


def _samples(figure, instrument):
	obs, _ = bench_report.parse((DATA / PPC).read_text())
	return next(o.samples for o in obs
		    if (o.figure, o.instrument) == (figure, instrument))


def test_parse_keeps_figures_unobservables_and_facts_only():
	text = (DATA / PPC).read_text() + '{"name": "broken", "unit": \n'
	obs, facts = bench_report.parse(text, boot='icount')
	assert 'broken' not in {o.figure for o in obs}
	assert {f['name'] for f in facts} >= {'counters_are_hardware',
					      'icount_ticks_per_instruction'}
	hw = [o for o in obs if o.figure == 'read_perf_read_hw_instructions']
	assert [o.instrument for o in hw] == ['pmc5', 'icount']
	assert 'holds the PMU' in hw[0].unobservable and not hw[0].samples
	assert len(hw[1].samples) == 5 and hw[1].overhead == 'loop_empty'
	assert all(o.boot == 'icount' for o in obs)
	# the old plain-metric entry point still gives the facts
	assert bench.parse_metrics('{"name": "x", "value": 1, "unit": "s"}\n'
				   'noise\n') == [
		{'name': 'x', 'value': 1, 'unit': 's', 'boot': ''}]


def test_exact_figures_are_the_least_round_minus_the_overhead():
	by = {m['name']: m for m in _metrics((PPC, ''))}
	m = by['read_vperfctr_read.icount']
	loop = min(_samples('loop_empty', 'icount'))
	assert m['value'] == pytest.approx(
		min(_samples('read_vperfctr_read', 'icount')) - loop, abs=1e-3)
	assert m['unit'] == 'instructions'
	assert m['overhead'] == {'figure': 'loop_empty', 'value': round(loop, 4)}
	assert '-icount' in m['method']
	assert m['samples'] == list(_samples('read_vperfctr_read', 'icount'))
	b = by['start_vperfctr_control_new.icount']
	assert b['overhead']['figure'] == 'bracket_empty'
	# no overhead named: the least round as it is
	assert by['ctxsw_none.cpu0']['value'] == min(_samples('ctxsw_none', 'cpu0'))
	u = by['read_perf_read_hw_instructions.pmc5']
	assert u['value'] is None and 'holds the PMU' in u['unobservable']


def test_derived_ratios_and_what_a_switch_configuration_adds():
	by = {m['name']: m for m in _metrics((PPC, ''))}
	a = by['read_vperfctr_read.icount']['value']
	b = by['read_perf_read_task_clock.icount']['value']
	r = by['read_vperfctr_read_vs_read_perf_read_task_clock.icount']
	assert r['value'] == round(a / b, 4) and r['unit'] == 'ratio'
	assert 'inside_noise' not in r		# exact: no noise verdict
	added = by['ctxsw_vperfctr_pmc_both_added.icount']['value']
	assert added == pytest.approx(
		min(_samples('ctxsw_vperfctr_pmc_both', 'icount')) -
		min(_samples('ctxsw_none', 'icount')), abs=1e-3)
	# an unobservable side makes the derived figure unobservable, not 0
	u = by['ctxsw_vperfctr_pmc_both_added.cpu0']
	assert u['value'] is None and 'holds the PMU' in u['unobservable']
	# how much of icount's count QEMU's PMU sees
	s = by['loop_empty_pmc5_over_icount']
	assert s['value'] == round(by['loop_empty.pmc5']['value'] /
				   by['loop_empty.icount']['value'], 4)


def test_wall_ratios_carry_their_spread_and_a_noise_verdict():
	by = {m['name']: m for m in _metrics(
		('synthetic-x86_64-wall.jsonl', 'wall'))}
	g = by['read_getpid.wall']
	assert g['value'] == pytest.approx(121 - 1.1)	# medians
	assert g['spread'] == round(151 / 101, 4)
	# perf's switch is 2.2 x none, but none's rounds spread 2.5 x
	p = by['ctxsw_perf_task_clock_both_vs_none.wall']
	assert p['value'] == round(3100 / 1400, 4) and p['inside_noise']
	# vperfctr_read is 2.6 x getpid, well outside getpid's 1.5 x spread
	v = by['read_vperfctr_read_vs_getpid.wall']
	assert v['inside_noise'] is False and v['value'] > 2
	# below its overhead's median: not a negative time, but 'the noise'
	r = by['read_rdtsc.wall']
	assert r['value'] is None and 'below the noise' in r['unobservable']
	# wall time gives no 'added' instructions
	assert 'ctxsw_perf_task_clock_both_added.wall' not in by


def test_table_compares_perfctr_with_perf_floors_and_anchors():
	ms = _metrics((PPC, 'icount'))
	by = {m['name']: m for m in ms}
	text = bench_report.table(ms)
	row = next(l for l in text.splitlines()
		   if l.startswith('read, system call (perf: task-clock)'))
	ratio = by['read_vperfctr_read_vs_read_perf_read_task_clock.icount']
	assert f'{by["read_vperfctr_read.icount"]["value"]:,.1f}' in row
	assert f'{ratio["value"]:.2f}x' in row
	assert 'icount' in row and '2879/3173' in row	# perf read() anchors
	fast = next(l for l in text.splitlines()
		    if l.startswith('read, user space'))
	assert fast.split()[-2:] == ['133', '143']
	assert 'floor: read_getpid' in text
	sw = next(l for l in text.splitlines() if l.startswith('vperfctr_pmc_both'))
	assert 'n/o' in sw
	assert 'ctxsw_vperfctr_pmc_both.cpu0: perf cannot count' in text
	assert 'Weaver' in text and 'ISPASS 2015' in text
	assert "QEMU's PMU sees" in text
	wall = bench_report.table(_metrics(('synthetic-x86_64-wall.jsonl', '')))
	assert 'inside the noise' in wall and '(noise)' in wall
	# what the guest checked is printed, failures included
	assert 'perf throttle lifted: NO' in wall
	assert 'read_vperfctr_read_failed_calls: 0.5' in wall
	assert 'icount calibration 0.51' in text


def test_anchors_are_the_published_weaver_figures():
	a = bench_report.anchors_json()
	rows = {r['interface']: r for r in a['rows']}
	assert rows['perfctr 2.6.32, rdpmc fast path']['start'] == 8683
	assert rows['perf_event read() syscall']['read'] == 2879
	assert a['unit'] == 'cycles'


def test_docs_charts_read_the_new_metric_names(tmp_path):
	ms = _metrics((PPC, 'icount'))
	by = {m['name']: m for m in ms}
	charts = {t: bars for t, bars, _ in docs.bench_charts(ms)}
	reads = dict(charts['reads: instructions per operation'])
	assert reads['vperfctr_read'] == by['read_vperfctr_read.icount']['value']
	sw = dict(charts['context switch: instructions per switch (icount)'])
	assert sw['vperfctr_pmc_both'] == by['ctxsw_vperfctr_pmc_both.icount']['value']
	section = docs._bench_section({'meta': {'arch': 'ppc64le'},
				       'metrics': ms,
				       'table': bench_report.table(ms)},
				      'x', tmp_path, 'b')
	assert 'not observable: perf' in section and '.. code-block:: text' in section


def test_cold_build_record_round_trips(tmp_path):
	from pytools import kernel
	assert kernel.cold_build(tmp_path) is None
	kernel.record_cold_build(tmp_path, 636.04)
	assert kernel.cold_build(tmp_path)['seconds'] == 636.0


def _syscall_numbers():
	"""The numbers the series gives the calls (x86_64's table)."""
	text = ''.join(p.read_text() for p in sorted(paths.PATCHES.glob('0*.patch')))
	nums = dict(re.findall(r'^\+(\d+)\s+(?:common|64)\s+(\w*perfctr\w*)\s',
			       text, re.M))
	return {name: n for n, name in nums.items()}


@pytest.mark.parametrize('cc', ['gcc', 'powerpc64le-linux-gnu-gcc'])
def test_the_guest_program_builds(tmp_path, cc):
	"""Against the uapi header as the series creates it, warnings as
	errors, for each arch whose compiler is here."""
	if not shutil.which(cc):
		pytest.skip(f'{cc} is not installed (./bootstrap installs it)')
	header = docs.new_file(paths.PATCHES, 'include/uapi/linux/perfctr.h',
			       Ops())
	(tmp_path / 'linux').mkdir()
	(tmp_path / 'linux' / 'perfctr.h').write_text(header)
	nums = _syscall_numbers()
	assert set(nums) >= {'perfctr_info', 'vperfctr_open', 'vperfctr_control',
			     'vperfctr_read', 'vperfctr_iresume', 'vperfctr_unlink'}
	defs = [f'-D__NR_{k}={v}' for k, v in nums.items()]
	r = subprocess.run([cc, '-O2', '-Wall', '-Werror', '-c', '-I', str(tmp_path),
			    *defs, '-o', str(tmp_path / 'b.o'), str(bench.SOURCE)],
			   capture_output=True, text=True)
	assert r.returncode == 0, r.stderr


def test_the_icount_boot_asks_qemu_for_it_before_the_command(tmp_path):
	from pytools import boot
	from pytools.arches import known
	req = boot.BootRequest(
		arch=known()['x86_64'], image=tmp_path / 'bzImage', command='true',
		accel=boot.AccelChoice(boot.Accel.TCG, 'test'), rwdirs=(),
		log=tmp_path / 'log', timeout=1, cpus=1,
		qemu_opts=bench.ICOUNT_OPTS)
	argv = boot.vng_argv(req, 'vng')
	i = argv.index('--qemu-opts=-icount shift=0,sleep=off')
	assert argv[i + 1:] == ['--exec', 'true'] and '--disable-kvm' in argv
	# only the arch's listed boots run
	assert known()['ppc64le'].bench_boots == ('icount',)
	assert known()['x86_64'].bench_boots == ('wall', 'icount')
