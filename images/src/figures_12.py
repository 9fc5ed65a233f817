"""Static diagrams for notebook 12: a real sentence encoder built from the series' own layers."""

from __future__ import annotations

from drawing import arrow, box, canvas
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
from words import _

BLUE = "#dbe9f6"  # the series' MultiHeadAttention
ORANGE = "#fde0c5"  # what turns token states into one sentence vector
KEY = "#1f4e9c"  # checkpoint key names


def bert_encoder() -> Figure:
    """Sentence -> WordPiece ids -> embeddings -> 6 post-LayerNorm blocks -> mean pool -> unit-length embedding."""
    fig, ax = canvas((10.4, 7.4), (0, 13), (-0.4, 9.6))
    x = 3.3  # the flow runs down the left, the checkpoint's names stand on the right
    box(ax, x, 9.1, 5.6, 0.6, '"The kids built a sandcastle on the beach."', size=10, face="white")
    arrow(ax, (x, 8.78), (x, 8.42))
    box(ax, x, 8.05, 5.6, 0.62, _("WordPiece tokens"), detail="[CLS] the kids built a sand ##castle ... . [SEP]",
        size=10, face="#f0f0f0")
    arrow(ax, (x, 7.72), (x, 7.36))
    box(ax, x, 6.95, 5.6, 0.7, _("embeddings: word + position + segment, LayerNorm"), detail="(B, T, 384)", size=10)
    arrow(ax, (x, 6.58), (x, 6.18))

    # one block, drawn open; "x 6" beside it
    ax.add_patch(FancyBboxPatch(
        (0.35, 1.95), 5.9, 4.15, boxstyle="round,pad=0.02,rounding_size=0.15", facecolor="white",
        edgecolor="#555555", linewidth=1.3, linestyle="--"))
    ax.text(6.1, 5.85, _("block  (x 6)"), ha="right", va="center", fontsize=10.5, weight="bold")
    box(ax, x, 5.2, 4.6, 0.75, "MultiHeadAttention(384, 384, None, 0.0, 12,", detail="qkv_bias=True, causal=False)",
        face=BLUE, size=9.5, family="monospace")
    arrow(ax, (x, 4.8), (x, 4.45))
    box(ax, x, 4.15, 4.6, 0.5, _("add, then LayerNorm"), size=9.5)
    arrow(ax, (x, 3.88), (x, 3.53))
    box(ax, x, 3.2, 4.6, 0.55, "MLP: 384 -> 1536 -> 384 (GELU)", size=9.5)
    arrow(ax, (x, 2.9), (x, 2.55))
    box(ax, x, 2.3, 4.6, 0.45, _("add, then LayerNorm"), size=9.5)
    # the two residual connections: each sublayer's input is added to its output before the LayerNorm
    for top, bottom in ((5.95, 4.15), (3.75, 2.3)):
        arrow(ax, (0.7, top), (0.7, bottom), colour="#888888", style="-", shrink=0)
        arrow(ax, (0.7, bottom), (1.0, bottom), colour="#888888", shrink=0)
        arrow(ax, (0.7, top), (x - 0.05, top), colour="#888888", style="-", shrink=0)
    ax.text(0.5, 3.2, _("residual"), rotation=90, ha="center", va="center", fontsize=8, color="#777777")

    arrow(ax, (x, 1.93), (x, 1.55))
    box(ax, x, 1.2, 5.6, 0.6, _("mean of the real tokens' states"), detail=_("padding left out (valid_lens)"),
        face=ORANGE, size=10)
    arrow(ax, (x, 0.88), (x, 0.55))
    box(ax, x, 0.2, 5.6, 0.55, _("divide by its length: the sentence embedding (384,)"), face=ORANGE, size=10)

    # the checkpoint's names (Hugging Face's BertModel) next to the parts they fill
    left, mid, right = 9.55, 9.75, 9.95  # key ends, arrow, parameter starts
    ax.text(9.75, 9.1, _("checkpoint key  ->  our parameter"), ha="center", va="center", fontsize=10.5, weight="bold")

    def row(y: float, theirs: str, ours: str, weight: str = "normal") -> None:
        ax.text(left, y, theirs, ha="right", va="center", fontsize=8.5, family="monospace", color=KEY, weight=weight)
        ax.text(mid, y, "->", ha="center", va="center", fontsize=8.5, family="monospace", color="#777777")
        ax.text(right, y, ours, ha="left", va="center", fontsize=8.5, family="monospace", color="#333333",
                weight=weight)

    row(7.35, "embeddings.", "embeddings.", "bold")
    for y, (theirs, ours) in zip((7.0, 6.72, 6.44, 6.16), (("word_embeddings", "word"),
                                                         ("position_embeddings", "position"),
                                                         ("token_type_embeddings", "segment"), ("LayerNorm", "ln"))):
        row(y, theirs, ours)
    row(5.6, "encoder.layer.{l}.", "blocks.{l}.", "bold")
    rows = [("attention.self.query", "attn.W_query"), ("attention.self.key", "attn.W_key"),
            ("attention.self.value", "attn.W_value"), ("attention.output.dense", "attn.out_proj"),
            ("attention.output.LayerNorm", "ln_attn"), ("intermediate.dense", "mlp.0"),
            ("output.dense", "mlp.2"), ("output.LayerNorm", "ln_mlp")]
    for n, (theirs, ours) in enumerate(rows):
        row(5.25 - 0.3 * n, theirs, ours)
    ax.text(9.75, 1.0, _("101 keys copied (.weight and .bias), each shape\nchecked first. Nothing is transposed:"
            " nn.Linear\nstores (out, in) on both sides. Not loaded:\nposition_ids (0..511) and the pooler"
            " (a layer\non [CLS] that mean pooling does not use)."), ha="center", va="center", fontsize=8.5,
            color="#444444")
    return fig


FIGURES = {"12_bert_encoder": bert_encoder}
