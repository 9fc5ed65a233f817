"""Every figure draws every glyph, in every language: Chinese from the shipped font, the rest from DejaVu Sans.

A glyph a font lacks shows as an empty box. matplotlib warns ("Glyph ... missing from font(s)") for ordinary text,
but not for the words around the ``$...$`` of a label, which it draws with the first font alone: so besides the
warnings these tests read each character of each text against the font that draws it.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import warnings
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager, rcParams  # noqa: E402
from matplotlib.ft2font import FT2Font  # noqa: E402

from mha_lib import i18n  # noqa: E402
from mha_lib.fonts import NEEDS_CJK, register  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import cjk_font  # noqa: E402
from editions import TRANSLATED  # noqa: E402

_MATH = re.compile(r"(?<!\\)\$.*?(?<!\\)\$")


@functools.cache  # read once: reading the Chinese font again for every text took 13 s
def _charmap(family: str) -> frozenset[int]:
    return frozenset(FT2Font(font_manager.findfont(family, fallback_to_default=False)).get_charmap())


def boxes(text: str, families: list[str]) -> list[str]:
    """The characters of ``text`` that would draw as boxes with ``families`` (matplotlib's fallback order): outside
    maths any of the families may draw a character; in a text with maths the words around it take the first only."""
    has_maths = len(_MATH.findall(text)) > 0
    words = _MATH.sub("", text)
    maps = [_charmap(f) for f in (families[:1] if has_maths else families)]
    return sorted({c for c in words if not c.isspace() and not any(ord(c) in m for m in maps)})


def _families() -> list[str]:
    return ["DejaVu Sans" if f == "sans-serif" else f for f in rcParams["font.family"]]


def test_the_shipped_font_has_every_character_of_the_chinese_catalogs() -> None:
    assert cjk_font.missing() == [], "run python tools/cjk_font.py"


def test_the_font_is_simplified_chinese_and_licensed() -> None:
    assert register() == "Noto Sans CJK SC"
    assert "SIL OPEN FONT LICENSE Version 1.1" in (ROOT / "mha_lib" / "fonts" / "OFL.txt").read_text()
    assert cjk_font.FONT.stat().st_size < 2_000_000


@pytest.mark.parametrize("code", ["zh-CN", "ru", "pt-BR"])
def test_a_figure_in_the_language_draws_every_glyph(code: str) -> None:
    title = {"zh-CN": "多头注意力：头 0 的权重 $\\sqrt{d_k}$，键 −1", "ru": "Веса внимания головы 0 $\\sqrt{d_k}$",
             "pt-BR": "Pesos de atenção da cabeça 0 $\\sqrt{d_k}$"}[code]
    with i18n.language(code), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.set_title(title)
        ax.set_xlabel({"zh-CN": "键", "ru": "ключи", "pt-BR": "chaves"}[code])
        ax.plot([-1, 0], [0, 1], label={"zh-CN": "查询", "ru": "запросы", "pt-BR": "consultas"}[code])
        ax.legend()
        fig.canvas.draw()
        families = _families()
        texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
        plt.close(fig)
    assert not [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert {t: boxes(t, families) for t in texts if boxes(t, families)} == {}


def test_the_chinese_font_comes_first_in_chinese_only_and_goes_with_it() -> None:
    before = list(rcParams["font.family"])
    with i18n.language("zh-CN"):
        assert rcParams["font.family"][0] == "Noto Sans CJK SC"
        with i18n.language("ru"):
            assert list(rcParams["font.family"]) == before
        assert rcParams["font.family"][0] == "Noto Sans CJK SC"
    assert list(rcParams["font.family"]) == before


def test_without_the_chinese_font_the_check_sees_the_boxes() -> None:
    assert boxes("头 0 $x$", ["DejaVu Sans"]) == ["头"]
    assert boxes("头 0", ["DejaVu Sans", "Noto Sans CJK SC"]) == []
    assert boxes("头 0 $x$", ["DejaVu Sans", "Noto Sans CJK SC"]) == ["头"]  # the words around maths: first font


@pytest.mark.parametrize("edition", [e for e in TRANSLATED if e.code in NEEDS_CJK or e.code == "ru"],
                         ids=lambda e: e.code)
def test_every_text_the_editions_figures_drew_has_its_glyphs(edition) -> None:
    """What each figure of the edition's own run wrote (``<code>/figure-text.json``), against its fonts."""
    register()
    path = ROOT / edition.code / "figure-text.json"
    if not path.exists():
        pytest.skip(f"{path.name} is written by the edition's run (make translations)")
    families = ["Noto Sans CJK SC", "DejaVu Sans"] if edition.code in NEEDS_CJK else ["DejaVu Sans"]
    found = {f"{name} {cell}": [t for t in texts if boxes(t, families)]
             for name, cells in json.loads(path.read_text(encoding="utf-8")).items() for cell, texts in cells.items()}
    assert {k: v for k, v in found.items() if v} == {}


@pytest.mark.parametrize("edition", TRANSLATED, ids=lambda e: e.code)
def test_no_committed_output_of_the_edition_warns_of_a_missing_glyph(edition) -> None:
    """The edition's own run drew no box: matplotlib's "Glyph ... missing from font(s)" and mathtext's "does not have
    a glyph" are in no output of its notebooks (strict nbval then fails on any new one)."""
    import nbformat

    found = []
    for path in sorted(edition.notebooks.glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
                text = out.get("text", "") + json.dumps(out.get("data", {}))
                if "missing from font" in text or "does not have a glyph" in text:
                    found.append(f"{path.name} {cell.id}")
    assert not found, found
