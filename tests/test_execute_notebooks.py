"""tools/execute_notebooks.py strips what changes from run to run, and nothing else."""

from __future__ import annotations

import runpy
from pathlib import Path

import nbformat

TOOL = runpy.run_path(str(Path(__file__).resolve().parents[1] / "tools" / "execute_notebooks.py"))
clean, stderr_cells = TOOL["clean"], TOOL["stderr_cells"]


def _notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(1); print(2)")
    cell.metadata["execution"] = {"iopub.execute_input": "2026-11-22T00:00:00Z"}
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="1\n"),
        nbformat.v4.new_output("stream", name="stderr", text="100%|#####| 10/10 [00:01<00:00, 9.8it/s]\n"),
        nbformat.v4.new_output("stream", name="stdout", text="2\n"),
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/plain": "VBox()",
                "application/vnd.jupyter.widget-view+json": {"model_id": "f3a9c0", "version_major": 2},
            },
        ),
    ]
    nb.cells = [cell, nbformat.v4.new_markdown_cell("text")]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    return nb


def test_clean_removes_run_specific_noise() -> None:
    nb = clean(_notebook(), "demo")
    cell = nb.cells[0]
    assert "execution" not in cell.metadata
    assert "widgets" not in nb.metadata
    assert nb.metadata["language_info"] == {"name": "python", "version": "3.11.7"}, "kept as the kernel sent it"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert [o.output_type for o in cell.outputs] == ["stream", "display_data"]
    assert cell.outputs[0].text == "1\n2\n", "stdout kept and joined, stderr dropped"
    assert cell.outputs[1].data["application/vnd.jupyter.widget-view+json"]["model_id"] == "demo-widget-0"
    assert nb.cells[1].source == "text"


def test_clean_is_idempotent() -> None:
    once = clean(_notebook(), "demo")
    assert clean(nbformat.from_dict(once), "demo") == once


def test_stderr_cells_are_reported() -> None:
    assert stderr_cells(_notebook()) == [(0, "100%|#####| 10/10 [00:01<00:00, 9.8it/s]")]
