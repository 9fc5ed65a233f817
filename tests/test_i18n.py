"""The library's language (mha_lib.i18n): the switch, its default, its catalogs, and the package that carries them."""

from __future__ import annotations

import os
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
import library_catalog  # noqa: E402 - tools/ is not a package

PO = ROOT / "mha_lib" / "locale" / "pt_BR" / "LC_MESSAGES" / "mha_lib.po"


@pytest.fixture(autouse=True)
def _english_after() -> object:
    """Every test leaves the library speaking what it spoke before."""
    before = get_language()
    yield
    set_language(before)


def test_the_languages_are_english_and_each_catalog_shipped() -> None:
    assert i18n.available_languages() == ("en", "pt-BR")


def test_english_is_the_default_without_the_environment_variable() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MHA_LANGUAGE"}
    code = "from mha_lib.i18n import get_language; print(get_language())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "en"


@pytest.mark.parametrize("value", ["pt-BR", "pt_BR"])
def test_the_environment_variable_sets_the_default(value: str) -> None:
    code = "from mha_lib.i18n import get_language; print(get_language())"
    env = {**os.environ, "MHA_LANGUAGE": value}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pt-BR"


def test_an_unknown_environment_language_warns_and_speaks_english() -> None:
    code = "from mha_lib.i18n import get_language; print(get_language())"
    env = {**os.environ, "MHA_LANGUAGE": "klingon"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "en"
    assert "MHA_LANGUAGE must be one of the library's languages (en, pt-BR), got 'klingon'" in out.stderr


@pytest.mark.parametrize("code", ["pt-BR", "pt_BR", "pt-br"])
def test_set_language_accepts_the_edition_code_and_gettexts_name(code: str) -> None:
    set_language(code)
    assert get_language() == "pt-BR"
    set_language("en")
    assert get_language() == "en"


@pytest.mark.parametrize("code", ["fr", "pt", "", 3, None])
def test_a_language_without_a_catalog_is_refused_by_name(code: object) -> None:
    with pytest.raises(ValueError, match=r"^code must be one of the library's languages \(en, pt-BR\), got "):
        set_language(code)  # type: ignore[arg-type]
    if code is not None:  # setup(language=None) leaves the language as it is
        with pytest.raises(ValueError, match=r"^language must be one of the library's languages \(en, pt-BR\)"):
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
    assert [p.relative_to(ROOT).as_posix() for p in library_catalog.catalogs()] == [PO.relative_to(ROOT).as_posix()]
    assert polib.pofile(str(PO)).metadata["Language"] == "pt_BR"


def test_the_package_data_carries_the_compiled_catalog() -> None:
    """pyproject's package-data names the .mo, so a wheel (and an installed mha_lib) speaks Portuguese too."""
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["mha_lib"]
    mo = PO.with_suffix(".mo").relative_to(ROOT / "mha_lib")
    assert any(mo.match(pattern) for pattern in data), f"{mo} is not in pyproject's package-data for mha_lib"
