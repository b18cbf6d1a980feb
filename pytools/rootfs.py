# SPDX-License-Identifier: GPL-2.0
"""The guest's root filesystem, for arches whose user space is not the host's.

An x86_64 guest boots with the host's own root (virtme-ng's default), so
it runs the host's Python.  A ppc64le guest needs a ppc64el user space:
this module builds one from Debian's own packages with mmdebstrap, whose
maintainer scripts run under qemu-user-static through binfmt_misc, and
keeps it in the cache under a key of what went into it (arch, suite,
package list, recipe).  It is rebuilt only when that key changes; the
build's time and the root's size are recorded beside it and reported.

The mirror and its keyring come from the machine's own apt configuration
(as for the base trees, pytools/bases.py); the suite is the machine's
own release.  The guest mounts the repository, the build directory and
its output directory on the mount points made here (GUEST_DIRS): the
root is shared read-only, so they must exist in it beforehand.
"""

import datetime
import hashlib
import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, Optional, Tuple

from . import bases, locks
from .arches import ArchParams
from .errors import InfraError
from .ops import Ops, progress
from .paths import cache_dir

# Bump when the way the root is built changes (not its package list,
# which is part of the key anyway): every cached root is then rebuilt.
RECIPE = 1
# Where the guest finds the repository (pytools, the ABI checks), the
# kernel's build directory (headers, kselftests) and its output.
GUEST_SRC = '/perfctr/src'
GUEST_BUILD = '/perfctr/build'
GUEST_OUT = '/perfctr/out'
GUEST_DIRS = (GUEST_SRC, GUEST_BUILD, GUEST_OUT)
GUEST_PYTHON = '/usr/bin/python3'
# Documentation and translations: a third of the root, never read.
EXCLUDES = ('/usr/share/doc/*', '/usr/share/man/*', '/usr/share/info/*',
	    '/usr/share/locale/*')
BINFMT_DIR = Path('/proc/sys/fs/binfmt_misc')
BINFMT_CONF = Path('/usr/lib/binfmt.d')
BUILDER = 'mmdebstrap'
BUILDER_PACKAGES = 'mmdebstrap qemu-user-static arch-test'
# mmdebstrap --mode=root mounts /proc, /sys, /dev/pts and the host's
# /dev/shm inside the root it builds, and a build killed mid-way (^C, a
# cancel, the timeout) leaves them mounted: deleting the half-built root
# would then empty the host's /dev/shm.  So it runs in a mount namespace
# of its own, which goes with its last process, and a tree with anything
# mounted under it is never deleted.
UNSHARE = ('unshare', '--mount', '--propagation', 'private', '--')
MOUNTINFO = Path('/proc/self/mountinfo')


@dataclass(frozen=True)
class RootfsSpec:
	"""What goes into a root: everything its cache key covers."""
	arch: str			# ours: ppc64le
	debian_arch: str		# Debian's: ppc64el
	suite: str			# the machine's release: bookworm
	packages: Tuple[str, ...]
	excludes: Tuple[str, ...] = EXCLUDES
	dirs: Tuple[str, ...] = GUEST_DIRS
	recipe: int = RECIPE

	@property
	def key(self) -> str:
		text = json.dumps(asdict(self), sort_keys=True)
		return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Rootfs:
	"""A root ready to boot, and what it cost."""
	path: Path
	key: str
	packages: Tuple[str, ...]
	suite: str
	debian_arch: str
	size_bytes: int
	build_seconds: float
	built: str		# when it was built (ISO time)
	fresh: bool		# built by this run (else taken from the cache)

	def as_dict(self) -> dict:
		d = asdict(self)
		d['path'] = str(self.path)
		d['packages'] = list(self.packages)
		d['size_mb'] = round(self.size_bytes / 2**20)
		return d


def spec_for(arch: ArchParams, suite: str) -> RootfsSpec:
	if not arch.rootfs_packages:
		raise InfraError(f'{arch.name} boots with the host\'s root: it has '
				 'no root filesystem of its own to build')
	return RootfsSpec(arch=arch.name, debian_arch=arch.debian_arch,
			  suite=suite, packages=tuple(arch.rootfs_packages))


def disk_usage(path: Path) -> int:
	"""Bytes a tree takes on disk (as du counts: blocks, links once)."""
	seen, total = set(), 0
	for top, dirs, files in os.walk(path):
		for name in dirs + files:
			try:
				st = os.lstat(os.path.join(top, name))
			except OSError:
				continue
			if (st.st_dev, st.st_ino) in seen:
				continue
			seen.add((st.st_dev, st.st_ino))
			total += st.st_blocks * 512
	return total


def build_argv(spec: RootfsSpec, target: Path, mirror: str,
	       keyring: str) -> list:
	"""The mmdebstrap command: the essential set plus the packages,
	without documentation, with the guest's mount points made."""
	mkdirs = ' '.join(f'"$1{d}"' for d in spec.dirs)
	return [*UNSHARE, BUILDER, '--mode=root', '--variant=essential',
		f'--architectures={spec.debian_arch}',
		f'--include={",".join(spec.packages)}',
		f'--keyring={keyring}',
		*(f'--dpkgopt=path-exclude={e}' for e in spec.excludes),
		f'--customize-hook=mkdir -p {mkdirs}',
		spec.suite, str(target), mirror]


def binfmt_ready(spec: RootfsSpec, ops: Ops, binfmt_dir: Path = BINFMT_DIR,
		 conf_dir: Path = BINFMT_CONF) -> str:
	"""Make the kernel run the arch's binaries under qemu-user-static;
	say what was done.  The registration is the one Debian's package
	ships (its F flag opens the interpreter now, so it works inside the
	chroot too); it is the kernel's, not this process's: it stays."""
	name = f'qemu-{spec.arch}'
	conf = conf_dir / f'{name}.conf'
	entry = binfmt_dir / name
	if entry.exists() and entry.read_text().startswith('enabled'):
		return f'binfmt_misc already runs {spec.debian_arch} binaries'
	if not conf.exists():
		raise InfraError(f'{conf} is missing: qemu-user-static is not '
				 'installed',
				 f'apt-get install {BUILDER_PACKAGES} (or run '
				 './bootstrap, which installs them)')
	done = []
	if not (binfmt_dir / 'register').exists():
		res = ops.run(['mount', '-t', 'binfmt_misc', 'binfmt_misc',
			       str(binfmt_dir)], check=False)
		if res.returncode != 0:
			raise InfraError(
				f'binfmt_misc is not mounted on {binfmt_dir} and '
				f'mounting it failed: {res.output.strip()[:300]}',
				'building a foreign root runs its programs under '
				'qemu-user through binfmt_misc: run as root on a '
				'machine (or a privileged container) that allows '
				f'"mount -t binfmt_misc binfmt_misc {binfmt_dir}"')
		done.append(f'mounted binfmt_misc on {binfmt_dir}')
	try:
		(binfmt_dir / 'register').write_text(conf.read_text().strip()
						     + '\n')
	except OSError as e:
		if not entry.exists():
			raise InfraError(f'registering {conf} with binfmt_misc '
					 f'failed: {e}',
					 'run as root, or register it by hand: '
					 f'cat {conf} > {binfmt_dir}/register') \
				from e
	done.append(f'registered {name} from {conf}')
	return '; '.join(done)


# Roots this process built (a prefetch's too): "built now" in its results.
_BUILT_HERE: set = set()


def mounts_under(path: Path, mountinfo: Optional[Path] = None) -> list:
	"""Mount points at or below @path (this mount namespace's)."""
	top = os.path.realpath(path)
	found = []
	try:
		lines = (mountinfo or MOUNTINFO).read_text().splitlines()
	except OSError:
		return found
	for line in lines:
		fields = line.split()
		if len(fields) > 4:
			mp = fields[4].replace('\\040', ' ')
			if mp == top or mp.startswith(top + '/'):
				found.append(mp)
	return found


def remove_tree(path: Path, ops: Ops) -> None:
	"""Delete a (half-)built root, never through a mount point."""
	if not path.exists() and not path.is_symlink():
		return
	mounted = mounts_under(path)
	if mounted:
		raise InfraError(f'{path} has file systems mounted under it '
				 f'({", ".join(mounted[:4])}): a root build was '
				 'stopped outside its own mount namespace',
				 f'umount -R {mounted[0]} (each of them), then run '
				 'again; nothing was deleted')
	ops.run(['rm', '-rf', '--one-file-system', str(path)])


def _stamp(root: Path) -> Path:
	return root.with_name(root.name + '.json')


def load(root: Path) -> Optional[Rootfs]:
	"""The cached root at @root, if it was built to the end."""
	try:
		d = json.loads(_stamp(root).read_text())
	except (OSError, ValueError):
		return None
	if not (root / 'usr').is_dir():
		return None
	return Rootfs(path=root, key=d['key'], packages=tuple(d['packages']),
		      suite=d['suite'], debian_arch=d.get('debian_arch', ''),
		      size_bytes=d['size_bytes'],
		      build_seconds=d['build_seconds'], built=d['built'],
		      fresh=root in _BUILT_HERE)


def _where(arch: ArchParams, cache: Optional[Path]) -> Tuple[RootfsSpec, Path]:
	suite = bases.codename()
	if not suite:
		raise InfraError('cannot tell this machine\'s Debian release '
				 '(no VERSION_CODENAME in /etc/os-release)',
				 'run on Debian, whose release names the suite '
				 'of the guest\'s root')
	spec = spec_for(arch, suite)
	return spec, (cache or cache_dir()) / 'rootfs' / f'{spec.arch}-{spec.key}'


def preflight(arch: ArchParams, ops: Ops, cache: Optional[Path] = None,
	      conf_dir: Path = BINFMT_CONF) -> None:
	"""What building the root needs, checked before anything slow (the
	kernel's build) when the root is not in the cache yet: a missing
	tool is an exit 2 at once, not after minutes."""
	spec, root = _where(arch, cache)
	if load(root):
		return
	ops.require(BUILDER, BUILDER_PACKAGES)
	ops.require(UNSHARE[0], 'util-linux')
	conf = conf_dir / f'qemu-{spec.arch}.conf'
	if not (BINFMT_DIR / f'qemu-{spec.arch}').exists() and \
	   not conf.exists():
		raise InfraError(f'{conf} is missing: qemu-user-static is not '
				 'installed',
				 f'apt-get install {BUILDER_PACKAGES} (or run '
				 './bootstrap, which installs them)')


# Builds that failed in this process, by root: the guest step meets the
# prefetch's failure again at once instead of building for minutes more.
_FAILED: Dict[str, InfraError] = {}


def ensure(arch: ArchParams, ops: Ops, cache: Optional[Path] = None,
	   sources: Optional[list] = None,
	   cancel: Optional[threading.Event] = None) -> Rootfs:
	"""The arch's root, from the cache or built now (minutes); a build
	stops when @cancel is set."""
	spec, root = _where(arch, cache)
	top = root.parent
	top.mkdir(parents=True, exist_ok=True)
	if str(root) in _FAILED:
		raise _FAILED[str(root)]
	# One build at a time per arch: a second run waits for the first.
	with locks.hold(top / f'{spec.arch}.lock',
			f'the {spec.arch} root (log '
			f'{root.with_name(root.name + ".log")})'):
		have = load(root)
		if have:
			return have
		return _build(spec, root, top, ops, sources, cancel)


def _build(spec: RootfsSpec, root: Path, top: Path, ops: Ops,
	   sources: Optional[list],
	   cancel: Optional[threading.Event] = None) -> Rootfs:
	ops.require(BUILDER, BUILDER_PACKAGES)
	texts = sources if sources is not None else bases._read_system_sources()
	mirror, keyring = bases.debian_mirror(texts)
	keyring = keyring or '/usr/share/keyrings/debian-archive-keyring.gpg'
	progress(f'rootfs: {binfmt_ready(spec, ops)}')
	progress(f'rootfs: building the {spec.debian_arch} root for the guest '
		 f'(Debian {spec.suite}: {", ".join(spec.packages)}) into '
		 f'{root}; several minutes, once per package list')
	tmp = root.with_name(root.name + '.tmp')
	remove_tree(tmp, ops)
	# A root without its stamp is one whose build was cut off between
	# the two: it cannot be trusted, and would block the rename below.
	remove_tree(root, ops)
	log = root.with_name(root.name + '.log')
	t0 = time.monotonic()
	res = ops.stream(build_argv(spec, tmp, mirror, keyring), log,
			 timeout=3600, cancel=cancel)
	seconds = round(time.monotonic() - t0, 1)
	if res.returncode != 0:
		tail = '\n  '.join(res.output.splitlines()[-15:])
		remove_tree(tmp, ops)
		if res.stopped == 'cancelled':
			raise InfraError('the root\'s build was stopped with the run')
		err = InfraError(f'{BUILDER} failed building the {spec.arch} '
				 f'root (status {res.returncode}):\n  {tail}',
				 f'the whole log is {log}; the mirror in your apt '
				 f'configuration must carry {spec.debian_arch}')
		_FAILED[str(root)] = err
		raise err
	rfs = Rootfs(path=root, key=spec.key, packages=spec.packages,
		     suite=spec.suite, debian_arch=spec.debian_arch,
		     size_bytes=disk_usage(tmp),
		     build_seconds=seconds,
		     built=datetime.datetime.now().isoformat(timespec='seconds'),
		     fresh=True)
	d = rfs.as_dict()
	del d['fresh']
	# The stamp first, then the root in place: load() wants both, so a
	# run cut off between them leaves a root it rebuilds, never one it
	# takes without knowing what it is.
	_stamp(root).write_text(json.dumps(d, indent=1) + '\n')
	tmp.rename(root)
	_BUILT_HERE.add(root)
	# Roots of older package lists are of no more use: 200 MB each.
	for old in top.glob(f'{spec.arch}-*'):
		if old.is_dir() and old.name != root.name and \
		   not old.name.endswith('.tmp'):
			try:
				remove_tree(old, ops)
			except InfraError as e:
				progress(f'rootfs: {old} kept: {e}')
				continue
			_stamp(old).unlink(missing_ok=True)
			old.with_name(old.name + '.log').unlink(missing_ok=True)
	progress(f'rootfs: built in {seconds:.0f} s, '
		 f'{rfs.size_bytes / 2**20:.0f} MB ({root})')
	return rfs


class Prefetch:
	"""ensure() in a thread, started before the kernel build so that the
	two overlap (a first run: minutes saved).  Whoever then needs the
	root calls ensure() too and waits on the same lock; a failure here
	is only said, the second ensure() raises it again (without building
	again) and the run reports it.
	stop() cancels a build still running (the run was stopped)."""

	def __init__(self, arch: ArchParams, ops: Ops) -> None:
		self.cancel = threading.Event()
		self.thread = threading.Thread(target=self._run, args=(arch, ops),
					       name='rootfs', daemon=True)
		self.thread.start()

	def _run(self, arch: ArchParams, ops: Ops) -> None:
		try:
			ensure(arch, ops, cancel=self.cancel)
		except Exception as e:		# pylint: disable=broad-except
			if not self.cancel.is_set():
				first = (str(e).splitlines() or [repr(e)])[0]
				progress(f'rootfs: the background build failed '
					 f'({first}); the guest step reports it')

	def stop(self) -> None:
		self.cancel.set()
		self.thread.join(timeout=30)
