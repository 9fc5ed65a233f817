"""Print the path of a working Python X.Y interpreter (on PATH, or under pyenv), or nothing if there is none.

Usage: ``python3 tools/find_python.py 3.12`` (``make test-pythons`` uses it to find the other Pythons).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def works(path: str, version: str) -> bool:
    """True if ``path`` runs and is Python ``version`` (a pyenv shim for a version not selected fails here)."""
    try:
        out = subprocess.run(
            [path, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == version


def find(version: str) -> str | None:
    """The first working interpreter for ``version`` ("3.12"), or None."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    installed = sorted(pyenv.glob(f"{version}.*/bin/python{version}"), key=lambda p: [
        int(part) if part.isdigit() else 0 for part in p.parts[-3].split(".")
    ])
    candidates = [shutil.which(f"python{version}"), *map(str, reversed(installed)), f"/usr/bin/python{version}"]
    return next((c for c in candidates if c and works(c, version)), None)


if __name__ == "__main__":
    found = find(sys.argv[1])
    if found:
        print(found)
