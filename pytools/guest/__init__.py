# SPDX-License-Identifier: GPL-2.0
"""What runs inside the guest, apart from the host pipeline.

- runner.py: the in-guest test run of a virtme-ng guest
  (``python3 -m pytools.guest --out DIR ...``): x86_64's guest sees the
  host's root filesystem, this repository and its venv included;
  ppc64le's a Debian root of its own (pytools/rootfs.py) with this
  repository mounted on /perfctr/src;
- init.c: the static /init of an initramfs guest (ppc64le's fast boot:
  inv bench, inv bisect --boot) and the test runner of a LAVA job's
  ramdisk, compiled on the host by pytools/initramfs.py;
- abi.py: the ctypes binding of the system-call ABI, abi_checks/ the
  pytest checks that use it, perfex.py the command-line tool;
- progs/: C the checks run, built static on the host (pytools/progs.py).

Nothing here imports the host's modules (pytools.* outside this
package): the guest has the standard library, pytest and this package.
tests/test_guest_layout.py checks both that and the paths the host
copies or names.
"""
