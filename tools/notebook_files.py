"""The command line shared by the notebook tools: the notebooks named, or every notebook of the series."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_over_notebooks(change: Callable[[Path], bool], changed: str, description: str,
                       argv: list[str] | None = None) -> int:
    """Apply ``change`` to each notebook path given (all of ``notebooks/`` when none); report those it changed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    for path in args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")):
        if change(path):
            print(f"{path}: {changed}", file=sys.stderr)
    return 0
