"""Drawing helpers for the figure scripts in images/: a blank canvas, rounded boxes, arrows, grids of cells.

Everything is drawn in data coordinates on an axes without frame or ticks, so a script places its boxes
on a grid it chooses with ``canvas(figsize, xlim, ylim)``. One look everywhere: dark grey outlines and
arrows, text centred in its box.
"""

from __future__ import annotations

from collections.abc import Callable

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

GREY = "#555555"  # outlines and arrows
LIGHT = "#F2F2F2"  # a neutral box
HEAD_COLOURS = ["#4C72B0", "#DD8452", "#55A868", "#C44E52"]  # head 0, 1, 2, 3 in every figure of the series


def canvas(figsize: tuple[float, float], xlim: tuple[float, float], ylim: tuple[float, float]) -> tuple[Figure, Axes]:
    """A figure with one frameless axes filling it, spanning ``xlim`` x ``ylim`` in data units."""
    fig = Figure(figsize=figsize)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.axis("off")
    return fig, ax


def box(
    ax: Axes,
    x: float,
    y: float,
    w: float,
    h: float,
    text: str = "",
    *,
    detail: str = "",
    face: object = LIGHT,
    edge: object = GREY,
    size: float = 10,
    colour: str = "black",
    weight: str = "normal",
    family: str | None = None,
    rounding: float = 0.08,
    linewidth: float = 1.0,
    linestyle: str = "-",
) -> FancyBboxPatch:
    """A rounded ``w`` x ``h`` box centred on ``(x, y)`` with ``text``; ``detail`` adds a smaller line under it."""
    patch = FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=f"round,pad=0.02,rounding_size={rounding}",
                           facecolor=face, edgecolor=edge, linewidth=linewidth, linestyle=linestyle)
    ax.add_patch(patch)
    text_y = y + 0.2 * h if detail else y
    if text:
        ax.text(x, text_y, text, ha="center", va="center", fontsize=size, color=colour, weight=weight, family=family)
    if detail:
        ax.text(x, y - 0.27 * h, detail, ha="center", va="center", fontsize=size - 1.5, color="#333333")
    return patch


def arrow(
    ax: Axes,
    start: tuple[float, float],
    end: tuple[float, float],
    *,
    colour: str = GREY,
    width: float = 1.2,
    alpha: float = 1.0,
    rad: float = 0.0,
    head: float = 11,
    shrink: float = 2,
    style: str = "-|>",
    zorder: float = 2,
    label: str = "",
    label_size: float = 8.5,
    transform: object = None,
) -> FancyArrowPatch:
    """An arrow from ``start`` to ``end`` (bent by ``rad``); ``label`` is written above its middle in blue."""
    extra = {} if transform is None else {"transform": transform}
    patch = FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=head, color=colour, linewidth=width,
                            alpha=alpha, shrinkA=shrink, shrinkB=shrink, connectionstyle=f"arc3,rad={rad}",
                            zorder=zorder, **extra)
    if transform is None:
        ax.add_patch(patch)
    else:
        ax.figure.add_artist(patch)
    if label:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.13, label, ha="center", va="bottom",
                fontsize=label_size, color="#1f4e9c", family="monospace")
    return patch


def cells(
    ax: Axes,
    x0: float,
    y0: float,
    rows: int,
    cols: int,
    fill: Callable[[int, int], str | None],
    *,
    cell: float = 1.0,
    text: Callable[[int, int], str | None] | None = None,
    text_colour: str | Callable[[int, int], str] = "white",
    size: float = 8,
    weight: str = "normal",
    edge: str = "white",
    linewidth: float = 1.2,
    alpha: float = 1.0,
) -> None:
    """A ``rows`` x ``cols`` grid of square cells, lower-left corner ``(x0, y0)``, row 0 at the TOP (as a matrix).

    ``fill(r, c)`` gives a cell's colour (None = white); ``text(r, c)`` an optional label written in it.
    """
    for r in range(rows):
        for c in range(cols):
            left, bottom = x0 + c * cell, y0 + (rows - 1 - r) * cell
            ax.add_patch(Rectangle((left, bottom), cell, cell, facecolor=fill(r, c) or "white", edgecolor=edge,
                                   linewidth=linewidth, alpha=alpha))
            label = None if text is None else text(r, c)
            if label:
                shade = text_colour(r, c) if callable(text_colour) else text_colour
                ax.text(left + cell / 2, bottom + cell / 2, label, ha="center", va="center", fontsize=size,
                        color=shade, weight=weight)
