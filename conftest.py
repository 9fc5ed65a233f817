"""pytest configuration shared by the unit tests and the notebook tests.

Notebook cells must not write to stderr: a warning or a text progress bar shows as a pink box in JupyterLab.
Stored notebooks hold no stderr (``tools/execute_notebooks.py`` drops it), so stderr stays out of nbval's output
comparison, and a cell whose fresh run writes any fails instead, unless it is marked ``# NBVAL_ALLOW_STDERR``
(or tagged ``allow-stderr``). This holds for ``# NBVAL_IGNORE_OUTPUT`` cells too.
"""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

ALLOW_STDERR = "NBVAL_ALLOW_STDERR"
ALLOW_STDERR_TAG = "allow-stderr"


def _is_stderr(output: dict) -> bool:
    return output.get("output_type") == "stream" and output.get("name") == "stderr"


def _drop_stderr(outputs: list) -> list:
    return [o for o in outputs if not _is_stderr(o)]


def allows_stderr(cell) -> bool:
    """True if a notebook cell is marked as allowed to write stderr."""
    marked = any(line.strip().lstrip("#").strip() == ALLOW_STDERR for line in cell.source.splitlines())
    return marked or ALLOW_STDERR_TAG in cell.get("metadata", {}).get("tags", [])


def pytest_configure(config) -> None:
    """Compare stdout and rich outputs as nbval does; fail any cell whose run writes stderr."""
    try:
        from nbval.plugin import IPyNbCell
    except ImportError:
        return
    if getattr(IPyNbCell.runtest, "_checks_stderr", False):
        return
    compare, run = IPyNbCell.compare_outputs, IPyNbCell.runtest

    def compare_outputs(self, test, ref, skip_compare=None):
        return compare(self, _drop_stderr(test), _drop_stderr(ref), skip_compare)

    def runtest(self):
        run(self)
        written = "".join(o.get("text", "") for o in getattr(self, "test_outputs", []) if _is_stderr(o))
        if written and not allows_stderr(self.cell):
            self.raise_cell_error(
                "Cell wrote to stderr (a warning or a text progress bar shows as a pink box in JupyterLab)",
                f"{written[:2000]}\nFix the cause (or mark the cell '# {ALLOW_STDERR}' if stderr is its point).",
            )

    runtest._checks_stderr = True
    IPyNbCell.compare_outputs = compare_outputs
    IPyNbCell.runtest = runtest
