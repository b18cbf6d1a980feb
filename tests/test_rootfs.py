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
	# in a mount namespace of its own: a killed build's mounts go with it
	assert tuple(argv[:5]) == rootfs.UNSHARE and argv[5] == 'mmdebstrap'
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


def _rm(argv):
	import shutil
	assert argv[:3] == ['rm', '-rf', '--one-file-system'], argv
	shutil.rmtree(argv[3], ignore_errors=True)
	return (0, '')


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
	ops = fake_ops(answers=[('mmdebstrap', mmdebstrap), ('rm -rf', _rm)])
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


def test_a_tree_with_mounts_under_it_is_never_deleted(tmp_path, fake_ops,
						       monkeypatch):
	"""A build killed outside its namespace leaves /proc, /dev/shm...
	mounted in the half-built root: deleting it would empty the host's
	/dev/shm.  It is refused, with how to unmount."""
	tree = tmp_path / 'ppc64le-abc.tmp'
	(tree / 'dev' / 'shm').mkdir(parents=True)
	info = tmp_path / 'mountinfo'
	info.write_text(f'36 25 0:32 / /proc rw - proc proc rw\n'
			f'90 36 0:5 / {tree}/dev/shm rw - tmpfs tmpfs rw\n')
	monkeypatch.setattr(rootfs, 'MOUNTINFO', info)
	ops = fake_ops()
	with pytest.raises(InfraError) as e:
		rootfs.remove_tree(tree, ops)
	assert f'{tree}/dev/shm' in str(e.value) and 'umount -R' in e.value.hint
	assert ops.calls == [] and tree.exists()
	info.write_text('36 25 0:32 / /proc rw - proc proc rw\n')
	rootfs.remove_tree(tree, ops)
	assert ops.calls == [['rm', '-rf', '--one-file-system', str(tree)]]


def test_a_failed_build_is_not_built_again_by_the_guest_step(
		tmp_path, fake_ops, monkeypatch):
	"""The prefetch's failure is the guest step's at once: a mirror
	without ppc64el does not cost two builds."""
	monkeypatch.setattr(rootfs.bases, 'codename', lambda: 'bookworm')
	monkeypatch.setattr(rootfs, 'binfmt_ready', lambda *a: 'ready')
	ops = fake_ops(answers=[('mmdebstrap', (1, 'E: no ppc64el here'))])
	for _ in range(2):
		with pytest.raises(InfraError, match='no ppc64el here'):
			rootfs.ensure(PPC, ops, cache=tmp_path, sources=SOURCES)
	assert sum('mmdebstrap' in c for c in ops.calls) == 1


def test_preflight_names_a_missing_tool_before_the_kernel_builds(
		tmp_path, fake_ops, monkeypatch):
	monkeypatch.setattr(rootfs.bases, 'codename', lambda: 'bookworm')
	ops = fake_ops(which={'mmdebstrap': None})
	with pytest.raises(InfraError) as e:
		rootfs.preflight(PPC, ops, cache=tmp_path)
	assert 'mmdebstrap' in str(e.value) + e.value.hint
	# a cached root needs nothing
	_cached(tmp_path, rootfs.spec_for(PPC, 'bookworm'))
	rootfs.preflight(PPC, ops, cache=tmp_path)
