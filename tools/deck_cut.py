"""The projector's cut of a notebook (``deck_notebook``), for ``tools/slides.py``, which exports the decks.

A *figure cell* (a code cell whose output is a picture) shows its figure without its code; a markdown cell's prose
past ``SLIDE_WORDS`` words goes to the speaker notes (``split_prose``), and so does each row of the walkthrough table
of ``teaching/NN_*.md`` (``walkthrough``), on the slide of the section it names; the ``## Setup`` heading is left out
with the setup cell; slide breaks follow ``sync_notebooks.slide_types(..., deck=True)``. Nothing here writes a file.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sync_notebooks import slide_types  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TEACHING = ROOT / "teaching"
SLIDE_WORDS = 90  # the prose one markdown cell keeps on a slide; the rest goes to the speaker notes


def figure_cell(cell: nbformat.NotebookNode) -> bool:
    """A code cell that draws a picture (its outputs hold a PNG)."""
    return cell.cell_type == "code" and any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))


def _blocks(source: str) -> list[str]:
    """A markdown cell's blocks (paragraphs, lists, tables, display maths, fenced code), in order."""
    blocks: list[str] = []
    for part in re.split(r"\n\s*\n", source.strip()):
        if blocks and (blocks[-1].count("```") % 2 or blocks[-1].count("$$") % 2):
            blocks[-1] += "\n\n" + part  # still inside a fence or a display formula
        else:
            blocks.append(part)
    return blocks


def _words(text: str) -> int:
    return len(re.sub(r"\$[^$]*\$", "x", text).split())


SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]`*$][.!?:])\s+(?=[A-Z(*`$\[])")


VISUAL = re.compile(r"\s*(?:\||\$\$|```|!\[|<(?!!--))")  # a table, display maths, fenced code, a picture, HTML


LIST = re.compile(r"\s*(?:[-*]|\d+\.)\s")


def _list_parts(body: str, limit: int) -> list[str]:
    """A markdown list cut between its items into parts of at most ``limit`` words (one item at least each)."""
    items = re.split(r"\n(?=(?:[-*]|\d+\.)\s)", body.strip())
    parts: list[list[str]] = [[]]
    for item in items:
        if parts[-1] and _words(" ".join(parts[-1] + [item])) > limit:
            parts.append([])
        parts[-1].append(item)
    return ["\n".join(part) for part in parts]


def split_prose(source: str, limit: int = SLIDE_WORDS) -> tuple[list[str], str]:
    """``(slide, notes)`` for a markdown cell. ``slide``: the parts that stay on the slide, in the cell's order: its
    prose up to ``limit`` words (headings free; a first paragraph longer than that cut after a sentence), each
    table, display formula, fenced code or picture as a part of its own, and a list too long for one part in parts
    of whole items (the deck gives each part its own cell, so a tall one can start a sub-slide: a summary or the
    exercises stay on the slides). ``notes``: the prose past the limit, for the speaker notes."""
    parts: list[str] = []
    prose: list[str] = []  # the prose blocks since the last table or formula
    notes: list[str] = []
    words = 0

    def flush() -> None:
        if prose:
            parts.append("\n\n".join(prose))
            prose.clear()

    for block in _blocks(source):
        heading = re.match(r"(#{1,6} [^\n]*)(?:\n|$)", block)
        body = block[heading.end():] if heading else block
        if VISUAL.match(body) and body.strip():
            if heading:
                prose.append(heading.group(1))
            flush()
            parts.append(body)
        elif LIST.match(body) and (notes or words + _words(body) > limit):
            # a list keeps every item on the slides, in parts that can go to sub-slides
            if heading:
                prose.append(heading.group(1))
            flush()
            parts += _list_parts(body, limit)
            words = limit
        elif notes:
            notes.append(block)
        elif not body.strip() or words + _words(body) <= limit:
            prose.append(block)
            words += _words(body)
        elif words == 0:
            sentences = SENTENCE_END.split(body)
            cut = 1
            while cut < len(sentences) and _words(" ".join(sentences[:cut + 1])) <= limit:
                cut += 1
            prose.append((heading.group(0) if heading else "") + " ".join(sentences[:cut]))
            if sentences[cut:]:
                notes.append(" ".join(sentences[cut:]))
            words = limit
        else:
            notes.append(block)
    flush()
    return parts, "\n\n".join(notes)


def _plain(text: str) -> str:
    """A heading or a section name reduced for matching: no numbering, markup or punctuation, lower case."""
    text = re.sub(r"^#+\s*", "", text.strip())
    text = re.sub(r"^\d+\s*[.·]\s*", "", text)
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def walkthrough(note: Path) -> list[tuple[str, str, str]]:
    """``(section, plan, question)`` for each row of a teacher's note's walkthrough table: the section it names,
    "M / N minutes (90 / 45): what to run live or show", and the question to pause on ("-" for none)."""
    rows = []
    header: list[str] | None = None
    in_table = False
    for line in note.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            in_table = line.strip() == "## Walkthrough plan"
            continue
        if not in_table or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if header is None:
            header = [c.lower() for c in cells]
            continue
        if set(line) <= set("|-: "):
            continue
        row = dict(zip(header, cells))
        plan = f"{row.get('minutes (90 / 45)', '?')} minutes (90 / 45): {row.get('run live or show', '')}".rstrip(": ")
        rows.append((row["section"], plan, row.get("pause for a question", "-") or "-"))
    return rows


def pause_questions(note: Path) -> list[tuple[str, str]]:
    """``(section, question)`` for each row of a teacher's note's walkthrough table with a question to pause on."""
    return [(section, question) for section, _, question in walkthrough(note) if question != "-"]


def _section_cell(nb: nbformat.NotebookNode, section: str) -> int | None:
    """The index of the cell a walkthrough row's section names: the heading with its number ("4 · ..." is the
    notebook's "## 4. ..."), else the heading its words begin, else the cell holding the text it quotes; the title
    cell for the setup and the title; ``None`` if nothing matches (``deck_notebook`` then puts the row with the row
    before)."""
    wanted = _plain(section)
    if wanted.startswith(("setup", "title")):
        return 0
    if wanted.startswith("exercise"):
        wanted = "exercises"
    number = re.match(r"(\d+)\s*[.·]", section)
    names = [wanted, _plain(re.split(r"[;(,]", section)[0])]
    headings = [(i, c.source.split("\n", 1)[0]) for i, c in enumerate(nb.cells)
                if c.cell_type == "markdown" and c.source.startswith("#")]
    if number:
        for index, heading in headings:
            if re.match(rf"##\s+{number.group(1)}\s*[.·]", heading):
                return index
    for index, heading in headings:
        plain = _plain(heading)
        if plain and any(plain == name or plain.startswith(name) or name.startswith(plain)
                         for name in names if len(name.split()) >= 1):
            return index
    for quote in re.findall(r'"([^"]+)"', section):
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" or not cell.source.startswith("#"):
                if quote in cell.source:
                    return index
    return None


def _notes_cell(text: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["slideshow"] = {"slide_type": "notes"}
    return cell


def deck_notebook(nb: nbformat.NotebookNode, rows: list[tuple[str, str, str]] = ()) -> nbformat.NotebookNode:
    """A copy of ``nb`` cut for the projector, as this module's docstring describes (the notebook is untouched).
    ``rows``: the walkthrough of its teacher's note (``walkthrough``), whose plan and pause go to the notes."""
    pause_notes: dict[int, list[str]] = {}
    at = 0  # a row that names no heading goes on the slide of the row before (the title slide for the first)
    for section, plan, question in rows:
        found = _section_cell(nb, section)
        at = at if found is None else found
        pause_notes.setdefault(at, []).append(f"**Plan, {section}:** {plan}")
        if question != "-":
            pause_notes[at].append(f"**Pause for a question:** {question}")
    deck = nbformat.from_dict(nb)
    deck.cells = []
    notes: dict[int, list[str]] = {}  # index in deck.cells -> the notes after that cell
    for index, original in enumerate(nb.cells):
        cell = nbformat.from_dict(original)
        if cell.cell_type == "code":  # the test suite's marker means nothing on a projector
            cell.source = re.sub(r"\A# NBVAL_IGNORE_OUTPUT\n", "", cell.source)
        parts, rest = split_prose(cell.source) if cell.cell_type == "markdown" else ([cell.source], "")
        cell.source = parts[0] if parts else ""
        if figure_cell(cell):
            cell.metadata["transient"] = {**cell.metadata.get("transient", {}), "remove_source": True}
        deck.cells.append(cell)
        here = len(deck.cells) - 1
        if rest or index in pause_notes:
            notes[here] = ([rest] if rest else []) + pause_notes.get(index, [])
        for part in parts[1:]:
            deck.cells.append(nbformat.v4.new_markdown_cell(part))
    for cell, kind in zip(deck.cells, slide_types(deck, deck=True)):
        cell.metadata["slideshow"] = {**cell.metadata.get("slideshow", {}), "slide_type": kind}
    cells = []
    for index, cell in enumerate(deck.cells):
        cells.append(cell)
        if index in notes:
            cells.append(_notes_cell("\n\n".join(notes[index])))
    deck.cells = cells
    return deck


def teachers_note(notebook: Path) -> Path | None:
    """``teaching/NN_name.md`` for ``NN_name.ipynb`` (``None`` if there is none)."""
    note = TEACHING / f"{notebook.stem}.md"
    return note if note.exists() else None
