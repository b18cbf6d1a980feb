# SPDX-License-Identifier: GPL-2.0
"""run_kselftest.sh's one stream cut back into each program's KTAP and
exit status (pytools/guest/ksft.py).  The data is what the kernel's own
runner (6.12's run_kselftest.sh and kselftest/runner.sh, prefix.pl)
printed for a collection of five stand-in programs: one passing with
two cases, one skipping (exit 4), one failing (exit 1), one the
settings file's 2-second timeout killed, one listed but missing."""

from pathlib import Path

from pytools import collect
from pytools.guest import ksft

DATA = Path(__file__).parent / 'data' / 'run_kselftest-perfctr.tap'


def _split():
	return ksft.split(DATA.read_text().splitlines(), 'perfctr')


def test_each_program_gets_its_status():
	progs = _split()
	assert list(progs) == ['a_test', 'b_test', 'c_test', 'd_test',
			       'e_test']
	assert {n: p.rc for n, p in progs.items()} == {
		'a_test': 0, 'b_test': ksft.SKIP_RC, 'c_test': 1,
		'd_test': 'timeout', 'e_test': 'cannot-run'}


def test_each_program_gets_its_own_ktap_unprefixed():
	a = _split()['a_test'].lines
	assert a[:2] == ['TAP version 13', '1..2']
	assert 'ok 2 a.other' in a and '' in a	# prefix.pl's "# " line
	assert not any('selftests: perfctr' in l for l in a)
	assert not any(l.startswith('# timeout set') for l in a)


def test_the_cut_ktap_parses_as_the_program_printed_it():
	parser = collect.load_kunit_parser(Path(__file__).parent / 'data' / 'fake-tree')
	progs = _split()
	cases = collect.parse_ktap(progs['c_test'].lines, 'kselftest',
				   'c_test', parser)
	assert [(c.name, c.status.name) for c in cases] == \
		[('c_test.c.fails', 'FAIL')]
	assert 'Expected 1 (1) == 2 (2)' in cases[0].message


def test_other_collections_and_a_killed_runner():
	lines = DATA.read_text().splitlines()
	assert ksft.split(lines, 'net') == {}
	# the runner killed in the middle of c_test: no result line
	cut = lines[:lines.index('# not ok 1 c.fails') + 1]
	c = ksft.split(cut, 'perfctr')['c_test']
	assert c.rc == 'cannot-run' and c.lines[-1] == 'not ok 1 c.fails'


def test_times_from_header_to_result():
	lines = DATA.read_text().splitlines()
	times = {i: float(i) for i in range(len(lines))}
	a = ksft.split(lines, 'perfctr', times)['a_test']
	assert a.seconds == lines.index('ok 1 selftests: perfctr: a_test') - \
		lines.index('# selftests: perfctr: a_test')
