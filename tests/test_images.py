"""images/: each PNG is made by a script in images/src/ and up to date; figure 03 shows what notebook 03 computes."""

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


def test_every_png_has_a_generator() -> None:
    registered = set(_figures())
    for png in IMAGES.glob("*.png"):
        assert png.stem in registered, f"{png.name} is not produced by any images/src/figures_*.py"


def test_every_figure_has_its_png_and_a_lock_entry() -> None:
    lock = _make_figures()["read_lock"]()
    for stem in _figures():
        assert (IMAGES / f"{stem}.png").exists(), f"images/{stem}.png is missing: run make images"
        assert stem in lock, f"{stem} is not in images/figures.lock: run make images"
    assert set(lock) == set(_figures()), "images/figures.lock lists a figure no script makes: run make images"


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

