"""Regenerate the figures in images/: ``python images/make_figures.py [name ...]`` (``make images``).

Each ``images/figures_*.py`` module defines ``FIGURES``, a dict from a file stem to a function that
returns a ``matplotlib.figure.Figure``; the figure is written to ``images/<stem>.png``.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable
from pathlib import Path

from matplotlib.figure import Figure

HERE = Path(__file__).resolve().parent


def registry() -> dict[str, Callable[[], Figure]]:
    """Every figure function, by file stem, from every ``figures_*.py`` module."""
    figures: dict[str, Callable[[], Figure]] = {}
    for module in sorted(HERE.glob("figures_*.py")):
        for stem, make in runpy.run_path(str(module))["FIGURES"].items():
            if stem in figures:
                raise ValueError(f"figure {stem!r} is defined twice (second time in {module.name})")
            figures[stem] = make
    return figures


def main(names: list[str]) -> int:
    figures = registry()
    for stem in names or sorted(figures):
        fig = figures[stem]()
        fig.savefig(HERE / f"{stem}.png", dpi=100, metadata={"Software": None})
        print(f"images/{stem}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
