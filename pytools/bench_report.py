# SPDX-License-Identifier: GPL-2.0
"""inv bench's figures: from the guest's raw rounds to metrics and a table.

Pure: no programs run here.  bench/perfctr_bench.c prints, a line each,
a figure's rounds on one instrument ({name, unit, instrument, samples,
overhead}), an instrument that cannot observe a figure ({..., unobservable})
or a plain fact ({name, value, unit}).  reduce() turns them into metrics
(dicts, as bench.json and the published snapshot hold them): every figure
named <figure>.<instrument>, with its value, unit, method and the rounds it
came from; exact instruments give the least round minus the least round of
the overhead, wall time the medians' difference and the spread (largest
over smallest round).  Derived metrics follow: perfctr over perf for each
comparison of data/bench.toml, the instructions each context-switch
configuration adds to no counters at all, and under wall time each ratio's
noise: a ratio is "inside the noise" when the larger spread of its two
figures (minus one) is at least its distance from 1.

table() prints perfctr against perf and the floors, with the published
cycle figures (Weaver's) beside them.
"""

import json
import statistics
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

DATA = Path(__file__).parent / 'data' / 'bench.toml'


def load_data(path: Path = DATA) -> dict:
	return tomllib.loads(path.read_text())


@dataclass(frozen=True)
class Observation:
	"""One figure on one instrument, as the guest printed it."""
	figure: str
	instrument: str
	unit: str
	samples: Tuple[float, ...] = ()
	overhead: Optional[str] = None
	unobservable: Optional[str] = None
	boot: str = ''		# which guest boot (the host's label)


def parse(text: str, boot: str = '') -> Tuple[List[Observation], List[dict]]:
	"""The guest's lines: (observations, plain facts).  Anything else on
	the console (kernel messages, a line cut short) is skipped."""
	obs: List[Observation] = []
	facts: List[dict] = []
	for line in text.splitlines():
		line = line.strip()
		if not line.startswith('{'):
			continue
		try:
			m = json.loads(line)
		except ValueError:
			continue
		if not isinstance(m, dict) or not {'name', 'unit'} <= set(m):
			continue
		if 'instrument' in m and ('samples' in m or 'unobservable' in m):
			samples = m.get('samples') or []
			if not all(isinstance(s, (int, float)) for s in samples):
				continue
			obs.append(Observation(
				figure=m['name'], instrument=m['instrument'],
				unit=m['unit'], samples=tuple(samples),
				overhead=m.get('overhead'),
				unobservable=m.get('unobservable'), boot=boot))
		elif 'value' in m and isinstance(m['value'], (int, float)):
			facts.append({'name': m['name'], 'value': m['value'],
				      'unit': m['unit'], 'boot': boot})
	return obs, facts


def _spread(samples: Sequence[float]) -> Optional[float]:
	lo = min(samples)
	return max(samples) / lo if lo > 0 else None


def _central(instr: dict, samples: Sequence[float]) -> float:
	return min(samples) if instr['exact'] else statistics.median(samples)


def metric_name(figure: str, instrument: str) -> str:
	return f'{figure}.{instrument}'


def reduce(observations: Sequence[Observation],
	   data: Optional[dict] = None) -> List[dict]:
	"""Metrics, one per observation, then the derived ones."""
	data = data or load_data()
	instruments = data['instruments']
	by_key = {(o.figure, o.instrument): o for o in observations}
	out: List[dict] = []
	for o in observations:
		instr = instruments.get(o.instrument,
					{'exact': False, 'method': o.instrument})
		m = {'name': metric_name(o.figure, o.instrument),
		     'figure': o.figure, 'instrument': o.instrument,
		     'unit': o.unit, 'value': None,
		     'what': data['figures'].get(o.figure, ''),
		     'method': instr['method']}
		if o.boot:
			m['boot'] = o.boot
		if o.unobservable or not o.samples:
			m['unobservable'] = o.unobservable or 'no rounds'
			out.append(m)
			continue
		value = _central(instr, o.samples)
		ov = by_key.get((o.overhead, o.instrument)) if o.overhead else None
		if ov is not None and ov.samples:
			sub = _central(instr, ov.samples)
			value -= sub
			m['overhead'] = {'figure': o.overhead,
					 'value': round(sub, 4)}
		m['samples'] = list(o.samples)
		if value <= 0 and not instr['exact']:
			# a wall figure below its own overhead: lost in the noise
			m['unobservable'] = (
				f'below the noise: median {_central(instr, o.samples):.4g} '
				f'{o.unit} is not above the median of {o.overhead} '
				f'({m["overhead"]["value"]:.4g} {o.unit})')
			out.append(m)
			continue
		m['value'] = round(value, 4)
		m['spread'] = (round(_spread(o.samples), 4)
			       if _spread(o.samples) else None)
		out.append(m)
	return out + derived(out, data)


def _ratio_metric(name: str, a: dict, b: dict, what: str) -> dict:
	m = {'name': name, 'unit': 'ratio', 'instrument': a['instrument'],
	     'what': what, 'method': f'{a["name"]} / {b["name"]}',
	     'value': None}
	if a['value'] is None or b['value'] is None or b['value'] <= 0:
		m['unobservable'] = (a.get('unobservable') or b.get('unobservable')
				     or 'a figure is zero or negative')
		return m
	r = a['value'] / b['value']
	m['value'] = round(r, 4)
	# the noise verdict is for wall time: an exact instrument's least
	# round has no noise to speak of (its spread is interrupts landing
	# in some rounds)
	if a['instrument'] == 'wall' and a.get('spread') and b.get('spread'):
		noise = max(a['spread'], b['spread']) - 1
		m['spread'] = round(max(a['spread'], b['spread']), 4)
		m['inside_noise'] = noise >= abs(r - 1)
	return m


def derived(metrics: Sequence[dict], data: dict) -> List[dict]:
	"""Ratios and differences from the reduced figures."""
	by = {m['name']: m for m in metrics}
	instrs = sorted({m['instrument'] for m in metrics
			 if 'figure' in m})
	out: List[dict] = []
	for i in instrs:
		for c in data['compare']:
			a = by.get(metric_name(c['perfctr'], i))
			b = by.get(metric_name(c['perf'], i))
			if a and b:
				out.append(_ratio_metric(
					f'{c["perfctr"]}_vs_{c["perf"]}.{i}', a, b,
					f'{c["what"]}: perfctr / perf'))
		none = by.get(metric_name('ctxsw_none', i))
		for f in data['report']['ctxsw'][1:]:
			x = by.get(metric_name(f, i))
			if not (x and none):
				continue
			if data['instruments'].get(i, {}).get('exact'):
				d = {'name': f'{f}_added.{i}', 'unit': x['unit'],
				     'instrument': i, 'value': None,
				     'what': f'what {f} adds to a switch with no '
					     f'counters', 'method':
				     f'{x["name"]} - {none["name"]}'}
				if x['value'] is None or none['value'] is None:
					d['unobservable'] = (x.get('unobservable') or
							     none.get('unobservable'))
				else:
					d['value'] = round(x['value'] - none['value'], 4)
				out.append(d)
			out.append(_ratio_metric(f'{f}_vs_none.{i}', x, none,
						 f'{f} relative to no counters'))
		if i != 'icount':
			for m in metrics:
				ic = by.get(metric_name(m.get('figure', ''), 'icount'))
				if (m.get('instrument') == i and ic and
				    data['instruments'].get(i, {}).get('exact')):
					out.append(_ratio_metric(
						f'{m["figure"]}_{i}_over_icount', m, ic,
						f'{m["figure"]}: {i} / icount (how much '
						f'of the instructions {i} sees)'))
		getpid = by.get(metric_name('read_getpid', i))
		if getpid and not data['instruments'].get(i, {}).get('exact'):
			for m in metrics:
				if (m.get('instrument') == i and
				    m.get('figure', '').startswith('read_') and
				    m['figure'] != 'read_getpid'):
					out.append(_ratio_metric(
						f'{m["figure"]}_vs_getpid.{i}', m,
						getpid, f'{m["figure"]} / getpid()'))
	return out


# -- the table ----------------------------------------------------------------------

def _fmt(m: Optional[dict]) -> str:
	if m is None:
		return '-'
	if m['value'] is None:
		return 'n/o'
	v = m['value']
	s = f'{v:,.1f}' if abs(v) < 1e5 else f'{v:,.0f}'
	if m['unit'] == 'ratio':
		s = f'{v:.2f}x'
		if m.get('spread') and 'inside_noise' in m:
			s += f' ±{(m["spread"] - 1) * 100:.0f}%'
		if m.get('inside_noise'):
			s += ' (noise)'
	return s


def _primary(by: Dict[str, dict], figure: str,
	     order: Sequence[str]) -> Optional[dict]:
	"""The figure on the first instrument in @order that observed it
	(or the first that tried, to say why not)."""
	tried = None
	for i in order:
		m = by.get(metric_name(figure, i))
		if m is None:
			continue
		if m['value'] is not None:
			return m
		tried = tried or m
	return tried


def _grid(rows: List[List[str]]) -> str:
	w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
	lines = []
	for n, r in enumerate(rows):
		lines.append('  '.join(c.ljust(w[i]) if i == 0 else c.rjust(w[i])
				       for i, c in enumerate(r)).rstrip())
		if n == 0:
			lines.append('  '.join('-' * x for x in w))
	return '\n'.join(lines)


def table(metrics: Sequence[dict], data: Optional[dict] = None) -> str:
	"""perfctr against perf and the floors, on the best instrument the run
	had (exact ones first), the published cycles beside them; then the
	context switches on every instrument; then what could not be
	observed and why."""
	data = data or load_data()
	by = {m['name']: m for m in metrics}
	present = [i for i in ('icount', 'pmc5', 'cpu0', 'wall')
		   if any(m.get('instrument') == i for m in metrics)]
	# icount first: it is exact; QEMU's PMU undercounts (data/bench.toml)
	order = [i for i in ('icount', 'pmc5', 'wall') if i in present]
	anchors = {a['interface']: a for a in data['anchors']}
	side = {s: [a for a in data['anchors'] if a['side'] == s]
		for s in ('perfctr', 'perf')}

	def anchor(c: dict, s: str) -> str:
		if not c['anchor']:
			return ''
		rows = ([anchors[n] for n in c[f'anchor_{s}']]
			if f'anchor_{s}' in c else side[s])
		return '/'.join(str(a[c['anchor']]) for a in rows
				if c['anchor'] in a)

	def compare(order: Sequence[str], title: str) -> str:
		rows = [[title, 'perfctr', 'perf', 'ratio', 'unit',
			 'instrument', 'Weaver perfctr', 'Weaver perf']]
		for c in data['compare']:
			if c['perfctr'].startswith('ctxsw') or c['perf'].startswith('ctxsw'):
				continue
			a = _primary(by, c['perfctr'], order) if c['perfctr'] else None
			b = _primary(by, c['perf'], order) if c['perf'] else None
			inst = (a or b or {}).get('instrument', '-')
			r = by.get(f'{c["perfctr"]}_vs_{c["perf"]}.{inst}')
			rows.append([c['what'], _fmt(a), _fmt(b), _fmt(r),
				     (a or b or {}).get('unit', '-'), inst,
				     anchor(c, 'perfctr'), anchor(c, 'perf')])
		for f in data['report']['floors']:
			m = _primary(by, f, order)
			rows.append([f'floor: {f}', _fmt(m), '', '',
				     (m or {}).get('unit', '-'),
				     (m or {}).get('instrument', '-'), '', ''])
		return _grid(rows)

	exact = [i for i in order if data['instruments'][i]['exact']]
	out = []
	if exact:
		out.append(compare(exact, 'perfctr vs perf (instructions)'))
	if 'wall' in order:
		out.append(compare(['wall'], 'perfctr vs perf (wall time; '
				   '±: spread over identical rounds)'))

	cs = [i for i in present if any(
		m.get('figure') == 'ctxsw_none' and m.get('instrument') == i
		for m in metrics)]
	if cs:
		rows = [['context switch (per switch)'] +
			[f'{i}' for i in cs] + [f'added ({i})' for i in cs
						if data['instruments'][i]['exact']] +
			[f'vs none ({i})' for i in cs]]
		for f in data['report']['ctxsw']:
			rows.append([f[len('ctxsw_'):]] +
				    [_fmt(by.get(metric_name(f, i))) for i in cs] +
				    [_fmt(by.get(f'{f}_added.{i}')) if f != 'ctxsw_none'
				     else '' for i in cs
				     if data['instruments'][i]['exact']] +
				    [_fmt(by.get(f'{f}_vs_none.{i}')) if f != 'ctxsw_none'
				     else '' for i in cs])
		out.append(_grid(rows))
		out.append('units: ' + ', '.join(
			f'{i}: {next(m["unit"] for m in metrics if m.get("instrument") == i and m.get("figure") == "ctxsw_none")}'
			for i in cs))

	under = [by[f'{f}_{i}_over_icount'] for i in ('pmc5', 'cpu0')
		 for f in ('loop_empty', 'read_getpid', 'ctxsw_none')
		 if by.get(f'{f}_{i}_over_icount', {}).get('value')]
	if under:
		out.append("QEMU's PMU sees this share of icount's instructions "
			   "(it skips blocks ending in an indirect branch): " +
			   ', '.join(f'{m["method"].split(" / ")[0]} '
				     f'{m["value"]:.2f}' for m in under))
	facts = {m['name']: m['value'] for m in metrics
		 if 'figure' not in m and isinstance(m.get('value'), (int, float))}
	checks = []
	if 'icount_ticks_per_instruction' in facts:
		checks.append(
			f'icount calibration {facts["icount_ticks_per_instruction"]:.4f} '
			f'ticks/instruction (a loop of '
			f'{facts.get("icount_calibration_loop_expected", 0):,.0f} '
			f'instructions counted '
			f'{facts.get("icount_calibration_loop_instructions", 0):,.0f})')
	if 'perf_throttle_lifted' in facts:
		checks.append('perf throttle lifted: ' +
			      ('yes' if facts['perf_throttle_lifted'] else 'NO'))
	for n, v in sorted(facts.items()):
		if n.endswith(('_rounds_not_suspended', '_rounds_still_counting',
			       '_failed_calls')):
			checks.append(f'{n}: {v:g}')
	if checks:
		out.append('checks: ' + '; '.join(checks))
	src = data['anchor_source']
	out.append(f'Weaver columns: {src["cite"]}, {src["unit"]}; not measured '
		   f'here.  ' + '; '.join(
			   f'{a["interface"]}: read {a.get("read", "-")} start '
			   f'{a.get("start", "-")} stop {a.get("stop", "-")}'
			   for a in anchors.values()))
	why = sorted({(m['name'], m['unobservable']) for m in metrics
		      if m.get('unobservable') and 'figure' in m})
	if why:
		out.append('n/o = not observable:\n' + '\n'.join(
			f'  {n}: {w}' for n, w in why))
	noisy = [m['name'] for m in metrics if m.get('inside_noise')]
	if noisy:
		out.append('inside the noise (spread over identical rounds >= '
			   'the effect): ' + ', '.join(noisy))
	return '\n\n'.join(out) + '\n'


def anchors_json(data: Optional[dict] = None) -> dict:
	data = data or load_data()
	return {'source': data['anchor_source']['cite'],
		'unit': data['anchor_source']['unit'],
		'rows': data['anchors']}
