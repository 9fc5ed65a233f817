"""The library's language: every message a learner reads from ``mha_lib`` goes through ``_()`` and this switch.

The messages are written in English in the code and translated by gettext catalogs that ship inside the package,
``mha_lib/locale/<gettext>/LC_MESSAGES/mha_lib.mo`` (compiled from the ``.po`` beside it). One switch chooses the
language for the whole library:

- ``set_language("pt-BR")`` (or ``mha_lib.notebook.setup(language="pt-BR")``, what a Portuguese notebook's setup
  cell calls); ``get_language()`` reads it; ``with language("pt-BR"): ...`` sets it for a block only;
- before any call, the environment variable ``MHA_LANGUAGE`` (e.g. ``MHA_LANGUAGE=pt-BR``), read once at import;
- otherwise English, ``"en"``: the messages as written, the same bytes as before catalogs existed.

gettext's own choice (the variables ``LANGUAGE``, ``LC_ALL``, ``LANG``) is not used: Colab, Binder and most Jupyter
servers run with an English or C locale whatever the learner reads, and JupyterLab's language never reaches the
kernel. The library's language is a setting of its own.

Messages are templates without f-strings (``_("case {number} of {total}").format(...)``), so a translator sees
whole sentences; ``tests/test_i18n.py`` extracts every ``_()`` and ``ngettext()`` of the package and fails when
one has no translation. CONTRIBUTING, "The library's languages", says how to add or translate a message.
"""

from __future__ import annotations

import contextlib
import gettext
import io
import os
import warnings
from collections.abc import Iterator
from functools import cache
from importlib.resources import files

from mha_lib.fonts import use_fonts_for

__all__ = ["DOMAIN", "LANGUAGE_VARIABLE", "N_", "SOURCE_LANGUAGE", "_", "available_languages", "get_language",
           "key_name", "language", "ngettext", "set_language", "translate"]

DOMAIN = "mha_lib"
"""gettext's domain: the catalogs are ``mha_lib/locale/<gettext>/LC_MESSAGES/mha_lib.po`` and ``.mo``."""
LANGUAGE_VARIABLE = "MHA_LANGUAGE"
"""The environment variable that sets the language before any ``set_language`` (an edition code, e.g. ``pt-BR``)."""
SOURCE_LANGUAGE = "en"
"""The language the messages are written in: no catalog, the messages as they stand."""


def _edition_code(folder: str) -> str:
    """gettext's locale name -> the edition's code (BCP 47): ``pt_BR`` -> ``pt-BR``."""
    return folder.replace("_", "-")


@cache
def _catalog_folders() -> dict[str, str]:
    """Each translated language's edition code -> its folder under ``mha_lib/locale/`` (the catalogs shipped)."""
    found: dict[str, str] = {}
    locale = files("mha_lib").joinpath("locale")
    if locale.is_dir():
        for folder in locale.iterdir():
            if folder.joinpath("LC_MESSAGES").joinpath(f"{DOMAIN}.mo").is_file():
                found[_edition_code(folder.name)] = folder.name
    return dict(sorted(found.items()))


def available_languages() -> tuple[str, ...]:
    """The edition codes the library speaks: ``"en"`` and one per catalog shipped (``("en", "pt-BR")``)."""
    return (SOURCE_LANGUAGE, *_catalog_folders())


def _resolve(name: str, code: object) -> str:
    """``code`` as one of ``available_languages()`` (``pt_BR`` and ``pt-br`` name ``pt-BR``); ValueError otherwise."""
    languages = available_languages()
    if isinstance(code, str):
        wanted = code.strip().replace("_", "-").lower()
        for known in languages:
            if known.lower() == wanted:
                return known
    raise ValueError(f"{name} must be one of the library's languages ({', '.join(languages)}), got {code!r}")


@cache
def _translations(code: str) -> gettext.NullTranslations:
    """The catalog of ``code`` (read from the package's compiled ``.mo``); English has none."""
    if code == SOURCE_LANGUAGE:
        return gettext.NullTranslations()
    folder = _catalog_folders()[code]
    mo = files("mha_lib").joinpath("locale").joinpath(folder).joinpath("LC_MESSAGES").joinpath(f"{DOMAIN}.mo")
    return gettext.GNUTranslations(io.BytesIO(mo.read_bytes()))


def _from_environment() -> str:
    """The language named by ``MHA_LANGUAGE``, or English (with a warning when it names no language)."""
    value = os.environ.get(LANGUAGE_VARIABLE, "").strip()
    if not value:
        return SOURCE_LANGUAGE
    try:
        return _resolve(LANGUAGE_VARIABLE, value)
    except ValueError as err:
        warnings.warn(f"{err}; the library speaks English", stacklevel=2)
        return SOURCE_LANGUAGE


_current = _from_environment()


def set_language(code: str) -> None:
    """Speak ``code`` from now on: an edition code such as ``"en"``, ``"pt-BR"``, ``"zh-CN"`` or ``"ru"`` (gettext's
    ``"pt_BR"`` is accepted too).

    Every message the library shows afterwards (checks' verdicts and hints, tables' headers, figures' titles and
    labels, printed lines, the diagrams of ``show_diagram``) is in that language, and matplotlib draws with the fonts
    it needs (``mha_lib.fonts``: Chinese glyphs for ``"zh-CN"``). ValueError for a language the
    library has no catalog for.
    """
    _set("code", code)


def _set(name: str, code: object) -> None:
    """``set_language`` for a caller whose argument has another name (``setup(language=...)``)."""
    _switch(_resolve(name, code))


def _switch(code: str) -> None:
    """Speak ``code`` (already resolved), and give matplotlib the fonts its figures need (``mha_lib.fonts``)."""
    global _current
    _current = code
    use_fonts_for(code)


def get_language() -> str:
    """The edition code the library speaks now (``"en"`` unless set, or ``MHA_LANGUAGE`` named another)."""
    return _current


@contextlib.contextmanager
def language(code: str) -> Iterator[None]:
    """Speak ``code`` inside the ``with`` block only; the language before it comes back after (even on an error)."""
    before = _current
    set_language(code)
    try:
        yield
    finally:
        _switch(before)


def translate(message: str) -> str:
    """``message`` in the current language (itself in English, or when its catalog lacks it); ``_`` for short."""
    return _translations(_current).gettext(message)


_ = translate  # gettext's conventional short name, which the catalog tool looks for


use_fonts_for(_current)  # MHA_LANGUAGE=zh-CN: the Chinese font from the start


def ngettext(singular: str, plural: str, n: int) -> str:
    """``singular`` or ``plural`` as ``n`` asks, in the current language (whose catalog knows its plural rule)."""
    return _translations(_current).ngettext(singular, plural, n)


def N_(message: str) -> str:  # noqa: N802 - gettext's name for a marker
    """``message`` itself, marked for the catalog: a data key (a table's column name) that stays English as data.

    Code indexes such a key (``scores["previous token"]``), so it never changes; a figure that shows it as a word
    (a title, a tick label) asks ``key_name(key)`` for it in the current language.
    """
    return message


def key_name(key: object) -> str:
    """``str(key)`` as a word in the current language: its translation when it was marked with ``N_``, else itself."""
    return _translations(_current).gettext(str(key))
