"""The series' bibliography: ``references.bib`` in, a "References" cell per notebook out.

Usage: ``python tools/references.py [notebooks/*.ipynb]`` (``make notebooks`` runs it through
``tools/sync_notebooks.py``); ``--check`` writes nothing and exits 1 if a notebook's References cell is out of date
or a citation has no entry.

``references.bib`` (BibTeX, which the site's engine and every reference manager read) holds every work the series
cites, each with a ``url`` a reader can follow (DOI, arXiv, ACL Anthology, the book's page). A notebook cites a work
in its prose as "Vaswani et al. (2017)", "Bahdanau, Cho and Bengio (2014)", "Shazeer (2019)" or
"(Michel et al., 2019)": the first author's surname and the year pick the entry (an entry may also be cited by its
``shorthand``, e.g. "Sentence-BERT (2019)"; two works of one first author in one year carry a ``citeyear`` such
as ``2014a``, and are cited so). The References cell (id ``references``, just before the closing
"Next" cell) lists, in author order, exactly the entries the notebook cites; ``tests/test_references.py`` fails on a
citation without an entry, on an entry no notebook cites, and on a cell that is not what this tool writes.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from pybtex.database import parse_file

ROOT = Path(__file__).resolve().parents[1]
BIBLIOGRAPHY = ROOT / "references.bib"
CELL_ID = "references"
HEADING = "## References"

# A surname: title case, with capitalised parts ("Vaswani", "Lee-Thorp", "McCandlish"); "BERT-base" is not one.
_SURNAME = r"[A-Z][a-z\u00e0-\u00ff'\u2019]+(?:-?[A-Z][a-z\u00e0-\u00ff'\u2019]+)*"


def citation_pattern(names: tuple[str, ...] = ()) -> re.Pattern[str]:
    """ "Name (2017)", "Name et al. (2017)", "Name, Name and Name (2014)", "Name & Name (2019)", "(Name et al., 2019)".

    ``names`` are cited as written although they are no surnames: organisations ("DeepSeek-AI", "Gemma Team") and
    shorthands ("Sentence-BERT").
    """
    name = "|".join([*(re.escape(n) for n in sorted(names, key=len, reverse=True)), _SURNAME])
    name = f"(?:{name})"
    authors = rf"{name}(?:(?:, {name})*(?:,? (?:and|&) {name}))?"
    year = r"\(?(?P<year>(?:19|20)\d\d[a-z]?)\)?(?=[\s).,;:!?]|$)"
    return re.compile(rf"(?<![\w-])(?P<authors>{authors})(?P<etal> et al\.)?(?:'s)?,? {year}")


_CODE_OR_LINK = re.compile(r"(`+).+?\1|\]\([^)]*\)|https?://\S+|\$[^$]*\$", re.S)


@dataclass(frozen=True)
class Entry:
    """One work of ``references.bib``."""

    key: str
    surnames: tuple[str, ...]  # the authors' last names, in order
    year: str  # as cited: the entry's year, or its ``citeyear`` ("2014a") where one author has two works that year
    shorthand: tuple[str, ...]  # other names it is cited by ("Sentence-BERT"), from the entry's shorthand field
    text: str  # the formatted line of the References cell

    def answers(self, name: str, year: str) -> bool:
        """True if "name (year)" cites this work (the first author's surname, or the entry's shorthand)."""
        return year == self.year and (name in self.shorthand or name == (self.surnames[0] if self.surnames else ""))


def _clean(text: str) -> str:
    return text.replace("{", "").replace("}", "").replace("\\&", "&").replace("--", "–")


def _author_list(names: list[str]) -> str:
    if len(names) > 6:
        return f"{', '.join(names[:6])} et al."
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def entries(path: Path = BIBLIOGRAPHY) -> dict[str, Entry]:
    """Every entry of the bibliography, by key; ValueError for one without a followable ``url``."""
    data = parse_file(str(path), bib_format="bibtex")
    out: dict[str, Entry] = {}
    for key, item in data.entries.items():
        fields = item.fields
        url = fields.get("url", "")
        if not url.startswith("https://"):
            raise ValueError(f"references.bib: entry {key!r} needs a url starting with https://, got {url!r}")
        people = item.persons.get("author") or item.persons.get("editor") or []
        names = [_clean(" ".join(p.first_names + p.middle_names + p.prelast_names + p.last_names)) for p in people]
        surnames = tuple(_clean(" ".join(p.last_names)) for p in people)
        venue = next((fields[f] for f in ("journal", "booktitle", "publisher", "howpublished") if f in fields), "")
        title = _clean(fields["title"])
        text = f"{_author_list(names)} ({fields.get('citeyear', fields['year'])}). *{title}*."
        if venue:
            text += f" {_clean(venue)}."
        text += f" [{_link_label(url)}]({url})"
        aliases = tuple(a.strip() for a in _clean(fields.get("shorthand", "")).split(",") if a.strip())
        out[key] = Entry(key, surnames, fields.get("citeyear", fields["year"]), aliases, text)
    return out


def _link_label(url: str) -> str:
    if m := re.match(r"https://arxiv\.org/abs/(.+)", url):
        return f"arXiv:{m.group(1)}"
    if m := re.match(r"https://doi\.org/(.+)", url):
        return f"doi:{m.group(1)}"
    return re.sub(r"^https://(www\.)?", "", url).rstrip("/")


def citations(text: str, names: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The (first surname or name, year) of every "Author (year)" citation in a markdown text."""
    text = _CODE_OR_LINK.sub(" ", text)
    found = []
    for m in citation_pattern(names).finditer(text):
        first = re.split(r",| and | & ", m.group("authors"))[0].strip()
        found.append((first, m.group("year")))
    return found


def prose(nb: nbformat.NotebookNode) -> str:
    """The notebook's markdown, without its References cell."""
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown" and c.get("id") != CELL_ID)


def cited(nb: nbformat.NotebookNode, bib: dict[str, Entry]) -> tuple[list[str], list[str]]:
    """The keys of the works a notebook cites (bibliography order) and the citations that match no entry."""
    keys: set[str] = set()
    unknown: list[str] = []
    names = tuple({n for e in bib.values() for n in (*e.shorthand, *e.surnames[:1]) if not re.fullmatch(_SURNAME, n)})
    for name, year in citations(prose(nb), names):
        matches = [e.key for e in bib.values() if e.answers(name, year)]
        if len(matches) == 1:
            keys.add(matches[0])
        else:
            unknown.append(f"{name} ({year})" + (f": ambiguous, {matches}" if matches else ""))
    order = {key: i for i, key in enumerate(bib)}
    return sorted(keys, key=lambda k: (bib[k].surnames, bib[k].year, order[k])), sorted(set(unknown))


def cell_source(keys: list[str], bib: dict[str, Entry]) -> str:
    """The References cell's markdown: the heading and one bullet per cited work."""
    lines = [HEADING, "", "The works this notebook cites, with a link to each (the series' bibliography is "
             "[`references.bib`](../references.bib)).", ""]
    return "\n".join(lines + [f"- {bib[k].text}" for k in keys])


def sync(nb: nbformat.NotebookNode, bib: dict[str, Entry] | None = None) -> tuple[bool, list[str]]:
    """Write or update the References cell (before the closing Next cell), in place.

    Returns whether the notebook changed and the citations that match no entry (left for the test to report).
    """
    bib = entries() if bib is None else bib
    keys, unknown = cited(nb, bib)
    before = [(c.get("id"), c.source) for c in nb.cells]
    current = [c for c in nb.cells if c.get("id") == CELL_ID]
    if not keys:
        nb.cells = [c for c in nb.cells if c.get("id") != CELL_ID]
    elif current:
        current[0].source = cell_source(keys, bib)
    else:
        cell = nbformat.v4.new_markdown_cell(cell_source(keys, bib))
        cell["id"] = CELL_ID
        nb.cells.insert(len(nb.cells) - 1, cell)
    return [(c.get("id"), c.source) for c in nb.cells] != before, unknown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything is out of date")
    args = parser.parse_args(argv)
    bib = entries()
    failed = False
    for path in args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        changed, unknown = sync(nb, bib)
        if unknown:
            print(f"{path.name}: citations without an entry in references.bib: {unknown}")
            failed = True
        if changed and args.check:
            print(f"{path.name}: its References cell is out of date (run tools/references.py)")
            failed = True
        elif changed:
            nbformat.write(nb, path)
            print(f"{path.name}: References cell written")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
