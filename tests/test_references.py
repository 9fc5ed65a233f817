"""Every cited work a click away: ``references.bib`` and each notebook's References cell (``tools/references.py``).

Fails when a notebook cites "Author (year)" or "Author et al. (year)" without a matching entry, when its References
cell lists a work it never cites (or misses one it cites), when an entry has no followable link or is cited by no
notebook, and when the books the series follows are not credited to their authors.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import references  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
BIB = references.entries()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_every_citation_has_an_entry_and_the_cell_lists_exactly_them(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    keys, unknown = references.cited(nb, BIB)
    assert not unknown, f"{path.name} cites works that references.bib lacks (or cites ambiguously): {unknown}"
    cells = [c for c in nb.cells if c.get("id") == references.CELL_ID]
    if not keys:
        assert not cells, f"{path.name} cites nothing but has a References cell"
        return
    assert len(cells) == 1, f"{path.name} cites {keys} but has no References cell: run tools/references.py"
    assert cells[0].source == references.cell_source(keys, BIB), f"{path.name}: run tools/references.py"
    assert nb.cells.index(cells[0]) == len(nb.cells) - 2, "the References cell stands just before the Next cell"
    listed = {k for k in BIB if f"]({BIB[k].text.rsplit('](', 1)[1]}" in cells[0].source}
    assert listed == set(keys), f"{path.name} lists {sorted(listed - set(keys))} without citing them"


def test_every_entry_is_cited_somewhere_and_has_a_link() -> None:
    cited: set[str] = set()
    for path in NOTEBOOKS:
        cited.update(references.cited(nbformat.read(path, as_version=4), BIB)[0])
    assert set(BIB) - cited == set(), f"entries no notebook cites: {sorted(set(BIB) - cited)}"
    for entry in BIB.values():
        assert "](https://" in entry.text, entry.key


def test_the_books_the_series_follows_are_credited_to_their_authors() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = "\n".join(c.source for c in nbformat.read(NOTEBOOKS[0], as_version=4).cells if c.cell_type == "markdown")
    for text, where in ((readme, "README.md"), (start, NOTEBOOKS[0].name)):
        text = " ".join(text.split())  # a name may wrap across lines
        assert "Credits" in text, f"{where} has no Credits paragraph"
        for name in ("Sebastian Raschka", "Build a Large Language Model (From Scratch)", "Aston Zhang",
                     "Zachary C. Lipton", "Mu Li", "Alexander J. Smola", "Dive into Deep Learning"):
            assert name in text, f"{where}'s Credits does not name {name!r}"


@pytest.mark.parametrize(("text", "found"), [
    ("as Vaswani et al. (2017) showed", [("Vaswani", "2017")]),
    ("Bahdanau, Cho and Bengio (2014) conjectured", [("Bahdanau", "2014")]),
    ("pruning (Michel, Levy & Neubig, 2019) and", [("Michel", "2019")]),
    ("tied weights, Press & Wolf, 2017), so", [("Press", "2017")]),
    ("heads in BERT-base, and Voita et al. (2019) found", [("Voita", "2019")]),
    ("DeepSeek-V2 (DeepSeek-AI, 2024) shrinks", [("DeepSeek-AI", "2024")]),
    ("Gemma 2 (Gemma Team, 2024) alternates", [("Gemma Team", "2024")]),
    ("the `Vaswani (2017)` in code and [Vaswani (2017)](https://x.org/Vaswani (2017)) link", [("Vaswani", "2017")]),
    ("in 2017, the year of the Transformer", []),
])
def test_citations_are_read_as_a_reader_reads_them(text: str, found: list[tuple[str, str]]) -> None:
    assert references.citations(text, ("DeepSeek-AI", "Gemma Team")) == found


def test_a_citation_without_an_entry_fails() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("As Nobody et al. (2031) showed."),
                                         nbformat.v4.new_markdown_cell("**Next:** none")])
    assert references.cited(nb, BIB) == ([], ["Nobody (2031)"])
    changed, unknown = references.sync(nb, BIB)
    assert not changed and unknown == ["Nobody (2031)"]


def test_sync_writes_the_cell_once_before_next() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Attention (Vaswani et al., 2017)."),
                                         nbformat.v4.new_markdown_cell("**Next:** none")])
    assert references.sync(nb, BIB) == (True, [])
    assert nb.cells[1].get("id") == references.CELL_ID and "arXiv:1706.03762" in nb.cells[1].source
    assert references.sync(nb, BIB) == (False, [])
