# SPDX-License-Identifier: GPL-2.0
import pytest

from pytools import kconfig, paths
from pytools.errors import UserError


def test_parse_set_unset_and_comments():
	opts = kconfig.parse('# a comment\nCONFIG_A=y\n# CONFIG_B is not set\n'
			     'CONFIG_C=n\nCONFIG_D="str"\n\n', 'f')
	assert [(o.name, o.value) for o in opts] == [
		('CONFIG_A', 'y'), ('CONFIG_B', 'n'), ('CONFIG_C', 'n'),
		('CONFIG_D', '"str"')]
	assert opts[0].source == 'f:2'


def test_bad_line_names_file_and_line():
	with pytest.raises(UserError, match=r'frag:2: not a Kconfig line'):
		kconfig.parse('CONFIG_A=y\nA=y\n', 'frag')


def test_later_fragment_wins():
	m = kconfig.merge([('a', 'CONFIG_X=y\nCONFIG_Y=y\n'),
			   ('b', 'CONFIG_X=n\n')])
	assert m['CONFIG_X'].value == 'n' and m['CONFIG_X'].source == 'b:1'
	assert kconfig.render(m) == '# CONFIG_X is not set\nCONFIG_Y=y\n'


def test_missing_reports_dropped_and_unwanted_options():
	m = kconfig.merge([('frag', 'CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=n\n'
			    'CONFIG_D=m\n')])
	config = 'CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=y\nCONFIG_D=y\n'
	lost = kconfig.missing(m, config)
	assert lost == [
		'CONFIG_B=y (frag:2) is not set in .config',
		'CONFIG_C=n (frag:3) is y in .config',
		'CONFIG_D=m (frag:4) is y in .config',
	]


def test_missing_empty_when_all_kept():
	m = kconfig.merge([('f', 'CONFIG_A=y\n# CONFIG_B is not set\n')])
	assert kconfig.missing(m, 'CONFIG_A=y\n') == []


def test_unknown_fragment_lists_the_real_ones():
	with pytest.raises(UserError) as e:
		kconfig.load(paths.KCONFIGS, ['nope.config'])
	assert 'common.config' in e.value.hint


def test_project_fragments_parse():
	for f in paths.KCONFIGS.glob('*.config'):
		assert kconfig.parse(f.read_text(), f.name)
