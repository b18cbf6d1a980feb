# SPDX-License-Identifier: GPL-2.0
"""The guest's own root: its cache key, the build command, binfmt_misc,
and the cache (the build itself is the e2e run's)."""

import dataclasses
import json

import pytest

from pytools import arches, rootfs
from pytools.errors import InfraError

PPC = arches.get('ppc64le')
SOURCES = ['Types: deb\nURIs: http://mirror.example/debian\n'
	   'Suites: bookworm\nComponents: main\n'
	   'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n']


def test_key_follows_the_package_list_only():
	a = rootfs.spec_for(PPC, 'bookworm')
	assert a.key == rootfs.spec_for(PPC, 'bookworm').key
	more = dataclasses.replace(a, packages=a.packages + ('strace',))
	assert more.key != a.key
	assert dataclasses.replace(a, suite='trixie').key != a.key
	assert dataclasses.replace(a, recipe=a.recipe + 1).key != a.key


def test_host_root_arch_has_no_rootfs():
	with pytest.raises(InfraError, match="host's root"):
		rootfs.spec_for(arches.get('x86_64'), 'bookworm')


def test_build_argv(tmp_path):
	spec = rootfs.spec_for(PPC, 'bookworm')
	argv = rootfs.build_argv(spec, tmp_path / 'r', 'http://m/debian',
				 '/k.gpg')
	assert argv[0] == 'mmdebstrap'
	assert '--architectures=ppc64el' in argv
	inc = next(a for a in argv if a.startswith('--include='))
	assert set(inc.split('=', 1)[1].split(',')) >= {'python3',
							  'python3-pytest'}
	assert '--keyring=/k.gpg' in argv
	assert '--dpkgopt=path-exclude=/usr/share/doc/*' in argv
	hook = next(a for a in argv if a.startswith('--customize-hook='))
	for d in rootfs.GUEST_DIRS:
		assert f'"$1{d}"' in hook
	assert argv[-3:] == ['bookworm', str(tmp_path / 'r'), 'http://m/debian']


def test_binfmt_registers_debians_entry(tmp_path, fake_ops):
	spec = rootfs.spec_for(PPC, 'bookworm')
	bdir, conf = tmp_path / 'binfmt', tmp_path / 'conf'
	bdir.mkdir()
	conf.mkdir()
	(bdir / 'register').write_text('')
	(conf / 'qemu-ppc64le.conf').write_text(':qemu-ppc64le:M::x:y:/q:OPF\n')
	said = rootfs.binfmt_ready(spec, fake_ops(), bdir, conf)
	assert 'registered qemu-ppc64le' in said
	assert (bdir / 'register').read_text() == ':qemu-ppc64le:M::x:y:/q:OPF\n'
	(bdir / 'qemu-ppc64le').write_text('enabled\ninterpreter /q\n')
	assert 'already' in rootfs.binfmt_ready(spec, fake_ops(), bdir, conf)


def test_binfmt_unmountable_says_how(tmp_path, fake_ops):
	spec = rootfs.spec_for(PPC, 'bookworm')
	(tmp_path / 'qemu-ppc64le.conf').write_text(':x:\n')
	ops = fake_ops(answers=[('mount', (32, 'mount: permission denied'))])
	with pytest.raises(InfraError) as e:
		rootfs.binfmt_ready(spec, ops, tmp_path / 'none', tmp_path)
	assert 'permission denied' in str(e.value)
	assert 'mount -t binfmt_misc' in e.value.hint


def test_binfmt_without_qemu_user_static_names_the_package(tmp_path,
							    fake_ops):
	spec = rootfs.spec_for(PPC, 'bookworm')
	with pytest.raises(InfraError) as e:
		rootfs.binfmt_ready(spec, fake_ops(), tmp_path, tmp_path)
	assert 'qemu-user-static' in e.value.hint


def _cached(cache, spec):
	root = cache / 'rootfs' / f'{spec.arch}-{spec.key}'
	(root / 'usr').mkdir(parents=True)
	root.with_name(root.name + '.json').write_text(json.dumps({
		'key': spec.key, 'packages': list(spec.packages),
		'suite': spec.suite, 'size_bytes': 5 << 20,
		'build_seconds': 400.0, 'built': '2026-11-30T23:00:00'}))
	return root


def test_cached_root_is_not_rebuilt(tmp_path, fake_ops, monkeypatch):
	monkeypatch.setattr(rootfs.bases, 'codename', lambda: 'bookworm')
	spec = rootfs.spec_for(PPC, 'bookworm')
	root = _cached(tmp_path, spec)
	ops = fake_ops()
	r = rootfs.ensure(PPC, ops, cache=tmp_path, sources=SOURCES)
	assert ops.calls == []
	assert (r.path, r.fresh, r.build_seconds) == (root, False, 400.0)
	assert r.as_dict()['size_mb'] == 5


def test_new_package_list_builds_and_drops_the_old_root(tmp_path, fake_ops,
							 monkeypatch):
	monkeypatch.setattr(rootfs.bases, 'codename', lambda: 'bookworm')
	old = _cached(tmp_path, dataclasses.replace(
		rootfs.spec_for(PPC, 'bookworm'), packages=('python3',)))
	monkeypatch.setattr(rootfs, 'binfmt_ready', lambda *a: 'ready')

	def mmdebstrap(argv):
		target = argv[-2]
		(tmp_path / 'rootfs' / target.rsplit('/', 1)[1] / 'usr').mkdir(
			parents=True)
		return (0, 'I: success')
	ops = fake_ops(answers=[('mmdebstrap', mmdebstrap)])
	r = rootfs.ensure(PPC, ops, cache=tmp_path, sources=SOURCES)
	assert r.fresh and r.path.name.endswith(rootfs.spec_for(
		PPC, 'bookworm').key)
	argv = ops.calls[0]
	assert argv[-1] == 'http://mirror.example/debian'
	assert (r.path / 'usr').is_dir() and not old.exists()
	assert rootfs.load(r.path).key == r.key


def test_failed_build_leaves_nothing_and_names_the_log(tmp_path, fake_ops,
						       monkeypatch):
	monkeypatch.setattr(rootfs.bases, 'codename', lambda: 'bookworm')
	monkeypatch.setattr(rootfs, 'binfmt_ready', lambda *a: 'ready')
	ops = fake_ops(answers=[('mmdebstrap', (1, 'E: no ppc64el here'))])
	with pytest.raises(InfraError) as e:
		rootfs.ensure(PPC, ops, cache=tmp_path, sources=SOURCES)
	assert 'no ppc64el here' in str(e.value) and '.log' in e.value.hint
	assert [p.name for p in (tmp_path / 'rootfs').iterdir()
		if p.is_dir()] == []


def test_prefetch_builds_in_the_background_and_stop_cancels(
		tmp_path, monkeypatch):
	"""The build overlaps the kernel's; a stopped run takes it down."""
	import threading
	seen = {}

	def ensure(arch, ops, cancel=None):
		seen['arch'] = arch.name
		seen['cancel'] = cancel
		cancel.wait(10)
		seen['cancelled'] = cancel.is_set()
	monkeypatch.setattr(rootfs, 'ensure', ensure)
	p = rootfs.Prefetch(PPC, None)
	p.stop()
	assert not p.thread.is_alive()
	assert seen == {'arch': 'ppc64le', 'cancel': p.cancel, 'cancelled': True}
	assert isinstance(p.cancel, threading.Event)


def test_the_root_carries_no_compiler():
	"""The checks' C programs come from the host (pytools/progs.py):
	gcc and libc6-dev were 180 MB and five minutes of the first build."""
	assert not {'gcc', 'libc6-dev', 'cc'} & set(PPC.rootfs_packages)


def test_a_root_built_by_this_run_says_so_when_taken_again(
		tmp_path, fake_ops, monkeypatch):
	"""The prefetch builds it; the guest step takes it from the cache
	and must still report it as built now (its cost is this run's)."""
	monkeypatch.setattr(rootfs.bases, 'codename', lambda: 'bookworm')
	monkeypatch.setattr(rootfs, 'binfmt_ready', lambda *a: 'ready')

	def mmdebstrap(argv):
		(tmp_path / 'rootfs' / argv[-2].rsplit('/', 1)[1] / 'usr').mkdir(
			parents=True)
		return (0, 'I: success')
	ops = fake_ops(answers=[('mmdebstrap', mmdebstrap)])
	first = rootfs.ensure(PPC, ops, cache=tmp_path, sources=SOURCES)
	again = rootfs.ensure(PPC, ops, cache=tmp_path, sources=SOURCES)
	assert first.fresh and again.fresh and len(ops.calls) == 1
