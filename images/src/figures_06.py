"""Static diagrams for notebook 06: where each field of ``mha.trace(x)`` sits in the layer."""

from __future__ import annotations

from drawing import arrow, box, canvas
from matplotlib.figure import Figure
from words import _

TRACE_COLOUR = "#fde0d2"  # a box the trace keeps


def _field(ax, x: float, y: float, w: float, h: float, title: str, detail: str, colour: str = TRACE_COLOUR) -> None:
    """A field of the trace: its name in bold monospace, its shape under it."""
    box(ax, x, y, w, h, title, detail=detail, face=colour, size=11, weight="bold", family="monospace")


def trace_map() -> Figure:
    """The layer as a flow of boxes; the pink ones are the fields of ``AttentionTrace``."""
    fig, ax = canvas((11, 3.6), (0, 11), (0, 3.6))
    w, h = 1.75, 0.62
    top, bottom = 2.45, 0.95
    _field(ax, 0.65, top, 1.0, h, "x", "(B, T, d_in)", "#ffffff")
    box(ax, 3.45, top, 1.7, 1.1, face=TRACE_COLOUR)
    ax.text(3.45, top + 0.2, "queries\nkeys\nvalues", ha="center", va="center", fontsize=11, family="monospace",
            fontweight="bold", linespacing=1.1)
    ax.text(3.45, top - 0.38, _("(B, h, T, d_head) each"), ha="center", va="center", fontsize=9.5, color="#333333")
    arrow(ax, (1.15, top), (2.6, top), width=1.0, label=_("W_query, W_key,\nW_value, then\nsplit into heads"))
    _field(ax, 6.15, top, 1.6, h, "scores", "(B, h, Tq, Tk)")
    arrow(ax, (4.3, top), (5.35, top), width=1.0, label="q·kᵀ\n/ √d_head")
    _field(ax, 9.3, top, w, h, "weights", "(B, h, Tq, Tk)")
    arrow(ax, (6.95, top), (8.42, top), width=1.0, label=_("softmax over\nvisible keys"))
    _field(ax, 7.68, 1.55, 1.3, 0.5, "mask", _("True = may attend"))
    arrow(ax, (7.68, 1.8), (7.68, top - 0.03), width=1.0)
    _field(ax, 9.3, bottom - 0.35, w, h, "head_context", "(B, h, Tq, d_head)")
    arrow(ax, (9.3, top - h / 2), (9.3, bottom - 0.35 + h / 2), width=1.0)
    ax.text(9.38, 1.45, _("weights @ values\n(each head alone)"), ha="left", va="center", fontsize=8.5,
            color="#1f4e9c", family="monospace")
    _field(ax, 5.95, bottom - 0.35, w, h, "concat", "(B, Tq, d_out)")
    arrow(ax, (8.42, bottom - 0.35), (6.83, bottom - 0.35), width=1.0, label=_("heads side\nby side"))
    _field(ax, 2.6, bottom - 0.35, 2.3, h, "output", "(B, Tq, d_out), = mha(x)")
    arrow(ax, (5.07, bottom - 0.35), (3.75, bottom - 0.35), width=1.0, label=_("out_proj\n(mixes heads)"))
    ax.text(0.15, 3.45, _("pink: a field of  trace = mha.trace(x)      blue: the step from one field to the next"),
            ha="left", va="center", fontsize=10, color="#555555")
    return fig


FIGURES = {"06_trace_map": trace_map}
