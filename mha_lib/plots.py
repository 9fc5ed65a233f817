"""Matplotlib figures: attention heatmaps, per-head grids and line views, positional encodings.

Every function builds a ``matplotlib.figure.Figure`` without pyplot and returns it: nothing is kept in
a global figure list, the last expression of a notebook cell shows it once, and ``fig.savefig`` writes it.

Orientation is fixed everywhere: in a heatmap row ``i`` is query ``i`` and column ``j`` is key ``j`` (the
image is ``weights[q, k]``, never its transpose); in the line view queries stand on the left, keys on the
right. Bad input follows ``mha_lib._validate`` (``TypeError`` for a wrong type, ``ValueError`` for a wrong
value, each naming the argument). NaN or inf values are refused with a ``ValueError`` that counts them: a
figure never hides a NaN as an empty cell. Token labels are drawn as plain text: a ``$`` in a token is a
dollar sign, never the start of a formula.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure
from torch import Tensor

from mha_lib._validate import (
    check_finite,
    check_heads,
    check_index,
    check_int,
    check_number,
    check_probability,
    check_tokens,
)
from mha_lib.heads import head_label
from mha_lib.i18n import _, key_name
from mha_lib.trace import AttentionTrace, check_trace


def _numpy(x: Tensor | np.ndarray) -> np.ndarray:
    return x.detach().cpu().double().numpy() if isinstance(x, Tensor) else np.asarray(x, dtype=float)


def _table(name: str, table: object) -> np.ndarray:
    """A finite 2-D ``(positions, d)`` array from a tensor or array."""
    if not isinstance(table, (Tensor, np.ndarray)):
        raise TypeError(f"{name} must be a torch.Tensor of shape (positions, d), got {type(table).__name__}")
    data = _numpy(table)
    if data.ndim != 2:
        raise ValueError(f"{name} must be 2-D (positions, d), got shape {data.shape}")
    check_finite(name, data)
    return data


def show_heatmaps(
    matrices: Tensor | np.ndarray,
    xlabel: str,
    ylabel: str,
    titles: Sequence[str] | None = None,
    figsize: tuple[float, float] = (2.5, 2.5),
    cmap: str = "Reds",
    *,
    xticklabels: Sequence[str] | None = None,
    yticklabels: Sequence[str] | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: bool = True,
) -> Figure:
    """A grid of heatmaps from ``(rows, cols, m, n)`` matrices with one shared colour bar (d2l's arguments).

    Panel ``[r, c]`` draws ``matrices[r, c]`` as it is: its first index runs down (``ylabel``), its second across.
    ``colorbar=False`` leaves the bar out (a mask of two values reads better with a legend).
    """
    if not isinstance(matrices, (Tensor, np.ndarray)):
        raise TypeError(f"matrices must be a torch.Tensor or NumPy array (rows, cols, height, width), "
                        f"got {type(matrices).__name__}")
    data = _numpy(matrices)
    if data.ndim != 4:
        hint = ": add the grid axes, e.g. weights[None, None]" if data.ndim == 2 else ""
        raise ValueError(f"matrices must be 4-D (rows, cols, height, width), got shape {data.shape}{hint}")
    check_finite("matrices", data)
    num_rows, num_cols = data.shape[:2]
    vmin = float(data.min()) if vmin is None else vmin
    vmax = float(data.max()) if vmax is None else vmax
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(num_rows, num_cols, sharex=True, sharey=True, squeeze=False)
    image = None
    for i in range(num_rows):
        for j in range(num_cols):
            ax = axes[i, j]
            image = ax.imshow(data[i, j], cmap=cmap, vmin=vmin, vmax=vmax)
            if xticklabels is not None:
                ax.set_xticks(range(len(xticklabels)), xticklabels, rotation=90)
            if yticklabels is not None:
                ax.set_yticks(range(len(yticklabels)), yticklabels)
            if i == num_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles is not None and j < len(titles):
                ax.set_title(titles[j])
    if colorbar and image is not None:
        fig.colorbar(image, ax=axes, shrink=0.6)
    return fig


def _literal(tokens: list[str]) -> list[str]:
    """Tokens as matplotlib text: a ``$`` shows as a dollar sign, not the start of a formula (idempotent)."""
    return [re.sub(r"(?<!\\)\$", r"\\$", t) for t in tokens]


def _weights(trace: object, batch: object) -> tuple[np.ndarray, np.ndarray]:
    """One sequence's ``(h, Tq, Tk)`` weights and bool mask from a trace, checked."""
    trace = check_trace(trace)
    batch = check_index("batch", batch, trace.weights.shape[0], what=" (the trace's batch size)")
    check_finite("trace.weights", trace.weights[batch])
    return _numpy(trace.weights[batch]), trace.mask[batch].detach().cpu().numpy()


def plot_attention_heads(
    trace: AttentionTrace,
    q_tokens: Sequence[str],
    k_tokens: Sequence[str] | None = None,
    *,
    batch: int = 0,
    annotate: bool = True,
    cmap: str = "Reds",
    size: float = 2.6,
    heads: Sequence[int] | None = None,
    ncols: int | None = None,
) -> Figure:
    """One heatmap per head of ``trace.weights[batch]`` ``(h, Tq, Tk)``, token labels, weights written in cells.

    ``heads`` picks which heads to draw (default all); ``ncols`` wraps them into a grid (default one row).
    Cells hidden by the mask are hatched in grey, so a masked 0 looks different from a learned 0.
    """
    weights, mask = _weights(trace, batch)
    chosen = check_heads(heads, weights.shape[0])
    q_tokens = check_tokens("q_tokens", q_tokens, weights.shape[1])
    k_tokens = q_tokens if k_tokens is None else k_tokens
    k_tokens = check_tokens("k_tokens", k_tokens, weights.shape[2])
    q_tokens, k_tokens = _literal(q_tokens), _literal(k_tokens)
    if ncols is not None:
        check_int("ncols", ncols)
    size = check_number("size", size, positive=True)
    cols = len(chosen) if ncols is None else min(ncols, len(chosen))
    rows = -(-len(chosen) // cols)
    grid = np.zeros((rows, cols) + weights.shape[1:])
    for n, h in enumerate(chosen):
        grid[n // cols, n % cols] = weights[h]
    fig = show_heatmaps(
        grid, _("keys"), _("queries"), figsize=(size * cols + 0.8, size * rows), cmap=cmap,
        xticklabels=k_tokens, yticklabels=q_tokens, vmin=0.0, vmax=1.0,
    )
    panels = fig.axes[: rows * cols]
    for n, ax in enumerate(panels):
        if n >= len(chosen):  # an empty slot at the end of the grid
            ax.set_visible(False)
            continue
        h = chosen[n]
        ax.set_title(_("head {head}").format(head=h))
        hidden = ~mask[h]
        if hidden.any():
            ax.imshow(np.where(hidden, 1.0, np.nan), cmap=mpl.colors.ListedColormap(["#e8e8e8"]), vmin=0, vmax=1)
        if annotate:
            # As large as a cell allows ("0.25" is about 2.2 em wide), 10 pt at most: legible on a projector.
            cell_inches = size / max(weights.shape[1], weights.shape[2])
            fontsize = min(10.0, max(6.0, 29 * cell_inches))
            for (i, j), value in np.ndenumerate(weights[h]):
                if mask[h, i, j]:
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=fontsize,
                            color="white" if value > 0.6 else "black")
    return fig


def plot_head_lines(
    trace: AttentionTrace,
    tokens: Sequence[str],
    *,
    batch: int = 0,
    heads: Sequence[int] | None = None,
    min_weight: float = 0.05,
    size: float = 2.2,
    query: int | None = None,
) -> Figure:
    """A bertviz-style view drawn with matplotlib: queries on the left, keys on the right, one panel per head.

    A line's width and opacity grow with its weight; weights below ``min_weight`` are not drawn.
    ``query`` (a position) draws only that query's lines and marks its token, like hovering in bertviz.
    Self-attention only: queries and keys are the same ``tokens``.
    """
    weights = _weights(trace, batch)[0]
    if weights.shape[1] != weights.shape[2]:
        raise ValueError(
            f"plot_head_lines draws self-attention (as many queries as keys), got weights {weights.shape[1:]}"
        )
    heads = check_heads(heads, weights.shape[0])
    tokens = _literal(check_tokens("tokens", tokens, weights.shape[1]))
    n = len(tokens)
    if query is not None:
        query = check_index("query", query, n, what=" (a query position, or None for all)")
    min_weight = check_probability("min_weight", min_weight)
    size = check_number("size", size, positive=True)
    fig = Figure(figsize=(size * len(heads), 0.35 * n + 0.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(heads)))
    colours = mpl.colormaps["tab10"]
    rows = range(n) if query is None else [query]
    for ax, head in zip(axes, heads):
        w = weights[head]
        for i in rows:
            for j in range(w.shape[1]):
                if w[i, j] >= min_weight:
                    ax.plot([0, 1], [i, j], color=colours(head % 10), alpha=float(min(1.0, 0.15 + w[i, j])),
                            linewidth=0.5 + 4 * float(w[i, j]))
        for i, t in enumerate(tokens):
            bold = "bold" if i == query else "normal"
            ax.text(-0.05, i, t, ha="right", va="center", fontsize=9, fontweight=bold)
            ax.text(1.05, i, t, ha="left", va="center", fontsize=9)
        ax.text(-0.05, n - 0.1, _("queries"), ha="right", va="center", fontsize=8, color="#777777", style="italic")
        ax.text(1.05, n - 0.1, _("keys"), ha="left", va="center", fontsize=8, color="#777777", style="italic")
        ax.set_xlim(-0.6, 1.6)
        ax.set_ylim(n + 0.1, -0.5)
        ax.set_title(_("head {head}").format(head=head), color=colours(head % 10))
        ax.axis("off")
    return fig


def plot_positional_curves(
    table: Tensor, columns: Sequence[int] = (6, 7, 8, 9), *, figsize: tuple[float, float] = (6, 2.5)
) -> Figure:
    """Selected columns of a ``(positions, d)`` positional table as curves over the position."""
    data = _table("table", table)
    columns = [check_index(f"columns[{i}]", c, data.shape[1], what=" (a column of table)")
               for i, c in enumerate(columns)]
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    for c in columns:
        ax.plot(np.arange(data.shape[0]), data[:, c], label=_("col {column}").format(column=c))
    ax.set_xlabel(_("row (position)"))
    ax.set_ylabel(_("value"))
    ax.legend(loc="upper right", fontsize=8)
    return fig


def plot_positional_heatmap(
    table: Tensor, *, cmap: str = "Blues", figsize: tuple[float, float] = (4, 4.5), title: str | None = None
) -> Figure:
    """A ``(positions, d)`` positional table as a heatmap: rows are positions, columns encoding dimensions."""
    fig = show_heatmaps(
        torch.as_tensor(_table("table", table))[None, None], _("column (encoding dimension)"), _("row (position)"),
        figsize=figsize, cmap=cmap,
    )
    if title:
        fig.axes[0].set_title(title)
    return fig


def _column_ranges(table: pd.DataFrame, data: np.ndarray, ranges: object) -> list[tuple[float, float]]:
    """One ``(low, high)`` colour range per column: ``ranges[column]`` where given, else from 0 to the largest value."""
    if ranges is None:
        ranges = {}
    if not isinstance(ranges, dict):
        raise TypeError(f"ranges must be a dict of column -> (low, high), got {type(ranges).__name__}")
    unknown = [c for c in ranges if c not in table.columns]
    if unknown:
        raise ValueError(f"ranges names columns that are not in table: {unknown}; its columns: {list(table.columns)}")
    out = []
    for j, column in enumerate(table.columns):
        if column in ranges:
            given = ranges[column]
            if not (isinstance(given, (tuple, list)) and len(given) == 2):
                raise TypeError(f"ranges[{column!r}] must be a pair (low, high), got {given!r}")
            low, high = (check_number(f"ranges[{column!r}]", v) for v in given)
            if not low < high:
                raise ValueError(f"ranges[{column!r}] must have low < high, got ({low}, {high})")
        else:
            low, high = min(0.0, float(data[:, j].min())), float(data[:, j].max())
            high = high if high > low else low + 1.0  # a column of zeros: any scale draws it pale
        out.append((low, high))
    return out


def plot_head_table(
    table: pd.DataFrame, *, title: str | None = None, cmap: str = "Blues", vmin: float | None = 0.0,
    vmax: float | None = 1.0, fmt: str = "{:.2f}", size: float = 1.1, by_column: bool = False,
    ranges: dict[str, tuple[float, float]] | None = None,
) -> Figure:
    """A heads-by-scores table (``toy.head_scores``, importance scores) as an annotated heatmap, one row per head.

    Rows indexed by ``(layer, head)`` tuples are labelled ``L{layer}H{head}``. By default every cell shares one
    colour scale (``vmin`` to ``vmax``) with a colour bar. ``by_column=True`` colours each column on its own scale,
    for columns in different units: from ``ranges[column]`` where given, else from 0 to the column's largest
    value; each column's label then says its range, and there is no colour bar.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame (heads x scores), got {type(table).__name__}")
    if not isinstance(by_column, bool):
        raise TypeError(f"by_column must be True or False, got {type(by_column).__name__} {by_column!r}")
    data = table.to_numpy(dtype=float)
    check_finite("table", data)
    labels = [key_name(c) for c in table.columns]  # a library's column name in the current language
    if by_column:
        limits = _column_ranges(table, data, ranges)
        shade = np.stack([(data[:, j] - lo) / (hi - lo) for j, (lo, hi) in enumerate(limits)], axis=1)
        labels = [_("{name}\n({low} to {high})").format(name=name, low=fmt.format(lo), high=fmt.format(hi))
                  for name, (lo, hi) in zip(labels, limits)]
        vmin, vmax = 0.0, 1.0
    elif ranges is not None:
        raise ValueError("ranges colours each column on its own scale: pass it with by_column=True")
    else:
        shade = data
    height = 0.38 * data.shape[0] + (1.3 if by_column else 1.0)
    fig = Figure(figsize=(size * data.shape[1] + 1.6, height), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(shade, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(data.shape[1]), labels)
    ax.set_yticks(range(data.shape[0]), [head_label(*i) if isinstance(i, tuple) else str(i) for i in table.index])
    ax.xaxis.tick_top()
    lo, hi = image.get_clim()
    for (i, j), value in np.ndenumerate(data):
        dark = hi > lo and (shade[i, j] - lo) / (hi - lo) > 0.6
        ax.text(j, i, fmt.format(value), ha="center", va="center", fontsize=9, color="white" if dark else "black")
    if title:
        ax.set_title(title, fontsize=10)
    if not by_column:
        fig.colorbar(image, ax=ax, shrink=0.8)
    return fig
