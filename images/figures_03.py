"""Static diagrams for notebook 03: one query scores every key, softmax turns scores into weights, values are mixed."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

TOKENS = ["O", "gato", "sobe", "no", "tapete"]
# Illustrative numbers (not computed): one query row of scores and its softmax.
SCORES = [0.4, 1.1, 2.2, 0.2, 1.6]
QUERY = "gato"


def _softmax(xs: list[float]) -> list[float]:
    import math

    exps = [math.exp(x) for x in xs]
    total = sum(exps)
    return [e / total for e in exps]


def _box(ax, x: float, y: float, text: str, colour: str, width: float = 1.0, height: float = 0.5) -> None:
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.02,rounding_size=0.08",
            facecolor=colour, edgecolor="0.3", linewidth=1.0,
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=10)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], width: float = 1.0, alpha: float = 1.0) -> None:
    ax.add_patch(
        FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, linewidth=width, color="0.25", alpha=alpha)
    )


def soft_lookup() -> Figure:
    """One query against five keys: dot products, softmax weights, weighted sum of the values."""
    weights = _softmax(SCORES)
    fig = Figure(figsize=(10.5, 4.2))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(-0.2, 11.6)
    ax.set_ylim(-0.9, 5.6)
    ax.axis("off")
    rows = [4.0 - i for i in range(len(TOKENS))]  # y of each key, top to bottom
    mid = sum(rows) / len(rows)

    headers = [
        (0.6, "query"), (2.6, "keys"), (4.4, r"score $s_j = \frac{q \cdot k_j}{\sqrt{d_k}}$"),
        (6.5, r"weight $a_j = \mathrm{softmax}(s)_j$"), (8.5, "values"), (10.7, "output"),
    ]
    for x, text in headers:
        ax.text(x, 5.0, text, ha="center", va="center", fontsize=11, fontweight="bold")

    _box(ax, 0.6, mid, f"$q$\n({QUERY})", "#fde2c8", width=1.0, height=0.9)
    for y, token, score, weight in zip(rows, TOKENS, SCORES, weights):
        _arrow(ax, (1.12, mid), (2.05, y), width=0.8, alpha=0.6)
        _box(ax, 2.6, y, f"$k$: {token}", "#d6e4f5")
        ax.text(3.35, y, r"$\cdot\,q$", ha="left", va="center", fontsize=10, color="0.3")
        ax.text(4.4, y, f"{score:.1f}", ha="center", va="center", fontsize=10)
        # a horizontal bar whose length is the weight
        ax.add_patch(FancyBboxPatch((5.6, y - 0.16), 1.8 * weight / max(weights), 0.32,
                                    boxstyle="square,pad=0", facecolor="#d7301f", alpha=0.35 + 0.65 * weight))
        ax.text(5.55, y, f"{weight:.2f}", ha="right", va="center", fontsize=9)
        _box(ax, 8.5, y, f"$v$: {token}", "#dcefd9")
        _arrow(ax, (9.02, y), (10.12, mid), width=0.5 + 6 * weight, alpha=0.35 + 0.65 * weight)
    ax.text(5.6, -0.5, f"weights sum to {sum(weights):.0f}", ha="left", va="center", fontsize=9,
            color="0.3")
    _arrow(ax, (4.0, -0.5), (5.5, -0.5), width=1.0, alpha=0.6)
    ax.text(3.9, -0.5, "exp, then divide by the sum", ha="right", va="center", fontsize=9, color="0.3")
    _box(ax, 10.7, mid, "$o = \\sum_j a_j\\, v_j$", "#f3d9ef", width=1.25, height=0.9)
    ax.text(10.7, mid - 0.75, "arrow width = $a_j$", ha="center", va="center", fontsize=9, color="0.3")
    return fig


FIGURES = {"03_soft_lookup": soft_lookup}
