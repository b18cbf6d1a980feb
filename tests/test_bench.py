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
