"""Static diagrams for notebook 09: a gate on every head."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch


def head_gates() -> Figure:
    """Each head's context is multiplied by its gate g_h before the concatenation and W_o."""
    fig = Figure(figsize=(7.6, 3.0), layout="constrained")
    ax = fig.subplots()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.2)
    ax.axis("off")

    def box(x: float, y: float, w: float, h: float, text: str, fc: str) -> None:
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", fc=fc, ec="#555555"))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=10)

    def arrow(x0: float, y0: float, x1: float, y1: float) -> None:
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=10, lw=1.2,
                                     color="#555555"))

    gates = ["1", "1", "0", "1"]
    for h, g in enumerate(gates):
        y = 3.3 - h * 0.95
        box(0.2, y, 1.6, 0.6, f"head {h}", "#dbe9f6" if g == "1" else "#eeeeee")
        arrow(1.9, y + 0.3, 3.0, y + 0.3)
        ax.text(3.45, y + 0.3, f"x g{h}={g}", ha="center", va="center", fontsize=10,
                color="#b2182b" if g == "0" else "#1b6ca8", fontweight="bold")
        arrow(3.95, y + 0.3, 5.0, 2.1)
    box(5.05, 1.4, 1.6, 1.4, "concat", "#f0f0f0")
    arrow(6.75, 2.1, 7.45, 2.1)
    box(7.5, 1.75, 1.0, 0.7, "W_o", "#f0f0f0")
    arrow(8.6, 2.1, 9.5, 2.1)
    ax.text(7.5, 0.55, "g = 1: the layer as trained.  g = 0: the head is removed exactly.\n"
            "dL/dg: how much the loss cares about a small change of the head's volume.",
            ha="center", va="center", fontsize=8.5, color="#444444")
    return fig


FIGURES = {"09_head_gates": head_gates}
