"""Static diagrams for notebook 07 (positional encoding): how CNN, RNN and self-attention connect tokens."""

from __future__ import annotations

from drawing import arrow
from matplotlib.figure import Figure
from matplotlib.patches import Circle
from words import _

N = 6
GREY, BLUE, RED = "#b0b0b0", "#1f77b4", "#d62728"


def _node(ax, x: float, y: float, label: str, colour: str = "white") -> None:
    ax.add_patch(Circle((x, y), 0.28, facecolor=colour, edgecolor="black", linewidth=1.0, zorder=3))
    ax.text(x, y, label, ha="center", va="center", fontsize=9, zorder=4)


def _edge(ax, start: tuple[float, float], end: tuple[float, float], colour: str = GREY, width: float = 1.0) -> None:
    arrow(ax, start, end, colour=colour, width=width, head=8, shrink=9, zorder=2 if colour == GREY else 2.5)


def _frame(ax, title: str, note: str, top: float) -> None:
    ax.set_xlim(-0.6, N - 0.4)
    ax.set_ylim(-0.9, top + 0.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=11)
    ax.text((N - 1) / 2, -0.75, note, ha="center", va="center", fontsize=9, color=RED)


def cnn_rnn_attention() -> Figure:
    """Three panels: a 2-layer CNN (kernel 3), an RNN and one self-attention layer over 6 tokens."""
    fig = Figure(figsize=(11, 3.0), layout="constrained")
    cnn, rnn, att = fig.subplots(1, 3)

    # CNN, centred kernel 3, two layers: x1 moves (k - 1) / 2 = 1 position per layer, so y6 needs 2(T - 1)/(k - 1) = 5
    layers = [0.0, 1.3, 2.6]
    for level, y in enumerate(layers):
        for i in range(N):
            label = f"x{i + 1}" if level == 0 else ""
            _node(cnn, i, y, label, "#e8f0fa" if level == 0 else "white")
    for lower, upper in zip(layers[:-1], layers[1:]):
        for i in range(N):
            for j in (i - 1, i, i + 1):
                if 0 <= j < N:
                    _edge(cnn, (j, lower), (i, upper))
    for (x0, y0), (x1, y1) in [((0, 0.0), (1, 1.3)), ((1, 1.3), (2, 2.6))]:
        _edge(cnn, (x0, y0), (x1, y1), RED, 2.0)
    _frame(cnn, "CNN (kernel k = 3)", _("x1 moves 1 position per layer: y6 after 5 layers, path O(T/k)"), 2.6)

    # RNN: a chain of hidden states, each waits for the previous one
    for i in range(N):
        _node(rnn, i, 0.0, f"x{i + 1}", "#e8f0fa")
        _node(rnn, i, 1.3, f"h{i + 1}")
        _edge(rnn, (i, 0.0), (i, 1.3))
    for i in range(N - 1):
        _edge(rnn, (i, 1.3), (i + 1, 1.3), RED, 2.0)
    _edge(rnn, (0, 0.0), (0, 1.3), RED, 2.0)
    _frame(rnn, "RNN", _("x1 reaches h6 after 5 recurrent steps: path O(T)"), 2.6)

    # Self-attention: every output looks at every input in one step
    for i in range(N):
        _node(att, i, 0.0, f"x{i + 1}", "#e8f0fa")
        _node(att, i, 2.6, f"y{i + 1}")
    for i in range(N):
        for j in range(N):
            _edge(att, (j, 0.0), (i, 2.6))
    _edge(att, (0, 0.0), (N - 1, 2.6), RED, 2.0)
    _frame(att, _("self-attention"), _("x1 reaches y6 in one step: path O(1)"), 2.6)
    return fig


FIGURES = {"07_cnn_rnn_attention": cnn_rnn_attention}
