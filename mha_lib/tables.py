"""pandas tables of what happens inside attention: weights, per-head vectors, concatenation, output.

Bad input follows ``mha_lib._validate``: a wrong type is a ``TypeError``, a wrong value a ``ValueError``, each
naming the argument. NaN or inf values are refused with a ``ValueError`` that counts them: a table never shows a
silent NaN (the grey dots of ``style_weights`` are keys hidden by ``mask``, never missing numbers). Styled tables
escape every label and the caption as HTML text, so a token such as ``<pad>`` shows as ``<pad>``.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from pandas.io.formats.style import Styler
from torch import Tensor

from mha_lib._validate import check_finite, check_index, check_int, check_tokens
from mha_lib.i18n import N_, _
from mha_lib.trace import AttentionTrace, check_trace

STYLER_UUID = "mha"  # styled tables get the id ``mha_<hash of what they show>``: identical HTML from run to run
MASKED_CSS = "background-color: #f2f2f2; color: #a0a0a0"  # a hidden key: light grey, shown as a dot
ROW_SUM_CSS = {"font-weight": "bold", "border-left": "2px solid #888888"}
# A styled table carries its own colours, as a figure does: dark labels and caption on white, whatever the page's
# theme (a dark page would otherwise give them its light text on the light box it puts behind the table).
TABLE_STYLES = [{"selector": "", "props": "background-color: #ffffff; color: #1a1a1a"},
                {"selector": "th, caption", "props": "background-color: #ffffff; color: #1a1a1a"}]
# Each shaded cell's text is black or pandas' light #f1f1f1, whichever contrasts more with its background: the two
# contrasts are equal at this WCAG relative luminance, sqrt(0.05 * (L(#f1f1f1) + 0.05)) - 0.05.
TEXT_COLOR_THRESHOLD = 0.1656


def _labels(tokens: Sequence[str] | None, n: int, prefix: str, name: str = "tokens") -> list[str]:
    labels = [str(i) for i in range(n)] if tokens is None else check_tokens(name, tokens, n)
    return [f"{prefix}{t}" for t in labels]


def _picked(trace: object, batch: object, head: object | None = None) -> AttentionTrace:
    """Check ``trace`` and the ``batch`` (and ``head``) index into it."""
    trace = check_trace(trace)
    check_index("batch", batch, trace.weights.shape[0], what=" (the trace's batch size)")
    if head is not None:
        check_index("head", head, trace.num_heads, what=f" (the trace has {trace.num_heads} heads, numbered from 0)")
    return trace


def _frame(name: str, matrix: Tensor, index: list[str], columns: list[str]) -> pd.DataFrame:
    check_finite(name, matrix)
    return pd.DataFrame(matrix.detach().cpu().double().numpy(), index=index, columns=columns)


def _matrix(name: str, x: object, layout: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {layout}, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"{name} must be 2-D {layout}, got shape {tuple(x.shape)}")
    return x


def weights_table(
    weights: Tensor, q_tokens: Sequence[str] | None = None, k_tokens: Sequence[str] | None = None
) -> pd.DataFrame:
    """A ``(Tq, Tk)`` weight matrix as a DataFrame with ``Q:token`` rows and ``K:token`` columns."""
    _matrix("weights", weights, "(queries, keys)")
    return _frame(
        "weights",
        weights,
        _labels(q_tokens, weights.shape[0], "Q:", "q_tokens"),
        _labels(k_tokens, weights.shape[1], "K:", "k_tokens"),
    )


def attention_table(
    trace: AttentionTrace,
    q_tokens: Sequence[str] | None = None,
    k_tokens: Sequence[str] | None = None,
    *,
    head: int = 0,
    batch: int = 0,
) -> pd.DataFrame:
    """Head ``head``'s attention weights ``(Tq, Tk)``: ``Q:token`` rows, ``K:token`` columns."""
    trace = _picked(trace, batch, head)
    k_tokens = q_tokens if k_tokens is None and trace.weights.shape[-1] == trace.weights.shape[-2] else k_tokens
    return weights_table(trace.weights[batch, head], q_tokens, k_tokens)


def vectors_table(vectors: Tensor, tokens: Sequence[str] | None = None, *, prefix: str = "dim") -> pd.DataFrame:
    """A ``(T, d)`` matrix as a DataFrame, one row per token and columns ``dim0, dim1, ...``."""
    _matrix("vectors", vectors, "(tokens, features)")
    columns = [f"{prefix}{j}" for j in range(vectors.shape[1])]
    return _frame("vectors", vectors, _labels(tokens, vectors.shape[0], ""), columns)


def qkv_tables(
    trace: AttentionTrace, tokens: Sequence[str] | None = None, *, head: int = 0, batch: int = 0
) -> dict[str, pd.DataFrame]:
    """Head ``head``'s queries, keys and values, ``{"Q": ..., "K": ..., "V": ...}``, each ``(T, head_dim)``."""
    trace = _picked(trace, batch, head)
    k_tokens = tokens if trace.keys.shape[2] == trace.queries.shape[2] else None
    return {
        "Q": vectors_table(trace.queries[batch, head], tokens),
        "K": vectors_table(trace.keys[batch, head], k_tokens),
        "V": vectors_table(trace.values[batch, head], k_tokens),
    }


def head_context_table(
    trace: AttentionTrace, tokens: Sequence[str] | None = None, *, head: int = 0, batch: int = 0
) -> pd.DataFrame:
    """Head ``head``'s context vectors ``(Tq, head_dim)``: each row mixes that head's values."""
    trace = _picked(trace, batch, head)
    return vectors_table(trace.head_context[batch, head], tokens)


def concat_table(trace: AttentionTrace, tokens: Sequence[str] | None = None, *, batch: int = 0) -> pd.DataFrame:
    """The concatenated heads ``(Tq, d_out)``; columns ``h0.d0, h0.d1, h1.d0, ...`` say which head wrote them."""
    trace = _picked(trace, batch)
    head_dim = trace.head_context.shape[-1]
    columns = [f"h{h}.d{j}" for h in range(trace.num_heads) for j in range(head_dim)]
    return _frame("trace.concat", trace.concat[batch], _labels(tokens, trace.concat.shape[1], ""), columns)


def output_table(trace: AttentionTrace, tokens: Sequence[str] | None = None, *, batch: int = 0) -> pd.DataFrame:
    """The layer's output ``out_proj(concat)`` ``(Tq, d_out)``, columns ``out0, out1, ...``."""
    trace = _picked(trace, batch)
    return vectors_table(trace.output[batch], tokens, prefix="out")


class WeightsStyler(Styler):
    """The ``Styler`` that ``style_weights`` returns: its text form is a short description, not a memory address."""

    def __repr__(self) -> str:
        rows, cols = self.data.shape
        caption = f" {self.caption!r}" if self.caption else ""
        return _("<styled weights table{caption}: {rows} queries x {keys} keys, with row sums>").format(
            caption=caption, rows=rows, keys=cols - 1)


def _unique(labels: pd.Index) -> list[str]:
    """Each repeated label marked by its position (``K:the (0)``, ``K:the (4)``): a Styler needs unique labels."""
    counts = labels.value_counts()
    return [f"{label} ({i})" if counts[label] > 1 else str(label) for i, label in enumerate(labels)]


def _styler_uuid(table: pd.DataFrame, precision: int, *extra: object) -> str:
    """A short id that depends only on what the table shows, so two tables on one page never share CSS ids."""
    shown = table.round(precision).to_csv(float_format=f"%.{precision}f")
    digest = hashlib.sha1((shown + repr(extra)).encode()).hexdigest()[:8]
    return f"{STYLER_UUID}_{digest}"


def style_weights(
    df: pd.DataFrame,
    *,
    precision: int = 3,
    cmap: str = "Reds",
    caption: str | None = None,
    mask: Tensor | np.ndarray | None = None,
) -> WeightsStyler:
    """Shade a ``(Tq, Tk)`` weights table and add a bold ``row sum`` column; the HTML is the same on every run.

    ``mask`` (same shape, True = may attend) greys out and dots the hidden keys, so a causal table shows
    which zeros are forced by the mask. The row sums are computed from the full-precision weights.
    Labels and ``caption`` are shown as text (HTML-escaped): a ``<pad>`` token reads ``<pad>``. A label that
    repeats (two ``<pad>`` keys, a word said twice) gets its position, ``K:<pad> (3)``, so every row and column
    stays distinct.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame (e.g. from weights_table), got {type(df).__name__}")
    check_int("precision", precision, minimum=0)
    check_finite("df", df.to_numpy(dtype=float))
    df = df.set_axis(_unique(df.index), axis=0).set_axis(_unique(df.columns), axis=1)
    hidden = None
    if mask is not None:
        hidden = ~np.asarray(mask.detach().cpu() if isinstance(mask, Tensor) else mask, dtype=bool)
        if hidden.shape != df.shape:
            raise ValueError(f"mask must have the table's shape {df.shape} (queries, keys), got {hidden.shape}")
    table = df.copy() if hidden is None else df.mask(hidden)  # hidden keys become NaN, drawn as a grey dot
    row_sum = _("row sum")
    table[row_sum] = df.sum(axis=1)
    key = None if hidden is None else hidden.tobytes()
    styler = (
        WeightsStyler(table, uuid=_styler_uuid(table, precision, caption, cmap, key))
        .background_gradient(cmap=cmap, vmin=0.0, vmax=1.0, subset=list(df.columns),
                             text_color_threshold=TEXT_COLOR_THRESHOLD)
        .format(precision=precision, na_rep="·", escape="html")
        .format_index(escape="html", axis=0)
        .format_index(escape="html", axis=1)
        .set_properties(subset=[row_sum], **ROW_SUM_CSS)
        .set_table_styles(TABLE_STYLES)
    )
    if hidden is not None:
        css = pd.DataFrame(np.where(hidden, MASKED_CSS, ""), index=df.index, columns=df.columns)
        styler = styler.apply(lambda _: css, axis=None, subset=list(df.columns))
    if caption:
        styler = styler.set_caption(html.escape(str(caption)))
    return styler


def _as_weights(
    source: AttentionTrace | Tensor, batch: int, mask: Tensor | None
) -> tuple[Tensor, Tensor]:
    """The ``(h, Tq, Tk)`` weights and bool mask of one sequence, from a trace or a weights tensor."""
    if isinstance(source, AttentionTrace):
        if mask is not None:
            raise ValueError("mask must be None when a trace is given: the trace carries its own mask")
        _picked(source, batch)
        check_finite("trace.weights", source.weights[batch])
        return source.weights[batch].detach().double(), source.mask[batch]
    if not isinstance(source, Tensor):
        raise TypeError(f"trace must be an AttentionTrace or a weights tensor, got {type(source).__name__}")
    if source.dim() not in (3, 4):
        raise ValueError(
            f"weights must have shape (heads, queries, keys) or (batch, heads, queries, keys), "
            f"got {tuple(source.shape)}"
        )
    if source.dim() == 4:
        check_index("batch", batch, source.shape[0], what=" (the weights' batch size)")
        source = source[batch]
        mask = None if mask is None else (mask[batch] if mask.dim() == 4 else mask)
    check_finite("weights", source)
    w = source.detach().double()
    if mask is None:
        mask = torch.ones(w.shape, dtype=torch.bool)
    else:
        try:
            mask = torch.as_tensor(mask, dtype=torch.bool).expand(w.shape)
        except RuntimeError:
            raise ValueError(
                f"mask must broadcast to the weights' shape {tuple(w.shape)}, got {tuple(mask.shape)}"
            ) from None
    if not mask.any(-1).any(-1).all():
        raise ValueError("mask must leave at least one visible key for some query of every head, got a head with none")
    sums = w.sum(-1)[mask.any(-1)]
    if (w < 0).any() or not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        raise ValueError("weights must be non-negative with rows summing to 1 (softmax rows), got other values")
    return w, mask


def head_summary(trace: AttentionTrace | Tensor, *, batch: int = 0, mask: Tensor | None = None) -> pd.DataFrame:
    """One row per head: mean entropy (bits), mean attention distance ``sum_j w_ij |i - j|``, diagonal share.

    ``trace`` is an ``AttentionTrace`` or a weights tensor ``(h, Tq, Tk)`` / ``(B, h, Tq, Tk)`` whose rows sum
    to 1 (``mask``, True = may attend, defaults to every key). Only rows with at least one visible key are
    averaged. ``max entropy`` is ``log2`` of the number of visible keys, averaged the same way: an entropy
    close to it means the head spreads its attention evenly. ``diagonal share`` (the weight a query puts on its
    own position) exists only for self-attention, where ``Tq == Tk``; for cross-attention the column is left out.
    """
    w, mask = _as_weights(trace, batch, mask)  # (h, Tq, Tk)
    tq, tk = w.shape[-2:]
    live = mask.any(-1)  # (h, Tq)
    entropy = -(w * torch.log2(w.clamp_min(1e-300))).sum(-1)
    max_entropy = torch.log2(mask.sum(-1).clamp_min(1).double())
    distance = (w * (torch.arange(tq)[:, None] - torch.arange(tk)[None, :]).abs().double()).sum(-1)

    def mean(x: Tensor) -> list[float]:
        return [float(x[h][live[h]].mean()) for h in range(w.shape[0])]

    columns = {
        N_("entropy (bits)"): mean(entropy),
        N_("max entropy (bits)"): mean(max_entropy),
        N_("mean distance"): mean(distance),
    }
    if tq == tk:
        columns[N_("diagonal share")] = mean(torch.diagonal(w, dim1=-2, dim2=-1))
    return pd.DataFrame(columns, index=pd.Index([f"head {h}" for h in range(w.shape[0])], name="head"))
