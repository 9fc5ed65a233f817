"""A copy of this checkout's tracked files (``git ls-files``), as a clone has them: the folder a wheel is built in.

setuptools builds in the source folder (``build/``, ``*.egg-info``), so two builds of one folder at once, as CI's
jobs can start them, overwrite each other's files: a wheel came out with no module in it. Each build gets its own
copy instead, which is also what Colab's setup cell builds from (``pip install git+...`` clones first).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_tracked(dest: Path, only: tuple[str, ...] = (), root: Path = ROOT) -> Path:
    """Copy every tracked file of ``root`` (those whose path starts with one of ``only``, if given) into ``dest``."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (root / name).is_file() and (not only or name.startswith(only)):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, dest / name)
    return dest
