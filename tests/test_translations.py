"""The translated editions (``locale/editions.toml``; ``pt-BR/`` today) never drift from, or damage, the English one.

The catalogs ``locale/<gettext>/*.po`` are the source of each translation (``tools/translations.py``). Every test is
parametrized over the translated editions. This test fails:

- on a fuzzy, untranslated or missing entry, and on an entry whose English is no longer what the notebook says
  (a one-word change to an English markdown cell fails here until ``make translations`` is run and the entry,
  marked fuzzy, is translated again);
- on any difference between the editions other than markdown text, translated comments and translated strings
  (``tools/code_strings.py`` says which strings): same cells, ids, types, metadata, kinds of output, and code token
  by token, the setup cell's ``language="pt-BR"`` aside; and the edition's files are exactly what the tool writes;
- on a translation that loses a code span, a formula, a link target, a heading or a teacher/student marker, and on
  a translated string that loses a placeholder ``{...}`` or an escape, or is no longer one string literal;
- on a link or an image of the edition that does not resolve, and on a term the glossary tells translators to avoid.

The edition's notebooks are executed as themselves (``make translations``); strict nbval of ``pt-BR/notebooks``
(``make test-pt-BR``) checks that their outputs are what their code prints.
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
from code_strings import is_words, keeps_placeholders, split_literal  # noqa: E402
from editions import TRANSLATED, Edition  # noqa: E402

NOTEBOOKS = tr.english_notebooks()
NAMES = [p.name for p in NOTEBOOKS]
EDITION = pytest.mark.parametrize("edition", TRANSLATED, ids=[e.code for e in TRANSLATED])


def _catalog(edition: Edition, name: str) -> polib.POFile:
    return polib.pofile(str(edition.catalogs / name.replace(".ipynb", ".po")), wrapwidth=0)


def _code_tokens(source: str) -> list[tuple[int, str]]:
    """The tokens of a code cell, comments left out (IPython lines compared as text)."""
    tokens = tr.python_tokens(source)
    if tokens is None:
        return [(0, source)]
    magics = [line for line in source.split("\n") if tr.is_ipython(line)]
    code = [(t.type, t.string) for t in tokens if t.type not in (tokenize.COMMENT, tokenize.NL)]
    return code + [(0, m) for m in magics]


def _code_differences(english: str, translated: str, setup: str | None = None) -> list[str]:
    """Where the code of ``translated`` differs from ``english`` other than in a translated string (empty: none).

    A string token may differ only where the English one is words (``code_strings.is_words``), with the same
    prefix and quotes and the same placeholders; ``setup`` is the edition's code when this is the setup cell, whose
    one difference is ``language="<code>"`` in its ``setup(...)`` call.
    """
    en, pt = _code_tokens(english), _code_tokens(translated)
    if setup is not None:
        en = _code_tokens(tr.SETUP_CALL.sub(lambda m: f'setup(seed={m.group(1)}, language="{setup}")', english))
    if len(en) != len(pt):
        return [f"{len(en)} tokens in English, {len(pt)} in the translation"]
    words = {(lit.prefix, lit.quote, lit.body): lit for lit in tr.literals(english) if is_words(lit)}
    problems = []
    for (kind_a, a), (kind_b, b) in zip(en, pt, strict=True):
        if (kind_a, a) == (kind_b, b):
            continue
        if kind_a == kind_b == tokenize.STRING and setup is None:
            literal = words.get(split_literal(a))
            prefix, quote, body = split_literal(b)
            if literal is not None and (prefix, quote) == (literal.prefix, literal.quote) \
                    and keeps_placeholders(literal.body, body, literal.is_f):
                continue
        problems.append(f"{a[:60]!r} became {b[:60]!r}")
    return problems


@EDITION
def test_every_notebook_has_a_catalog_and_both_copies(edition: Edition) -> None:
    for name in NAMES:
        assert (edition.catalogs / name.replace(".ipynb", ".po")).exists(), f"no catalog for {name}: make translations"
        assert (edition.notebooks / name).exists() and (edition.student / name).exists(), f"{name}: make translations"
    assert sorted(p.name for p in edition.notebooks.glob("*.ipynb")) == NAMES, f"{edition.code}/notebooks holds others"
    assert sorted(p.name for p in edition.student.glob("*.ipynb")) == NAMES, f"{edition.code}/student holds others"


@EDITION
@pytest.mark.parametrize("name", NAMES)
def test_catalog_is_complete_and_current(edition: Edition, name: str) -> None:
    """Every entry translated, none fuzzy; the msgids are exactly what the English notebook says now."""
    po = _catalog(edition, name)
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


@EDITION
def test_the_student_note_is_translated(edition: Edition) -> None:
    po = polib.pofile(str(edition.catalogs / "kit.po"))
    assert all(e.translated() for e in po), f"locale/{edition.gettext}/kit.po has entries left to translate"


@EDITION
@pytest.mark.parametrize("name", NAMES)
def test_translation_keeps_code_spans_maths_links_headings_and_markers(edition: Edition, name: str) -> None:
    problems = [f"{e.msgctxt}: {p}" for e in _catalog(edition, name)
                if not e.obsolete and not e.msgctxt.endswith((tr.COMMENT, tr.STRING))
                for p in tr.structure_problems(e.msgid, e.msgstr)]
    assert not problems, f"{name}: " + "; ".join(problems)


@EDITION
@pytest.mark.parametrize("name", NAMES)
def test_translated_strings_keep_placeholders_escapes_and_quotes(edition: Edition, name: str) -> None:
    """Each string entry keeps its ``{...}`` fields and escapes and stays one literal; one translation per literal.

    A literal used twice in a notebook (a dict key, then a label) gets the same translation in every cell, so that
    code that looks it up still finds it.
    """
    cells = {c.id: c.source for c in nbformat.read(tr.ROOT / "notebooks" / name, as_version=4).cells}
    problems, chosen = [], {}
    for e in _catalog(edition, name):
        if e.obsolete or not e.msgctxt.endswith(tr.STRING) or not e.msgstr:
            continue
        problems += [f"{e.msgctxt} {e.msgid[:40]!r}: {p}"
                     for p in tr.string_problems(cells.get(e.msgctxt.split()[0], ""), e.msgid, e.msgstr)]
        if chosen.setdefault(e.msgid, e.msgstr) != e.msgstr:
            problems.append(f"{e.msgid[:40]!r} has two translations: {chosen[e.msgid]!r} and {e.msgstr!r}")
    assert not problems, f"{name}: " + "; ".join(problems)


@EDITION
@pytest.mark.parametrize("name", NAMES)
def test_editions_differ_only_in_words(edition: Edition, name: str) -> None:
    """Same cells, ids, types, metadata, kinds of output; code token by token equal but for translated strings."""
    en = nbformat.read(tr.ROOT / "notebooks" / name, as_version=4)
    pt = nbformat.read(edition.notebooks / name, as_version=4)
    without_run = lambda meta: {k: v for k, v in meta.items() if k != "language_info"}  # noqa: E731
    assert without_run(pt.metadata) == without_run(en.metadata)
    assert [(c.id, c.cell_type) for c in pt.cells] == [(c.id, c.cell_type) for c in en.cells]
    setup = tr.setup_cell(en)
    untranslated = []
    for a, b in zip(en.cells, pt.cells, strict=True):
        assert b.metadata == a.metadata, f"{name} {a.id}: cell metadata differ"
        if a.cell_type == "code":
            assert [o.output_type for o in b.outputs] == [o.output_type for o in a.outputs], \
                f"{name} {a.id}: the edition's run gave other kinds of output than the English run"
            differences = _code_differences(a.source, b.source, edition.code if a.id == setup else None)
            assert not differences, f"{name} {a.id}: the code differs (only comments and words may): {differences}"
        elif a.cell_type == "markdown" and a.source.strip() and \
                b.source == tr.with_stubs(tr.relocate_links(a.source, edition), edition):
            untranslated.append(a.id)
        assert b.get("attachments") == a.get("attachments")
    assert not untranslated, f"{name}: markdown cells still in English: {untranslated}"


@EDITION
@pytest.mark.parametrize("name", NAMES)
def test_student_copies_differ_from_the_english_ones_only_in_words(edition: Edition, name: str) -> None:
    """An edition's student copy is the English student copy but for words: same cells, ids, types, metadata (tags,
    nbgrader's grade ids and points), and code token by token (the stubs' comments and the translated strings aside).

    With ``test_editions_differ_only_in_words`` this is what lets CI run no translated edition's student copies: the
    English copies run in the kit's term (``make test-kit``, in INSTALL.md's venv), every edition's teacher's copies
    run strictly, and a copy that differs from the English one only in words runs as it does (CONTRIBUTING, "CI:
    what each step proves"). ``make test-CODE`` still runs them (``test_the_student_copy_runs``).
    """
    en = nbformat.read(tr.ROOT / "student" / name, as_version=4)
    pt = nbformat.read(edition.student / name, as_version=4)
    def shape(cell: nbformat.NotebookNode) -> tuple:  # nbgrader's checksum hashes the cell's words: left out
        grader = {k: v for k, v in cell.metadata.get("nbgrader", {}).items() if k != "checksum"}
        return cell.id, cell.cell_type, {**cell.metadata, "nbgrader": grader}

    assert [shape(c) for c in pt.cells] == [shape(c) for c in en.cells]
    setup = tr.setup_cell(en)
    for a, b in zip(en.cells, pt.cells, strict=True):
        if a.cell_type == "code":
            differences = _code_differences(a.source, b.source, edition.code if a.id == setup else None)
            assert not differences, f"{edition.code}/student/{name} {a.id}: the code differs: {differences}"


def test_the_setup_cell_differs_by_the_language_only() -> None:
    """The parity check refuses any other change to the setup cell, and to a non-words string."""
    en = nbformat.read(NOTEBOOKS[3], as_version=4)
    setup = next(c for c in en.cells if c.cell_type == "code").source
    edition = TRANSLATED[0]
    assert not _code_differences(setup, tr.setup_source(setup, edition), edition.code)
    assert _code_differences(setup, setup.replace("seed=42", "seed=43"), edition.code)
    assert _code_differences(setup, setup, edition.code), "the language must be set"
    assert _code_differences('x = d["weights"]', 'x = d["pesos"]'), "a key is not words"
    assert not _code_differences('print(f"{n} heads in all")', 'print(f"{n} cabeças ao todo")')
    assert _code_differences('print(f"{n} heads in all")', 'print(f"{m} cabeças ao todo")'), "a placeholder changed"


def test_edition_files_are_what_the_tool_writes() -> None:
    assert tr.main(["--check"]) == 0, "an edition or its catalogs are out of date: run `make translations`"


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


@EDITION
@pytest.mark.parametrize("folder", ["notebooks", "student"])
@pytest.mark.parametrize("name", NAMES)
def test_links_and_images_resolve(edition: Edition, folder: str, name: str) -> None:
    """Every relative link and image exists; every link into this repository opens a file of the edition."""
    path = edition.path(folder) / name
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
    assert not broken, f"{edition.code}/{folder}/{name}: links that do not resolve: {broken}"


def _avoided_terms(edition: Edition) -> list[str]:
    """The forms the edition's glossary lists to avoid (its terms table's third column: "Evitar" in pt-BR's)."""
    return tr.avoided_forms(edition.catalogs / "GLOSSARY.md")


def test_the_glossary_names_terms_to_avoid() -> None:
    assert "atenção de múltiplas cabeças" in _avoided_terms(TRANSLATED[0])


@EDITION
@pytest.mark.parametrize("name", NAMES)
def test_translation_follows_the_glossary(edition: Edition, name: str) -> None:
    words = " ".join(_CODE.sub("", re.sub(r"\{[^{}]*\}", "", e.msgstr) if e.msgctxt.endswith(tr.STRING) else e.msgstr)
                     for e in _catalog(edition, name)  # a literal kept as it is aside, and a string's {fields}
                     if not e.obsolete and not (e.msgctxt.endswith(tr.STRING) and e.msgstr == e.msgid))
    found = tr.avoided_in(_avoided_terms(edition), words)
    assert not found, f"{name}: the glossary (locale/{edition.gettext}/GLOSSARY.md) says to avoid {found}"


_CODE = re.compile(r"`[^`]*`|\$[^$]*\$")


# The number style of an edition whose decimal separator is not the point (the table's `decimal`, `thousands`;
# Russian: 0,25 and 50 257): its prose writes numbers so. What the code prints stays as Python prints it in every
# edition (test_editions.py::test_no_comma_groups_thousands keeps "50,257", which a Russian reads as 50.257, out of
# the outputs), so prose may quote a printed number as it is; versions, sections and identifiers keep their points.
_POINT_NUMBER = re.compile(r"(?<![\w.,])\d+\.\d+(?![\w.])")
_KEPT_POINTS = re.compile(r"(?:PyTorch|torch|Python|d2l|CUDA|cuDNN|NumPy|pandas|transformers|верси\w*)\b"
                          r"[^;:!?\n]{0,24}$|"
                          r"(?:arXiv:?|doi:|Apache-|§|раздел\w*|глав\w*|section|v)\s*$", re.I)
DECIMAL_COMMA = [e for e in TRANSLATED if e.decimal != "."]


def _printed_numbers(name: str) -> set[str]:
    nb = nbformat.read(tr.ROOT / "notebooks" / name, as_version=4)
    texts = [json.dumps(out) for c in nb.cells if c.cell_type == "code" for out in c.get("outputs", [])]
    return set(_POINT_NUMBER.findall(" ".join(texts)))


@pytest.mark.parametrize("edition", DECIMAL_COMMA, ids=[e.code for e in DECIMAL_COMMA])
@pytest.mark.parametrize("name", NAMES)
def test_prose_writes_numbers_in_the_editions_style(edition: Edition, name: str) -> None:
    """A number of the prose (markdown entries, outside code, maths and link targets) with a decimal point is a
    version, a section, or a number the notebook prints, quoted as printed; any other is written 0,25."""
    printed = _printed_numbers(name)
    found = []
    for e in _catalog(edition, name):
        if e.obsolete or e.msgctxt.endswith((tr.STRING, " comment")) or e.msgctxt == "references":
            continue
        prose = re.sub(r"`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\]\([^)]*\)|<[^>]+>", " ", e.msgstr, flags=re.S)
        for m in _POINT_NUMBER.finditer(prose):
            if m.group(0) not in printed and not _KEPT_POINTS.search(prose[max(0, m.start() - 40):m.start()]):
                found.append(f"{e.msgctxt}: {prose[max(0, m.start() - 30):m.end() + 10]!r}")
    assert not found, f"locale/{edition.gettext}/{name[:-6]}.po: write {edition.decimal!r} as the decimal sign: {found}"


@EDITION
def test_a_one_word_change_in_the_english_fails_until_translated(edition: Edition, tmp_path: Path) -> None:
    """Change one word of an English markdown cell: the catalog is stale; `make translations` marks it fuzzy."""
    name = NAMES[3]
    english = nbformat.read(tr.ROOT / "notebooks" / name, as_version=4)
    cell = next(c for c in english.cells if c.cell_type == "markdown" and " the " in c.source)
    cell.source = cell.source.replace(" the ", " a ", 1)
    changed = tmp_path / name
    changed.write_text(json.dumps(english), encoding="utf-8")
    po = _catalog(edition, name)
    assert (cell.id, cell.source) not in {(e.msgctxt, e.msgid) for e in po}, "the stale catalog is detected"
    merged = tr.merged_catalog(changed, po, edition)
    entry = next(e for e in merged if e.msgctxt == cell.id and not e.obsolete)
    assert "fuzzy" in entry.flags and entry.msgstr and entry.previous_msgid != entry.msgid
    assert entry.msgid == cell.source
    pt = tr.translated_notebook(changed, merged, edition)
    assert next(c for c in pt.cells if c.id == cell.id).source == tr.relocate_links(cell.source, edition), \
        "a fuzzy entry is not used: the cell shows the new English until it is translated again"


@EDITION
def test_a_changed_printed_line_fails_until_translated(edition: Edition, tmp_path: Path) -> None:
    """Change a printed line of an English code cell: a new, empty string entry; the edition prints the English."""
    name = NAMES[4]
    english = nbformat.read(tr.ROOT / "notebooks" / name, as_version=4)
    po = _catalog(edition, name)
    entry = next(e for e in po if not e.obsolete and e.msgctxt.endswith(tr.STRING) and e.msgstr != e.msgid)
    cell = next(c for c in english.cells if c.id == entry.msgctxt.split()[0])
    new = "an entirely different sentence, printed"
    cell.source = cell.source.replace(entry.msgid, new, 1)
    changed = tmp_path / name
    changed.write_text(json.dumps(english), encoding="utf-8")
    merged = tr.merged_catalog(changed, po, edition)
    fresh = next(e for e in merged if e.msgctxt == entry.msgctxt and e.msgid == new and not e.obsolete)
    assert not fresh.msgstr or "fuzzy" in fresh.flags, "the new English is not taken as translated"
    pt = tr.translated_notebook(changed, merged, edition)
    assert new in next(c for c in pt.cells if c.id == cell.id).source


@EDITION
def test_a_course_in_the_edition_releases_its_copies(edition: Edition, tmp_path: Path) -> None:
    """`nbgrader_course.py --edition CODE`: the edition's assignments, released with its badges, note and stubs."""
    import nbgrader_course
    import student_edition

    course = tmp_path / "curso"
    ids = nbgrader_course.create(course, nbgrader_course.notebooks(["03"], edition.code), edition=edition.code)
    source = course / "source" / ids[0] / f"{ids[0]}.ipynb"
    assert source.read_text(encoding="utf-8") == (edition.notebooks / f"{ids[0]}.ipynb").read_text(encoding="utf-8")
    released = student_edition.student_notebook(source, config_file=course / "nbgrader_config.py")
    head = released.cells[0].source
    note = tr.kit_words(edition)["Student edition."]
    assert f"> **{note}**" in head, "the note is in the edition's language"
    assert f"blob/main/{edition.code}/student/{ids[0]}.ipynb" in head and f"labpath={edition.code}%2Fstudent%2F" in head
    expected = nbformat.read(edition.student / f"{ids[0]}.ipynb", as_version=4)
    assert [c.source for c in released.cells[1:]] == [c.source for c in expected.cells[1:]]
    code_stub = edition.code_stub.split("\n")[0]
    assert any(code_stub in c.source for c in released.cells if c.cell_type == "code"), "nbgrader's stub translated"


@EDITION
@pytest.mark.parametrize("name", NAMES)
def test_student_copies_use_the_editions_stubs(edition: Edition, name: str) -> None:
    """nbgrader's stubs, and every mention of them, are the edition's (``code_stub``, ``text_stub`` of the table)."""
    from editions import SOURCE

    text = (edition.student / name).read_text(encoding="utf-8")
    english = [s.split("\n")[0] for s in (SOURCE.code_stub, SOURCE.text_stub)]
    assert not [s for s in english if s in text], f"{edition.code}/student/{name} shows nbgrader's English stubs"
    if "BEGIN SOLUTION" in (tr.ROOT / "notebooks" / name).read_text(encoding="utf-8"):
        assert edition.code_stub.split("\n")[0] in text


TEACHER_WORDING = {  # what only the teacher's edition says; a student copy must not (the kit test's rule)
    "pt-BR": ("edição do professor", "salva aqui", "execução salva", "recolhid", "depois das soluções",
              "depois das respostas"),
    "zh-CN": ("教师版", "保存下来的输出", "解答之后", "答案之后"),  # not 折叠: also "fold the heads into the batch"
    "ru": ("версия для преподавателя", "версии для преподавателя", "напечатанных здесь", "сохранённом здесь",
           "сохранённая здесь"),  # not «свёрнут»: also the heads folded into the batch
}


@EDITION
@pytest.mark.parametrize("name", NAMES)
def test_student_copies_speak_to_students(edition: Edition, name: str) -> None:
    """No teacher's wording in a student copy outside the note under its badges (the kit test's rule)."""
    assert edition.code in TEACHER_WORDING, f"list the teacher's wording of {edition.code} in TEACHER_WORDING"
    note = tr.kit_words(edition)["Student edition."].lower()
    found = []
    for index, cell in enumerate(nbformat.read(edition.student / name, as_version=4).cells):
        text = " ".join(cell.source.lower().split())
        if index == 0:
            text = re.sub(rf"> \*\*{re.escape(note)}\*\*.*", "", text)
        found += [f"cell {index}: {phrase!r}" for phrase in TEACHER_WORDING[edition.code] if phrase in text]
    assert not found, f"{edition.code}/student/{name}: " + "; ".join(found)


RUN = os.environ.get("MHA_EDITION_TEST", "")
RUN_EDITIONS = [e for e in TRANSLATED if RUN in (e.code, "all")]


@pytest.mark.skipif(not RUN_EDITIONS, reason="runs every student copy of an edition (a minute or two): make test-pt-BR")
@pytest.mark.parametrize("edition", RUN_EDITIONS, ids=[e.code for e in RUN_EDITIONS])
@pytest.mark.parametrize("name", NAMES)
def test_the_student_copy_runs(edition: Edition, name: str) -> None:
    """Top to bottom, as a student runs it: only the untouched exercises' checks may stop, "not attempted yet"."""
    from nbclient import NotebookClient

    from mha_lib.i18n import _, language

    with language(edition.code):  # the checks' verdict on a stub, in the edition's language
        untouched = _("… {title}: not attempted yet (the function returned None). Write its body in place of"
                      " `pass`, `return` the result, then run this cell again.").split("{title}")[1].split("(")[0]
    path = edition.student / name
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    problems = [f"cell {index}: {out.ename}: {out.evalue[:300]}"
                for index, cell in enumerate(nb.cells) for out in cell.get("outputs", [])
                if out.get("output_type") == "error"
                and not ("raises-exception" in cell.metadata.get("tags", []) and out.ename == "CheckFailed"
                         and untouched in out.evalue)]
    assert not problems, f"{edition.code}/student/{name}: " + "; ".join(problems)


# --- The teacher's guide and notes (teaching/*.md) through the same catalogs ------------------------------------

PAGES = sorted(p.name for p in tr.TEACHING.glob("*.md"))


@EDITION
@pytest.mark.parametrize("page", PAGES)
def test_teaching_catalog_is_current_and_translated_where_listed(edition: Edition, page: str) -> None:
    """One entry per block of the page, none fuzzy; no empty one in a page the table lists as translated.

    The pages ``locale/editions.toml`` lists under the edition's ``teaching`` are translated in full; the others
    (the notes, whose translation comes later) show English where an entry is empty, as gettext does.
    """
    po = polib.pofile(str(tr.teaching_catalog_path(edition, tr.TEACHING / page)), wrapwidth=0)
    live = [e for e in po if not e.obsolete]
    assert [(e.msgctxt, e.msgid) for e in live] == tr.teaching_entries((tr.TEACHING / page).read_text("utf-8")), \
        f"teaching/{page} changed since its catalog was merged: make translations"
    fuzzy = [e.msgctxt for e in live if "fuzzy" in e.flags]
    assert not fuzzy, f"locale/{edition.gettext}/teaching/{page}: fuzzy entries (the English changed): {fuzzy}"
    if page in edition.teaching:
        empty = [e.msgctxt for e in live if not e.msgstr.strip()]
        assert not empty, f"teaching/{page} is listed as translated in locale/editions.toml: empty entries {empty}"
    problems = [f"{e.msgctxt}: {p}" for e in live if e.msgstr for p in tr.teaching_problems(e.msgid, e.msgstr, edition)]
    assert not problems, f"locale/{edition.gettext}/teaching/{page}: " + "; ".join(problems)


@EDITION
def test_the_translated_teaching_pages_are_listed_and_exist(edition: Edition) -> None:
    assert set(edition.teaching) <= set(PAGES), f"{edition.code}: locale/editions.toml lists pages teaching/ lacks"
    assert sorted(p.name for p in edition.path("teaching").glob("*.md")) == PAGES


@EDITION
@pytest.mark.parametrize("page", PAGES)
def test_teaching_links_resolve(edition: Edition, page: str) -> None:
    path = edition.path("teaching") / page
    broken = []
    for a, b in re.findall(r"\]\(([^)\s]+)\)|(?:src|href)=\"([^\"]+)\"", path.read_text(encoding="utf-8")):
        target = (a or b).split("#")[0]
        if target and not re.match(r"^[a-z]+:", target) and not (path.parent / unquote(target)).exists():
            broken.append(target)
    assert not broken, f"{edition.code}/teaching/{page}: links that do not resolve: {broken}"


def test_a_teaching_translation_keeps_numbers_and_code() -> None:
    assert tr.teaching_problems("Grade 60 submissions with `make test`.", "Corrija 60 entregas com `make test`.") == []
    assert tr.teaching_problems("Grade 60 submissions.", "Corrija 50 entregas.")
    assert tr.teaching_problems("Run `make test`.", "Rode `make teste`.")
    assert tr.teaching_problems("1,297 passed", "1297 passaram") == []
    russian = next(e for e in TRANSLATED if e.decimal == ",")  # the edition's number style: 0,25 and 50 257
    assert tr.teaching_problems("0.945 of 50,257", "0,945 из 50\u00a0257", russian) == []
    assert tr.teaching_problems("0.945 of 50,257", "0,95 из 50\u00a0257", russian)


@EDITION
def test_the_install_page_gives_the_english_commands(edition: Edition) -> None:
    """The edition's install page (the table's ``install``) runs exactly INSTALL.md's commands, block by block."""
    blocks = lambda text: re.findall(r"```[^\n]*\n(.*?)```", text, re.S)  # noqa: E731
    english = blocks((tr.ROOT / "INSTALL.md").read_text(encoding="utf-8"))
    translated = blocks((tr.ROOT / edition.install).read_text(encoding="utf-8"))
    assert len(translated) == len(english)
    for a, b in zip(english, translated, strict=True):
        assert b.replace(f"{edition.code}/student/", "student/") == a, f"{edition.install}: {b!r} is not {a!r}"


@EDITION
def test_the_student_folder_has_its_readme(edition: Edition) -> None:
    readme = edition.student / "README.md"
    text = readme.read_text(encoding="utf-8")
    assert edition.code_stub.split("\n")[0] in text and edition.text_stub in text
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        assert (readme.parent / target).exists(), f"{readme.relative_to(tr.ROOT)}: {target} does not resolve"
