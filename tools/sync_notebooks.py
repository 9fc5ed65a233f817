"""Write the canonical setup cell (tools/setup_cell.py) into every notebook as its first code cell.

Usage: ``python tools/sync_notebooks.py [notebooks/*.ipynb]`` (run by ``make notebooks`` before executing).
Only the cell's source changes (its id, metadata and outputs stay); idempotent: a second run changes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from setup_cell import SETUP_SOURCE  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def sync(path: Path) -> bool:
    """Rewrite the first code cell of one notebook to the template; True if the file changed."""
    nb = nbformat.read(path, as_version=4)
    setup = next((cell for cell in nb.cells if cell.cell_type == "code"), None)
    if setup is None:
        raise ValueError(f"{path}: expected a setup cell (a code cell), found no code cell")
    if setup.source == SETUP_SOURCE:
        return False
    setup.source = SETUP_SOURCE
    nbformat.write(nb, path)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    for path in args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")):
        if sync(path):
            print(f"{path}: setup cell rewritten", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
