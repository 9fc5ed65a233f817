"""Static diagrams for notebook 08: the two-step induction circuit."""

from __future__ import annotations

from drawing import arrow
from matplotlib.figure import Figure
from words import _


def induction_circuit() -> Figure:
    """A repeated sequence; layer 0 copies 'what came before me', layer 1 looks for it and copies what follows."""
    tokens = ["BOS", "A", "B", "C", "D", "A", "B", "C", "?"]
    fig = Figure(figsize=(8.4, 3.4), layout="constrained")
    ax = fig.subplots()
    ax.set_xlim(-0.7, len(tokens) - 0.3)
    ax.set_ylim(-1.35, 2.2)
    ax.axis("off")
    for i, tok in enumerate(tokens):
        colour = "#fde0c5" if i in (3, 7) else "#dbe9f6" if i in (4, 8) else "#f0f0f0"
        ax.text(i, 0, tok, ha="center", va="center", fontsize=13, family="monospace",
                bbox={"boxstyle": "round,pad=0.35", "fc": colour, "ec": "#555555"})
        ax.text(i, -0.55, str(i), ha="center", va="center", fontsize=8, color="#777777")

    # layer 0: every token looks one step back (drawn for the key the induction head will find)
    arrow(ax, (4, -0.3), (3, -0.3), rad=-0.9, colour="#d95f02", width=1.6, head=12)
    ax.text(3.5, -1.05, _("layer 0, previous-token head:\nposition 4 stores \"C came before me\""),
            ha="center", va="center", fontsize=8.5, color="#d95f02")
    # layer 1: the query B at position 7 looks for a key that says "B came before me"
    arrow(ax, (7, 0.3), (4, 0.3), rad=0.45, colour="#1b6ca8", width=2.2, head=12)
    ax.text(5.0, 1.75, _("layer 1, induction head: query C (position 7) matches the key \"C came before me\"\n"
            "(position 4), copies its token D and predicts D next"),
            ha="center", va="center", fontsize=8.5, color="#1b6ca8")
    ax.text(8, 0.55, "D", ha="center", va="center", fontsize=12, color="#1b6ca8", fontweight="bold")
    return fig


FIGURES = {"08_induction_circuit": induction_circuit}
