"""``python -m shoal.run -n 2 python3 script.py`` (or the installed ``shoalrun`` command): runs the
shoalrun launcher shipped in the wheel (shoal/bin/shoalrun) with the same arguments."""

from __future__ import annotations

import os
import shutil
import sys


def launcher() -> str:
    """Path of shoalrun: the wheel's copy, else the one on PATH."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "shoalrun")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("shoalrun")
    if found is None or os.path.realpath(found) == os.path.realpath(sys.argv[0]):
        raise SystemExit("shoal.run: no shoalrun binary (install the wheel with pip install ., or build tools/shoalrun)")
    return found


def main() -> None:
    exe = launcher()
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
