"""The library's language (mha_lib.i18n): the switch, its default, its catalogs, and the package that carries them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import polib
import pytest

from mha_lib import i18n
from mha_lib.i18n import _, get_language, language, ngettext, set_language
from mha_lib.notebook import setup

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import catalog_rules  # noqa: E402 - tools/ is not a package
import library_catalog  # noqa: E402

PO = ROOT / "mha_lib" / "locale" / "pt_BR" / "LC_MESSAGES" / "mha_lib.po"


@pytest.fixture(autouse=True)
def _english_after() -> object:
    """Every test leaves the library speaking what it spoke before."""
    before = get_language()
    yield
    set_language(before)


def test_the_library_speaks_every_edition_of_the_table() -> None:
    """locale/editions.toml lists the editions; the library has a catalog for each (and for nothing else)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
        import tomli as tomllib

    table = tomllib.loads((ROOT / "locale" / "editions.toml").read_text())["edition"]
    assert set(i18n.available_languages()) == {row["code"] for row in table}
    assert i18n.available_languages()[0] == "en"


def test_the_environment_variable_sets_the_default_at_import() -> None:
    """In a fresh interpreter (the variable is read once, at import); the cases below call the same reader."""
    code = "from mha_lib.i18n import get_language; print(get_language())"
    env = {**os.environ, "MHA_LANGUAGE": "pt_BR"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pt-BR"


def test_english_is_the_default_without_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MHA_LANGUAGE", raising=False)
    assert i18n._from_environment() == "en"


@pytest.mark.parametrize("value", ["pt-BR", "pt_BR", " pt-br "])
def test_the_environment_variable_names_the_language(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MHA_LANGUAGE", value)
    assert i18n._from_environment() == "pt-BR"


KNOWN = ", ".join(i18n.available_languages())  # "en, pt-BR, ru, zh-CN": the catalogs shipped


def test_an_unknown_environment_language_warns_and_speaks_english(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MHA_LANGUAGE", "klingon")
    with pytest.warns(UserWarning) as caught:
        assert i18n._from_environment() == "en"
    assert f"MHA_LANGUAGE must be one of the library's languages ({KNOWN}), got 'klingon'" in str(caught[0].message)


@pytest.mark.parametrize("code", ["pt-BR", "pt_BR", "pt-br"])
def test_set_language_accepts_the_edition_code_and_gettexts_name(code: str) -> None:
    set_language(code)
    assert get_language() == "pt-BR"
    set_language("en")
    assert get_language() == "en"


@pytest.mark.parametrize("code", ["fr", "pt", "", 3, None])
def test_a_language_without_a_catalog_is_refused_by_name(code: object) -> None:
    with pytest.raises(ValueError, match=rf"^code must be one of the library's languages \({KNOWN}\), got "):
        set_language(code)  # type: ignore[arg-type]
    if code is not None:  # setup(language=None) leaves the language as it is
        with pytest.raises(ValueError, match=rf"^language must be one of the library's languages \({KNOWN}\)"):
            setup(language=code)  # type: ignore[arg-type]


def test_setup_sets_the_language_and_none_leaves_it() -> None:
    setup(seed=42, language="pt-BR")
    assert get_language() == "pt-BR"
    setup(seed=42)
    assert get_language() == "pt-BR"
    setup(seed=42, language="en")
    assert get_language() == "en"


def test_the_context_manager_restores_the_language_even_on_an_error() -> None:
    set_language("en")
    with language("pt-BR"):
        assert get_language() == "pt-BR"
    assert get_language() == "en"
    with pytest.raises(RuntimeError), language("pt-BR"):
        raise RuntimeError
    assert get_language() == "en"


def test_english_returns_the_message_itself_and_an_unknown_message_stays_english() -> None:
    set_language("en")
    assert _("a message no catalog has") == "a message no catalog has"
    assert ngettext("{n} case", "{n} cases", 1) == "{n} case"
    assert ngettext("{n} case", "{n} cases", 2) == "{n} cases"
    with language("pt-BR"):
        assert _("a message no catalog has") == "a message no catalog has"


# ------------------------------------------------------------------------------------------------ the catalogs


def test_every_message_of_the_library_is_translated_and_the_mo_is_compiled() -> None:
    """A new or changed English message without a Portuguese translation fails, as a changed markdown cell does."""
    messages = library_catalog.extract()
    found = [p for path in library_catalog.catalogs() for p in library_catalog.problems(path, messages)]
    assert not found, "\n".join(found[:20]) + "\nrun python tools/library_catalog.py and translate the new entries"


def test_the_catalogs_are_the_languages() -> None:
    """One library catalog per translated edition of the table, each saying its language."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
        import tomli as tomllib

    editions = tomllib.loads((ROOT / "locale" / "editions.toml").read_text(encoding="utf-8"))["edition"][1:]
    assert [p.relative_to(ROOT).as_posix() for p in library_catalog.catalogs()] == sorted(
        f"mha_lib/locale/{e['gettext']}/LC_MESSAGES/mha_lib.po" for e in editions)
    for path in library_catalog.catalogs():
        assert polib.pofile(str(path)).metadata["Language"] == path.parents[1].name


def test_the_package_data_carries_the_compiled_catalog() -> None:
    """pyproject's package-data names the .mo, so a wheel (and an installed mha_lib) speaks Portuguese too."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
        import tomli as tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["mha_lib"]
    mo = PO.with_suffix(".mo").relative_to(ROOT / "mha_lib")
    assert any(mo.match(pattern) for pattern in data), f"{mo} is not in pyproject's package-data for mha_lib"


# ------------------------------------------------------------------------------------------------ what a learner reads

sys.path.insert(0, str(ROOT / "tests"))
from test_checks import CHECKS, IDS  # noqa: E402 - tests/check_cases' wrong answers, one row per check

from mha_lib.checks import CheckFailed  # noqa: E402
from mha_lib.checks._core import library_allowed  # noqa: E402

# Words of English prose that no Portuguese sentence holds; code (backticks, names with _ . ( ) [ ] = and the like)
# is taken out first, and the tensors' names the hints use as code (weights, output, layer, queries, keys) are not
# listed. What PyTorch or Python said when the learner's code raised stays as it came ("levantou RuntimeError: ...").
ENGLISH = {"the", "of", "and", "is", "are", "with", "expected", "got", "case", "cases", "fails", "hint",
           "differ", "first", "index", "your", "function", "raised", "attempted", "yet", "each", "every", "must",
           "when", "only", "than", "which", "match", "matches", "not", "from", "into", "after", "before", "result",
           "rows", "largest", "write", "called", "yourself", "it", "this", "that", "by", "or", "an", "at", "on",
           "to", "one", "difference", "entries", "all"}
CODE = re.compile(r"`[^`]*`|\S*[_.()\[\]{}=<>@/*+^|&'\"\\-]\S*")
RAISED = re.compile(r"(levantou \w+): .*")


def english_words(text: str) -> set[str]:
    """The words of ``text`` outside code (and outside an error's own message) that are English prose words."""
    prose = CODE.sub(" ", RAISED.sub(r"\1", text))
    return {w for w in re.findall(r"[^\W\d_]+", prose) if w.lower() in ENGLISH}


def _failure(check: object, bug: object) -> list[str]:
    """The verdict of ``check`` on a wrong answer (some wrong answers use the library's own pieces, allowed here)."""
    with library_allowed(), pytest.raises(CheckFailed) as caught:
        check(bug)
    return caught.value._render_traceback_()


@pytest.mark.parametrize(("check", "correct", "bugs"), CHECKS, ids=IDS)
def test_a_wrong_answer_gets_its_verdict_and_hint_in_portuguese(check, correct, bugs, capsys) -> None:
    for bug, case in bugs:
        with language("pt-BR"):
            lines = _failure(check, bug)
        assert lines[0].startswith(f"✗ {check.__name__}: o caso {case} de "), lines
        assert any(line.startswith("  dica: ") for line in lines), lines
        for line in lines:
            assert not english_words(line), f"English in {line!r}: {english_words(line)}"
        set_language("en")
        english = _failure(check, bug)
        assert english[0].startswith(f"✗ {check.__name__}: case {case} of "), english
        assert any(line.startswith("  hint: ") for line in english), english
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("check", "correct", "bugs"), CHECKS, ids=IDS)
def test_a_tick_and_a_stub_in_portuguese(check, correct, bugs, capsys) -> None:
    with language("pt-BR"):
        with library_allowed():
            check(correct)
        out = capsys.readouterr().out
        assert out.startswith(f"✓ {check.__name__}: todos os ") and " casos conferem com " in out
        assert not english_words(out), out
        with pytest.raises(CheckFailed) as caught:
            check(lambda *args, **kwargs: None)
        assert str(caught.value).startswith(f"… {check.__name__}: ainda não tentado (a função devolveu None).")


OTHERS = [code for code in i18n.available_languages() if code not in ("en", "pt-BR")]  # zh-CN, ru: from the catalogs


@pytest.mark.parametrize("code", OTHERS)
@pytest.mark.parametrize(("check", "correct", "bugs"), CHECKS, ids=IDS)
def test_a_verdict_a_hint_a_tick_and_a_stub_in_every_language(code: str, check, correct, bugs, capsys) -> None:
    """What a stuck learner reads, in each translated language: no English prose word (what the learner's own code
    raised aside, after the catalog's "raised"), none of the English lines, the stub's verdict its own."""
    with language(code):
        raised = re.escape(_("your function raised {error}").split("{error}")[0].strip().split()[-1])
        for bug, case in bugs:
            lines = _failure(check, bug)
            assert re.match(rf"✗ {check.__name__}[:：]", lines[0]) and str(case) in lines[0], lines
            prose = [re.sub(rf"({raised}\s*\w+)[:：].*", r"\1", line) for line in lines]
            assert not [w for line in prose for w in english_words(line)], lines
        with library_allowed():
            check(correct)
        out = capsys.readouterr().out
        with pytest.raises(CheckFailed) as caught:
            check(lambda *args, **kwargs: None)
    assert re.match(rf"✓ {check.__name__}[:：]", out) and not english_words(out), out
    assert "not attempted yet" not in str(caught.value) and re.match(rf"… {check.__name__}[:：]", str(caught.value))


@pytest.mark.parametrize("code", OTHERS)
def test_every_check_message_has_its_own_translation(code: str) -> None:
    """Every check message of the language's catalog is translated, none left in English (names and codes aside)."""
    messages = library_catalog.extract()
    po_path = ROOT / "mha_lib" / "locale" / code.replace("-", "_") / "LC_MESSAGES" / "mha_lib.po"
    po = {e.msgid: e for e in polib.pofile(str(po_path)) if not e.obsolete}
    for message in [m for m in messages.values() if any(f.startswith("mha_lib/checks/") for f, _line in m.occurrences)]:
        entry = po[message.msgid]
        translated = entry.msgstr or entry.msgstr_plural[0]
        assert translated and not english_words(translated), f"{message.msgid!r} -> {translated!r}"


def test_every_case_name_and_hint_has_its_own_portuguese() -> None:
    """The catalog translates every check message: none comes out the same as the English (names and codes aside)."""
    messages = library_catalog.extract()
    po = {e.msgid: e for e in polib.pofile(str(PO)) if not e.obsolete}
    checks_messages = [m for m in messages.values() if any(f.startswith("mha_lib/checks/") for f, _ in m.occurrences)]
    assert len(checks_messages) > 200
    for message in checks_messages:
        translated = po[message.msgid].msgstr or po[message.msgid].msgstr_plural[1]
        assert not english_words(translated), f"{message.msgid!r} -> {translated!r}"


def test_figure_text_follows_the_language() -> None:
    import torch

    from mha_lib import MultiHeadAttention
    from mha_lib.plots import plot_attention_heads, plot_positional_curves
    from mha_lib.positional import sinusoidal_table

    layer = MultiHeadAttention(4, 4, None, 0.0, 2, causal=False)
    trace = layer.trace(torch.randn(1, 3, 4))

    def texts(fig: object) -> set[str]:
        return {t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")) if t.get_text()}

    with language("pt-BR"):
        heads = texts(plot_attention_heads(trace, ["a", "b", "c"]))
        curves = texts(plot_positional_curves(sinusoidal_table(10, 16)))
    assert {"cabeça 0", "cabeça 1", "chaves", "consultas"} <= heads and not {"head 0", "keys", "queries"} & heads
    assert {"linha (posição)", "valor", "col. 6"} <= curves
    english = texts(plot_attention_heads(trace, ["a", "b", "c"]))
    assert {"head 0", "head 1", "keys", "queries"} <= english


def test_show_diagram_picks_the_languages_picture() -> None:
    from mha_lib.notebook import diagram_names, diagram_path, show_diagram

    for name in diagram_names():
        english = diagram_path(name, "en")
        portuguese = diagram_path(name, "pt-BR")
        assert english.name == portuguese.name == f"{name}.png"
        assert portuguese.parent.name == "pt-BR", f"{name}: no Portuguese drawing in images/pt-BR/"
        with language("pt-BR"):
            shown = show_diagram(name, "descrição")
        assert shown.png == portuguese.read_bytes() != english.read_bytes()
        assert repr(shown) == f"[diagrama {name}: descrição]"
        assert show_diagram(name, "description").png == english.read_bytes()


def test_a_wheel_carries_the_catalog_and_the_diagrams_and_speaks_portuguese(tmp_path: Path) -> None:
    """Built and installed apart from this checkout, mha_lib still speaks Portuguese and draws its diagrams."""
    import zipfile

    pytest.importorskip("setuptools")
    sys.path.insert(0, str(ROOT / "tools"))
    from source_copy import copy_tracked  # its own copy: another build of the checkout may run meanwhile

    package = ("pyproject.toml", "README.md", "mha_lib/", "images/", "benchmarks/")  # what the wheel is built from
    source = copy_tracked(tmp_path / "source", only=package)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "wheel"), str(source)], check=True, capture_output=True, cwd=tmp_path)
    (wheel,) = (tmp_path / "wheel").glob("mha_lib-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "mha_lib/locale/pt_BR/LC_MESSAGES/mha_lib.mo" in names
    assert {f"mha_lib/images/pt-BR/{p.name}" for p in (ROOT / "images" / "pt-BR").glob("*.png")} <= names
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(tmp_path / "site"),
                    str(wheel)], check=True, capture_output=True)
    code = ("import mha_lib.i18n as i, mha_lib.notebook as n; i.set_language('pt-BR'); "
            "print(i.__file__); print(i._('hint: {hint}')); print(n.diagram_path('04_mask_polarity').parent.name)")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0].startswith(str(tmp_path / "site")), out
    assert out[1:] == ["dica: {hint}", "pt-BR"]


def test_a_tables_column_names_stay_data_and_show_as_words_in_the_language() -> None:
    """``scores["previous token"]`` works in every language; the figure of the table names it in Portuguese."""
    import pandas as pd

    from mha_lib.i18n import key_name
    from mha_lib.plots import plot_head_table

    table = pd.DataFrame({"previous token": [0.9, 0.1], "induction": [0.2, 0.8]},
                         index=pd.MultiIndex.from_tuples([(0, 0), (0, 1)]))
    with language("pt-BR"):
        assert key_name("previous token") == "token anterior" and key_name("L0H1") == "L0H1"
        ticks = [t.get_text() for t in plot_head_table(table).axes[0].get_xticklabels()]
    assert ticks == ["token anterior", "indução"]
    assert [t.get_text() for t in plot_head_table(table).axes[0].get_xticklabels()] == ["previous token", "induction"]


GLOSSARIES = [(folder.name, catalog) for folder in sorted((ROOT / "locale").iterdir()) if folder.is_dir()
              for catalog in [ROOT / "mha_lib" / "locale" / folder.name / "LC_MESSAGES" / "mha_lib.po",
                              folder / "images.po"]]


@pytest.mark.parametrize(("gettext_name", "catalog"), GLOSSARIES, ids=[f"{g}-{c.name}" for g, c in GLOSSARIES])
def test_the_library_and_the_diagrams_follow_the_glossary(gettext_name: str, catalog: Path) -> None:
    """No form that the language's GLOSSARY.md lists to avoid (the third column of its terms table), in a message or
    a diagram's words."""
    avoided = catalog_rules.avoided_forms(ROOT / "locale" / gettext_name / "GLOSSARY.md")
    assert avoided
    po = polib.pofile(str(catalog))
    words = " ".join(CODE.sub(" ", e.msgstr or " ".join(e.msgstr_plural.values())) for e in po if not e.obsolete)
    found = catalog_rules.avoided_in(avoided, words)
    assert not found, f"{catalog.name}: the glossary says to avoid {found}"
