"""Regenerate the figures in images/: ``python images/src/make_figures.py [name ...]`` (``make images``).

Each ``images/src/figures_*.py`` module defines ``FIGURES``, a dict from a file stem to a function that
returns a ``matplotlib.figure.Figure``; the figure is written to ``images/<stem>.png``. The shared boxes,
arrows and grids live in ``images/src/drawing.py``. ``images/`` itself holds only the PNGs (and the lock):
it ships inside the package as ``mha_lib.images``, so ``mha_lib.notebook.show_diagram`` finds them anywhere.

Every figure is drawn once per language: in English to ``images/<stem>.png``, and in each edition that has a
catalog ``locale/<gettext>/images.po`` to ``images/<code>/<stem>.png`` (``images/pt-BR/04_mask_polarity.png``).
The scripts write their words as ``_("...")`` (``images/src/words.py``); ``show_diagram`` shows the picture of the
library's language. ``python images/src/make_figures.py --catalogs`` brings the catalogs in step with the scripts
(new words empty, gone ones obsolete) before a translator fills them.

``images/figures.lock`` records, per figure and language (``pt-BR/04_mask_polarity``), a fingerprint of what the
script draws (texts, shapes, colours, image data: not pixels, so it does not depend on the font renderer) and the
SHA-256 of the PNG written with it.
``tests/test_images.py`` recomputes both: a script changed without ``make images``, or a PNG edited or missing,
fails the test.
"""

from __future__ import annotations

import hashlib
import runpy
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, FancyArrowPatch, Patch, Rectangle
from matplotlib.text import Text

HERE = Path(__file__).resolve().parent  # images/src: the scripts
IMAGES = HERE.parent  # images: the PNGs
LOCK = IMAGES / "figures.lock"


def registry() -> dict[str, Callable[[], Figure]]:
    """Every figure function, by file stem, from every ``figures_*.py`` module."""
    if str(HERE) not in sys.path:  # the scripts import their shared helpers: ``from drawing import box, arrow``
        sys.path.insert(0, str(HERE))
    figures: dict[str, Callable[[], Figure]] = {}
    for module in sorted(HERE.glob("figures_*.py")):
        for stem, make in runpy.run_path(str(module))["FIGURES"].items():
            if stem in figures:
                raise ValueError(f"figure {stem!r} is defined twice (second time in {module.name})")
            figures[stem] = make
    return figures


def _round(values: object) -> str:
    return np.array2string(np.round(np.asarray(values, dtype=float), 3), threshold=10**9, separator=",")


def _describe(artist: object, placed_by_layout: set[int]) -> str | None:
    """One line for an artist that shows something, in data terms; None for the rest."""
    if isinstance(artist, Text):
        if not artist.get_text() or not artist.get_visible():
            return None
        # titles, axis labels and tick labels are placed by the layout engine: their text counts, not where it is
        where = "" if id(artist) in placed_by_layout else f" at {_round(artist.get_position())}"
        return (f"text {artist.get_text()!r}{where} size {artist.get_fontsize():g} "
                f"{to_hex(artist.get_color())} {artist.get_ha()}/{artist.get_va()} {artist.get_fontweight()}")
    if isinstance(artist, AxesImage):
        data = np.ma.filled(np.ma.asarray(artist.get_array(), dtype=float), np.nan)
        return f"image {_round(data)} {artist.get_cmap().name} clim {_round(artist.get_clim())}"
    if isinstance(artist, Line2D):
        return f"line {_round(artist.get_xydata())} {to_hex(artist.get_color())} width {artist.get_linewidth():g}"
    if isinstance(artist, FancyArrowPatch):
        ends = getattr(artist, "_posA_posB", None)
        return f"arrow {_round(ends)} {to_hex(artist.get_edgecolor(), keep_alpha=True)} {artist.get_linewidth():g}"
    if isinstance(artist, Patch):
        if isinstance(artist, Circle):
            shape = f"{_round(artist.get_center())} r {artist.get_radius():g}"
        elif hasattr(artist, "get_width"):  # Rectangle, FancyBboxPatch
            shape = _round([artist.get_x(), artist.get_y(), artist.get_width(), artist.get_height()])
        else:
            return None
        kind = "rect" if isinstance(artist, Rectangle) else type(artist).__name__
        return (f"{kind} {shape} {to_hex(artist.get_facecolor(), keep_alpha=True)} "
                f"{to_hex(artist.get_edgecolor(), keep_alpha=True)}")
    if isinstance(artist, Axes) and artist.get_visible():
        ticks = f"xticks {_round(artist.get_xticks())} yticks {_round(artist.get_yticks())}"
        return f"axes {_round(artist.get_xlim())} {_round(artist.get_ylim())} {ticks}"
    return None


def _placed_by_layout(fig: Figure) -> set[int]:
    texts = []
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        texts += ax.get_xticklabels() + ax.get_yticklabels()
    return {id(t) for t in texts}


def fingerprint(fig: Figure) -> str:
    """A short hash of everything ``fig`` draws, independent of the font renderer and of memory addresses."""
    lines = [f"figure {_round(fig.get_size_inches())}"]
    placed = _placed_by_layout(fig)
    lines += [line for artist in fig.findobj() if (line := _describe(artist, placed)) is not None]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def read_lock() -> dict[str, tuple[str, str]]:
    """``{stem: (fingerprint, png_sha256)}`` from images/figures.lock."""
    if not LOCK.exists():
        return {}
    rows = (line.split() for line in LOCK.read_text().splitlines() if line.strip() and not line.startswith("#"))
    return {stem: (print_, png) for stem, print_, png in rows}


def png_sha(path: Path) -> str:
    """The SHA-256 of a PNG file, shortened."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def entry(code: str, stem: str) -> str:
    """The figure's name in the lock and under images/: ``04_mask_polarity``, ``pt-BR/04_mask_polarity``."""
    return stem if code == "en" else f"{code}/{stem}"


def draw(code: str, stem: str) -> Figure:
    """Figure ``stem`` with its words in language ``code``."""
    import words  # images/src/, on the path once registry() ran

    figures = registry()
    words.set_language(code)
    try:
        return figures[stem]()
    finally:
        words.set_language("en")


def update_catalogs() -> None:
    """Bring every ``locale/<gettext>/images.po`` in step with the words of the scripts (new ones empty)."""
    import polib

    sys.path.insert(0, str(HERE.parents[1] / "tools"))
    import library_catalog
    import words

    registry()
    messages = library_catalog.extract(HERE)
    for code in words.languages()[1:]:
        path = words.catalog(code)
        po = polib.pofile(str(path), wrapwidth=0)
        library_catalog.merge(po, messages)
        po.save(str(path))
        todo = sum(1 for e in po if not e.obsolete and not e.translated())
        print(f"{path.relative_to(HERE.parents[1])}: {len(messages)} words, {todo} to translate")


def main(names: list[str]) -> int:
    if names == ["--catalogs"]:
        update_catalogs()
        return 0
    figures = registry()
    import words

    lock = read_lock()
    for code in words.languages():
        for stem in names or sorted(figures):
            fig = draw(code, stem)
            drawn = fingerprint(fig)  # before drawing: saving lays the figure out and adds tick labels
            path = IMAGES / f"{entry(code, stem)}.png"
            path.parent.mkdir(exist_ok=True)
            fig.savefig(path, dpi=100, metadata={"Software": None})
            lock[entry(code, stem)] = (drawn, png_sha(path))
            print(f"images/{entry(code, stem)}.png")
    known = {entry(code, stem) for code in words.languages() for stem in figures}
    lock = {name: row for name, row in lock.items() if name in known}
    header = "# stem  fingerprint-of-the-drawing  sha256-of-the-png   (written by images/src/make_figures.py)\n"
    LOCK.write_text(header + "".join(f"{stem} {p} {png}\n" for stem, (p, png) in sorted(lock.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
