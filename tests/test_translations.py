"""The Portuguese edition (``pt-BR/``) never drifts from, or damages, the English one.

The catalogs ``locale/pt_BR/*.po`` are the source of the translation (``tools/translations.py``). This test fails:

- on a fuzzy, untranslated or missing entry, and on an entry whose English is no longer what the notebook says
  (a one-word change to an English markdown cell fails here until ``make translations`` is run and the entry,
  marked fuzzy, is translated again);
- on any difference between the editions other than markdown text and translated comments: same cells, ids,
  types, metadata, outputs and code (comments aside), and the edition's files are exactly what the tool writes;
- on a translation that loses a code span, a formula, a link target, a heading or a teacher/student marker;
- on a link or an image of the edition that does not resolve, and on a term the glossary tells translators to avoid.

Strict nbval of ``pt-BR/notebooks`` (``make test-pt-BR``) checks that the edition's code runs and its outputs are
the English ones.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tokenize
from pathlib import Path
from urllib.parse import unquote

import nbformat
import polib
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import translations as tr  # noqa: E402

NOTEBOOKS = tr.english_notebooks()
NAMES = [p.name for p in NOTEBOOKS]


def _catalog(name: str) -> polib.POFile:
    return polib.pofile(str(tr.CATALOGS / name.replace(".ipynb", ".po")), wrapwidth=0)


def _code_without_comments(source: str) -> list[tuple[int, str]]:
    """The tokens of a code cell, comments left out (IPython lines compared as text)."""
    tokens = tr.python_tokens(source)
    if tokens is None:
        return [(0, source)]
    magics = [line for line in source.split("\n") if tr.is_ipython(line)]
    code = [(t.type, t.string) for t in tokens if t.type not in (tokenize.COMMENT, tokenize.NL)]
    return code + [(0, m) for m in magics]


def test_every_notebook_has_a_catalog_and_both_copies() -> None:
    for name in NAMES:
        assert (tr.CATALOGS / name.replace(".ipynb", ".po")).exists(), f"no catalog for {name}: make translations"
        assert (tr.TEACHER / name).exists() and (tr.STUDENTS / name).exists(), f"{name}: make translations"
    assert sorted(p.name for p in tr.TEACHER.glob("*.ipynb")) == NAMES, "pt-BR/notebooks holds other notebooks"
    assert sorted(p.name for p in tr.STUDENTS.glob("*.ipynb")) == NAMES, "pt-BR/student holds other notebooks"


@pytest.mark.parametrize("name", NAMES)
def test_catalog_is_complete_and_current(name: str) -> None:
    """Every entry translated, none fuzzy; the msgids are exactly what the English notebook says now."""
    po = _catalog(name)
    live = [e for e in po if not e.obsolete]
    fuzzy = [e.msgctxt for e in live if "fuzzy" in e.flags]
    empty = [e.msgctxt for e in live if not e.msgstr.strip()]
    assert not fuzzy, f"{name}: fuzzy entries (the English changed; update the translation): {fuzzy}"
    assert not empty, f"{name}: untranslated entries: {empty}"
    english = tr.entries(nbformat.read(tr.ROOT / "notebooks" / name, as_version=4))
    have = [(e.msgctxt, e.msgid) for e in live]
    changed = [c for c, m in english if (c, m) not in have]
    gone = [c for c, m in have if (c, m) not in english]
    assert not changed and not gone, (
        f"{name}: the English changed since its translation (run `make translations`, translate the fuzzy entries):"
        f" cells {sorted(set(changed + gone))}")


def test_the_student_note_is_translated() -> None:
    po = polib.pofile(str(tr.KIT))
    assert all(e.translated() for e in po), "locale/pt_BR/kit.po has entries left to translate"


@pytest.mark.parametrize("name", NAMES)
def test_translation_keeps_code_spans_maths_links_headings_and_markers(name: str) -> None:
    problems = [f"{e.msgctxt}: {p}" for e in _catalog(name) if not e.obsolete and not e.msgctxt.endswith(tr.COMMENT)
                for p in tr.structure_problems(e.msgid, e.msgstr)]
    assert not problems, f"{name}: " + "; ".join(problems)


@pytest.mark.parametrize("name", NAMES)
def test_editions_differ_only_in_words(name: str) -> None:
    """Same cells, ids, types, metadata, outputs; code equal once comments are set aside; markdown translated."""
    en = nbformat.read(tr.ROOT / "notebooks" / name, as_version=4)
    pt = nbformat.read(tr.TEACHER / name, as_version=4)
    assert pt.metadata == en.metadata
    assert [(c.id, c.cell_type) for c in pt.cells] == [(c.id, c.cell_type) for c in en.cells]
    untranslated = []
    for a, b in zip(en.cells, pt.cells, strict=True):
        assert b.metadata == a.metadata, f"{name} {a.id}: cell metadata differ"
        if a.cell_type == "code":
            assert b.outputs == a.outputs, f"{name} {a.id}: outputs differ"
            assert b.execution_count == a.execution_count
            assert _code_without_comments(b.source) == _code_without_comments(a.source), \
                f"{name} {a.id}: the code differs (only comments may be translated)"
        elif a.cell_type == "markdown" and a.source.strip() and b.source == tr.relocate_links(a.source):
            untranslated.append(a.id)
        assert b.get("attachments") == a.get("attachments")
    assert not untranslated, f"{name}: markdown cells still in English: {untranslated}"


def test_edition_files_are_what_the_tool_writes() -> None:
    assert tr.main(["--check"]) == 0, "pt-BR/ or locale/pt_BR is out of date: run `make translations`"


def _repo_path(url: str) -> str | None:
    """The path inside this repository that a GitHub, Colab or Binder link to it opens, else None."""
    slug = re.escape(tr.REPOSITORY)
    for pattern in (rf"github\.com/{slug}/blob/main/(.+)",
                    rf"colab\.research\.google\.com/github/{slug}/blob/main/(.+)",
                    rf"mybinder\.org/v2/gh/{slug}/main\?labpath=(.+)"):
        found = re.search(pattern, url)
        if found:
            return unquote(found.group(1))
    return None


@pytest.mark.parametrize("edition", ["notebooks", "student"])
@pytest.mark.parametrize("name", NAMES)
def test_links_and_images_resolve(edition: str, name: str) -> None:
    """Every relative link and image exists; every link into this repository opens a file of the edition."""
    path = tr.ROOT / tr.EDITION / edition / name
    nb = nbformat.read(path, as_version=4)
    broken = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for a, b in re.findall(r"\]\(([^)\s]+)\)|(?:src|href)=\"([^\"]+)\"", cell.source):
            target = (a or b).split("#")[0]
            if not target or target.startswith("mailto:"):
                continue
            inside = _repo_path(target) if target.startswith("http") else None
            if target.startswith("http") and inside is None:
                continue
            if inside is not None:
                if re.match(r"(notebooks|student)/", inside):
                    broken.append(f"{target} opens the English edition")
                resolved = tr.ROOT / inside
            else:
                resolved = (path.parent / unquote(target)).resolve()
            if not resolved.exists():
                broken.append(target)
    assert not broken, f"{tr.EDITION}/{edition}/{name}: links that do not resolve: {broken}"


def _avoided_terms() -> list[str]:
    """The forms the glossary's "Evitar" column lists."""
    glossary = (tr.CATALOGS / "GLOSSARY.md").read_text(encoding="utf-8")
    header = next(line for line in glossary.splitlines() if line.startswith("| Inglês"))
    column = [c.strip() for c in header.strip("|").split("|")].index("Evitar")
    terms = []
    for line in glossary.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > column and not set(cells[column]) <= set("- "):
            if cells[0] != "Inglês":
                terms += [t.strip() for t in re.sub(r"\(.*?\)", "", cells[column]).split(",") if t.strip()]
    return terms


def test_the_glossary_names_terms_to_avoid() -> None:
    assert "atenção de múltiplas cabeças" in _avoided_terms()


@pytest.mark.parametrize("name", NAMES)
def test_translation_follows_the_glossary(name: str) -> None:
    words = " ".join(_CODE.sub("", e.msgstr) for e in _catalog(name) if not e.obsolete)
    found = [t for t in _avoided_terms() if re.search(rf"(?<!\w){re.escape(t)}(?!\w)", words, re.I)]
    assert not found, f"{name}: the glossary (locale/pt_BR/GLOSSARY.md) says to avoid {found}"


_CODE = re.compile(r"`[^`]*`|\$[^$]*\$")


def test_a_one_word_change_in_the_english_fails_until_translated(tmp_path: Path, monkeypatch) -> None:
    """Change one word of an English markdown cell: the catalog is stale; `make translations` marks it fuzzy."""
    name = NAMES[3]
    english = nbformat.read(tr.ROOT / "notebooks" / name, as_version=4)
    cell = next(c for c in english.cells if c.cell_type == "markdown" and " the " in c.source)
    cell.source = cell.source.replace(" the ", " a ", 1)
    changed = tmp_path / name
    changed.write_text(json.dumps(english), encoding="utf-8")
    po = _catalog(name)
    assert (cell.id, cell.source) not in {(e.msgctxt, e.msgid) for e in po}, "the stale catalog is detected"
    merged = tr.merged_catalog(changed, po)
    entry = next(e for e in merged if e.msgctxt == cell.id and not e.obsolete)
    assert "fuzzy" in entry.flags and entry.msgstr and entry.previous_msgid != entry.msgid
    assert entry.msgid == cell.source
    pt = tr.translated_notebook(changed, merged)
    assert next(c for c in pt.cells if c.id == cell.id).source == tr.relocate_links(cell.source), \
        "a fuzzy entry is not used: the cell shows the new English until it is translated again"


def test_a_course_in_portuguese_releases_portuguese_copies(tmp_path: Path) -> None:
    """`nbgrader_course.py --edition pt-BR`: the Portuguese assignments, released with badges and note in Portuguese."""
    import nbgrader_course
    import student_edition

    course = tmp_path / "curso"
    ids = nbgrader_course.create(course, nbgrader_course.notebooks(["03"], "pt-BR"), edition="pt-BR")
    source = course / "source" / ids[0] / f"{ids[0]}.ipynb"
    assert source.read_text(encoding="utf-8") == (tr.TEACHER / f"{ids[0]}.ipynb").read_text(encoding="utf-8")
    released = student_edition.student_notebook(source, config_file=course / "nbgrader_config.py")
    head = released.cells[0].source
    assert "> **Edição do aluno.**" in head and "edição do professor" not in head.lower(), "no link to the answers"
    assert f"blob/main/{tr.EDITION}/student/{ids[0]}.ipynb" in head and f"labpath={tr.EDITION}%2Fstudent%2F" in head
    expected = nbformat.read(tr.STUDENTS / f"{ids[0]}.ipynb", as_version=4)
    assert [c.source for c in released.cells[1:]] == [c.source for c in expected.cells[1:]]


PT_TEACHER_WORDING = ("edição do professor", "salva aqui", "execução salva", "recolhid", "depois das soluções",
                      "depois das respostas")


@pytest.mark.parametrize("name", NAMES)
def test_portuguese_student_copies_speak_to_students(name: str) -> None:
    """No teacher's wording in a Portuguese student copy outside the note under its badges (the kit test's rule)."""
    found = []
    for index, cell in enumerate(nbformat.read(tr.STUDENTS / name, as_version=4).cells):
        text = " ".join(cell.source.lower().split())
        if index == 0:
            text = re.sub(r"> \*\*edição do aluno\.\*\*.*", "", text)
        found += [f"cell {index}: {phrase!r}" for phrase in PT_TEACHER_WORDING if phrase in text]
    assert not found, f"{tr.EDITION}/student/{name}: " + "; ".join(found)


PT_BR_RUN = pytest.mark.skipif(not os.environ.get("MHA_PT_BR_TEST"),
                               reason="runs every Portuguese student copy (a minute or two): make test-pt-BR")


@PT_BR_RUN
@pytest.mark.parametrize("name", NAMES)
def test_the_portuguese_student_copy_runs(name: str) -> None:
    """Top to bottom, as a student runs it: only the untouched exercises' checks may stop, "not attempted yet"."""
    from nbclient import NotebookClient

    path = tr.STUDENTS / name
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    problems = [f"cell {index}: {out.ename}: {out.evalue[:300]}"
                for index, cell in enumerate(nb.cells) for out in cell.get("outputs", [])
                if out.get("output_type") == "error"
                and not ("raises-exception" in cell.metadata.get("tags", []) and out.ename == "CheckFailed"
                         and "not attempted yet" in out.evalue)]
    assert not problems, f"{tr.EDITION}/student/{name}: " + "; ".join(problems)
