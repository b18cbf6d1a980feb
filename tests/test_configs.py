# SPDX-License-Identifier: GPL-2.0
"""Kernel configs as data (pytools/data/configs.toml)."""

import pytest

from pytools import configs, paths, pipeline
from pytools.errors import UserError


def test_the_debug_config_is_what_the_debug_run_always_used():
	assert configs.get('default').options('x86_64') == {}
	o = configs.get('debug').options('x86_64')
	assert o['config_name'] == 'debug'
	assert o['fragments'] == ('common.config', 'vng.config',
				  'x86_64.config', 'perfctr.config',
				  'debug.config', 'debug-x86_64.config')
	assert o['guest_env'] == (('PERFCTR_FUZZ_CALLS', '100000'),
				  ('PERFCTR_CHAIN', '1000'),
				  ('PERFCTR_RACE_ITERS', '200'),
				  ('PERFCTR_CHAIN_BUDGET_KB', '0'),
				  ('PERFCTR_TIMEOUT_SCALE', '3'))
	# an arch's own entries replace the config's, in place
	ppc = dict(configs.get('debug').options('ppc64le')['guest_env'])
	assert ppc['PERFCTR_FUZZ_CALLS'] == '20000'
	assert configs.get('debug').timeout == 2400
	assert configs.get('default').timeout == 900


def test_a_per_arch_fragment_is_added_only_when_kconfigs_has_it(tmp_path):
	from pytools import arches
	c = configs.get('debug')
	x86 = arches.get('x86_64')
	assert c.fragments_for(x86, tmp_path)[-1] == 'debug.config'
	assert c.fragments_for(x86, paths.KCONFIGS)[-1] == 'debug-x86_64.config'


def test_inv_check_takes_the_timeout_from_the_config():
	assert pipeline.check_options(debug=True).timeout == 2400
	assert pipeline.check_options().timeout == 900
	assert pipeline.check_options(debug=True, timeout=60).timeout == 60


@pytest.mark.parametrize('text,says', [
	('[configs.default]\ntimout = 900\n', 'unknown key timout'),
	('[configs.default]\n[configs.debug]\nfragment = ["x"]\n',
	 'unknown key fragment'),
	('[configs.default]\n[configs.debug.arch.arm64]\n', "unknown arch 'arm64'"),
	('[configs.default]\n[configs.debug.arch.ppc64le]\nenv = {}\n',
	 'unknown key env'),
	('[configs.default]\nguest_env = { A = 1 }\n', 'table of strings'),
	('[configs.debug]\n', 'no [configs.default]'),
	('[configs.default]\ntimeout = "soon"\n', 'not a number'),
	('[config.default]\n', 'unknown key config'),
])
def test_a_bad_configs_file_is_a_user_error_naming_the_key(tmp_path, text,
							    says):
	f = tmp_path / 'configs.toml'
	f.write_text(text)
	with pytest.raises(UserError) as e:
		configs.load(f)
	assert says in str(e.value) and 'configs.toml' in str(e.value)


def test_an_unknown_config_names_the_choices():
	with pytest.raises(UserError) as e:
		configs.get('kasan')
	assert "'kasan'" in str(e.value) and 'default, debug' in e.value.hint
