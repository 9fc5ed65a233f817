"""Matplotlib figures: attention heatmaps, per-head grids and line views, positional encodings.

Every function builds a ``matplotlib.figure.Figure`` without pyplot and returns it: nothing is kept in
a global figure list, the last expression of a notebook cell shows it once, and ``fig.savefig`` writes it.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor

from mha_lib.mha import AttentionTrace


def _numpy(x: Tensor | np.ndarray) -> np.ndarray:
    return x.detach().cpu().double().numpy() if isinstance(x, Tensor) else np.asarray(x, dtype=float)


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
) -> Figure:
    """A grid of heatmaps from ``(rows, cols, m, n)`` matrices with one shared colour bar (d2l's arguments)."""
    data = _numpy(matrices)
    if data.ndim != 4:
        raise ValueError(f"matrices must be 4-D (rows, cols, height, width), got shape {data.shape}")
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
    fig.colorbar(image, ax=axes, shrink=0.6)
    return fig


def plot_attention_heads(
    trace: AttentionTrace,
    q_tokens: Sequence[str],
    k_tokens: Sequence[str] | None = None,
    *,
    batch: int = 0,
    annotate: bool = True,
    cmap: str = "Reds",
    size: float = 2.6,
) -> Figure:
    """One heatmap per head of ``trace.weights[batch]`` ``(h, Tq, Tk)``, token labels, weights written in cells."""
    k_tokens = q_tokens if k_tokens is None else k_tokens
    weights = _numpy(trace.weights[batch])
    h = weights.shape[0]
    fig = show_heatmaps(
        weights[None], "keys", "queries", titles=[f"head {i}" for i in range(h)],
        figsize=(size * h + 0.8, size), cmap=cmap, xticklabels=k_tokens, yticklabels=q_tokens, vmin=0.0, vmax=1.0,
    )
    if annotate:
        for ax, w in zip(fig.axes, weights):
            for (i, j), value in np.ndenumerate(w):
                if trace.mask[batch, 0, i, j]:
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7,
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
) -> Figure:
    """A bertviz-style view drawn with matplotlib: queries on the left, keys on the right, one panel per head.

    A line's width and opacity grow with its weight; weights below ``min_weight`` are not drawn.
    """
    weights = _numpy(trace.weights[batch])
    heads = list(range(weights.shape[0])) if heads is None else list(heads)
    n = len(tokens)
    fig = Figure(figsize=(size * len(heads), 0.35 * n + 0.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(heads)))
    colours = mpl.colormaps["tab10"]
    for ax, head in zip(axes, heads):
        w = weights[head]
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                if w[i, j] >= min_weight:
                    ax.plot([0, 1], [i, j], color=colours(head % 10), alpha=float(min(1.0, 0.15 + w[i, j])),
                            linewidth=0.5 + 4 * float(w[i, j]))
        for i, t in enumerate(tokens):
            ax.text(-0.05, i, t, ha="right", va="center", fontsize=9)
            ax.text(1.05, i, t, ha="left", va="center", fontsize=9)
        ax.set_xlim(-0.6, 1.6)
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_title(f"head {head}", color=colours(head % 10))
        ax.axis("off")
    return fig


def plot_positional_curves(
    table: Tensor, columns: Sequence[int] = (6, 7, 8, 9), *, figsize: tuple[float, float] = (6, 2.5)
) -> Figure:
    """Selected columns of a ``(positions, d)`` positional table as curves over the position."""
    data = _numpy(table)
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    for c in columns:
        ax.plot(np.arange(data.shape[0]), data[:, c], label=f"col {c}")
    ax.set_xlabel("row (position)")
    ax.set_ylabel("value")
    ax.legend(loc="upper right", fontsize=8)
    return fig


def plot_positional_heatmap(
    table: Tensor, *, cmap: str = "Blues", figsize: tuple[float, float] = (4, 4.5), title: str | None = None
) -> Figure:
    """A ``(positions, d)`` positional table as a heatmap: rows are positions, columns encoding dimensions."""
    fig = show_heatmaps(
        torch.as_tensor(_numpy(table))[None, None], "column (encoding dimension)", "row (position)",
        figsize=figsize, cmap=cmap,
    )
    if title:
        fig.axes[0].set_title(title)
    return fig
