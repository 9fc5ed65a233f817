"""conftest.py fails a notebook cell whose run writes stderr (ignored-output cells too), unless it is marked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def test_a_cell_that_writes_stderr_fails(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cells = [
        ("import sys\nprint(1)\nprint('oops', file=sys.stderr)", [nbformat.v4.new_output("stream", text="1\n")]),
        ("# NBVAL_IGNORE_OUTPUT\nimport warnings\nwarnings.warn('a warning')", []),
        ("# NBVAL_ALLOW_STDERR\nimport sys\nprint('allowed', file=sys.stderr)", []),
        ("print(2)", [nbformat.v4.new_output("stream", text="2\n")]),
    ]
    for count, (source, outputs) in enumerate(cells, start=1):
        cell = nbformat.v4.new_code_cell(source, execution_count=count)
        cell.outputs = outputs
        nb.cells.append(cell)
    path = tmp_path / "demo.ipynb"
    nbformat.write(nb, path)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "conftest", "-c", str(ROOT / "pyproject.toml"),
         "-o", "addopts=--nbval --nbval-current-env -p no:cacheprovider", "--rootdir", str(tmp_path), "-q", "-rf",
         str(path)],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=300,
    )
    assert "2 failed, 2 passed" in result.stdout, result.stdout[-3000:]
    assert "Cell wrote to stderr" in result.stdout and "oops" in result.stdout and "a warning" in result.stdout
