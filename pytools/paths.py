# SPDX-License-Identifier: GPL-2.0
"""Where things live: the repository, the cache, the results."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
	"""Downloads, imported base trees and build directories.

	PERFCTR_CACHE overrides; the default survives between runs so the
	second run of anything costs seconds.
	"""
	env = os.environ.get('PERFCTR_CACHE')
	if env:
		return Path(env)
	xdg = os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache'
	return Path(xdg) / 'perfctr'


def results_dir() -> Path:
	return Path(os.environ.get('PERFCTR_RESULTS', REPO / 'results'))


PATCHES = REPO / 'patches'
# What runs inside the guest (pytools/guest/): the module a vng guest
# runs, the pytest checks it is given, the initramfs /init's source
GUEST = REPO / 'pytools' / 'guest'
GUEST_MODULE = 'pytools.guest'
ABI_CHECKS = GUEST / 'abi_checks'
INIT_SRC = GUEST / 'init.c'
KCONFIGS = REPO / 'kconfigs'
