"""Static diagrams for notebook 09: a gate on every head."""

from __future__ import annotations

from drawing import arrow, box, canvas
from matplotlib.figure import Figure
from words import _


def head_gates() -> Figure:
    """Each head's output is multiplied by its gate g_i before the concatenation and W_O."""
    fig, ax = canvas((7.6, 3.3), (0, 10), (-0.6, 4.1))
    gates = [1, 1, 0, 1]
    for i, g in enumerate(gates):
        y = 3.6 - i * 0.95
        box(ax, 1.0, y, 1.6, 0.6, _("head {i}").format(i=i), face="#dbe9f6" if g else "#eeeeee", rounding=0.1)
        arrow(ax, (1.9, y), (3.0, y), head=10)
        ax.text(3.45, y, f"$\\times\\, g_{i} = {g}$", ha="center", va="center", fontsize=11,
                color="#1b6ca8" if g else "#b2182b", fontweight="bold")
        arrow(ax, (3.95, y), (5.0, 2.2), head=10)
    box(ax, 5.85, 2.2, 1.6, 1.4, "concat", face="#f0f0f0", rounding=0.1)
    arrow(ax, (6.75, 2.2), (7.45, 2.2), head=10)
    box(ax, 8.0, 2.2, 1.0, 0.7, "$W_O$", face="#f0f0f0", size=12, rounding=0.1)
    arrow(ax, (8.6, 2.2), (9.5, 2.2), head=10)
    ax.text(5.0, -0.2, _("g = 1: the layer as trained.  g = 0: the head is removed exactly.\n"
            "dL/dg: how much the loss cares about a small change of the head's volume."),
            ha="center", va="center", fontsize=9.5, color="#444444")
    return fig


FIGURES = {"09_head_gates": head_gates}
