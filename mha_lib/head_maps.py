"""Every head of a model in one figure: the attention grid (layers x heads) and maps of per-head scores.

``plot_head_grid`` draws the ``(L, h, T, T)`` attention weights of one sentence as one image, a mosaic of
``L x h`` panels (query ``i`` down, key ``j`` across, as in ``mha_lib.plots``), so that 72 heads draw in a fraction
of a second: one ``imshow``, no layout engine. ``plot_head_maps`` draws per-head numbers (``(L, h)`` tensors or the
columns of a table indexed by ``(layer, head)``, such as ``bert.head_scores``) as annotated ``layers x heads``
heatmaps. Both return a ``matplotlib.figure.Figure`` built without pyplot.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torch import Tensor

from mha_lib._validate import _got, _shape, check_finite, check_number, check_tensor
from mha_lib.heads import head_label
from mha_lib.i18n import _, key_name


def _mosaic(weights: np.ndarray, gap: int) -> np.ndarray:
    """``(L, h, T, T)`` -> one ``(L (T + gap) - gap, h (T + gap) - gap)`` image, NaN between the panels."""
    layers, heads, tq, tk = weights.shape
    image = np.full((layers * (tq + gap) - gap, heads * (tk + gap) - gap), np.nan)
    for layer in range(layers):
        for head in range(heads):
            top, left = layer * (tq + gap), head * (tk + gap)
            image[top : top + tq, left : left + tk] = weights[layer, head]
    return image


def plot_head_grid(
    weights: Tensor,
    *,
    panel: float = 0.9,
    cmap: str = "Reds",
    highlight: Sequence[tuple[int, int]] = (),
    title: str | None = None,
) -> Figure:
    """Every head's weights for one sentence, ``weights`` ``(L, h, T, T)``, as a mosaic: row = layer, column = head.

    Each panel is one head's ``(T, T)`` table, queries down and keys across, on one colour scale from 0 to 1.
    ``panel``: the width of a panel in inches. ``highlight``: ``(layer, head)`` panels to frame and label.
    """
    check_tensor("weights", weights, 4, "(layers, heads, T, T)")
    data = weights.detach().cpu().double().numpy()
    check_finite("weights", data)
    layers, heads, tq, tk = data.shape
    panel = check_number("panel", panel, positive=True)
    gap = max(1, round(0.18 * max(tq, tk)))
    image = _mosaic(data, gap)
    left, right, top, bottom = 0.85, 0.9, 0.75 if title else 0.4, 0.15  # margins, inches
    width, height = heads * panel, layers * panel * tq / tk
    fig = Figure(figsize=(left + width + right, bottom + height + top))
    fw, fh = fig.get_size_inches()
    ax = fig.add_axes((left / fw, bottom / fh, width / fw, height / fh))
    colours = mpl.colormaps[cmap].with_extremes(bad="white")  # the gaps between panels
    shown = ax.imshow(image, cmap=colours, vmin=0.0, vmax=1.0, interpolation="nearest", aspect="auto")
    ax.set_xticks([h * (tk + gap) + (tk - 1) / 2 for h in range(heads)], [str(h) for h in range(heads)])
    ax.set_yticks([layer * (tq + gap) + (tq - 1) / 2 for layer in range(layers)],
                  [_("layer {layer}").format(layer=layer) for layer in range(layers)])
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel(_("head"))
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    for layer, head in highlight:
        if not (0 <= layer < layers and 0 <= head < heads):
            raise ValueError(f"highlight must name heads of this grid ({layers} layers x {heads} heads), "
                             f"got {(layer, head)}")
        ax.add_patch(Rectangle((head * (tk + gap) - 0.5 - gap / 2, layer * (tq + gap) - 0.5 - gap / 2),
                               tk + gap, tq + gap, fill=False, edgecolor="#1f4e9c", linewidth=2))
    cax = fig.add_axes(((left + width + 0.25) / fw, bottom / fh, 0.15 / fw, height / fh))
    fig.colorbar(shown, cax=cax, label=_("attention weight"))
    if title:
        fig.suptitle(title, y=1 - 0.12 / fh, va="top", fontsize=11)
    return fig


def _maps(scores: pd.DataFrame | dict[str, Tensor]) -> dict[str, np.ndarray]:
    """``{name: (L, h) array}`` from a table indexed by ``(layer, head)`` or a dict of ``(L, h)`` tensors."""
    if isinstance(scores, pd.DataFrame):
        if not isinstance(scores.index, pd.MultiIndex) or scores.index.nlevels != 2:
            raise ValueError("scores must be indexed by (layer, head) tuples, as bert.head_scores returns")
        layers = scores.index.get_level_values(0).max() + 1
        heads = scores.index.get_level_values(1).max() + 1
        out = {}
        for name in scores.columns:
            grid = np.full((layers, heads), np.nan)
            for (layer, head), value in scores[name].items():
                grid[layer, head] = value
            out[str(name)] = grid
        return out
    if not isinstance(scores, dict) or not scores:
        raise TypeError(f"scores must be a DataFrame indexed by (layer, head) or a dict of (L, h) tensors, "
                        f"got {_got(scores)}")
    out = {}
    for name, values in scores.items():
        if not isinstance(values, (Tensor, np.ndarray)) or np.ndim(values) != 2:
            raise ValueError(f"scores[{name!r}] must be a (layers, heads) tensor, got "
                             f"{_shape(values) if isinstance(values, Tensor) else _got(values)}")
        out[str(name)] = torch.as_tensor(values).detach().cpu().double().numpy()
    return out


def _number(fmt: str, value: float) -> str:
    """``fmt.format(value)``, without a sign when it rounds to zero (never ``-0.000``)."""
    text = fmt.format(value)
    return text.lstrip("+-") if float(text) == 0 else text


def plot_head_maps(
    scores: pd.DataFrame | dict[str, Tensor],
    *,
    ncols: int = 2,
    fmt: str = "{:.2f}",
    cell: float = 0.5,
    cmap: str = "Blues",
    title: str | None = None,
) -> Figure:
    """One annotated ``layers x heads`` heatmap per score (a column of ``scores``, or an entry of a dict).

    A score between 0 and 1 is drawn on a 0-1 scale; a larger one from 0 to its maximum; one with negative values
    (a change) on a red-blue scale centred on 0. ``cell``: the size of one head's square, in inches. The panels
    are placed by hand (no layout engine), so a figure of several 72-head maps draws in a fraction of a second.
    """
    maps = _maps(scores)
    for name, grid in maps.items():
        check_finite(f"scores[{name!r}]", grid)
    cell = check_number("cell", cell, positive=True)
    layers, heads = next(iter(maps.values())).shape
    ncols = min(ncols, len(maps))
    nrows = -(-len(maps) // ncols)
    left, gap_x, bar, top, gap_y, bottom = 0.8, 0.35, 0.5, 0.45 if title else 0.15, 0.75, 0.5  # inches
    map_w, map_h = heads * cell, layers * cell
    fig_w = ncols * (left + map_w + bar) + (ncols - 1) * gap_x + 0.1
    fig_h = top + nrows * (0.3 + map_h) + (nrows - 1) * gap_y + bottom
    fig = Figure(figsize=(fig_w, fig_h))
    for n, (name, grid) in enumerate(maps.items()):
        row, col = divmod(n, ncols)
        x0 = col * (left + map_w + bar + gap_x) + left
        y0 = fig_h - top - (row + 1) * (0.3 + map_h) - row * gap_y
        ax = fig.add_axes((x0 / fig_w, y0 / fig_h, map_w / fig_w, map_h / fig_h))
        if grid.min() < 0:
            limit = float(np.abs(grid).max()) or 1.0
            colours, lo, hi = "RdBu", -limit, limit
        else:
            colours, lo, hi = cmap, 0.0, max(1.0, float(grid.max()))
        image = ax.imshow(grid, cmap=colours, vmin=lo, vmax=hi, aspect="auto")
        for (layer, head), value in np.ndenumerate(grid):
            diverging = colours == "RdBu"
            strong = abs(value - (lo + hi) / 2) > 0.3 * (hi - lo) if diverging else value - lo > 0.6 * (hi - lo)
            ax.text(head, layer, _number(fmt, value), ha="center", va="center", fontsize=8,
                    color="white" if strong else "black")
        ax.set_xticks(range(heads), [str(h) for h in range(heads)], fontsize=9)
        ax.set_yticks(range(layers), [_("layer {layer}").format(layer=layer) for layer in range(layers)], fontsize=9)
        ax.tick_params(length=0)
        ax.set_xlabel(_("head"), fontsize=9, labelpad=2)
        ax.set_title(key_name(name), fontsize=11)
        cax = fig.add_axes(((x0 + map_w + 0.12) / fig_w, y0 / fig_h, 0.13 / fig_w, map_h / fig_h))
        fig.colorbar(image, cax=cax).ax.tick_params(labelsize=8)
    if title:
        fig.suptitle(title, y=1 - 0.08 / fig_h, va="top", fontsize=12)
    return fig


def top_heads(scores: pd.Series, n: int = 5) -> list[str]:
    """The labels ``L{layer}H{head}`` of the ``n`` heads with the largest score, largest first (for printing)."""
    return [head_label(*index) for index in scores.nlargest(n).index]
