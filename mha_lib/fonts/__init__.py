"""The fonts the figures need beyond matplotlib's own: Chinese glyphs for the zh-CN edition.

matplotlib draws with DejaVu Sans, which has Latin, Greek and Cyrillic letters (the English, Portuguese and Russian
figures) but no Han characters, and Colab, Binder and most laptops have no CJK font that matplotlib finds: Chinese
words would show as empty boxes. The package therefore ships ``NotoSansCJKsc-Regular-subset.otf``: the characters of
the Chinese catalogs and the 3,755 common ones, written by ``tools/cjk_font.py`` (SIL Open Font License 1.1,
``OFL.txt``). :func:`use_fonts_for` puts it first for Chinese: matplotlib's text then takes every glyph from it and
the few it lacks (✓, ✗) from DejaVu Sans, glyph by glyph; a label's mathematics stays in the mathematics
font, and the words around the mathematics are drawn with the first font alone, which is why it must be first.
``mha_lib.i18n.set_language`` calls it; it costs about 10 ms and needs no restart
(``matplotlib.font_manager.FontManager.addfont``).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

__all__ = ["CJK_FONT", "NEEDS_CJK", "register", "use_fonts_for"]

CJK_FONT = "NotoSansCJKsc-Regular-subset.otf"
"""The shipped subset of Noto Sans CJK SC, in this folder."""
NEEDS_CJK = frozenset({"zh-CN"})
"""The languages (edition codes) whose figures need the CJK font first."""

_before: list[str] = []  # the font families in use before a CJK language put its font first


@cache
def register() -> str:
    """Add the shipped CJK font to matplotlib's fonts (idempotent); return its family name."""
    from matplotlib import font_manager

    path = str(files("mha_lib.fonts").joinpath(CJK_FONT))
    font_manager.fontManager.addfont(path)
    return font_manager.FontProperties(fname=path).get_name()


def use_fonts_for(language: str) -> None:
    """Make matplotlib's default font family right for ``language`` (an edition code such as ``"zh-CN"``).

    For a language of :data:`NEEDS_CJK`, the shipped CJK font first, then the families in use (DejaVu Sans for what it
    lacks); for any other, the families in use before (a figure setting its own ``fontfamily`` is left alone).
    Imports matplotlib only when something changes: a CJK language, or the way back from one.
    """
    if language not in NEEDS_CJK and not _before:  # nothing was changed, nothing to put back
        return
    from matplotlib import rcParams

    if language in NEEDS_CJK:
        name = register()
        if not _before:
            _before.extend(rcParams["font.family"])
        rcParams["font.family"] = [name, *[f for f in _before if f != name]]
    else:
        rcParams["font.family"] = list(_before)
        _before.clear()
