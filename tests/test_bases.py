# SPDX-License-Identifier: GPL-2.0
import pytest

from pytools import bases
from pytools.errors import InfraError, UserError

from conftest import DATA

DEB822 = '''Types: deb
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
'''


def test_mirror_from_deb822_skips_security():
	assert bases.debian_mirror([DEB822]) == (
		'http://mirror.example/debian',
		'/usr/share/keyrings/debian-archive-keyring.gpg')


def test_mirror_from_one_line_sources():
	text = ('deb http://sec.example/debian-security bookworm-security main\n'
		'deb [signed-by=/k.gpg] http://m.example/debian bookworm main\n')
	assert bases.debian_mirror([text]) == ('http://m.example/debian',
					       '/k.gpg')


def test_no_mirror_is_an_infra_error_with_a_way_out():
	with pytest.raises(InfraError) as e:
		bases.debian_mirror(['# nothing\n'])
	assert '--tree' in e.value.hint


def test_debian_gitignore_block_is_dropped():
	upstream = '#\n# NOTE!\n#\n.*\n*.o\n'
	debian = upstream + ('\n#\n# Debian packaging: ignore everything at the '
			     'top level, since it isn\'t\n# included in our '
			     'repository\n#\n/*\n!/debian/\n')
	out = bases.strip_debian_gitignore(debian)
	assert out == upstream
	assert '/*' not in out.splitlines()
	assert bases.strip_debian_gitignore(upstream) == upstream


def test_tag_names_are_valid_refs():
	assert bases.tag_for('linux-source-6.12', '6.12.117-1') == \
		'base/linux-source-6.12/6.12.117-1'
	assert '~' not in bases.tag_for('linux-source-7.2', '7.2~rc1-1')
	assert ':' not in bases.tag_for('linux-source-7.2', '1:7.2-1')


def test_bases_file_has_the_default():
	specs = bases.load_specs()
	assert bases.default_base() in specs
	assert {'lts', 'mainline'} <= set(specs)


def test_unknown_base_lists_known_ones(fake_ops):
	with pytest.raises(UserError) as e:
		bases.resolve('nope', ops=fake_ops())
	assert 'lts' in e.value.hint


def test_own_tree_errors(tmp_path, fake_ops, kernel_repo):
	ops = bases.Ops()
	with pytest.raises(UserError, match='no such directory'):
		bases.resolve(tree=str(tmp_path / 'missing'), ops=ops)
	(tmp_path / 'plain').mkdir()
	with pytest.raises(UserError, match='not a kernel tree'):
		bases.resolve(tree=str(tmp_path / 'plain'), ops=ops)
	nogit = tmp_path / 'nogit'
	nogit.mkdir()
	(nogit / 'Makefile').write_text('')
	(nogit / 'Kconfig').write_text('')
	with pytest.raises(UserError, match='not a git repository'):
		bases.resolve(tree=str(nogit), ops=ops)
	with pytest.raises(UserError) as e:
		bases.resolve(tree=str(kernel_repo), ref='v0.0-nope', ops=ops)
	assert '--ref v0.0-nope does not exist' in str(e.value)
	t = bases.resolve(tree=str(kernel_repo), ref='base', ops=ops)
	assert t.name == 'tree' and len(t.commit) == 40


def _policy(*rows):
	"""apt-cache policy output: (version, suite) rows, newest first."""
	return (0, f'x:\n  Installed: (none)\n  Candidate: {rows[0][0]}\n'
		'  Version table:\n' + ''.join(
			f'     {v} 500\n        500 http://mirror/debian '
			f'{s}/main amd64 Packages\n' for v, s in rows))


def test_candidates_pick_the_newest_linux_source(fake_ops, tmp_path):
	specs = bases.load_specs()
	sid, lts = specs['mainline'].suite, specs['lts'].suite
	ops = fake_ops(answers=[
		('pkgnames', (0, 'linux-source-6.12\nlinux-source-7.2\n'
			      'linux-source-7.10\nlinux-source\n')),
		('policy linux-source-7.10', _policy(('7.10.1-1', sid))),
		('policy linux-source-7.2', _policy(('7.2.13-1', sid))),
		('policy linux-source-6.12', _policy(('6.12.117-1', lts))),
	])
	f = bases.PackageFetcher(ops, tmp_path)
	spec = bases.load_specs()['mainline']
	assert f.resolve(spec) == ('linux-source-7.10', '7.10.1-1')
	spec = bases.load_specs()['lts']
	assert f.resolve(spec) == ('linux-source-6.12', '6.12.117-1')


def test_candidates_honour_the_suite(fake_ops, tmp_path):
	# Both suites in the private sources list: sid has a newer 6.12
	# and a 7.2; a trixie base sees only trixie's 6.12.
	ops = fake_ops(answers=[
		('pkgnames', (0, 'linux-source-6.12\nlinux-source-7.2\n')),
		('policy linux-source-7.2', _policy(('7.2.13-1', 'sid'))),
		('policy linux-source-6.12', _policy(('6.12.120-1', 'sid'),
						      ('6.12.117-1', 'trixie'))),
	])
	f = bases.PackageFetcher(ops, tmp_path)
	assert f.candidates('linux-source-*', 'trixie') == \
		[('linux-source-6.12', '6.12.117-1')]
	assert f.candidates('linux-source-*', 'sid') == \
		[('linux-source-6.12', '6.12.120-1'), ('linux-source-7.2', '7.2.13-1')]
	assert f.candidates('linux-source-*', 'bookworm') == []


def test_version_in_suite_reads_real_policy_output():
	text = (DATA / 'apt-policy.txt').read_text()
	assert bases.version_in_suite(text, 'trixie') == '6.12.117-1'
	assert bases.version_in_suite(text, 'sid') is None
