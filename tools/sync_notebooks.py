"""Write the canonical setup cell (tools/setup_cell.py) into every notebook as its first code cell.

Usage: ``python tools/sync_notebooks.py [notebooks/*.ipynb]`` (run by ``make notebooks`` before executing).
Only the cell's source changes (its id, metadata and outputs stay); idempotent: a second run changes nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notebook_files import run_over_notebooks  # noqa: E402
from setup_cell import setup_source  # noqa: E402


def sync(path: Path) -> bool:
    """Rewrite the first code cell of one notebook to the template; True if the file changed."""
    nb = nbformat.read(path, as_version=4)
    setup = next((cell for cell in nb.cells if cell.cell_type == "code"), None)
    if setup is None:
        raise ValueError(f"{path}: expected a setup cell (a code cell), found no code cell")
    wanted = setup_source(path.name)
    if setup.source == wanted:
        return False
    setup.source = wanted
    nbformat.write(nb, path)
    return True


def main(argv: list[str] | None = None) -> int:
    return run_over_notebooks(sync, "setup cell rewritten", __doc__.splitlines()[0], argv)

if __name__ == "__main__":
    raise SystemExit(main())
