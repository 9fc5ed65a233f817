"""Static diagrams for notebook 05 (multi-head attention): the layer's data flow, and how heads are split."""

from __future__ import annotations

from drawing import GREY, HEAD_COLOURS, arrow, box, canvas, cells
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from words import _


def multi_head_attention_diagram() -> Figure:
    """Inputs -> h sets of projections -> h attentions -> concat -> W_O, left to right; heads numbered 0..h-1."""
    fig, ax = canvas((12, 6.2), (0, 17), (-0.9, 10))
    ax.text(8.5, 9.55, _("Multi-head attention: the same inputs, seen by $h$ heads in $h$ different subspaces"),
            ha="center", va="center", fontsize=13, weight="bold")

    inputs = {"Q": (_("queries"), 7.0), "K": (_("keys"), 5.0), "V": (_("values"), 3.0)}
    for name, y in inputs.values():
        box(ax, 1.15, y, 1.9, 0.9, name, size=11, rounding=0.12, linewidth=1.2)

    rows = [(0, "0", 7.9), (1, "1", 5.3), (3, "h-1", 1.9)]  # (colour index, head index, centre y)
    proj_x, proj_w = 3.9, 1.35
    att_x, att_w = 6.3, 2.5
    out_x, out_w = 9.5, 1.45
    for colour_index, label, y in rows:
        colour = HEAD_COLOURS[colour_index]
        band_w = out_x + out_w - proj_x + 0.5
        box(ax, proj_x - 0.25 + band_w / 2, y, band_w, 2.3, face=to_rgba(colour, 0.07), edge=to_rgba(colour, 0.5),
            rounding=0.2, linestyle="--")
        ax.text(proj_x - 0.15, y + 1.0, _("head {i}").format(i=label), color=colour, fontsize=10, weight="bold",
                va="center")
        for (kind, (_name, y_in)), dy in zip(inputs.items(), (0.55, 0.0, -0.55)):
            box(ax, proj_x + proj_w / 2, y + dy, proj_w, 0.42, f"$W_{kind}^{{({label})}}$", face="white",
                edge=colour, rounding=0.12, linewidth=1.2)
            arrow(ax, (2.1, y_in), (proj_x - 0.02, y + dy), alpha=0.45, width=0.9, shrink=0)
            arrow(ax, (proj_x + proj_w, y + dy), (att_x, y + dy * 0.6), colour=colour, width=1.0, shrink=0)
        box(ax, att_x + att_w / 2, y, att_w, 1.5, _("scaled dot-product\nattention $f$\n(+ mask)"), face="white",
            edge=colour, rounding=0.12, linewidth=1.2)
        arrow(ax, (att_x + att_w, y), (out_x, y), colour=colour, width=1.4, shrink=0)
        box(ax, out_x + out_w / 2, y, out_w, 0.9, f"$\\mathbf{{head}}_{{{label}}}$", face=colour, edge=colour,
            size=12, colour="white", rounding=0.12, linewidth=1.2)
    for x in (proj_x + proj_w / 2, att_x + att_w / 2, out_x + out_w / 2):
        ax.text(x, 3.65, "$\\vdots$", ha="center", va="center", fontsize=22, color=GREY)

    # Concatenation: one coloured slab per head, in head order
    cat_x, cat_w = 11.9, 0.75
    slabs = [(0, 6.6, 2.2, "0"), (1, 4.4, 2.2, "1"), (None, 3.0, 1.4, ""), (3, 0.8, 2.2, "h-1")]
    for colour_index, y0, height, label in slabs:
        face = "white" if colour_index is None else HEAD_COLOURS[colour_index]
        ax.add_patch(Rectangle((cat_x, y0), cat_w, height, facecolor=face, edgecolor="white" if label else GREY,
                               linewidth=1.5))
        text = f"${label}$" if label else "$\\vdots$"
        ax.text(cat_x + cat_w / 2, y0 + height / 2, text, ha="center", va="center",
                color="white" if label else GREY, fontsize=12 if label else 16)
    ax.text(cat_x + cat_w / 2, 9.1, "concat", ha="center", va="center", fontsize=11)
    for colour_index, _label, y in rows:
        arrow(ax, (out_x + out_w, y), (cat_x - 0.03, y), colour=HEAD_COLOURS[colour_index], width=1.4, shrink=0)

    # Output projection and output
    box(ax, 14.0, 5.25, 1.2, 1.3, "$W_O$", face="white", size=14, rounding=0.12, linewidth=1.2)
    arrow(ax, (cat_x + cat_w, 5.25), (13.4, 5.25), width=1.6, shrink=0)
    box(ax, 16.0, 5.25, 1.6, 1.0, _("output"), size=11, rounding=0.12, linewidth=1.2)
    arrow(ax, (14.6, 5.25), (15.2, 5.25), width=1.6, shrink=0)

    # Shapes, under each stage
    shapes = [
        (1.15, "$(B, T_q, d_{in})$\n$(B, T_k, d_{kv})$\n$(B, T_k, d_{kv})$"),
        (proj_x + proj_w / 2, _("each projection\n$\\to d_{head}$")),
        (att_x + att_w / 2, _("weights $(B, T_q, T_k)$\nper head")),
        (out_x + out_w / 2, _("$(B, T_q, d_{head})$\nper head")),
        (cat_x + cat_w / 2, "$(B, T_q, d_{out})$"),
        (14.0, "$d_{out} \\to d_{out}$"),
        (16.0, "$(B, T_q, d_{out})$"),
    ]
    for x, text in shapes:
        ax.text(x, 0.2, text, ha="center", va="center", fontsize=9, color=GREY)
    ax.text(8.5, -0.6, _("In code the $h$ blocks $W_Q^{(i)}$ are the row blocks of one $d_{out} \\times d_{in}$ matrix "
            "(W_query.weight): one matrix product, then the columns of its output are split between the heads."),
            ha="center", va="center", fontsize=9.5, style="italic", color="#333333")
    return fig


def split_heads_diagram() -> Figure:
    """(B, T, d) -> (B, h, T, d/h) -> d2l's (B*h, T, d/h): which columns go to which head."""
    heads, head_dim, tokens, cell = 3, 2, 4, 0.42
    d = heads * head_dim
    colours = [HEAD_COLOURS[c // head_dim] for c in range(d)]
    fig, ax = canvas((12, 4.2), (0, 17), (0, 6))

    # Panel 1: the wide projection, columns numbered
    x0, y0 = 0.6, 1.9
    cells(ax, x0, y0, tokens, d, lambda r, c: colours[c], cell=cell, text=lambda r, c: str(c) if r == 0 else None)
    for r in range(tokens):
        ax.text(x0 - 0.15, y0 + (tokens - 0.5 - r) * cell, f"t{r}", ha="right", va="center", fontsize=8)
    ax.text(x0 + d * cell / 2, y0 + tokens * cell + 0.45,
            _("W_query(x), sequence 0 of $B = 2$\n$(T, d_{out})$, $d_{out}=6$"), ha="center", va="bottom", fontsize=10)
    ax.text(x0 + d * cell / 2, y0 - 0.35, _("column numbers on top"), ha="center", va="top", fontsize=8, color=GREY)

    # Panel 2: the heads, after view + transpose
    arrow(ax, (3.4, 2.75), (5.0, 2.75), colour=GREY, width=1.6, shrink=0)
    ax.text(4.2, 3.0, "view(B, T, h, d/h)\ntranspose(1, 2)", ha="center", va="bottom", fontsize=9,
            family="monospace")
    ax.text(4.2, 2.5, "split_heads", ha="center", va="top", fontsize=9, family="monospace", color=GREY)
    x1 = 5.5
    for i in range(heads):
        y = 4.1 - i * 1.75 + 0.3
        cols = list(range(i * head_dim, (i + 1) * head_dim))
        cells(ax, x1, y - tokens * cell / 2 + 0.2, tokens, head_dim, lambda r, c, cols=cols: colours[cols[c]],
              cell=0.3, text=lambda r, c, cols=cols: str(cols[c]) if r == 0 else None)
        columns = _("head {i}: columns {first}-{last}").format(i=i, first=cols[0], last=cols[-1])
        ax.text(x1 + head_dim * 0.3 + 0.15, y + 0.2 - 0.05, columns,
                ha="left", va="center", fontsize=9, color=HEAD_COLOURS[i])
    ax.text(x1 + 1.1, 5.75, _("$(B, h, T, d_{out}/h)$: sequence 0's heads"), ha="center", va="center", fontsize=10)

    # Panel 3: d2l folds the heads into the batch
    arrow(ax, (9.6, 2.75), (11.2, 2.75), colour=GREY, width=1.6, shrink=0)
    ax.text(10.4, 3.0, "reshape(B*h, T, d/h)", ha="center", va="bottom", fontsize=9, family="monospace")
    ax.text(10.4, 2.5, "d2l: transpose_qkv", ha="center", va="top", fontsize=9, family="monospace", color=GREY)
    x2, slab_h = 11.6, 0.62
    batches = 2
    for b in range(batches):
        for i in range(heads):
            row = b * heads + i
            y = 5.0 - row * (slab_h + 0.12)
            ax.add_patch(Rectangle((x2, y), 1.4, slab_h, facecolor=HEAD_COLOURS[i], alpha=0.9 if b == 0 else 0.55,
                                   edgecolor="white"))
            ax.text(x2 + 0.7, y + slab_h / 2, _("row {row}").format(row=row), ha="center", va="center", fontsize=8,
                    color="white")
            ax.text(x2 + 1.55, y + slab_h / 2, _("sequence {b}, head {i}").format(b=b, i=i), ha="left", va="center",
                    fontsize=9)
    ax.text(x2 + 1.6, 5.85, "$(B \\cdot h, T, d_{out}/h)$, $B=2$", ha="center", va="center", fontsize=10)
    ax.text(x2 + 1.6, 0.6, _("rows 3-5 come from sequence 1, split the same way\n"
            "row $= b \\cdot h + i$: so valid_lens must be\nrepeat_interleave'd, not repeat'ed"),
            ha="center", va="center", fontsize=9, color="#333333", style="italic")
    return fig


FIGURES = {
    "05_multi_head_attention": multi_head_attention_diagram,
    "05_split_heads": split_heads_diagram,
}
