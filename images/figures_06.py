"""Static diagrams for notebook 06: where each field of ``mha.trace(x)`` sits in the layer."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

TRACE_COLOUR = "#fde0d2"  # a box the trace keeps
STEP_COLOUR = "#e4ecf7"  # a step (a weight matrix or an operation)


def _box(ax, x: float, y: float, w: float, h: float, title: str, detail: str, colour: str) -> None:
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                facecolor=colour, edgecolor="#555555", linewidth=1.0))
    ax.text(x, y + 0.12, title, ha="center", va="center", fontsize=9.5, family="monospace", fontweight="bold")
    ax.text(x, y - 0.17, detail, ha="center", va="center", fontsize=8, color="#333333")


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], label: str = "") -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=11, color="#555555", linewidth=1.0,
                                 shrinkA=2, shrinkB=2))
    if label:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.13, label, ha="center", va="bottom",
                fontsize=7.5, color="#1f4e9c", family="monospace")


def trace_map() -> Figure:
    """The layer as a flow of boxes; the pink ones are the fields of ``AttentionTrace``."""
    fig = Figure(figsize=(11, 3.6))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 11)
    ax.set_ylim(0, 3.6)
    ax.axis("off")
    w, h = 1.75, 0.62
    top, bottom = 2.45, 0.95
    _box(ax, 0.65, top, 1.0, h, "x", "(B, T, d_in)", "#ffffff")
    ax.add_patch(FancyBboxPatch((2.6, top - 0.55), 1.7, 1.1, boxstyle="round,pad=0.02,rounding_size=0.08",
                                facecolor=TRACE_COLOUR, edgecolor="#555555", linewidth=1.0))
    ax.text(3.45, top + 0.2, "queries\nkeys\nvalues", ha="center", va="center", fontsize=9.5, family="monospace",
            fontweight="bold", linespacing=1.1)
    ax.text(3.45, top - 0.38, "(B, h, T, d_head) each", ha="center", va="center", fontsize=8, color="#333333")
    _arrow(ax, (1.15, top), (2.6, top), "W_query, W_key,\nW_value, then\nsplit into h heads")
    _box(ax, 6.15, top, 1.6, h, "scores", "(B, h, Tq, Tk)", TRACE_COLOUR)
    _arrow(ax, (4.3, top), (5.35, top), "q·kᵀ/√d_head")
    _box(ax, 9.3, top, w, h, "weights", "(B, h, Tq, Tk)", TRACE_COLOUR)
    _arrow(ax, (6.95, top), (8.42, top), "softmax over\nvisible keys")
    _box(ax, 7.68, 1.55, 1.2, 0.5, "mask", "", TRACE_COLOUR)
    ax.text(7.68, 1.4, "True = may attend", ha="center", va="center", fontsize=7, color="#333333")
    _arrow(ax, (7.68, 1.8), (7.68, top - 0.03), "")
    _box(ax, 9.3, bottom - 0.35, w, h, "head_context", "(B, h, Tq, d_head)", TRACE_COLOUR)
    _arrow(ax, (9.3, top - h / 2), (9.3, bottom - 0.35 + h / 2), "")
    ax.text(9.38, 1.45, "weights @ values\n(each head alone)", ha="left", va="center", fontsize=7.5,
            color="#1f4e9c", family="monospace")
    _box(ax, 5.95, bottom - 0.35, w, h, "concat", "(B, Tq, d_out)", TRACE_COLOUR)
    _arrow(ax, (8.42, bottom - 0.35), (6.83, bottom - 0.35), "heads side\nby side")
    _box(ax, 2.6, bottom - 0.35, 2.3, h, "output", "(B, Tq, d_out), = mha(x)", TRACE_COLOUR)
    _arrow(ax, (5.07, bottom - 0.35), (3.75, bottom - 0.35), "out_proj\n(mixes heads)")
    ax.text(0.15, 3.45, "pink: a field of  trace = mha.trace(x)      blue: the step from one field to the next",
            ha="left", va="center", fontsize=8, color="#555555")
    return fig


FIGURES = {"06_trace_map": trace_map}
