"""Every diagram is a code-cell output (``show_diagram``), never a markdown attachment or a relative image path.

Colab shows no markdown cell attachments (googlecolab/colabtools#3836) and cannot resolve a path beside the
notebook; a picture stored as a code cell's output shows on GitHub, Colab, JupyterLab, VS Code and nbviewer alike.
"""

from __future__ import annotations

import ast
import base64
import re
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from mha_lib.notebook import Diagram, diagram_names, show_diagram

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "student").glob("*.ipynb"))
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)|<img[^>]*\bsrc=[\"']([^\"']+)")


def _shown(cell: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """The ``(name, description)`` of each ``show_diagram("name", "description")`` call in a code cell."""
    calls = []
    for node in ast.walk(ast.parse(TransformerManager().transform_cell(cell.source))):  # %pip too
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "show_diagram":
            calls.append(tuple(ast.literal_eval(arg) for arg in node.args))
    return calls


def _code(path: Path) -> list[nbformat.NotebookNode]:
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_markdown_shows_no_attachment_and_no_relative_image(path: Path) -> None:
    for cell in nbformat.read(path, as_version=4).cells:
        assert "attachments" not in cell, f"{path.name}: a cell attachment (Colab does not show it): {cell.source[:60]}"
        if cell.cell_type != "markdown":
            continue
        for target in (a or b for a, b in IMAGE.findall(cell.source)):
            assert target.startswith("https://"), (
                f"{path.name}: markdown image {target} (an attachment or a file beside the notebook shows nowhere"
                " but JupyterLab): draw it with a script in images/src/ and show it with show_diagram(...)"
            )


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_each_diagram_output_is_the_file_in_images(path: Path) -> None:
    for cell in _code(path):
        for name, description in _shown(cell):
            assert name in diagram_names(), f"{path.name} shows {name!r}, which is not in images/"
            (result,) = [o for o in cell.outputs if o.output_type == "execute_result"]
            assert result.data["text/plain"] == repr(Diagram(name, description))
            stored = base64.b64decode(result.data["image/png"])
            assert stored == (ROOT / "images" / f"{name}.png").read_bytes(), (
                f"{path.name}: the stored picture of {name} is older than images/{name}.png: run `make notebooks`"
            )


def test_every_diagram_is_shown_by_a_notebook() -> None:
    shown = {name for path in sorted((ROOT / "notebooks").glob("*.ipynb")) for cell in _code(path)
             for name, _ in _shown(cell)}
    assert set(diagram_names()) == shown, f"in images/ but shown nowhere: {sorted(set(diagram_names()) - shown)}"


def test_a_diagram_shows_as_a_picture_with_its_description_as_text() -> None:
    diagram = show_diagram("09_head_gates", "four gated heads")
    assert diagram._repr_png_().startswith(b"\x89PNG"), "a PNG"
    assert repr(diagram) == "[diagram 09_head_gates: four gated heads]"


@pytest.mark.parametrize(("args", "error", "match"), [
    (("no_such_figure", "x"), ValueError, r"name must be one of the diagrams in images/ \(03_soft_lookup"),
    (("09_head_gates", ""), ValueError, "description must be a non-empty str"),
    ((9, "x"), TypeError, "name must be a str, got int 9"),
])
def test_show_diagram_refuses_bad_input(args: tuple, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        show_diagram(*args)
