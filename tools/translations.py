"""The translated editions (``locale/editions.toml``): catalogs in, ``<code>/notebooks`` and ``<code>/student`` out.

Usage: ``python tools/translations.py [--edition pt-BR] [notebooks/NN_x.ipynb ...]`` (``make translations``: every
translated edition, every notebook); ``--check`` writes and executes nothing and exits 1 if a catalog or a notebook of
an edition is out of date (its sources: the outputs are the edition's own, from its own run); ``--no-execute``
writes the sources and leaves the notebooks whose code changed unexecuted (``--check`` then reports them);
``--run-all`` runs every notebook of the edition (after a change to ``mha_lib``, whose words the outputs show).
Without notebook arguments it also writes the teacher's guide and notes (3. below).

For each translated edition ``E`` of the table (``tools/editions.py``; pt-BR today):

1. **Catalogs.** ``locale/<E.gettext>/NN_name.po``, one per notebook, edited with any PO editor (Poedit, Weblate).
   Each markdown cell is one entry: its ``msgctxt`` is the cell's id, its ``msgid`` the English text. Each comment of a
   code cell is one entry, ``msgctxt`` "<cell id> comment" (pragmas such as ``# NBVAL_IGNORE_OUTPUT`` and
   nbgrader's markers are not comments to translate). Each string literal a learner reads (``tools/code_strings.py``
   says which: printed lines, assert messages, figure titles and labels, docstrings) is one entry, ``msgctxt``
   "<cell id> string", ``msgid`` the literal's text between its quotes as written (escapes such as ``\n`` and
   f-string fields ``{...}`` included, which the translation keeps verbatim). A literal that must stay as it is
   (English data such as a model's input sentence) is "translated" by its own text. Updating a catalog works as
   gettext's ``msgmerge``: a new entry arrives empty; an entry whose English changed keeps its old translation,
   marked ``fuzzy``, with the old English as ``#| msgid``; an entry whose cell went is made obsolete (``#~``).
   ``kit.po`` holds the words the tools add (the student copy's note).
2. **The edition.** ``E/notebooks/NN_name.ipynb`` is the English teacher's notebook with every markdown cell,
   translated comment and translated string in place (an untranslated or fuzzy entry keeps the English, as gettext
   does, and ``tests/test_translations.py`` fails on it), and its setup cell calling ``setup(seed=42,
   language="E")`` so that ``mha_lib`` speaks the edition's language. Links are rewritten for the folder two
   levels down: badges open ``E/notebooks``, relative paths outside the notebooks gain a ``../``, and the README is
   the edition's. The notebook is then **executed as itself** (``tools/execute_notebooks.py``): its outputs are its
   own, in its language, and strict nbval of ``E/notebooks`` (``make test-E``) checks them. Only a notebook whose
   code changed is executed again; a markdown-only change keeps the outputs. ``E/student/`` is made from it exactly
   as ``make student`` makes ``student/`` (``tools/student_edition.py``), with the note and nbgrader's stubs in the
   edition's language.
3. **The teacher's guide and notes** (``tools/teaching_catalogs.py``): ``teaching/*.md`` -> ``E/teaching/*.md``.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import re
import sys
import tokenize
from pathlib import Path

import nbformat
import polib

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The parity tests read some of these through this module (``translations as tr``): hence the unused ones.
from catalog_rules import (  # noqa: E402, F401
    REPOSITORY,
    ROOT,
    avoided_forms,
    avoided_in,
    header,
    new_catalog,
    relocate_links,
    string_problems,
    structure_problems,
    translations,
    with_stubs,
)
from code_strings import (  # noqa: E402
    is_ipython,  # noqa: F401 - the parity test reads code cells through this module
    is_words,
    literals,
    placeholders,  # noqa: F401 - likewise
    python_tokens,
    replace_literals,
)
from editions import SOURCE, TRANSLATED, Edition, get  # noqa: E402
from student_edition import ref_of, student_notebook  # noqa: E402
from teaching_catalogs import (  # noqa: E402, F401
    TEACHING,
    merged_teaching_catalog,
    teaching_catalog_path,
    teaching_entries,
    teaching_problems,
    translated_teaching,
)

COMMENT = "comment"  # the msgctxt suffix of a code comment's entry
STRING = "string"  # the msgctxt suffix of a code string's entry
# Comments that are instructions to a tool, not words for the reader: never translated.
PRAGMA = re.compile(r"^#+\s*(NBVAL_|noqa|type:|fmt:|pragma|ruff:|BEGIN |END |YOUR CODE|AUTOTEST)|noqa")
SETUP_CALL = re.compile(r"\bsetup\(seed=(\d+)\)")


# --- What a notebook says: the entries of its catalog ------------------------------------------------------------

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


def setup_cell(nb: nbformat.NotebookNode) -> str | None:
    """The id of ``nb``'s setup cell (its first code cell), whose strings are never translated."""
    return next((c.id for c in nb.cells if c.cell_type == "code"), None)


def string_words(source: str) -> list[str]:
    """The bodies of the string literals of a code cell that a learner reads as words, in order, each once."""
    found: list[str] = []
    for literal in literals(source):
        if is_words(literal) and literal.body not in found:
            found.append(literal.body)
    return found


def entries(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """``(msgctxt, msgid)`` of every text of ``nb`` to translate, in notebook order, each once."""
    found: list[tuple[str, str]] = []
    setup = setup_cell(nb)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.strip():
            found.append((cell.id, cell.source))
        elif cell.cell_type == "code":
            for _, _, _, text in comment_tokens(cell.source):
                words = comment_words(text)
                if words and (f"{cell.id} {COMMENT}", words) not in found:
                    found.append((f"{cell.id} {COMMENT}", words))
            if cell.id != setup:
                found += [(f"{cell.id} {STRING}", body) for body in string_words(cell.source)]
    return found


def catalog_path(edition: Edition, notebook: Path) -> Path:
    return edition.catalogs / f"{notebook.stem}.po"


def english_notebooks() -> list[Path]:
    return sorted(SOURCE.notebooks.glob("[0-9][0-9]_*.ipynb"))


def _is_code_entry(ctxt: str) -> bool:
    return ctxt.endswith((f" {COMMENT}", f" {STRING}"))


def merged_catalog(notebook: Path, old: polib.POFile | None, edition: Edition | None = None) -> polib.POFile:
    """The catalog of ``notebook`` with ``old``'s translations carried over, as ``msgmerge`` would."""
    edition = edition or TRANSLATED[0]
    nb = nbformat.read(notebook, as_version=4)
    po, live = new_catalog(edition, old)
    exact = {(e.msgctxt, e.msgid): e for e in live}
    used: set[int] = set()
    where = f"notebooks/{notebook.name}"
    for ctxt, msgid in entries(nb):
        entry = polib.POEntry(msgctxt=ctxt, msgid=msgid, msgstr="", occurrences=[(where, ctxt.split()[0])])
        before = exact.get((ctxt, msgid))
        if before is None:  # English changed (same context) or new: the closest former text of that context
            candidates = [e for e in live if e.msgctxt == ctxt and id(e) not in used and e.msgstr]
            best = max(candidates, key=lambda e: difflib.SequenceMatcher(None, e.msgid, msgid).ratio(), default=None)
            # a cell's one text has one context; a comment or a string is matched only to a similar former one
            if best is not None and (not _is_code_entry(ctxt)
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


# --- The edition --------------------------------------------------------------------------------------------------

def setup_source(source: str, edition: Edition) -> str:
    """The setup cell's code in ``edition``: ``setup(seed=42)`` becomes ``setup(seed=42, language="pt-BR")``."""
    return SETUP_CALL.sub(lambda m: f'setup(seed={m.group(1)}, language="{edition.code}")', source, count=1)


def translate_code(source: str, cell_id: str, words: dict[tuple[str, str], str]) -> str:
    """A code cell's source with each translated string and comment in place (the code itself unchanged)."""
    def string(literal) -> str | None:
        return words.get((f"{cell_id} {STRING}", literal.body)) if is_words(literal) else None

    lines = replace_literals(source, string).split("\n")
    source = "\n".join(lines)
    for line, start, end, text in reversed(comment_tokens(source)):
        english = comment_words(text)
        translated = words.get((f"{cell_id} {COMMENT}", english)) if english else None
        if translated:
            prefix = text[: len(text) - len(text.lstrip("#"))] + " "
            lines[line] = lines[line][:start] + prefix + translated + lines[line][end:]
    return "\n".join(lines)


def translated_notebook(notebook: Path, po: polib.POFile, edition: Edition | None = None) -> nbformat.NotebookNode:
    """The teacher's edition of ``notebook`` in ``edition``: same cells, ids, code; translated words; no outputs.

    Its outputs come from its own run (``make translations`` executes it).
    """
    edition = edition or TRANSLATED[0]
    nb = nbformat.read(notebook, as_version=4)
    words = translations(po)
    out = copy.deepcopy(nb)
    setup = setup_cell(nb)
    for cell in out.cells:
        if cell.cell_type == "markdown" and cell.source.strip():
            cell.source = with_stubs(relocate_links(words.get((cell.id, cell.source), cell.source), edition), edition)
        elif cell.cell_type == "code":
            if cell.id == setup:
                cell.source = translate_code(setup_source(cell.source, edition), cell.id, words)
            else:
                cell.source = translate_code(cell.source, cell.id, words)
            cell.outputs = []
            cell.execution_count = None
    return out


def kit_words(edition: Edition | None = None) -> dict[str, str]:
    """The student copy's note in the edition's language: ``locale/<gettext>/kit.po``, English -> translation."""
    edition = edition or TRANSLATED[0]
    return {e.msgid: with_stubs(e.msgstr, edition)
            for e in polib.pofile(str(edition.catalogs / "kit.po")) if e.translated()}


def student_text(teacher_copy: Path, ref: str, edition: Edition | None = None) -> str:
    """The file text of the edition's student copy made from its teacher's copy ``teacher_copy``."""
    edition = edition or TRANSLATED[0]
    nb = student_notebook(teacher_copy, ref=ref, edition=f"{edition.code}/", words=kit_words(edition),
                          name=teacher_copy.stem, code_stub=edition.code_stub, text_stub=edition.text_stub)
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


def _sources(nb: nbformat.NotebookNode) -> list[tuple]:
    """What the tool writes of a teacher's copy: cells, ids, types, sources, metadata (not the outputs)."""
    meta = {k: v for k, v in nb.metadata.items() if k != "language_info"}
    return [meta, *[(c.id, c.cell_type, c.source, c.metadata, c.get("attachments")) for c in nb.cells]]


def unexecuted(nb: nbformat.NotebookNode) -> list[str]:
    """The code cells of an edition's teacher copy that its run has not reached (no execution count)."""
    return [c.id for c in nb.cells if c.cell_type == "code" and c.execution_count is None]


def update_teacher(path: Path, expected: nbformat.NotebookNode, check: bool) -> str:
    """Bring ``path`` to ``expected``'s sources: "current", "stale" (check), "words" (outputs kept), "code" (to run)."""
    old = nbformat.read(path, as_version=4) if path.exists() else None
    if old is not None and _sources(old) == _sources(expected):
        return "current"
    if check:
        return "stale"
    code = lambda nb: [(c.id, c.source) for c in nb.cells if c.cell_type == "code"]  # noqa: E731
    if old is not None and code(old) == code(expected) and not unexecuted(old):
        outputs = {c.id: c for c in old.cells if c.cell_type == "code"}
        for cell in expected.cells:
            if cell.cell_type == "code":
                cell.outputs = outputs[cell.id].outputs
                cell.execution_count = outputs[cell.id].execution_count
        expected.metadata["language_info"] = old.metadata.get("language_info", expected.metadata.get("language_info"))
        kind = "words"
    else:
        kind = "code"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(expected, path)
    print(f"{path.relative_to(ROOT)}: written ({'to execute' if kind == 'code' else 'outputs kept'})", file=sys.stderr)
    return kind


def figure_text_path(edition: Edition) -> Path:
    """``E/figure-text.json``: the text of every figure of the edition's notebooks, as their last run drew it."""
    return edition.path("figure-text.json")


def execute(paths: list[Path], edition: Edition) -> list[str]:
    """Run each teacher's copy as itself, in place (``tools/execute_notebooks.py``); the ones that failed.

    The same run records the text of every figure it draws (read from the figure objects) into
    ``figure_text_path(edition)``, notebook by notebook, for the test that looks for English in what the
    edition's notebooks print and draw (``tests/test_translations.py``): the notebooks run once.
    """
    import json

    from execute_notebooks import execute as run
    from nbclient.exceptions import CellExecutionError

    sidecar = figure_text_path(edition)
    recorded = json.loads(sidecar.read_text(encoding="utf-8")) if sidecar.exists() else {}
    failed = []
    for path in paths:
        texts: dict[str, list[str]] = {}
        try:
            elapsed = run(path, timeout=300, figure_text=texts)
        except CellExecutionError as err:
            failed.append(f"{path.relative_to(ROOT)}: {str(err).strip().splitlines()[-1][:300]}")
            print(f"FAILED (left unexecuted): {failed[-1]}\n{str(err)[:3000]}", file=sys.stderr)
            recorded.pop(path.name, None)
            continue
        recorded[path.name] = texts
        print(f"{path.relative_to(ROOT)}: executed in {elapsed:.1f} s", file=sys.stderr)
        sidecar.write_text(json.dumps(dict(sorted(recorded.items())), ensure_ascii=False, indent=1) + "\n",
                           encoding="utf-8")
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="English notebooks (default: all of notebooks/)")
    parser.add_argument("--edition", action="append", choices=[e.code for e in TRANSLATED],
                        help="a translated edition (repeatable; default: every one in locale/editions.toml)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything is out of date")
    parser.add_argument("--no-execute", action="store_true", help="write the sources, run nothing")
    parser.add_argument("--run-all", action="store_true",
                        help="run every notebook of the edition, not only those whose code changed (after a change to"
                             " mha_lib, whose messages, tables and figures the outputs show)")
    args = parser.parse_args(argv)
    stale: list[Path] = []
    failed: list[str] = []
    for edition in [get(code) for code in args.edition] if args.edition else TRANSLATED:
        to_run: list[Path] = []
        for notebook in args.notebooks or english_notebooks():
            notebook = notebook.resolve()
            path = catalog_path(edition, notebook)
            old = polib.pofile(str(path), wrapwidth=0) if path.exists() else None
            po = merged_catalog(notebook, old, edition)
            _write(path, catalog_text(po), args.check, stale)
            teacher = edition.notebooks / notebook.name
            state = update_teacher(teacher, translated_notebook(notebook, po, edition), args.check)
            if state == "stale":
                stale.append(teacher)
                continue  # its student copy is compared once the teacher's copy is written
            if state == "code" or args.run_all or unexecuted(nbformat.read(teacher, as_version=4)):
                if args.check:
                    stale.append(teacher)
                    print(f"{teacher.relative_to(ROOT)}: not executed (run `make translations`)", file=sys.stderr)
                else:
                    to_run.append(teacher)
            student = edition.student / notebook.name
            _write(student, student_text(teacher, ref_of(SOURCE.student / notebook.name), edition), args.check,
                   stale)
        if not args.notebooks:
            for page in sorted(TEACHING.glob("*.md")):
                path = teaching_catalog_path(edition, page)
                old = polib.pofile(str(path), wrapwidth=0) if path.exists() else None
                po = merged_teaching_catalog(page, old, edition)
                _write(path, catalog_text(po), args.check, stale)
                _write(edition.path("teaching") / page.name, translated_teaching(page, po, edition), args.check, stale)
        if to_run and not args.no_execute:
            failed += execute(to_run, edition)
    if failed:
        print("these notebooks failed to run (fix the code or its translation):\n  " + "\n  ".join(failed),
              file=sys.stderr)
        return 1
    if args.check and stale:
        print("out of date (run `make translations`): "
              + ", ".join(str(p.relative_to(ROOT)) for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
