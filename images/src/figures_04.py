"""Static diagrams for notebook 04: one causal mask written in the two boolean polarities found in the wild."""

from __future__ import annotations

from drawing import arrow, cells
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from words import _

TOKENS = ["O", "gato", "sobe", "no", "tapete"]
ALLOWED = "#3182bd"
BLOCKED = "#f0f0f0"


def _grid(ax, may_attend: list[list[bool]], shown: list[list[bool]], title: str, subtitle: str) -> None:
    """Colour by ``may_attend`` (the meaning) and write ``shown`` (the stored boolean) in each cell."""
    n = len(may_attend)
    cells(ax, -0.5, -0.5, n, n, lambda i, j: ALLOWED if may_attend[i][j] else BLOCKED,
          text=lambda i, j: "T" if shown[i][j] else "F",
          text_colour=lambda i, j: "white" if may_attend[i][j] else "0.35", size=10, weight="bold", linewidth=1.5)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(-0.5, n - 0.5)
    ax.set_aspect("equal")
    ax.set_xticks(range(n), TOKENS, rotation=45)
    ax.set_yticks(range(n), TOKENS[::-1])  # row 0 (the first query) is drawn at the top
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_xlabel(_("keys"))
    ax.set_ylabel(_("queries"))
    ax.set_title(f"{title}\n{subtitle}", fontsize=10)


def mask_polarity() -> Figure:
    """The same causal pattern stored as True = may attend (left) and True = blocked (right)."""
    n = len(TOKENS)
    may_attend = [[j <= i for j in range(n)] for i in range(n)]
    blocked = [[not v for v in row] for row in may_attend]
    fig = Figure(figsize=(9.2, 4.4))
    left = fig.add_axes((0.07, 0.2, 0.34, 0.62))
    right = fig.add_axes((0.63, 0.2, 0.34, 0.62))
    _grid(left, may_attend, may_attend, _("True = may attend"),
          "mha_lib, F.scaled_dot_product_attention")
    _grid(right, may_attend, blocked, _("True = blocked"),
          "Tensor.masked_fill, nn.MultiheadAttention")
    arrow(left, (0.44, 0.52), (0.55, 0.52), transform=fig.transFigure, style="<|-|>", head=14, colour="0.3")
    fig.text(0.495, 0.58, "~mask", ha="center", va="bottom", fontsize=11, family="monospace")
    fig.text(0.495, 0.46, _("same meaning,\nopposite values"), ha="center", va="top", fontsize=9, color="0.3")
    fig.legend(handles=[Patch(color=ALLOWED, label=_("query may attend to key")),
                        Patch(facecolor=BLOCKED, edgecolor="0.6", label=_("blocked"))],
               loc="lower center", ncols=2, frameon=False, fontsize=9)
    fig.suptitle(_("One causal mask, two polarities: the colour is the meaning, the letter is the stored bool"),
                 fontsize=11)
    return fig


FIGURES = {"04_mask_polarity": mask_polarity}
