# SPDX-License-Identifier: GPL-2.0
"""Base kernel trees: Debian's linux-source packages, or a developer's tree.

The list of bases is data (data/bases.toml).  A packaged base is fetched
with a private apt sources list (the system's apt configuration is never
touched) whose mirror is read from this machine's own apt configuration, and
imported into a git repository in the cache with a deterministic commit, so
that every machine importing the same package version gets the same commit
id and a series applied on it gets the same patch files.
"""

import fnmatch
import re
import shutil
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from . import locks, paths
from .errors import InfraError, UserError
from .ops import Ops, progress

BASES_FILE = Path(__file__).parent / 'data' / 'bases.toml'
APT_SOURCES = (Path('/etc/apt/sources.list.d'), Path('/etc/apt/sources.list'))
LISTS_MAX_AGE = 24 * 3600
IMPORT_IDENT = {
	'GIT_AUTHOR_NAME': 'perfctr import',
	'GIT_AUTHOR_EMAIL': 'perfctr-import@localhost',
	'GIT_AUTHOR_DATE': '2000-01-01T00:00:00+0000',
	'GIT_COMMITTER_NAME': 'perfctr import',
	'GIT_COMMITTER_EMAIL': 'perfctr-import@localhost',
	'GIT_COMMITTER_DATE': '2000-01-01T00:00:00+0000',
}


@dataclass(frozen=True)
class BaseSpec:
	"""One entry of bases.toml."""
	name: str
	description: str
	suite: str
	package: str
	patches: str


@dataclass(frozen=True)
class BaseTree:
	"""A kernel tree ready to carry the series."""
	name: str		# 'lts', 'mainline', or 'tree' for --tree
	path: Path
	ref: str		# tag or ref naming the exact base commit
	commit: str
	version: str		# '6.12.117-1' for a package, else describe
	origin: str		# 'linux-source-6.12 6.12.117-1' or the tree path
	patches: str		# directory of the series for this base


def load_specs(path: Path = BASES_FILE) -> Dict[str, BaseSpec]:
	data = tomllib.loads(path.read_text())
	return {name: BaseSpec(name=name, **fields)
		for name, fields in data['bases'].items()}


def default_base(path: Path = BASES_FILE) -> str:
	return tomllib.loads(path.read_text())['default']


def parse_apt_sources(texts: List[str]) -> List[dict]:
	"""Entries of deb822 .sources files and one-line sources.list files."""
	entries = []
	for text in texts:
		if re.search(r'^\s*Types:', text, re.M):
			for para in re.split(r'\n\s*\n', text):
				fields = {}
				for line in para.splitlines():
					if line.startswith('#') or ':' not in line:
						continue
					key, val = line.split(':', 1)
					fields[key.strip().lower()] = val.strip()
				if 'uris' in fields:
					entries.append(fields)
			continue
		for line in text.splitlines():
			m = re.match(r'\s*deb\s+(\[[^]]*\]\s+)?(\S+)\s+(\S+)', line)
			if m:
				opts = m.group(1) or ''
				sb = re.search(r'signed-by=(\S+?)[\] ]', opts)
				entries.append({'types': 'deb', 'uris': m.group(2),
						'suites': m.group(3),
						'signed-by': sb.group(1) if sb else ''})
	return entries


def debian_mirror(texts: List[str]) -> tuple:
	"""(URI, keyring) of the machine's main Debian archive."""
	for e in parse_apt_sources(texts):
		if 'deb' not in e.get('types', 'deb').split():
			continue
		suites = e.get('suites', '')
		if 'security' in suites or 'security' in e['uris']:
			continue
		uri = e['uris'].split()[0]
		return uri, e.get('signed-by', '')
	raise InfraError('no Debian mirror found in the apt configuration '
			 '(/etc/apt/sources.list.d/*.sources, /etc/apt/sources.list)',
			 'configure apt with a Debian mirror, or use '
			 '--tree PATH --ref REF with a kernel git tree of your own')


def codename(os_release: Path = Path('/etc/os-release')) -> str:
	"""This machine's Debian release (bookworm), '' if it cannot tell."""
	try:
		text = os_release.read_text()
	except OSError:
		return ''
	m = re.search(r'^VERSION_CODENAME=(\S+)', text, re.M)
	return m.group(1).strip('"') if m else ''


def _read_system_sources() -> List[str]:
	texts = []
	for p in APT_SOURCES:
		if p.is_dir():
			for f in sorted(p.iterdir()):
				if f.suffix in ('.sources', '.list'):
					texts.append(f.read_text())
		elif p.is_file():
			texts.append(p.read_text())
	return texts


def version_in_suite(policy: str, suite: str) -> Optional[str]:
	"""The newest version apt-cache policy lists from @suite, or None.

	The private sources list may carry several suites (bookworm and sid
	at once); a base names one, and only that one's versions count.
	"""
	version = None
	for line in policy.splitlines():
		m = re.match(r'^\s{3,}(?:\*\*\* )?(\S+) -?\d+$', line)
		if m:
			version = m.group(1)
			continue
		m = re.match(r'^\s+-?\d+ \S+ ([^/\s]+)/\S+', line)
		if m and version and m.group(1) == suite:
			return version	# the table is newest first
	return None


class PackageFetcher:
	"""apt-get with a private sources list, lists and cache."""

	def __init__(self, ops: Ops, root: Path,
		     sources: Optional[List[str]] = None,
		     arch: Optional[str] = None) -> None:
		self.ops = ops
		self.root = root
		self.sources = sources
		# a Debian architecture other than the machine's (ppc64el):
		# its own lists, in its own root
		self.arch = arch

	def _apt_opts(self) -> List[str]:
		r = self.root
		arch = ['-o', f'APT::Architecture={self.arch}',
			'-o', f'APT::Architectures={self.arch}'] if self.arch else []
		return ['-o', f'Dir::Etc::sourcelist={r}/sources.list',
			'-o', 'Dir::Etc::sourceparts=-',
			'-o', f'Dir::State::Lists={r}/lists',
			'-o', f'Dir::Cache={r}/cache',
			'-o', 'APT::Sandbox::User=root', *arch, '-q']

	def _lock(self):
		return locks.hold(locks.lock_file('apt-' + locks.slug(self.root)),
				  f'apt in {self.root}')

	def update(self, suites: List[str], force: bool = False) -> None:
		with self._lock():
			self._update(suites, force)

	def _update(self, suites: List[str], force: bool = False) -> None:
		texts = self.sources if self.sources is not None \
			else _read_system_sources()
		uri, keyring = debian_mirror(texts)
		keyring = keyring or '/usr/share/keyrings/debian-archive-keyring.gpg'
		want = ''.join(f'deb [signed-by={keyring}] {uri} {s} main\n'
			       for s in sorted(set(suites)))
		srcfile = self.root / 'sources.list'
		stamp = self.root / 'lists' / '.updated'
		(self.root / 'lists' / 'partial').mkdir(parents=True, exist_ok=True)
		(self.root / 'cache' / 'archives' / 'partial').mkdir(
			parents=True, exist_ok=True)
		fresh = (srcfile.exists() and srcfile.read_text() == want and
			 stamp.exists() and
			 time.time() - stamp.stat().st_mtime < LISTS_MAX_AGE)
		if fresh and not force:
			return
		srcfile.write_text(want)
		progress(f'apt-get update ({", ".join(sorted(set(suites)))}) '
			 'with a private sources list')
		res = self.ops.run(['apt-get', *self._apt_opts(), 'update'],
				   check=False, timeout=600)
		if res.returncode != 0 or 'Err:' in res.output:
			raise InfraError('apt-get update failed:\n' +
					 res.output[-2000:],
					 'check that the Debian mirror in your apt '
					 'configuration is reachable')
		stamp.touch()

	def candidates(self, pattern: str, suite: str) -> List[tuple]:
		"""[(package, version)] in the suite matching a glob."""
		res = self.ops.run(['apt-cache', *self._apt_opts(), 'pkgnames',
				    pattern.split('*')[0]], check=False)
		names = sorted(n for n in res.output.split()
			       if fnmatch.fnmatch(n, pattern) and
			       re.fullmatch(r'linux-source-\d+\.\d+', n))
		out = []
		for n in names:
			pol = self.ops.run(['apt-cache', *self._apt_opts(),
					    'policy', n], check=False).output
			version = version_in_suite(pol, suite)
			if version:
				out.append((n, version))
		return out

	def resolve(self, spec: BaseSpec) -> tuple:
		found = self.candidates(spec.package, spec.suite)
		if not found:
			raise InfraError(f'no package matching {spec.package} in '
					 f'Debian {spec.suite}',
					 'check bases.toml, or use --tree/--ref')

		def key(item):
			return tuple(int(x) for x in
				     re.findall(r'\d+', item[0]))
		return max(found, key=key)

	def download(self, package: str, version: str) -> Path:
		with self._lock():
			return self._download(package, version)

	def _download(self, package: str, version: str) -> Path:
		debs = self.root.parent / 'debs'
		debs.mkdir(parents=True, exist_ok=True)
		have = list(debs.glob(f'{package}_{_deb_version(version)}_*.deb'))
		if have:
			return have[0]
		progress(f'downloading {package} {version}')
		self.ops.run(['apt-get', *self._apt_opts(), 'download',
			      f'{package}={version}'], cwd=debs, timeout=1800)
		have = list(debs.glob(f'{package}_{_deb_version(version)}_*.deb'))
		if not have:
			raise InfraError(f'apt-get download {package}={version} '
					 'left no .deb behind')
		return have[0]


def _deb_version(version: str) -> str:
	# dpkg file names encode the epoch colon as %3a
	return version.replace(':', '%3a')


def tag_for(package: str, version: str) -> str:
	return f'base/{package}/{re.sub(r"[^A-Za-z0-9._-]", "_", version)}'


def strip_debian_gitignore(text: str) -> str:
	"""Drop the packaging block Debian appends to the top .gitignore.

	It ends with '/*' and '!/debian/', ignoring the whole top level, so
	'git add -A' would add nothing.  It is not upstream's.
	"""
	out = re.sub(r'\n#\n# Debian packaging:.*\Z', '\n', text, flags=re.S)
	lines = out.rstrip('\n').split('\n')
	while lines and lines[-1].strip() in ('/*', '!/debian/', '#'):
		lines.pop()
	return '\n'.join(lines) + '\n'


def import_tree(ops: Ops, deb: Path, package: str, version: str,
		dest: Path) -> str:
	"""Unpack the package's tarball into dest as a git repo; return the tag."""
	tag = tag_for(package, version)
	if (dest / '.git').exists():
		res = ops.run(['git', '-C', str(dest), 'rev-parse', '-q',
			       '--verify', f'refs/tags/{tag}'], check=False)
		if res.returncode == 0:
			return tag
		raise UserError(f'{dest} holds another base than {package} '
				f'{version}', f'remove {dest} to re-import, or '
				'keep it and pass --tree/--ref')
	tmp = dest.with_name(dest.name + '.importing')
	if tmp.exists():
		shutil.rmtree(tmp)
	tmp.mkdir(parents=True)
	try:
		_unpack_and_commit(ops, deb, package, version, tmp, tag)
	except BaseException:
		# Made by this run, half done: gone with it (a run killed with
		# -9 leaves it to the next, which removes it above).
		shutil.rmtree(tmp, ignore_errors=True)
		raise
	tmp.rename(dest)
	return tag


def _unpack_and_commit(ops: Ops, deb: Path, package: str, version: str,
		       tmp: Path, tag: str) -> None:
	progress(f'unpacking {deb.name} (about 30 s)')
	tarball = f'./usr/src/{package}.tar.xz'
	ops.run(['sh', '-c', f'dpkg-deb --fsys-tarfile "{deb}" | '
		 f'tar -xO "{tarball}" | tar -xJ -C "{tmp}" '
		 '--strip-components=1'], timeout=1800)
	gi = tmp / '.gitignore'
	if gi.exists():
		gi.write_text(strip_debian_gitignore(gi.read_text()))
	if not (tmp / 'Makefile').exists() or not (tmp / 'Kconfig').exists():
		raise InfraError(f'{deb.name} did not contain a kernel tree')
	progress('importing the tree into git (about a minute)')
	git = ['git', '-C', str(tmp)]
	ops.run([*git, 'init', '-q', '-b', 'base'])
	ops.run([*git, 'config', 'gc.auto', '0'])
	ops.run([*git, 'add', '-A'], timeout=1800)
	ops.run([*git, 'commit', '-q', '-m',
		 f'Import {package} {version} from Debian\n\n'
		 'The whole tree of the Debian binary package, unchanged but for\n'
		 "the packaging block Debian appends to the top .gitignore.\n"],
		env=IMPORT_IDENT, timeout=1800)
	ops.run([*git, 'tag', tag])


def resolve(name: Optional[str] = None, tree: Optional[str] = None,
	    ref: Optional[str] = None, ops: Optional[Ops] = None,
	    offline: bool = False) -> BaseTree:
	"""Make the named base available and say exactly what it is."""
	ops = ops or Ops()
	specs = load_specs()
	if tree:
		return _own_tree(ops, Path(tree).expanduser().resolve(),
				 ref or 'HEAD', specs[default_base()].patches
				 if name is None else specs[name].patches)
	name = name or default_base()
	if name not in specs:
		raise UserError(f'unknown base {name!r}',
				f'use one of: {", ".join(specs)} (bases.toml), '
				'or --tree PATH --ref REF')
	with locks.hold(locks.lock_file(f'base-{name}'),
			f'the {name} base tree\'s import'):
		return _packaged(ops, name, specs, offline)


def _packaged(ops: Ops, name: str, specs: Dict[str, BaseSpec],
	      offline: bool) -> BaseTree:
	spec = specs[name]
	dest = paths.cache_dir() / 'trees' / name
	if offline or _recent(dest):
		tag = _existing_tag(ops, dest, spec)
		if tag:
			return _describe(ops, name, dest, tag, spec)
	fetcher = PackageFetcher(ops, paths.cache_dir() / 'apt')
	fetcher.update([s.suite for s in specs.values()])
	package, version = fetcher.resolve(spec)
	tag = tag_for(package, version)
	if (dest / '.git').exists() and _has_ref(ops, dest, tag):
		(dest / '.git' / 'perfctr-checked').touch()
		return _describe(ops, name, dest, tag, spec)
	if (dest / '.git').exists():
		old = dest.with_name(f'{name}.old-{int(time.time())}')
		progress(f'{name} moved on to {package} {version}; keeping the '
			 f'old tree as {old}')
		dest.rename(old)
	deb = fetcher.download(package, version)
	import_tree(ops, deb, package, version, dest)
	(dest / '.git' / 'perfctr-checked').touch()
	return _describe(ops, name, dest, tag, spec)


def _recent(dest: Path) -> bool:
	stamp = dest / '.git' / 'perfctr-checked'
	return stamp.exists() and time.time() - stamp.stat().st_mtime < \
		LISTS_MAX_AGE


def _has_ref(ops: Ops, dest: Path, ref: str) -> bool:
	return ops.run(['git', '-C', str(dest), 'rev-parse', '-q', '--verify',
			f'{ref}^{{commit}}'], check=False).returncode == 0


def _existing_tag(ops: Ops, dest: Path, spec: BaseSpec) -> Optional[str]:
	if not (dest / '.git').exists():
		return None
	res = ops.run(['git', '-C', str(dest), 'tag', '-l', 'base/*'],
		      check=False)
	tags = [t for t in res.output.split()
		if fnmatch.fnmatch(t.split('/')[1], spec.package)]
	return tags[-1] if tags else None


def _describe(ops: Ops, name: str, dest: Path, tag: str,
	      spec: BaseSpec) -> BaseTree:
	commit = ops.run(['git', '-C', str(dest), 'rev-parse',
			  f'{tag}^{{commit}}']).output.strip()
	_, package, version = tag.split('/', 2)
	return BaseTree(name=name, path=dest, ref=tag, commit=commit,
			version=version, origin=f'{package} {version}',
			patches=spec.patches)


def _own_tree(ops: Ops, path: Path, ref: str, patches: str) -> BaseTree:
	if not path.is_dir():
		raise UserError(f'--tree {path}: no such directory',
				'pass the path of a kernel git tree')
	if not (path / 'Makefile').exists() or not (path / 'Kconfig').exists():
		raise UserError(f'--tree {path} is not a kernel tree (no '
				'top-level Makefile and Kconfig)',
				'pass the top directory of a Linux source tree')
	if not (path / '.git').exists():
		raise UserError(f'--tree {path} is not a git repository',
				'the series is applied with git am: use a '
				'git clone of the kernel')
	if not _has_ref(ops, path, ref):
		raise UserError(f'--ref {ref} does not exist in {path}',
				f'list candidates with: git -C {path} tag -l; '
				f'git -C {path} branch -a')
	commit = ops.run(['git', '-C', str(path), 'rev-parse',
			  f'{ref}^{{commit}}']).output.strip()
	desc = ops.run(['git', '-C', str(path), 'describe', '--tags',
			'--always', commit], check=False).output.strip()
	return BaseTree(name='tree', path=path, ref=ref, commit=commit,
			version=desc or commit[:12], origin=f'{path} {ref}',
			patches=patches)
