# SPDX-License-Identifier: GPL-2.0
"""python3 -m pytools.guest: the in-guest test run (runner.py)."""

import sys

from .runner import main

sys.exit(main())
