"""The table of editions (``locale/editions.toml``) and what every edition must hold to, whatever its language.

- the table is well formed and every tool reads it (the Makefile's pattern targets included);
- no printed number of any edition's notebooks uses a comma as a thousands separator unless the edition's
  ``thousands`` says so (a Brazilian reads ``5,623x`` as 5.6 times): the outputs, and the text of the figures that
  the translated editions' runs recorded (``<code>/figure-text.json``);
- a translated edition's notebooks print, assert and draw in their language: no English word outside the code's
  own names, the library's and tools' names and English quoted on purpose (``ENGLISH_KEPT``). The edition's
  notebooks are executed once, by ``make translations``; that run writes the outputs strict nbval checks and the
  figure text this test reads, so the check costs no second run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import editions  # noqa: E402
import translations as tr  # noqa: E402
from editions import EDITIONS, SOURCE, TRANSLATED, Edition  # noqa: E402

NAMES = [p.name for p in tr.english_notebooks()]


def test_the_table_has_the_source_first_and_every_field() -> None:
    assert SOURCE.code == "en" and SOURCE.is_source and SOURCE.folder == ""
    assert TRANSLATED and all(not e.is_source and e.folder == e.code for e in TRANSLATED)
    for edition in EDITIONS:
        assert edition.code_stub.endswith("\npass"), f"{edition.code}: the stub must run (teaching/nbgrader_config.py)"
        assert edition.text_stub and edition.decimal in ".," and edition.thousands in ("", " ", "\u00a0", "_", ",", ".")
        assert (ROOT / edition.readme).is_file(), f"{edition.code}: no {edition.readme}"
        if not edition.is_source:
            assert edition.plural_forms.startswith("nplurals="), edition.code
            assert (edition.catalogs / "GLOSSARY.md").is_file() and (edition.catalogs / "kit.po").is_file()
    with pytest.raises(ValueError, match="pt-BR"):
        editions.get("xx")


def test_mha_lib_speaks_every_edition() -> None:
    """Each edition's setup cell calls ``setup(language=CODE)``: the library must know every code of the table."""
    from mha_lib.i18n import available_languages

    assert [e.code for e in EDITIONS] == [c for c in available_languages() if c in {e.code for e in EDITIONS}]
    assert {e.code for e in EDITIONS} <= set(available_languages())


def test_the_command_line_names_folders_for_the_makefile(capsys) -> None:
    assert editions.main(["folder", "pt-BR"]) == 0
    assert capsys.readouterr().out.strip() == "pt-BR/notebooks"
    assert editions.main(["folder", "en"]) == 0 and capsys.readouterr().out.strip() == "notebooks"
    assert editions.main(["folder", "xx"]) == 2
    assert editions.main(["translated"]) == 0 and capsys.readouterr().out.split() == [e.code for e in TRANSLATED]


def _dry_run(target: str, *variables: str) -> str:
    done = subprocess.run(["make", "-n", "--no-print-directory", target, "VENV=/nonexistent-venv", *variables],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    return done.stdout + done.stderr


@pytest.mark.parametrize("edition", TRANSLATED, ids=[e.code for e in TRANSLATED])
def test_the_makefile_has_a_lab_and_a_test_target_per_edition(edition: Edition) -> None:
    """`make lab-CODE` and `make test-CODE` are pattern targets read from the table; explicit targets still win."""
    test = _dry_run(f"test-{edition.code}")
    assert f"tools/editions.py folder {edition.code}" in test and f"--check --edition {edition.code}" in test
    assert f"MHA_EDITION_TEST={edition.code}" in test
    assert f"tools/editions.py folder {edition.code}" in _dry_run(f"lab-{edition.code}")
    assert "tools/translations.py" in _dry_run("translations")
    assert "test_kit_roundtrip" in _dry_run("test-kit"), "an explicit target wins over test-%"
    assert "student/00_start_here" in _dry_run("lab-student"), "an explicit target wins over lab-%"
    # the shortest stem wins: test-python3.12 is test-python%'s (no Python named `false`: it says SKIPPED)
    assert "SKIPPED: Python 3.12" in _dry_run("test-python3.12", "PYTHON=false")


# --- Numbers ---------------------------------------------------------------------------------------------------

_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])")


def _html_text(html: str) -> str:
    """The text an HTML output shows: style sheets and tags left out."""
    return re.sub(r"<[^>]+>", " ", re.sub(r"<style[^>]*>.*?</style>", " ", html, flags=re.S))


def _output_texts(nb: nbformat.NotebookNode):
    """``(cell id, text)`` of every text a code cell's outputs show: streams, errors, and of a rich output the one
    form a front end shows (its HTML or Markdown, else its plain text; a figure's ``<Figure size ...>`` aside)."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                yield cell.id, out.get("text", "")
            elif out.get("output_type") == "error":
                yield cell.id, f"{out.get('ename')}: {out.get('evalue')}"
            data = out.get("data", {})
            if "text/html" in data:
                yield cell.id, _html_text(data["text/html"])
            elif "text/markdown" in data:
                yield cell.id, data["text/markdown"]
            elif "text/plain" in data and not any(kind.startswith("image/") for kind in data):
                yield cell.id, data["text/plain"]


def _figure_texts(edition: Edition, name: str):
    path = tr.figure_text_path(edition)
    if edition.is_source or not path.exists():
        return
    for cell, texts in json.loads(path.read_text(encoding="utf-8")).get(name, {}).items():
        for text in texts:
            yield cell, text


@pytest.mark.parametrize("edition", EDITIONS, ids=[e.code for e in EDITIONS])
@pytest.mark.parametrize("name", NAMES)
def test_no_comma_groups_thousands(edition: Edition, name: str) -> None:
    """The glossary's number rule: thousands are never grouped with a comma (print ``{n}`` or ``{n:_}``)."""
    if edition.thousands == ",":
        pytest.skip(f"{edition.code} groups thousands with commas")
    nb = nbformat.read(edition.notebooks / name, as_version=4)
    found = [f"{cell}: {match.group(0)!r} in {text[max(0, match.start() - 30):match.end() + 10]!r}"
             for cell, text in [*_output_texts(nb), *_figure_texts(edition, name)]
             for match in _GROUPED.finditer(text)]
    assert not found, f"{edition.notebooks.relative_to(ROOT)}/{name}: thousands grouped with a comma: {found}"


def test_the_number_rule_catches_the_case_the_review_found() -> None:
    assert _GROUPED.search("the last pair turns 5,623x slower") and _GROUPED.search("22,565,376 weights")
    assert not _GROUPED.search("tensor([0.2500, 1.0000]) (1, 024) 5623 5_623 0.125 [1,2]")


# --- English left in a translated edition -----------------------------------------------------------------------

# English words that are not also words of the translated languages: finding one in what a Portuguese notebook
# prints or draws means a line was left in English. (No "a", "as", "no", "do", "me", "se", "for"-like overlaps, and
# no "token", which the Portuguese glossary keeps.)
ENGLISH = set("""
the and with from that this these those than then when where which while what whose only every each both either
not are was were been being has have had does did its their there here into onto over under after before between
without within about above below again also just more most less least much many other another same such because
should would could will shall can cannot must may might per one two three four five six seven eight nine ten
first second third last next previous largest smallest lowest highest mean average median best worst
head heads layer layers query queries key keys value values weight weights score scores loss losses
sentence sentences word words position positions sequence sequences output outputs input inputs mask masks masked
padding padded training trained untrained step steps table tables row rows column columns time memory saved kept
shape shapes model models match matches matched equal equals change changes largest difference gradient gradients
batch batches attention attends attend right wrong blocked allowed real pair pairs block blocks cache cached
true false none all none some any number numbers size sizes length lengths measured smaller larger faster slower
""".split())
# English kept on purpose in a translated edition's outputs: what the code names (identifiers, the keys and data of
# the notebook's own literals, which are part of its code), and these words, which the library prints as data keys
# (DataFrame columns the notebooks index, detector and recorded-benchmark names) or are English data (notebook 12's
# English model and sentences).
ENGLISH_KEPT = set("""
previous token entropy bits max distance diagonal share best median ms ratio held out loss kept forward backward
true false none
""".split())


def _code_words(nb: nbformat.NotebookNode) -> set[str]:
    """Every word of the notebook's code: names, and the words of its literals (keys, data, kept English)."""
    words: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for token in tr.python_tokens(cell.source) or []:
            if token.type in (tokenize.NAME, tokenize.STRING):
                words.update(w.lower() for w in re.findall(r"[A-Za-z]+", token.string))
    return words


def _english_words(text: str, allowed: set[str]) -> list[str]:
    """The English words of ``text``: whole words (``W_key``, ``d_model``, ``x1`` are names, not words), outside
    quotes (English quoted on purpose) and outside ``allowed``."""
    text = re.sub(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`", " ", text)
    words = re.findall(r"(?<![\w.])[A-Za-z]+(?![\w(=])", text)  # not part of a name, a path, a call or a keyword
    return [w for w in words if w.lower() in ENGLISH and w.lower() not in allowed]


@pytest.mark.parametrize("edition", TRANSLATED, ids=[e.code for e in TRANSLATED])
@pytest.mark.parametrize("name", NAMES)
def test_the_edition_prints_and_draws_in_its_language(edition: Edition, name: str) -> None:
    """No English word in what the edition's notebook prints, asserts or draws (figure text from its own run)."""
    nb = nbformat.read(edition.notebooks / name, as_version=4)
    assert name in json.loads(tr.figure_text_path(edition).read_text(encoding="utf-8")), \
        f"{edition.code}/figure-text.json has no record of {name}'s run: make translations"
    allowed = _code_words(nb) | ENGLISH_KEPT
    found = {}
    for cell, text in [*_output_texts(nb), *_figure_texts(edition, name)]:
        words = _english_words(text, allowed)
        if words:
            found.setdefault(cell, []).append(f"{sorted(set(words))} in {text.strip()[:80]!r}")
    assert not found, f"{edition.code}/notebooks/{name}: English in what it prints or draws: {found}"
