"""pytest configuration shared by the unit tests and the notebook tests."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")


def _drop_stderr(outputs: list) -> list:
    return [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]


def pytest_configure(config) -> None:
    """Leave stderr (warnings, progress bars) out of nbval's output comparison; stdout is still compared."""
    try:
        from nbval.plugin import IPyNbCell
    except ImportError:
        return
    if getattr(IPyNbCell.compare_outputs, "_skips_stderr", False):
        return
    original = IPyNbCell.compare_outputs

    def compare_outputs(self, test, ref, skip_compare=None):
        return original(self, _drop_stderr(test), _drop_stderr(ref), skip_compare)

    compare_outputs._skips_stderr = True
    IPyNbCell.compare_outputs = compare_outputs
