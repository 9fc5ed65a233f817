"""The Brazilian Portuguese edition: gettext catalogs in, ``pt-BR/notebooks`` and ``pt-BR/student`` out.

Usage: ``python tools/translations.py`` (``make translations``); ``--check`` writes nothing and exits 1 if a
catalog or a notebook of the edition is out of date.

1. **Catalogs.** ``locale/pt_BR/NN_name.po``, one per notebook, edited with any PO editor (Poedit, Weblate). Each
   markdown cell is one entry: its ``msgctxt`` is the cell's id, its ``msgid`` the English text. Each comment of a
   code cell is one entry too, ``msgctxt`` "<cell id> comment" (pragmas such as ``# NBVAL_IGNORE_OUTPUT`` and
   nbgrader's markers are not comments to translate). Code, printed outputs and figure labels stay in English.
   Updating a catalog works as gettext's ``msgmerge``: a new entry arrives empty; an entry whose English changed
   keeps its old translation, marked ``fuzzy``, with the old English as ``#| msgid``; an entry whose cell went is
   made obsolete (``#~``). ``locale/pt_BR/kit.po`` holds the words the tools add (the student copy's note).
2. **The edition.** ``pt-BR/notebooks/NN_name.ipynb`` is the English teacher's notebook with every markdown cell and
   translated comment replaced by its translation (an untranslated or fuzzy entry keeps the English, as gettext
   does, and ``tests/test_translations.py`` fails on it). Links are rewritten for the folder two levels down:
   badges open ``pt-BR/notebooks``, relative paths outside the notebooks gain a ``../``, and the README is
   ``README.pt-BR.md``. ``pt-BR/student/`` is made from it exactly as ``make student`` makes ``student/``
   (``tools/student_edition.py``), with the note in Portuguese.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import io
import re
import sys
import tokenize
from pathlib import Path

import nbformat
import polib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from student_edition import STUDENT, ref_of, student_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LANGUAGE = "pt_BR"  # gettext's name (locale/pt_BR)
EDITION = "pt-BR"  # the folder of the edition, as the web writes it
CATALOGS = ROOT / "locale" / LANGUAGE
TEACHER = ROOT / EDITION / "notebooks"
STUDENTS = ROOT / EDITION / "student"
KIT = CATALOGS / "kit.po"
COMMENT = "comment"  # the msgctxt suffix of a code comment's entry
# Comments that are instructions to a tool, not words for the reader: never translated.
PRAGMA = re.compile(r"^#+\s*(NBVAL_|noqa|type:|fmt:|pragma|ruff:|BEGIN |END |YOUR CODE|AUTOTEST)|noqa")
REPOSITORY = "mha-course/multi-head-attention"
HEADER = {
    "Project-Id-Version": "multi-head-attention",
    "Language": LANGUAGE,
    "MIME-Version": "1.0",
    "Content-Type": "text/plain; charset=UTF-8",
    "Content-Transfer-Encoding": "8bit",
    "Plural-Forms": "nplurals=2; plural=(n > 1);",
}


# --- What a notebook says: the entries of its catalog ------------------------------------------------------------

def is_ipython(line: str) -> bool:
    """Whether a code cell's line is IPython's, not Python's (``%pip ...``, ``!ls``)."""
    return line.lstrip().startswith(("%", "!"))


def python_tokens(source: str) -> list[tokenize.TokenInfo] | None:
    """The Python tokens of a code cell, its IPython lines blanked (rows kept); ``None`` if Python cannot read it."""
    readable = "\n".join("" if is_ipython(line) else line for line in source.split("\n"))
    try:
        return list(tokenize.generate_tokens(io.StringIO(readable).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def comment_tokens(source: str) -> list[tuple[int, int, int, str]]:
    """The comments of a code cell as ``(line, start, end, text)`` (0-based line; columns of the ``#...`` token).

    A cell Python's tokenizer cannot read yields no comments (it then stays as it is in every edition).
    """
    tokens = python_tokens(source) or []
    return [(t.start[0] - 1, t.start[1], t.end[1], t.string) for t in tokens if t.type == tokenize.COMMENT]


def comment_words(comment: str) -> str | None:
    """The words of a ``#`` comment to translate (``None`` for a pragma, or one with no letters)."""
    if PRAGMA.search(comment) or not re.search(r"[A-Za-z]", comment):
        return None
    return comment.lstrip("#").strip()


def entries(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """``(msgctxt, msgid)`` of every text of ``nb`` to translate, in notebook order, each once."""
    found: list[tuple[str, str]] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.strip():
            found.append((cell.id, cell.source))
        elif cell.cell_type == "code":
            for _, _, _, text in comment_tokens(cell.source):
                words = comment_words(text)
                if words and (f"{cell.id} {COMMENT}", words) not in found:
                    found.append((f"{cell.id} {COMMENT}", words))
    return found


def catalog_path(notebook: Path) -> Path:
    return CATALOGS / f"{notebook.stem}.po"


def english_notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def merged_catalog(notebook: Path, old: polib.POFile | None) -> polib.POFile:
    """The catalog of ``notebook`` with ``old``'s translations carried over, as ``msgmerge`` would."""
    nb = nbformat.read(notebook, as_version=4)
    po = polib.POFile(wrapwidth=0)
    po.metadata = dict(HEADER)
    if old is not None:
        po.metadata.update({k: v for k, v in old.metadata.items() if k not in HEADER})
        po.header = old.header
    live = [e for e in old if not e.obsolete] if old is not None else []
    exact = {(e.msgctxt, e.msgid): e for e in live}
    used: set[int] = set()
    where = f"notebooks/{notebook.name}"
    for ctxt, msgid in entries(nb):
        entry = polib.POEntry(msgctxt=ctxt, msgid=msgid, msgstr="", occurrences=[(where, ctxt.split()[0])])
        before = exact.get((ctxt, msgid))
        if before is None:  # English changed (same context) or new: the closest former text of that context
            candidates = [e for e in live if e.msgctxt == ctxt and id(e) not in used and e.msgstr]
            best = max(candidates, key=lambda e: difflib.SequenceMatcher(None, e.msgid, msgid).ratio(), default=None)
            # a cell's one text has one context; a comment is matched only to a similar former comment of its cell
            if best is not None and (not ctxt.endswith(COMMENT)
                                     or difflib.SequenceMatcher(None, best.msgid, msgid).ratio() >= 0.6):
                entry.msgstr = best.msgstr
                translated_for = best.previous_msgid if "fuzzy" in best.flags and best.previous_msgid else best.msgid
                if translated_for != msgid:  # the English went back to what was translated: no longer fuzzy
                    entry.flags = ["fuzzy"]
                    entry.previous_msgid = translated_for
                used.add(id(best))
        else:
            entry.msgstr = before.msgstr
            entry.flags = list(before.flags)
            entry.previous_msgid = before.previous_msgid
            if "fuzzy" in entry.flags and before.previous_msgid == msgid:  # marked fuzzy, then the English came back
                entry.flags.remove("fuzzy")
                entry.previous_msgid = None
            entry.tcomment = before.tcomment
            used.add(id(before))
        po.append(entry)
    for e in live:  # what the English no longer says: kept as obsolete, as msgmerge does
        if id(e) not in used and e.msgstr:
            e.obsolete = True
            po.append(e)
    if old is not None:
        po.extend(e for e in old if e.obsolete and (e.msgctxt, e.msgid) not in {(x.msgctxt, x.msgid) for x in po})
    return po


# --- What a translation must keep -------------------------------------------------------------------------------

_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$[^$]+?\$", re.S)  # inline maths may span lines
_TARGET = re.compile(r"\]\(([^)\s]+)\)|(?:src|href)=\"([^\"]+)\"")
_MARKER = re.compile(r"<!--\s*(/?teacher|student:)")


def _headings(text: str) -> list[str]:
    outside = re.sub(r"```.*?```", "", text, flags=re.S)
    return [m.group(1) for m in re.finditer(r"^(#{1,6}) ", outside, re.M)]


def kept(text: str) -> dict[str, list[str]]:
    """What a translation of ``text`` must keep unchanged: code spans, maths, link targets, headings, markers."""
    return {
        "code spans": sorted(m.group(2).strip() for m in _CODE_SPAN.finditer(text)),
        "maths": sorted(m.group(0) for m in _MATH.finditer(_CODE_SPAN.sub("", text))),
        "link targets": sorted(a or b for a, b in _TARGET.findall(text)),
        "heading levels": _headings(text),
        "teacher/student markers": [m.group(1) for m in _MARKER.finditer(text)],
        "code blocks": [b.strip() for b in re.findall(r"```[^\n]*\n(.*?)```", text, re.S)],
    }


def structure_problems(english: str, translation: str) -> list[str]:
    """How ``translation`` fails to keep what ``english`` holds besides its words (empty: it keeps all)."""
    problems = []
    want, got = kept(english), kept(translation)
    for what in want:
        if want[what] != got[what]:
            lost = [x for x in want[what] if x not in got[what]]
            added = [x for x in got[what] if x not in want[what]]
            problems.append(f"{what} differ: English only {lost[:3]}, translation only {added[:3]}")
    return problems


# --- The edition --------------------------------------------------------------------------------------------------

def translations(po: polib.POFile) -> dict[tuple[str, str], str]:
    """``(msgctxt, msgid) -> msgstr`` for every entry translated and not fuzzy (gettext uses no other)."""
    return {(e.msgctxt, e.msgid): e.msgstr for e in po if e.translated() and not e.obsolete}


_LINK = re.compile(r"(\]\(|src=\"|href=\")([^)\"\s]+)")


def relocate_links(markdown: str) -> str:
    """``markdown``'s links as seen from ``pt-BR/notebooks/`` (or ``pt-BR/student/``): the Portuguese edition's.

    Badges and GitHub links to ``notebooks/`` and ``student/`` open the Portuguese ones, and a code span naming
    one of those folders names the Portuguese one; a relative link to another
    notebook, or to ``../student``, stays in the edition; any other relative path gains a ``../``, and the README
    is ``README.pt-BR.md``.
    """
    markdown = (markdown
                .replace(f"{REPOSITORY}/blob/main/notebooks/", f"{REPOSITORY}/blob/main/{EDITION}/notebooks/")
                .replace(f"{REPOSITORY}/blob/main/student/", f"{REPOSITORY}/blob/main/{EDITION}/student/")
                .replace("?labpath=notebooks%2F", f"?labpath={EDITION}%2Fnotebooks%2F")
                .replace("?labpath=student%2F", f"?labpath={EDITION}%2Fstudent%2F"))
    markdown = re.sub(r"`(notebooks|student)/", rf"`{EDITION}/\1/", markdown)  # the folders, named in code spans

    def fix(match: re.Match[str]) -> str:
        opening, target = match.groups()
        if re.match(r"^[a-z]+:|^#", target) or not target.startswith("../"):
            return match.group(0)
        if re.match(r"^\.\./(student|notebooks)(/|$)", target):
            return match.group(0)
        if re.match(r"^\.\./README\.md(#|$)", target):
            target = target.replace("README.md", "README.pt-BR.md")
        return opening + "../" + target

    return _LINK.sub(fix, markdown)


def translate_code(source: str, cell_id: str, words: dict[tuple[str, str], str]) -> str:
    """A code cell's source with each translated comment in place (the code itself unchanged)."""
    lines = source.split("\n")
    for line, start, end, text in reversed(comment_tokens(source)):
        english = comment_words(text)
        translated = words.get((f"{cell_id} {COMMENT}", english)) if english else None
        if translated:
            prefix = text[: len(text) - len(text.lstrip("#"))] + " "
            lines[line] = lines[line][:start] + prefix + translated + lines[line][end:]
    return "\n".join(lines)


def translated_notebook(notebook: Path, po: polib.POFile) -> nbformat.NotebookNode:
    """The Portuguese teacher's edition of ``notebook``: same cells, ids, code, outputs; translated words."""
    nb = nbformat.read(notebook, as_version=4)
    words = translations(po)
    out = copy.deepcopy(nb)
    for cell in out.cells:
        if cell.cell_type == "markdown" and cell.source.strip():
            cell.source = relocate_links(words.get((cell.id, cell.source), cell.source))
        elif cell.cell_type == "code":
            cell.source = translate_code(cell.source, cell.id, words)
    return out


def kit_words() -> dict[str, str]:
    """The student copy's note in Portuguese: ``locale/pt_BR/kit.po``, English -> Portuguese."""
    return {e.msgid: e.msgstr for e in polib.pofile(str(KIT)) if e.translated()}


def student_text(teacher_copy: Path, ref: str) -> str:
    """The file text of the Portuguese student copy made from the Portuguese teacher's copy ``teacher_copy``."""
    nb = student_notebook(teacher_copy, ref=ref, edition=f"{EDITION}/", words=kit_words(),
                          name=teacher_copy.stem)
    return nbformat.writes(nb) + "\n"


# --- make translations ----------------------------------------------------------------------------------------------

def _write(path: Path, text: str, check: bool, stale: list[Path]) -> None:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    stale.append(path)
    if not check:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: written", file=sys.stderr)


def catalog_text(po: polib.POFile) -> str:
    return str(po) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="English notebooks (default: all of notebooks/)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything is out of date")
    args = parser.parse_args(argv)
    stale: list[Path] = []
    for notebook in args.notebooks or english_notebooks():
        notebook = notebook.resolve()
        path = catalog_path(notebook)
        old = polib.pofile(str(path), wrapwidth=0) if path.exists() else None
        po = merged_catalog(notebook, old)
        _write(path, catalog_text(po), args.check, stale)
        teacher = TEACHER / notebook.name
        _write(teacher, nbformat.writes(translated_notebook(notebook, po)) + "\n", args.check, stale)
        if args.check and teacher in stale:
            continue  # its student copy is compared once the teacher's copy is written
        student = STUDENTS / notebook.name
        _write(student, student_text(teacher, ref_of(STUDENT / notebook.name)), args.check, stale)
    if args.check and stale:
        print("out of date (run `make translations`): "
              + ", ".join(str(p.relative_to(ROOT)) for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
