"""Static diagram for notebook 03: one query scores every key, softmax turns scores into weights, values are mixed.

The numbers are the query "gato" of notebook 03 (sections 2-5), computed here with mha_lib from the same
embeddings and projections, so the figure and the notebook show the same row.
"""

from __future__ import annotations

import math

import torch
from drawing import arrow, box, canvas
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torch import nn
from words import _

from mha_lib import scaled_dot_product_attention
from mha_lib.tokenize import Vocab, tokenize

SENTENCE = "O gato sobe no tapete"
QUERY = "gato"


def gato_row() -> dict[str, list]:
    """Notebook 03's query "gato": its scaled scores, softmax weights ``(T_k,)``, values ``(T_k, d_v)``, output."""
    tokens = tokenize(SENTENCE)
    vocab = Vocab(tokens)
    torch.manual_seed(42)
    X = nn.Embedding(len(vocab), 3)(torch.tensor(vocab.encode(tokens))).detach()  # (T, d_model) = (5, 3)
    d_k = 4
    torch.manual_seed(0)
    W_Q, W_K, W_V = torch.randn(d_k, 3), torch.randn(d_k, 3), torch.randn(2, 3)  # as nn.Linear stores them
    Q, K, V = X @ W_Q.T, X @ W_K.T, X @ W_V.T  # (T, d_k), (T, d_k), (T, d_v)
    output, weights = scaled_dot_product_attention(Q[None], K[None], V[None])  # (1, T, d_v), (1, T, T)
    i = tokens.index(QUERY)
    return {
        "tokens": tokens,
        "scores": (Q[i] @ K.T / math.sqrt(d_k)).tolist(),
        "weights": weights[0, i].tolist(),
        "values": V.tolist(),
        "output": output[0, i].tolist(),
    }


def _pair(v: list[float]) -> str:
    return f"({v[0]:.2f}, {v[1]:.2f})"


def soft_lookup() -> Figure:
    """One query against five keys: dot products, softmax weights, weighted sum of the values."""
    row = gato_row()
    tokens, scores, weights = row["tokens"], row["scores"], row["weights"]
    fig, ax = canvas((12, 4.6), (-0.2, 12.9), (-0.9, 5.6))
    ys = [4.0 - i for i in range(len(tokens))]  # y of each key, top to bottom
    mid = sum(ys) / len(ys)

    headers = [
        (0.6, _("query")), (2.6, _("keys")), (4.45, _(r"score $s_j = \frac{q \cdot k_j}{\sqrt{d_k}}$")),
        (6.55, _(r"weight $a_j = \mathrm{softmax}(s)_j$")), (8.95, _("values $v_j$")), (11.6, _("output")),
    ]
    for x, text in headers:
        ax.text(x, 5.0, text, ha="center", va="center", fontsize=11, fontweight="bold")

    box(ax, 0.6, mid, 1.0, 0.9, f"$q$\n({QUERY})", face="#fde2c8")
    for y, token, score, weight, value in zip(ys, tokens, scores, weights, row["values"]):
        arrow(ax, (1.12, mid), (2.05, y), width=0.8, alpha=0.6)
        box(ax, 2.6, y, 1.0, 0.5, f"$k$: {token}", face="#d6e4f5")
        ax.text(3.35, y, r"$\cdot\,q$", ha="left", va="center", fontsize=10, color="0.3")
        ax.text(4.45, y, f"{score:.2f}", ha="center", va="center", fontsize=10)
        # a horizontal bar whose length is the weight
        ax.add_patch(Rectangle((5.65, y - 0.16), 1.8 * weight / max(weights), 0.32, facecolor="#d7301f",
                               alpha=0.35 + 0.65 * weight / max(weights)))
        ax.text(5.6, y, f"{weight:.2f}", ha="right", va="center", fontsize=10)
        box(ax, 8.95, y, 1.9, 0.62, f"$v$: {token}\n{_pair(value)}", face="#dcefd9", size=9)
        arrow(ax, (9.92, y), (10.75, mid), width=0.5 + 6 * weight, alpha=0.35 + 0.65 * weight)
    ax.text(5.65, -0.5, _("weights sum to {total}").format(total=f"{sum(weights):.0f}"), ha="left", va="center",
            fontsize=9, color="0.3")
    arrow(ax, (4.05, -0.5), (5.55, -0.5), width=1.0, alpha=0.6)
    ax.text(3.95, -0.5, _("exp, then divide by the sum"), ha="right", va="center", fontsize=9, color="0.3")
    box(ax, 11.6, mid, 1.7, 1.0, f"$o = \\sum_j a_j\\, v_j$\n{_pair(row['output'])}", face="#f3d9ef")
    ax.text(11.6, mid - 0.8, _("arrow width = $a_j$"), ha="center", va="center", fontsize=9, color="0.3")
    return fig


FIGURES = {"03_soft_lookup": soft_lookup}
