"""Bring every notebook in line with the series' template: setup cell, collapsed solutions, slide metadata, RISE.

Usage: ``python tools/sync_notebooks.py [notebooks/*.ipynb]`` (``make notebooks`` runs it before and after
executing; ``--check`` writes nothing and exits 1 if a notebook is out of sync). Only metadata and the setup cell's
source change (ids and outputs stay); idempotent: a second run changes nothing.

1. **Setup cell.** The first code cell is ``tools/setup_cell.py``'s template.
   **References.** The cell before the closing "Next" cell lists the works the notebook cites
   (``tools/references.py``, from ``references.bib``).
2. **Solutions collapsed.** Every nbgrader solution cell gets ``jupyter.source_hidden`` and ``outputs_hidden``:
   JupyterLab shows a collapsed answer until the reader expands it.
3. **Slides.** Every cell gets ``slideshow.slide_type``, so the notebook presents as a slideshow (RISE in
   JupyterLab, ``make slides``) on a 1280 x 800 canvas, by one rule:

   - *skip*: the setup cell, code cells of imports only, and the exercises' nbgrader cells (solutions and their
     checks): the exercise statements are on the slides, the answers are not;
   - *slide*: the title cell and each markdown cell that starts with a ``##`` heading;
   - *subslide*: each markdown cell that starts with a ``###`` heading, and a markdown cell that would overflow the
     current (sub)slide: a markdown cell and the code cells after it (prose and the code it introduces) stay
     together as a block, and a block starts a new subslide when it would push the (sub)slide past
     ``FIT`` (the height estimated from the text and the stored outputs, see ``height``); a code cell
     that would overflow starts a subslide too, unless it is the first after its markdown and that markdown fills
     less than half the slide (a second figure gets a slide of its own, and so does the code after long prose);
   - ``-`` (continue the current one): every other cell.

   The ``## Setup`` heading before the setup cell is skipped too (it is about installing, not the topic).
   Heights come from the stored outputs, so ``make notebooks`` runs this again after executing.
4. **RISE.** The notebook's ``metadata.rise`` (read by jupyterlab-rise over its settings) is ``RISE``: the live
   slideshow uses the same 1280 x 800 canvas, and a (sub)slide taller than the screen scrolls instead of being cut.

``tools/slides.py`` builds the offline decks with the same rule (``slide_types(..., deck=True)``) on a copy of the
notebook made for the projector: figure code hidden, long prose moved to speaker notes, tall code and printouts
capped at ``CODE_MAX`` and ``TEXT_MAX`` px (they scroll inside their box).
"""

from __future__ import annotations

import base64
import math
import re
import struct
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import references  # noqa: E402
from notebook_files import run_over_notebooks  # noqa: E402
from setup_cell import setup_source  # noqa: E402

# The slide canvas (reveal.js width and height; tools/slides.py uses the same) and the estimate's constants, in px
# at nbconvert's slide font sizes (prose 20 px, code 19 px).
SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 800
FIT = SLIDE_HEIGHT - 40  # what a (sub)slide may fill: reveal.js keeps a margin
PROSE_CHARS, PROSE_LINE = 120, 25  # characters per line of prose, px per line
CODE_CHARS, CODE_LINE = 95, 24
HEADING = {1: 90, 2: 60, 3: 50}
CELL_GAP = 24  # padding and margins around a code cell or an output
MARKDOWN_GAP, LIST_ITEM = 30, 6  # around a markdown cell; the extra space of a list item
TABLE_ROW = 38
IMAGE_WIDTH = SLIDE_WIDTH - 180  # the widest picture shown without scaling (prompt and margins)
IMPORT = re.compile(r"^(import|from)\s+\S+|^\s*$|^#|^\)|^\s+\w")  # lines of an import-only cell
# On the offline decks (tools/slides.py): the tallest a code cell's source, a printout or table, or a figure is drawn;
# a taller one scrolls (code, text, table) or shrinks (a figure) inside that box.
CODE_MAX, TEXT_MAX, IMAGE_MAX = 408, 336, 500
OUTPUTS_MAX = IMAGE_MAX + 40  # all the outputs of one cell together
DECK_FIT = 880  # the most a code cell and the short markdown before it may fill on a deck (a taller slide shrinks)
# jupyterlab-rise reads these from the notebook's metadata (its settings schema: width and height are strings).
RISE = {"scroll": True, "width": str(SLIDE_WIDTH), "height": str(SLIDE_HEIGHT)}


def _lines(text: str, chars: int) -> int:
    return sum(max(1, math.ceil(len(line) / chars)) for line in text.splitlines())


def _image_height(png_base64: str, deck: bool = False) -> int:
    head = "".join(png_base64[:128].split())[:64]  # the PNG header: width and height at bytes 16-24
    width, height = struct.unpack(">II", base64.b64decode(head)[16:24])
    shown = round(height * min(1.0, IMAGE_WIDTH / width))
    return min(shown, IMAGE_MAX) if deck else shown


def _capped(px: int, cap: int, deck: bool) -> int:
    return min(px, cap) if deck else px


def height(cell: nbformat.NotebookNode, deck: bool = False) -> int:
    """The estimated height of a cell on the slide canvas, in px (source and stored outputs).

    ``deck``: as the offline deck draws it (a source hidden by ``transient.remove_source`` takes no room; code,
    printouts and figures are capped at ``CODE_MAX``, ``TEXT_MAX`` and ``IMAGE_MAX``).
    """
    if cell.cell_type == "markdown":
        total = MARKDOWN_GAP + LIST_ITEM * len(re.findall(r"^\s*(?:[-*]|\d+\.)\s", cell.source, re.M))
        for block in re.split(r"\n\s*\n", cell.source.strip()):
            heading = re.match(r"^(#{1,6})\s", block)
            if heading:
                total += HEADING.get(len(heading.group(1)), 40)
                block = block.split("\n", 1)[1] if "\n" in block else ""
            if block.strip():
                total += _lines(block, PROSE_CHARS) * PROSE_LINE + PROSE_LINE // 3
        return total
    hidden = deck and cell.metadata.get("transient", {}).get("remove_source", False)
    total = 0 if hidden else CELL_GAP + _capped(_lines(cell.source, CODE_CHARS) * CODE_LINE, CODE_MAX, deck)
    outputs = 0
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if out.get("output_type") == "stream":
            outputs += CELL_GAP // 2 + _capped(_lines(out.get("text", ""), CODE_CHARS) * CODE_LINE, TEXT_MAX, deck)
        elif "image/png" in data:
            outputs += CELL_GAP + _image_height(data["image/png"], deck)
        elif "text/html" in data:
            outputs += CELL_GAP + _capped(TABLE_ROW * max(1, data["text/html"].count("<tr")), TEXT_MAX, deck)
        elif "text/plain" in data:
            outputs += CELL_GAP // 2 + _capped(_lines(data["text/plain"], CODE_CHARS) * CODE_LINE, TEXT_MAX, deck)
        elif out.get("output_type") == "error":
            outputs += CELL_GAP + CODE_LINE * 3
    return total + _capped(outputs, OUTPUTS_MAX, deck)


_height = height


def _nbgrader(cell: nbformat.NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("solution") or meta.get("grade"))


def _imports_only(cell: nbformat.NotebookNode) -> bool:
    return cell.source.strip() != "" and all(IMPORT.match(line) for line in cell.source.splitlines())


def _setup_heading(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "markdown" and cell.source.split("\n", 1)[0].strip() == "## Setup"


def slide_types(nb: nbformat.NotebookNode, deck: bool = False) -> list[str]:
    """The ``slideshow.slide_type`` of every cell, by the rule in this module's docstring (``deck``: heights as
    the offline deck draws them, see ``height``)."""
    setup = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), None)
    types: list[str] = []
    used = 0  # px of the current (sub)slide so far
    code_after_markdown = False  # whether the current block already shows a code cell

    def height(cell: nbformat.NotebookNode) -> int:
        return _height(cell, deck)

    for index, cell in enumerate(nb.cells):
        skipped = index == setup or _nbgrader(cell) or (cell.cell_type == "code" and _imports_only(cell))
        if skipped or _setup_heading(cell):
            types.append("skip")
            continue
        if index == 0 or (cell.cell_type == "markdown" and cell.source.startswith("## ")):
            kind = "slide"
        elif cell.cell_type == "markdown" and cell.source.startswith("### "):
            kind = "subslide"
        elif cell.cell_type == "markdown":
            block = height(cell)
            for after in nb.cells[index + 1:]:
                if after.cell_type == "markdown":
                    break
                if not (_nbgrader(after) or _imports_only(after)):
                    block += height(after)
            kind = "subslide" if used > 0 and used + block > FIT else "-"
        else:
            overflows = used + height(cell) > FIT
            alone = code_after_markdown or used > FIT // 2 or (deck and used + height(cell) > DECK_FIT)
            kind = "subslide" if overflows and alone else "-"
        if kind != "-":
            used = 0
        used += height(cell)
        code_after_markdown = cell.cell_type == "code"
        types.append(kind)
    return types


def _set(cell: nbformat.NotebookNode, key: str, values: dict) -> bool:
    current = cell.metadata.get(key, {})
    if all(current.get(k) == v for k, v in values.items()):
        return False
    cell.metadata[key] = {**current, **values}
    return True


def apply(nb: nbformat.NotebookNode, name: str) -> bool:
    """Setup cell, References cell, collapsed solutions, slide types and RISE settings, in place; True if changed."""
    setup = next((cell for cell in nb.cells if cell.cell_type == "code"), None)
    if setup is None:
        raise ValueError(f"{name}: expected a setup cell (a code cell), found no code cell")
    changed = False
    wanted = setup_source(name)
    if setup.source != wanted:
        setup.source = wanted
        changed = True
    changed |= references.sync(nb)[0]
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            changed |= _set(cell, "jupyter", {"source_hidden": True, "outputs_hidden": True})
    for cell, kind in zip(nb.cells, slide_types(nb)):
        changed |= _set(cell, "slideshow", {"slide_type": kind})
    if nb.metadata.get("rise") != RISE:
        nb.metadata["rise"] = dict(RISE)
        changed = True
    return changed


def sync(path: Path) -> bool:
    """Apply the template to one notebook file; True if the file changed."""
    nb = nbformat.read(path, as_version=4)
    if not apply(nb, path.name):
        return False
    nbformat.write(nb, path)
    return True


def in_sync(path: Path) -> bool:
    """Whether the notebook already follows the template (nothing to write)."""
    return not apply(nbformat.read(path, as_version=4), path.name)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--check" not in argv:
        return run_over_notebooks(sync, "synced", __doc__.splitlines()[0], argv)
    stale: list[Path] = []

    def check(path: Path) -> bool:
        if not in_sync(path):
            stale.append(path)
        return False

    run_over_notebooks(check, "", __doc__.splitlines()[0], [a for a in argv if a != "--check"])
    for path in stale:
        print(f"{path}: out of sync (run tools/sync_notebooks.py on it)", file=sys.stderr)
    return 1 if stale else 0

if __name__ == "__main__":
    raise SystemExit(main())
