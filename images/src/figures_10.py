"""Static diagram for notebook 10 (efficient attention): the whole weights table versus blocks of keys."""

from __future__ import annotations

from drawing import arrow, canvas, cells
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from words import _

BLUE = "#4C72B0"
ORANGE = "#DD8452"
GREEN = "#55A868"
GREY = "#6B6B6B"
LIGHT = "#F2F2F2"
N = 8  # cells per side of the drawn T x T table
BLOCK = 2  # keys per block in the tiled panel


def _table(ax, x0, y0, size, fill):
    """An N x N table of cells with lower-left corner (x0, y0), query rows top to bottom, key columns."""
    cells(ax, x0, y0, N, N, fill, cell=size / N, edge="#BBBBBB", linewidth=0.6)
    ax.add_patch(Rectangle((x0, y0), size, size, fill=False, edgecolor=GREY, linewidth=1.2))
    ax.text(x0 + size / 2, y0 + size + 0.25, _("keys $j$ $\\rightarrow$"), ha="center", fontsize=10, color=GREY)
    ax.text(x0 - 0.15, y0 + size / 2, _("queries $i$\n$\\downarrow$"), ha="right", va="center", fontsize=10,
            color=GREY)


def tiled_softmax_diagram() -> Figure:
    """Left: the explicit path stores all T x T weights. Right: the tiled path holds one block and 3 running numbers."""
    fig, ax = canvas((12, 5.2), (-0.3, 17.7), (-1.3, 6.6))
    size = 4.2

    # Left: the explicit path.
    ax.text(3.0, 6.2, _("Explicit: the whole table"), ha="center", fontsize=13, weight="bold")
    _table(ax, 0.9, 0.9, size, lambda i, j: BLUE if j <= i else LIGHT)
    ax.text(3.0, 0.6, _("blue: a query may attend (causal), grey: masked.\nScores, masked scores and weights:\n"
            "several $B \\cdot h \\cdot T^2$ tables in memory"), ha="center", va="top", fontsize=10.5)

    # Right: the tiled path, the third block of keys in progress.
    x0 = 8.6
    ax.text(x0 + size / 2 + 0.9, 6.2, _("Tiled: one block of keys at a time"), ha="center", fontsize=13, weight="bold")
    ax.text(x0 + size / 2, 5.75, _("(causal: grey keys come after the query and add nothing)"), ha="center",
            fontsize=9.5, color=GREY)
    current = 2

    def fill(i, j):
        block = j // BLOCK
        if j > i:
            return LIGHT if block == current else None
        if block < current:
            return "#D9E3F0"  # done: folded into the running sums, then dropped
        return ORANGE if block == current else None

    _table(ax, x0, 0.9, size, fill)
    cell = size / N
    ax.add_patch(Rectangle((x0 + current * BLOCK * cell, 0.9), BLOCK * cell, size, fill=False, edgecolor=ORANGE,
                           linewidth=2.4))
    arrow(ax, (x0 + current * BLOCK * cell, 0.55), (x0 + size, 0.55), colour=ORANGE, width=1.4, head=12)
    ax.text(x0 + size / 2, 0.1, _("the block sweeps left to right"), ha="center", va="top", fontsize=10.5,
            color=ORANGE)
    ax.text(x0 + size / 2, -0.45, _("pale blue: blocks already folded into the running numbers, then freed"),
            ha="center", va="top", fontsize=9.5, color=GREY)

    # The running state kept per query row.
    sx = x0 + size + 0.35
    labels = [("$m_i$", GREEN), ("$\\ell_i$", GREEN), ("$\\mathbf{o}_i$", BLUE)]  # running max, sum, output
    for k, (symbol, colour) in enumerate(labels):
        ax.add_patch(Rectangle((sx + k * 0.62, 0.9), 0.5, size, facecolor=colour, alpha=0.18, edgecolor=colour))
        ax.text(sx + k * 0.62 + 0.25, 0.9 + size + 0.25, symbol, ha="center", fontsize=12, color=colour)
    ax.text(sx + 2.1, 3.0, _("per query:\n$m$, $\\ell$ and $\\mathbf{o}$,\nrescaled by\n$\\exp(m - m')$\n"
            "when a block\nraises the max\nfrom $m$ to $m'$"), ha="left", va="center", fontsize=10)
    return fig


FIGURES = {"10_tiled_softmax": tiled_softmax_diagram}
