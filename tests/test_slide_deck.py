"""The offline decks' cut (tools/deck_cut.py ``deck_notebook``; tools/slides.py exports it), without a browser: figure
code hidden, long prose and every walkthrough pause in the speaker notes, the setup heading left out.
``make test-browser`` measures the built decks at 1280 x 800."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import deck_cut  # noqa: E402
import sync_notebooks  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ids = pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])


def _kind(cell: nbformat.NotebookNode) -> str:
    return cell.metadata.get("slideshow", {}).get("slide_type", "-")


def test_long_prose_goes_to_the_notes() -> None:
    sentence = "This sentence has exactly eight words in it."
    items = "\n".join(f"{n}. Item {n} has five words." for n in range(1, 11))
    source = ("## 2. A heading\n\n" + " ".join([sentence] * 20) + "\n\n" + items + "\n\nMore prose.\n\n"
              "| a | b |\n|---|---|\n| 1 | 2 |")
    slide, notes = deck_cut.split_prose(source, limit=40)
    assert slide[0] == "## 2. A heading\n\n" + " ".join([sentence] * 5)
    listed = slide[1:-1]
    assert "\n".join(listed) == items and all(deck_cut._words(part) <= 40 for part in listed), "the list stays"
    assert slide[-1] == "| a | b |\n|---|---|\n| 1 | 2 |", "a table keeps its own cell on the slide"
    assert notes == " ".join([sentence] * 15) + "\n\nMore prose."
    assert deck_cut.split_prose("Short.") == (["Short."], "")


def test_a_walkthrough_row_finds_its_heading() -> None:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 04 · Title"), nbformat.v4.new_markdown_cell("## 1. A padded batch\n\nText."),
        nbformat.v4.new_markdown_cell('Prose "with a quote" here.'), nbformat.v4.new_markdown_cell("## Exercises"),
    ])
    assert deck_cut._section_cell(nb, "1 · A padded batch, and why") == 1
    assert deck_cut._section_cell(nb, 'the plot ("with a quote")') == 2
    assert deck_cut._section_cell(nb, "Exercises 3 and 4 (implement it)") == 3
    assert deck_cut._section_cell(nb, "Setup") == 0
    assert deck_cut._section_cell(nb, "nothing like it") is None


@ids
def test_the_deck_hides_figure_code_and_notes_every_pause(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    note = deck_cut.teachers_note(path)
    pauses = deck_cut.pause_questions(note) if note else []
    deck = deck_cut.deck_notebook(nb, deck_cut.walkthrough(note) if note else [])
    notes = [c.source for c in deck.cells if _kind(c) == "notes"]
    assert sum(n.count("**Pause for a question:**") for n in notes) == len(pauses)
    assert sum(n.count("**Plan, ") for n in notes) == len(deck_cut.walkthrough(note) if note else [])
    for cell in deck.cells:
        if deck_cut.figure_cell(cell):
            assert cell.metadata["transient"]["remove_source"], "a figure's code on a slide"
        if cell.cell_type == "markdown" and _kind(cell) != "notes":
            kept = " ".join(line for line in cell.source.splitlines() if not line.startswith("#"))
            shown = deck_cut.VISUAL.match(cell.source) or deck_cut.LIST.match(cell.source)
            assert deck_cut._words(kept) <= deck_cut.SLIDE_WORDS or shown, cell.source[:80]
        if cell.cell_type == "code" and _kind(cell) != "skip":
            assert "NBVAL_IGNORE_OUTPUT" not in cell.source, "the tests' marker on a slide"
        if cell.source.startswith("## Setup"):
            assert _kind(cell) == "skip"
    assert nb.cells == nbformat.read(path, as_version=4).cells, "the notebook itself is untouched"


@ids
def test_every_notebook_carries_rise_settings_that_scroll(path: Path) -> None:
    rise = nbformat.read(path, as_version=4).metadata.get("rise")
    assert rise == sync_notebooks.RISE, f"run: .venv/bin/python tools/sync_notebooks.py notebooks/{path.name}"
