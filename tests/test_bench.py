# SPDX-License-Identifier: GPL-2.0
"""inv bench: what the guest prints becomes metrics; nothing else does."""

from pytools import bench


def test_parse_metrics_keeps_only_metric_objects():
	text = ('[    1.0] kernel noise\n'
		'{"name": "read_rdtsc_ns", "value": 12.5, "unit": "ns"}\n'
		'{"name": "broken", "value": \n'
		'{"not": "a metric"}\n'
		'{"name": "ctxsw_perf_vs_none", "value": 1.07, "unit": "ratio"}\n')
	ms = bench.parse_metrics(text)
	assert [m['name'] for m in ms] == ['read_rdtsc_ns', 'ctxsw_perf_vs_none']
	assert ms[0]['value'] == 12.5


def test_cold_build_record_round_trips(tmp_path):
	from pytools import kernel
	assert kernel.cold_build(tmp_path) is None
	kernel.record_cold_build(tmp_path, 636.04)
	assert kernel.cold_build(tmp_path)['seconds'] == 636.0
