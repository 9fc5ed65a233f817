"""The course's editions, read from ``locale/editions.toml``: one row per language.

Every tool that writes, tests, builds or serves an edition asks this module, so that a new language is a row of
that file and its catalogs, not edits across the tools. ``python tools/editions.py codes`` prints the codes;
``python tools/editions.py translated`` prints those with catalogs; ``python tools/editions.py folder CODE`` prints
the edition's notebooks folder (``notebooks`` or ``pt-BR/notebooks``), or fails naming the known codes (the
Makefile's pattern targets ``lab-CODE`` and ``test-CODE`` ask it).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: pytest already depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "locale" / "editions.toml"


@dataclass(frozen=True)
class Edition:
    """One language's edition of the course (the fields are documented in ``locale/editions.toml``)."""

    code: str
    name: str
    gettext: str
    sphinx: str
    readme: str
    install: str
    plural_forms: str
    code_stub: str
    text_stub: str
    decimal: str
    thousands: str
    teaching: tuple[str, ...] = ()

    @property
    def is_source(self) -> bool:
        """True for the English edition, which the others are translated from."""
        return not self.gettext

    @property
    def folder(self) -> str:
        """The edition's folder in the repository ('' for English, whose folders are at the top)."""
        return "" if self.is_source else self.code

    def path(self, part: str) -> Path:
        """A folder of this edition: ``path("notebooks")`` is ``notebooks/`` or ``pt-BR/notebooks/``."""
        return ROOT / self.folder / part if self.folder else ROOT / part

    @property
    def notebooks(self) -> Path:
        return self.path("notebooks")

    @property
    def student(self) -> Path:
        return self.path("student")

    @property
    def catalogs(self) -> Path:
        """``locale/<gettext>/``: the edition's gettext catalogs (none for the source)."""
        if self.is_source:
            raise ValueError(f"edition {self.code!r} is the source: it has no catalogs")
        return ROOT / "locale" / self.gettext

    @property
    def site_path(self) -> str:
        """The edition's folder under the built site ('' for English)."""
        return self.folder


def load(table: Path = TABLE) -> tuple[Edition, ...]:
    """Every edition in the table, the source (English) first."""
    rows = tomllib.loads(table.read_text(encoding="utf-8"))["edition"]
    editions = tuple(Edition(**{**row, "teaching": tuple(row.get("teaching", ()))}) for row in rows)
    if not editions or not editions[0].is_source or any(e.is_source for e in editions[1:]):
        raise ValueError(f"{table}: the first edition must be the source (gettext = ''), and only the first")
    codes = [e.code for e in editions]
    if len(set(codes)) != len(codes):
        raise ValueError(f"{table}: edition codes repeat: {codes}")
    return editions


EDITIONS = load()
SOURCE = EDITIONS[0]
TRANSLATED = EDITIONS[1:]


def get(code: str) -> Edition:
    """The edition with this code (``"en"``, ``"pt-BR"``...); ValueError naming the known codes otherwise."""
    for edition in EDITIONS:
        if edition.code == code:
            return edition
    raise ValueError(f"edition must be one of {[e.code for e in EDITIONS]}, got {code!r}")


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "codes"
    if what == "folder" and len(argv) == 2:
        try:
            edition = get(argv[1])
        except ValueError as err:
            print(f"no edition {argv[1]!r}: {err} (locale/editions.toml)", file=sys.stderr)
            return 2
        print(edition.notebooks.relative_to(ROOT).as_posix())
        return 0
    if what not in {"codes", "translated"} or len(argv) > 1:
        print("usage: python tools/editions.py [codes|translated|folder CODE]", file=sys.stderr)
        return 2
    print(" ".join(e.code for e in (EDITIONS if what == "codes" else TRANSLATED)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
