"""Every sentence and number the teacher's notes quote from a notebook is still in it.

``teaching/NN_*.md`` points at cells by quoting them: "Addressed in: ... the paragraph "The gradient needs one more
decision"", the walkthrough's "run live: the padding-leak cell ("def padding_leak")". A notebook edit that drops
or rewords the quoted text leaves the teacher looking for a cell that is gone (issue 26, W4). Checked here:

- each double-quoted passage of a walkthrough table's section and "run live or show" columns, and of every
  "*Addressed in:*" part, is in the notebook (its markdown, its code, or its stored outputs), compared with markup,
  line breaks and teacher/student markers removed; a quote with "..." must hold each piece;
- each decimal number in the notes before the quiz is in the notebook, except the hypotheticals listed in
  ``NOT_FROM_THE_NOTEBOOK`` (numbers the notes make up for a question, not read from a cell).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# Numbers a note invents for a question or an example (not read from the notebook), by note.
NOT_FROM_THE_NOTEBOOK = {
    "00": {"0.945", "0.946"},  # a made-up printout that differs in the last digit
    "06": {"0.4"},  # a learner's belief quoted in a misconception ("a score of 0.3 or 0.4")
    "08": {"0.47", "5.1"},  # a hypothetical score; "head 5.1" (layer 5, head 1) of a made-up paper
    "09": {"5.1"},  # "head 5.1" of a made-up paper, in a discussion question
}
MARKERS = re.compile(r"<!--\s*/?teacher\s*-->|<!--\s*student:.*?-->", re.S)


def _plain(text: str) -> str:
    """Text compared without markup: no teacher/student markers, no ``*`` or backticks, one space for any run of
    whitespace, straight quotes."""
    text = MARKERS.sub("", text)
    text = text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"[*`]", "", text)
    return " ".join(text.split())


def _notebook_text(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    parts = []
    for cell in nb.cells:
        parts.append(cell.source)
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.append(out.get("data", {}).get("text/plain", ""))
    return _plain("\n".join(parts))


def _note(path: Path) -> str:
    return (ROOT / "teaching" / f"{path.stem}.md").read_text(encoding="utf-8")


def _section(note: str, heading: str) -> str:
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", note, re.S | re.M)
    return match.group(1) if match else ""


def quoted(note: str) -> list[str]:
    """The passages a note quotes from its notebook: double-quoted text in the walkthrough's section and "run live or
    show" columns and in every "Addressed in" part."""
    places = []
    header: list[str] | None = None
    for line in _section(note, "Walkthrough plan").splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if header is None:
            header = [c.lower() for c in cells]
            continue
        row = dict(zip(header, cells))
        places += [row.get("section", ""), row.get("run live or show", "")]
    misconceptions = _section(note, "Misconceptions")
    places += re.findall(r"\*Addressed in:\*(.*?)(?=\n- \*\*|\Z)", misconceptions, re.S)
    quotes = []
    for place in places:
        quotes += [q for q in re.findall(r'"([^"]*)"', " ".join(place.split())) if len(q) >= 8]
    return quotes


def numbers(note: str) -> set[str]:
    """The decimal numbers of a note before its quiz (``0.6``, ``27.4``), not those inside a quoted question."""
    before_quiz = note.split("## Quiz")[0]
    return set(re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", before_quiz))


ids = pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])


def test_the_quote_finder() -> None:
    note = (
        "## Walkthrough plan\n\n| minutes (90 / 45) | section | run live or show | pause for a question |\n"
        '|---|---|---|---|\n| 5 / 3 | 1 · A batch | run live: the cell ("def padding_leak") | "Why not?" |\n\n'
        '## Misconceptions\n\n- **X.** *Believed:* "a belief" *True:* t. *Addressed in:* the paragraph "The\n'
        '  gradient needs one more decision".\n- **Y.** *Believed:* b.\n\n## Quiz\n'
    )
    assert quoted(note) == ["def padding_leak", "The gradient needs one more decision"]
    assert numbers("the 0.6 and 27.4, not 1.2.3 or v2.5\n## Quiz\n0.9") == {"0.6", "27.4"}


@ids
def test_every_quote_of_the_notes_is_in_the_notebook(path: Path) -> None:
    text = _notebook_text(path)
    missing = [quote for quote in quoted(_note(path))
               if not all(_plain(piece) in text for piece in re.split(r"\.\.\.|…", quote) if piece.strip())]
    assert not missing, f"teaching/{path.stem}.md quotes text that {path.name} no longer has: {missing}"


@ids
def test_every_number_of_the_notes_is_in_the_notebook(path: Path) -> None:
    text = _notebook_text(path)
    found = set(re.findall(r"\d+\.\d+", text))
    missing = numbers(_note(path)) - found - NOT_FROM_THE_NOTEBOOK.get(path.stem[:2], set())
    assert not missing, f"teaching/{path.stem}.md gives numbers that {path.name} does not print or say: {missing}"


@ids
def test_every_discussion_question_has_talking_points(path: Path) -> None:
    """Under each discussion question, folded: "What to listen for", two or three bullets (issue 26, G9)."""
    questions = re.split(r"(?m)^(?=\d+\. )", _section(_note(path), "Discussion questions").strip())
    questions = [q for q in questions if q.strip()]
    assert len(questions) >= 3, f"teaching/{path.stem}.md: {len(questions)} discussion questions"
    for number, question in enumerate(questions, 1):
        folded = re.search(r"<details><summary>What to listen for</summary>\n(.*?)</details>", question, re.S)
        assert folded, f"teaching/{path.stem}.md, discussion question {number}: no folded talking points"
        bullets = re.findall(r"(?m)^\s+- ", folded.group(1))
        assert 2 <= len(bullets) <= 3, f"teaching/{path.stem}.md, question {number}: {len(bullets)} bullets"
