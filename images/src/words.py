"""The diagrams' words in each edition's language: ``_("text")`` in a figure script, ``set_language`` in make_figures.

The scripts write their words in English; ``locale/<gettext>/images.po`` (``locale/pt_BR/images.po``) translates
them. The catalog is a catalog of its own, beside the notebooks' catalogs, not the library's: the words are read
here, at drawing time, and what ships is the drawn PNG (``images/<code>/<name>.png``, which ``show_diagram``
picks); ``mha_lib`` never needs them. ``make_figures.py`` draws every figure once per language that has a catalog,
and ``tests/test_images.py`` fails when a word of a script has no translation.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import polib

from mha_lib.fonts import use_fonts_for

ROOT = Path(__file__).resolve().parents[2]
LOCALE = ROOT / "locale"
SOURCE = "en"
CATALOG = "images.po"

_current = SOURCE


def languages() -> list[str]:
    """``"en"`` and the edition code of each ``locale/<gettext>/images.po`` (``pt_BR`` -> ``pt-BR``)."""
    return [SOURCE, *sorted(p.parent.name.replace("_", "-") for p in LOCALE.glob(f"*/{CATALOG}"))]


def catalog(code: str) -> Path:
    """The catalog of ``code``: ``locale/pt_BR/images.po`` for ``pt-BR``."""
    return LOCALE / code.replace("-", "_") / CATALOG


@cache
def _translations(code: str) -> dict[str, str]:
    po = polib.pofile(str(catalog(code)), wrapwidth=0)
    return {e.msgid: e.msgstr for e in po if e.translated() and not e.obsolete and "fuzzy" not in e.flags}


def set_language(code: str) -> None:
    """Draw in ``code`` from now on (one of ``languages()``)."""
    global _current
    if code not in languages():
        raise ValueError(f"code must be one of the diagrams' languages ({', '.join(languages())}), got {code!r}")
    _current = code
    use_fonts_for(code)  # the Chinese diagrams' glyphs (mha_lib.fonts)


def _(message: str) -> str:
    """``message`` in the current language (itself in English or when the catalog lacks it)."""
    return message if _current == SOURCE else _translations(_current).get(message, message)
