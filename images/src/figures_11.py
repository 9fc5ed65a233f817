"""Static diagrams for notebook 11 (attention in modern models): a decoding step without and with a KV cache,
query heads sharing key/value heads (MHA, GQA, MQA), and DeepSeek-V2's multi-head latent attention (MLA)."""

from __future__ import annotations

from drawing import GREY, HEAD_COLOURS, arrow, box, canvas, cells
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from words import _

ORANGE = "#DD8452"  # the new token
BLUE = "#4C72B0"  # recomputed work
PALE = "#D9E3F0"  # cached, read again
LIGHT = "#F2F2F2"  # masked (the future)
T = 6  # tokens drawn: the step computes token 6 (index 5)


def kv_cache_diagram() -> Figure:
    """Step t of greedy decoding: recompute every K, V and every query row, or project one token and read the cache."""
    fig, ax = canvas((12.5, 5.6), (-0.6, 20.2), (-2.1, 8.4))
    cell = 0.62
    for x0, title in ((0.9, _("Without a cache: step 6 recomputes everything")),
                      (11.2, _("With a KV cache: step 6 projects one token"))):
        ax.text(x0 + 3.9, 8.0, title, ha="center", fontsize=13, weight="bold")
    # Left: K and V for every token, recomputed; the whole causal table; only its last row is new.
    x0, y0 = 0.9, 1.0
    for label, dx in (("$K$", 0.0), ("$V$", 4.6)):
        cells(ax, x0 + dx, 6.1, 1, T, lambda r, c: ORANGE if c == T - 1 else BLUE, cell=cell, edge="white",
              text=lambda r, c: str(c), size=9)
        ax.text(x0 + dx - 0.2, 6.1 + cell / 2, label, ha="right", va="center", fontsize=12)
    ax.text(x0 + 0.5 * T * cell, 5.65, _("6 keys, recomputed"), ha="center", fontsize=9.5, color=BLUE)
    ax.text(x0 + 4.6 + 0.5 * T * cell, 5.65, _("6 values, recomputed"), ha="center", fontsize=9.5, color=BLUE)
    cells(ax, x0, y0, T, T, lambda r, c: (ORANGE if r == T - 1 else BLUE) if c <= r else LIGHT, cell=cell,
          edge="white")
    ax.add_patch(Rectangle((x0, y0), T * cell, T * cell, fill=False, edgecolor=GREY, linewidth=1.0))
    ax.text(x0 - 0.2, y0 + T * cell / 2, _("queries"), ha="right", va="center", rotation=90, fontsize=10, color=GREY)
    ax.text(x0 + T * cell + 0.35, y0 + T * cell - 0.3, _("rows 0-4: the same as\nat step 5, thrown away"),
            ha="left", va="top", fontsize=10, color=BLUE)
    ax.text(x0 + T * cell + 0.35, y0 + cell / 2, _("row 5: the only\nnew output"), ha="left", va="center",
            fontsize=10, color=ORANGE)
    ax.text(x0 + 3.9, -0.35, _("work per step grows with $t$: $t$ projections, $t^2$ scores\n"
            "$\\Rightarrow$ about $T^2$ projections and $T^3$ scores to write $T$ tokens"), ha="center", va="top",
            fontsize=10.5)
    # Right: the cache holds K and V of tokens 0-4; the new token adds one column to each; one query row.
    x1 = 11.2
    for label, dx in (("$K$", 0.0), ("$V$", 4.6)):
        cells(ax, x1 + dx, 6.1, 1, T, lambda r, c: ORANGE if c == T - 1 else PALE, cell=cell, edge="white",
              text=lambda r, c: str(c), text_colour=lambda r, c: "white" if c == T - 1 else GREY, size=9)
        ax.text(x1 + dx - 0.2, 6.1 + cell / 2, label, ha="right", va="center", fontsize=12)
        ax.add_patch(Rectangle((x1 + dx - 0.05, 6.05), (T - 1) * cell + 0.05, cell + 0.1, fill=False,
                               edgecolor=GREY, linewidth=1.2, linestyle="--"))
    ax.text(x1 + 0.5 * (T - 1) * cell, 5.65, _("cache: 5 keys"), ha="center", fontsize=9.5, color=GREY)
    ax.text(x1 + 4.6 + 0.5 * (T - 1) * cell, 5.65, _("cache: 5 values"), ha="center", fontsize=9.5, color=GREY)
    cells(ax, x1, y0, 1, T, lambda r, c: ORANGE, cell=cell, edge="white")  # the one query row: row 5
    ax.add_patch(Rectangle((x1, y0), T * cell, T * cell, fill=False, edgecolor="#CCCCCC", linewidth=1.0,
                           linestyle=":"))
    ax.text(x1 + T * cell / 2, y0 + (T + 1) * cell / 2, _("rows 0-4\nnot computed"), ha="center", va="center",
            fontsize=10, color="#999999")
    ax.text(x1 - 0.2, y0 + T * cell / 2, _("queries"), ha="right", va="center", rotation=90, fontsize=10, color=GREY)
    ax.text(x1 + T * cell + 0.35, y0 + cell / 2, _("one query row reads\nall 6 keys: the same\nrow 5 as on the left"),
            ha="left", va="center", fontsize=10, color=ORANGE)
    box(ax, x1 + 3.9, 4.95, 5.0, 0.55, _("new token: project $x_5$ only, append $k_5$, $v_5$"), size=10,
        face="white", edge=ORANGE)
    ax.text(x1 + 3.9, -0.35, _("work per step grows with $t$ only in the scores: 1 projection, $t$ scores\n"
            "$\\Rightarrow$ about $T$ projections and $T^2$ scores; the cache costs memory"),
            ha="center", va="top", fontsize=10.5)
    return fig


def kv_sharing_diagram() -> Figure:
    """Eight query heads reading 8, 2 or 1 key/value heads; each K/V head is cached, so the cache shrinks with them."""
    fig, ax = canvas((12.5, 4.6), (0, 21), (-1.2, 6.3))
    extra = ["#8172B3", "#937860", "#DA8BC3", "#8C8C8C"]
    colours = HEAD_COLOURS + extra  # eight K/V heads at most
    panels = [(0.4, 8, _("multi-head (MHA)"), _("8 K/V heads: the whole cache"), "GPT-2, Llama-2-7B"),
              (7.4, 2, _("grouped-query (GQA)"), _("2 K/V heads: 1/4 of the cache"),
               _("Llama-3-8B, Mistral-7B: 4 query heads per K/V head")),
              (14.4, 1, _("multi-query (MQA)"), _("1 K/V head: 1/8 of the cache"), "Shazeer (2019)")]
    for x0, num_kv, title, note, example in panels:
        group = 8 // num_kv
        ax.text(x0 + 3.1, 5.75, title, ha="center", fontsize=13, weight="bold")
        ax.text(x0 + 3.1, 5.2, example, ha="center", fontsize=9.5, color=GREY, style="italic")
        for i in range(8):  # query heads, coloured by the K/V head they read
            colour = colours[i // group] if num_kv > 1 else colours[0]
            cx = x0 + 0.2 + i * 0.75
            box(ax, cx + 0.3, 4.25, 0.6, 0.6, f"$q_{i}$", face=colour, edge=colour, colour="white", size=10,
                rounding=0.08)
            kv_x = x0 + 0.2 + (i // group) * 0.75 * group + 0.375 * group - 0.075
            arrow(ax, (cx + 0.3, 3.95), (kv_x, 2.15), colour=colour, width=1.0, head=8)
        for j in range(num_kv):
            kv_x = x0 + 0.2 + j * 0.75 * group + 0.375 * group - 0.075
            width = min(0.75 * group - 0.15, 1.6)
            box(ax, kv_x, 1.6, width, 0.9, f"$K_{j}, V_{j}$" if num_kv < 8 else f"$K_{j}$\n$V_{j}$",
                face="white", edge=colours[j], size=10 if num_kv < 8 else 8.5, rounding=0.08, linewidth=1.6)
        ax.text(x0 + 3.1, 0.55, note, ha="center", fontsize=10.5, color=GREY)
        ax.text(x0 + 3.1, -0.1, f"queries_per_kv_head = {group}", ha="center", fontsize=10, family="monospace",
                color="#1f4e9c")
    ax.text(10.5, -0.9, _("query heads above, key/value heads below: query head $i$ reads K/V head "
            "$\\lfloor i \\,/\\,$queries_per_kv_head$\\rfloor$ (consecutive groups, as in PyTorch's enable_gqa)"),
            ha="center", fontsize=10.5)
    return fig


GREEN = "#55A868"  # the decoupled RoPE path
CACHED = "#FDE3CF"  # what MLA caches


def _stacked(ax: Axes, x: float, y: float, w: float, h: float, text: str, detail: str, edge: str) -> None:
    """A per-head box with two shadows behind it: one of 128 heads."""
    for k in (2, 1):
        box(ax, x + 0.16 * k, y + 0.16 * k, w, h, face="white", edge="#BBBBBB")
    box(ax, x, y, w, h, text, detail=detail, face="white", edge=edge, size=12, linewidth=1.4)


def mla_diagram() -> Figure:
    """One token of DeepSeek-V2's MLA: x_t goes down to a 512-wide latent (cached) and a 64-wide RoPE key (cached,
    shared by the heads); each head's key and value are up-projections of the latent; the query has its own path."""
    fig, ax = canvas((12.5, 6.4), (0, 25), (-1.2, 11.6))
    ax.text(12.5, 11.1, _("Multi-head latent attention (DeepSeek-V2): cache one latent per token, "
            "not every head's K and V"), ha="center", fontsize=13, weight="bold")
    box(ax, 1.5, 5.9, 2.0, 1.5, "$x_t$", detail="5120", size=14, linewidth=1.4)
    # the three down-projections of x_t
    rows = {"q": 9.3, "c": 5.9, "r": 2.5}
    box(ax, 7.0, rows["q"], 2.6, 1.3, "$c^Q_t$", detail="1536", edge=BLUE, size=13, linewidth=1.4)
    box(ax, 7.0, rows["c"], 2.6, 1.3, "$c^{KV}_t$", detail="512", face=CACHED, edge=ORANGE, size=13, linewidth=2.0)
    box(ax, 7.0, rows["r"], 2.6, 1.3, "$k^R_t$", detail="64, RoPE", face=CACHED, edge=GREEN, size=13,
        linewidth=2.0)
    for row, label, colour in (("q", "$W^{DQ}$", BLUE), ("c", "$W^{DKV}$", GREY), ("r", "$W^{KR}$", GREEN)):
        arrow(ax, (2.55, 5.9 + 0.25 * (rows[row] - 5.9) / 3.4), (5.65, rows[row]), colour=colour, width=1.4)
        ax.text(3.7, rows[row] + (0.3 if row != "r" else -0.75), label, ha="center", fontsize=12, color=colour)
    ax.add_patch(Rectangle((5.35, 1.45), 3.3, 5.55, fill=False, edgecolor=ORANGE, linewidth=1.6, linestyle="--"))
    ax.text(7.0, 0.95, _("the KV cache: 512 + 64 = 576\nnumbers per token and layer"), ha="center", va="top",
            fontsize=11, color=ORANGE, weight="bold")
    # per-head up-projections (128 heads)
    heads = {"qC": (10.05, "$q^C_{t,i}$", "128", BLUE), "qR": (8.4, "$q^R_{t,i}$", "64, RoPE", GREEN),
             "kC": (6.8, "$k^C_{j,i}$", "128", GREY), "v": (5.0, "$v_{j,i}$", "128", GREY)}
    sources = {"qC": ("q", "$W^{UQ}_i$"), "qR": ("q", "$W^{QR}_i$"), "kC": ("c", "$W^{UK}_i$"),
               "v": ("c", "$W^{UV}_i$")}
    for name, (y, text, detail, colour) in heads.items():
        _stacked(ax, 12.6, y, 2.4, 1.2, text, detail, colour)
        row, label = sources[name]
        arrow(ax, (8.35, rows[row] + (y - rows[row]) * 0.15), (11.3, y), colour=colour, width=1.2)
        ax.text(9.75, (rows[row] + y) / 2 + 0.2, label, ha="center", va="bottom", fontsize=11, color=colour)
    ax.text(13.0, 3.75, _("per head $i$ (128 heads)"), ha="center", fontsize=10.5, color=GREY, style="italic")
    # one head's attention, then the output projection
    box(ax, 19.0, 6.9, 3.9, 4.1, face="#F7F7F7", linewidth=1.4)
    ax.text(19.0, 8.4, _("head $i$"), ha="center", va="center", fontsize=13, weight="bold")
    ax.text(19.0, 7.2, "score$_j$ $\\propto$\n$q^C_{t,i}\\cdot k^C_{j,i} + q^R_{t,i}\\cdot k^R_j$", ha="center",
            va="center", fontsize=11)
    ax.text(19.0, 5.6, _("softmax over $j$,\nweights on $v_{j,i}$"), ha="center", va="center", fontsize=11)
    for name in heads:
        arrow(ax, (14.1, heads[name][0]), (17.0, heads[name][0] * 0.5 + 6.9 * 0.5), colour=heads[name][3],
              width=1.1)
    arrow(ax, (8.35, rows["r"]), (17.0, 5.0), colour=GREEN, width=1.4, rad=0.08)
    ax.text(13.3, 2.05, _("$k^R_j$: one key shared by all 128 heads"), ha="center", fontsize=10.5, color=GREEN)
    box(ax, 23.3, 6.9, 2.4, 1.3, "$W^O$", detail=_("all heads"), size=13, linewidth=1.4)
    arrow(ax, (21.0, 6.9), (22.05, 6.9), width=1.4)
    ax.text(12.5, -0.1, _("At inference $W^{UK}_i$ folds into the query side and $W^{UV}_i$ into $W^O$: the scores and "
            "outputs are computed\nfrom the cached $c^{KV}_j$ directly, and $k^C$, $v$ are never formed per head. "
            "RoPE rotates by position, so it needs its own path."), ha="center", va="top", fontsize=10.5)
    return fig


FIGURES = {"11_kv_cache": kv_cache_diagram, "11_kv_sharing": kv_sharing_diagram, "11_mla": mla_diagram}
