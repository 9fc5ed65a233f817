"""images/: each PNG is made by a script in images/src/ and up to date, in English and in each edition's language
(images/pt-BR/, words from locale/pt_BR/images.po); figure 03 shows what notebook 03 computes."""

from __future__ import annotations

import re
import runpy
from functools import cache
from pathlib import Path

import nbformat
import pytest
from matplotlib.figure import Figure

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "images"
SCRIPTS = IMAGES / "src"


@cache
def _make_figures() -> dict:
    """The namespace of images/src/make_figures.py (registry, fingerprint, read_lock, png_sha)."""
    return runpy.run_path(str(SCRIPTS / "make_figures.py"), run_name="images")


@cache
def _figures() -> dict[str, Figure]:
    return {stem: make() for stem, make in _make_figures()["registry"]().items()}


def _languages() -> list[str]:
    """``en`` and every edition with a catalog of the diagrams' words (``locale/<gettext>/images.po``)."""
    _make_figures()["registry"]()  # puts images/src/ on sys.path
    import words

    return words.languages()


def _editions() -> list[str]:
    """The editions of locale/editions.toml other than English: the diagrams are drawn in each of them."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
        import tomli as tomllib

    return [row["code"] for row in tomllib.loads((ROOT / "locale" / "editions.toml").read_text())["edition"]
            if row["code"] != "en"]


EDITIONS = _editions()


@cache
def _drawn(code: str) -> dict[str, Figure]:
    """Every figure with its words in ``code``."""
    tools = _make_figures()
    return {stem: tools["draw"](code, stem) for stem in tools["registry"]()}


def test_the_diagrams_are_drawn_in_every_editions_language() -> None:
    assert _languages() == ["en", *EDITIONS]
    for code in EDITIONS:
        folder = IMAGES / code
        assert {p.stem for p in folder.glob("*.png")} == set(_figures()), f"images/{code}/ lacks a figure: make images"


@pytest.mark.parametrize("code", EDITIONS)
def test_every_word_of_a_diagram_is_translated(code: str) -> None:
    import sys

    import polib

    sys.path.insert(0, str(ROOT / "tools"))
    import library_catalog
    import words

    words_used = library_catalog.extract(SCRIPTS)
    po = {e.msgid: e for e in polib.pofile(str(words.catalog(code))) if not e.obsolete}
    missing = [m for m in words_used if m not in po or not po[m].translated() or "fuzzy" in po[m].flags]
    assert not missing, f"{words.catalog(code)}: translate {missing[:5]} (python images/src/make_figures.py --catalogs)"


@pytest.mark.parametrize("stem", sorted(_figures()))
@pytest.mark.parametrize("code", EDITIONS)
def test_an_editions_png_is_up_to_date_and_in_its_language(code: str, stem: str) -> None:
    tools = _make_figures()
    fig = _drawn(code)[stem]
    name = tools["entry"](code, stem)
    drawn, png = tools["read_lock"]()[name]
    assert tools["fingerprint"](fig) == drawn, f"images/{name}.png is stale: run make images"
    assert tools["png_sha"](IMAGES / f"{name}.png") == png, f"images/{name}.png was changed by hand: run make images"
    english = {t.get_text() for t in _figures()[stem].findobj(lambda a: hasattr(a, "get_text"))}
    translated = {t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))}
    assert english != translated, f"images/{name}.png has no word of its own language"


def test_every_png_has_a_generator() -> None:
    registered = set(_figures())
    for png in IMAGES.glob("*.png"):
        assert png.stem in registered, f"{png.name} is not produced by any images/src/figures_*.py"


def test_every_figure_has_its_png_and_a_lock_entry() -> None:
    lock = _make_figures()["read_lock"]()
    names = {_make_figures()["entry"](code, stem) for code in _languages() for stem in _figures()}
    for name in names:
        assert (IMAGES / f"{name}.png").exists(), f"images/{name}.png is missing: run make images"
        assert name in lock, f"{name} is not in images/figures.lock: run make images"
    assert set(lock) == names, "images/figures.lock lists a figure no script makes: run make images"


@pytest.mark.parametrize("stem", sorted(_figures()))
def test_png_is_up_to_date_with_its_script(stem: str) -> None:
    tools = _make_figures()
    fig = _figures()[stem]
    assert isinstance(fig, Figure), stem
    drawn, png = tools["read_lock"]()[stem]
    stale = f"images/{stem}.png is stale: its script draws something else now; run make images"
    assert tools["fingerprint"](fig) == drawn, stale
    assert tools["png_sha"](IMAGES / f"{stem}.png") == png, f"images/{stem}.png was changed by hand: run make images"


def test_fingerprint_sees_a_change_in_a_drawing() -> None:
    fingerprint = _make_figures()["fingerprint"]
    fig = _make_figures()["registry"]()["09_head_gates"]()
    before = fingerprint(fig)
    fig.axes[0].texts[0].set_text("head 9")
    assert fingerprint(fig) != before


def test_soft_lookup_figure_shows_the_row_notebook_03_computes() -> None:
    # the figure computes the query "gato" with mha_lib; notebook 03 prints the same row term by term
    texts = [t.get_text() for t in _figures()["03_soft_lookup"].axes[0].texts]  # (puts images/src/ on sys.path)
    row = runpy.run_path(str(SCRIPTS / "figures_03.py"))["gato_row"]()
    nb = nbformat.read(ROOT / "notebooks" / "03_scaled_dot_product_attention.ipynb", as_version=4)
    printed = [
        out["text"] for cell in nb.cells if cell.cell_type == "code"
        for out in cell.get("outputs", []) if "* v(" in out.get("text", "")
    ]
    assert len(printed) == 1, "notebook 03 prints the weighted values of gato once"
    weights = [float(w) for w in re.findall(r"^(\d\.\d+) \* v\(", printed[0], flags=re.M)]
    total = re.search(r"sum = \[(-?\d\.\d+), (-?\d\.\d+)\]", printed[0])
    assert weights == [round(w, 3) for w in row["weights"]]
    assert [float(total[1]), float(total[2])] == [round(o, 3) for o in row["output"]]
    assert all(f"{w:.2f}" in texts for w in row["weights"]), "the figure writes each weight"

