"""pandas tables of what happens inside attention: weights, per-head vectors, concatenation, output."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import torch
from pandas.io.formats.style import Styler
from torch import Tensor

from mha_lib.mha import AttentionTrace

STYLER_UUID = "mha"  # a fixed id keeps the HTML of styled tables identical from run to run


def _labels(tokens: Sequence[str] | None, n: int, prefix: str) -> list[str]:
    if tokens is None:
        tokens = [str(i) for i in range(n)]
    if len(tokens) != n:
        raise ValueError(f"tokens must have {n} entries (one per position), got {len(tokens)}")
    return [f"{prefix}{t}" for t in tokens]


def _check_index(name: str, value: int, size: int) -> None:
    if not 0 <= value < size:
        raise ValueError(f"{name} must be in [0, {size}), got {value}")


def _frame(matrix: Tensor, index: list[str], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(matrix.detach().cpu().double().numpy(), index=index, columns=columns)


def weights_table(
    weights: Tensor, q_tokens: Sequence[str] | None = None, k_tokens: Sequence[str] | None = None
) -> pd.DataFrame:
    """A ``(Tq, Tk)`` weight matrix as a DataFrame with ``Q:token`` rows and ``K:token`` columns."""
    if weights.dim() != 2:
        raise ValueError(f"weights must be 2-D (queries, keys), got shape {tuple(weights.shape)}")
    return _frame(weights, _labels(q_tokens, weights.shape[0], "Q:"), _labels(k_tokens, weights.shape[1], "K:"))


def attention_table(
    trace: AttentionTrace,
    q_tokens: Sequence[str] | None = None,
    k_tokens: Sequence[str] | None = None,
    *,
    head: int = 0,
    batch: int = 0,
) -> pd.DataFrame:
    """Head ``head``'s attention weights ``(Tq, Tk)``: ``Q:token`` rows, ``K:token`` columns."""
    _check_index("head", head, trace.num_heads)
    _check_index("batch", batch, trace.weights.shape[0])
    k_tokens = q_tokens if k_tokens is None and trace.weights.shape[-1] == trace.weights.shape[-2] else k_tokens
    return weights_table(trace.weights[batch, head], q_tokens, k_tokens)


def vectors_table(vectors: Tensor, tokens: Sequence[str] | None = None, *, prefix: str = "dim") -> pd.DataFrame:
    """A ``(T, d)`` matrix as a DataFrame, one row per token and columns ``dim0, dim1, ...``."""
    if vectors.dim() != 2:
        raise ValueError(f"vectors must be 2-D (tokens, features), got shape {tuple(vectors.shape)}")
    return _frame(vectors, _labels(tokens, vectors.shape[0], ""), [f"{prefix}{j}" for j in range(vectors.shape[1])])


def qkv_tables(
    trace: AttentionTrace, tokens: Sequence[str] | None = None, *, head: int = 0, batch: int = 0
) -> dict[str, pd.DataFrame]:
    """Head ``head``'s queries, keys and values, ``{"Q": ..., "K": ..., "V": ...}``, each ``(T, head_dim)``."""
    _check_index("head", head, trace.num_heads)
    _check_index("batch", batch, trace.weights.shape[0])
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
    _check_index("head", head, trace.num_heads)
    _check_index("batch", batch, trace.weights.shape[0])
    return vectors_table(trace.head_context[batch, head], tokens)


def concat_table(trace: AttentionTrace, tokens: Sequence[str] | None = None, *, batch: int = 0) -> pd.DataFrame:
    """The concatenated heads ``(Tq, d_out)``; columns ``h0.d0, h0.d1, h1.d0, ...`` say which head wrote them."""
    _check_index("batch", batch, trace.weights.shape[0])
    head_dim = trace.head_context.shape[-1]
    columns = [f"h{h}.d{j}" for h in range(trace.num_heads) for j in range(head_dim)]
    return _frame(trace.concat[batch], _labels(tokens, trace.concat.shape[1], ""), columns)


def output_table(trace: AttentionTrace, tokens: Sequence[str] | None = None, *, batch: int = 0) -> pd.DataFrame:
    """The layer's output ``out_proj(concat)`` ``(Tq, d_out)``, columns ``out0, out1, ...``."""
    _check_index("batch", batch, trace.weights.shape[0])
    return vectors_table(trace.output[batch], tokens, prefix="out")


def style_weights(df: pd.DataFrame, *, precision: int = 3, cmap: str = "Reds", caption: str | None = None) -> Styler:
    """Shade a weights table, add a ``row sum`` column, and give it a fixed id (deterministic HTML)."""
    table = df.copy()
    table["row sum"] = df.sum(axis=1)
    styler = (
        table.style.set_uuid(STYLER_UUID)
        .background_gradient(cmap=cmap, vmin=0.0, vmax=1.0, subset=list(df.columns))
        .format(precision=precision)
    )
    if caption:
        styler = styler.set_caption(caption)
    return styler


def head_summary(trace: AttentionTrace, *, batch: int = 0) -> pd.DataFrame:
    """One row per head: mean entropy (bits), mean attention distance ``sum_j w_ij |i - j|``, diagonal share.

    Only rows with at least one visible key are averaged. ``max entropy`` is ``log2`` of the number of
    visible keys, averaged the same way: an entropy close to it means the head spreads its attention evenly.
    """
    _check_index("batch", batch, trace.weights.shape[0])
    w = trace.weights[batch].detach().double()  # (h, Tq, Tk)
    mask = trace.mask[batch]
    tq, tk = w.shape[-2:]
    live = mask.any(-1)  # (h, Tq)
    entropy = -(w * torch.log2(w.clamp_min(1e-300))).sum(-1)
    max_entropy = torch.log2(mask.sum(-1).clamp_min(1).double())
    distance = (w * (torch.arange(tq)[:, None] - torch.arange(tk)[None, :]).abs().double()).sum(-1)
    diagonal = torch.diagonal(w, dim1=-2, dim2=-1) if tq == tk else torch.full(w.shape[:2], math.nan)

    def mean(x: Tensor) -> list[float]:
        return [float(x[h][live[h]].mean()) for h in range(w.shape[0])]

    return pd.DataFrame(
        {
            "entropy (bits)": mean(entropy),
            "max entropy (bits)": mean(max_entropy),
            "mean distance": mean(distance),
            "diagonal share": mean(diagonal.double()),
        },
        index=pd.Index([f"head {h}" for h in range(w.shape[0])], name="head"),
    )
