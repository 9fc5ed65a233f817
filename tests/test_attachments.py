"""Every figure a notebook's markdown shows travels inside the notebook, equal to its source file in images/."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TOOL = runpy.run_path(str(ROOT / "tools" / "attach_images.py"))
LINK = re.compile(r"!\[[^\]]*\]\(([^)\s]+)[^)]*\)|<img[^>]*\bsrc=[\"']([^\"']+)")


def _markdown(path: Path) -> list[nbformat.NotebookNode]:
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_markdown_links_no_file_beside_the_notebook(path: Path) -> None:
    """A relative image path breaks on Colab and wherever the notebook travels alone: attach it instead."""
    for cell in _markdown(path):
        for target in (a or b for a, b in LINK.findall(cell.source)):
            assert target.startswith(("attachment:", "https://", "http://", "data:")), (
                f"{target} is a file next to the notebook: run `make images` (tools/attach_images.py)"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_attachments_equal_their_files_in_images(path: Path) -> None:
    for cell in _markdown(path):
        used = set(TOOL["ATTACHED"].findall(cell.source))
        attached = set(cell.get("attachments", {}))
        assert used == attached, f"links {sorted(used)} but attaches {sorted(attached)}: run `make images`"
        for name in used:
            assert (ROOT / "images" / name).is_file(), f"attachment {name} has no source in images/"
            assert cell.attachments[name] == TOOL["encoded"](name), f"{name} differs from images/: `make images`"


def test_attach_images_is_idempotent(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    name = sorted((ROOT / "images").glob("*.png"))[0].name
    nb.cells = [nbformat.v4.new_markdown_cell(f"Before\\n\\n![a figure](../images/{name})\\n"),
                nbformat.v4.new_markdown_cell("![stale](attachment:gone.png)")]
    nb.cells[1]["attachments"] = {"old.png": {"image/png": "AAAA"}}
    path = tmp_path / "demo.ipynb"
    nbformat.write(nb, path)
    assert TOOL["attach"](path) is True
    once = path.read_text()
    assert TOOL["attach"](path) is False and path.read_text() == once
    cells = nbformat.read(path, as_version=4).cells
    assert cells[0].source == f"Before\\n\\n![a figure](attachment:{name})\\n"
    assert cells[0].attachments[name] == TOOL["encoded"](name)
    assert "attachments" not in cells[1], "an attachment no link uses is dropped"
