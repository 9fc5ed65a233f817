"""Scaled dot-product attention, its masks, and additive attention.

Mask convention, everywhere in ``mha_lib``: a boolean mask is **True where a query may attend
to a key**, the same polarity as ``torch.nn.functional.scaled_dot_product_attention``.
(``Tensor.masked_fill`` and ``nn.MultiheadAttention`` use the opposite polarity: True = blocked.)

A query row whose keys are all masked (``valid_lens`` of 0, say) gets weights of exactly 0 and so
a context vector of 0, as ``F.scaled_dot_product_attention`` does in PyTorch >= 2.5. d2l.ai instead
spreads such a row uniformly over every key, padding included; a plain ``-inf`` softmax gives NaN.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mha_lib._validate import (
    _shape,
    check_bool,
    check_int,
    check_probability,
    check_same_device,
    check_tensor,
    check_valid_lens,
)


def _on_one_device(**tensors: Tensor) -> None:
    """Refuse tensors on different devices, naming them: ``q is on cuda:0 but k is on cpu``."""
    (first, x), *rest = tensors.items()
    for name, t in rest:
        if t.device != x.device:
            raise ValueError(f"{name} is on device {t.device} but {first} is on {x.device}:"
                             f" move them to one device, e.g. {name}.to('{x.device}')")


def check_has_tokens(name: str, x: Tensor, layout: str) -> None:
    """Refuse an empty sequence: ``x`` of shape ``(B, T, d)`` with ``T = 0`` has nothing to attend to or from."""
    if x.shape[-2] == 0:
        raise ValueError(f"{name} must hold at least one token, got shape {_shape(x)} {layout}")


def causal_mask(num_queries: int, num_keys: int, *, device: torch.device | str | None = None) -> Tensor:
    """``(Tq, Tk)`` bool, True where key ``j <= i`` for query ``i`` (may attend; top-left aligned as in SDPA)."""
    check_int("num_queries", num_queries)
    check_int("num_keys", num_keys)
    return torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril()


def valid_lens_mask(valid_lens: Tensor, num_queries: int, num_keys: int) -> Tensor:
    """``(B, Tq, Tk)`` bool, True where key ``j < valid_lens`` (d2l semantics: ``(B,)`` or ``(B, Tq)``)."""
    check_int("num_queries", num_queries)
    check_int("num_keys", num_keys)
    if not isinstance(valid_lens, Tensor):
        raise TypeError(f"valid_lens must be a torch.Tensor of integers, got {type(valid_lens).__name__}")
    if valid_lens.dim() not in (1, 2):
        raise ValueError(f"valid_lens must have shape (batch,) or (batch, queries), got {_shape(valid_lens)}")
    lens = check_valid_lens(valid_lens, valid_lens.shape[0], num_queries, num_keys)
    if lens.dim() == 1:
        lens = lens[:, None].expand(-1, num_queries)
    positions = torch.arange(num_keys, device=lens.device)
    return positions[None, None, :] < lens[:, :, None]


def build_mask(
    *,
    batch: int,
    num_queries: int,
    num_keys: int,
    ndim: int,
    valid_lens: Tensor | None = None,
    attn_mask: Tensor | None = None,
    causal: bool = False,
    device: torch.device | str | None = None,
) -> Tensor | None:
    """Combine ``valid_lens``, ``attn_mask`` and the causal mask into one bool mask for ``ndim``-D scores.

    The result broadcasts against scores of shape ``(B, Tq, Tk)`` (``ndim=3``) or ``(B, h, Tq, Tk)``
    (``ndim=4``), and may be narrower (one row per sequence for ``(B,)`` lengths without a causal mask);
    ``None`` means "attend everywhere".
    """
    mask: Tensor | None = None
    if valid_lens is not None:
        lens = check_valid_lens(valid_lens, batch, num_queries, num_keys)
        if lens.dim() == 1:
            lens = lens.to(device)  # masks follow the inputs
            # Every query of a sequence sees the same keys: one row (B, ..., 1, Tk) that broadcasts over
            # queries, so no (Tq, Tk) mask is built, read or kept.
            row = torch.arange(num_keys, device=lens.device)[None, :] < lens[:, None]  # (B, Tk)
            mask = row.view(batch, *([1] * (ndim - 2)), num_keys)
        else:
            mask = valid_lens_mask(lens, num_queries, num_keys).to(device)
            mask = mask.view(batch, *([1] * (ndim - 3)), num_queries, num_keys)
    if attn_mask is not None:
        if not isinstance(attn_mask, Tensor) or attn_mask.dtype != torch.bool:
            got = attn_mask.dtype if isinstance(attn_mask, Tensor) else type(attn_mask).__name__
            raise TypeError(f"attn_mask must be a bool tensor (True = may attend), got {got}")
        try:
            torch.broadcast_shapes(attn_mask.shape, (batch,) + (1,) * (ndim - 3) + (num_queries, num_keys))
        except RuntimeError:
            raise ValueError(
                f"attn_mask must broadcast to (..., {num_queries}, {num_keys}) (queries, keys), "
                f"got {_shape(attn_mask)}"
            ) from None
        attn_mask = attn_mask.to(device)
        mask = attn_mask if mask is None else mask & attn_mask
    if causal:
        tri = causal_mask(num_queries, num_keys, device=device)
        mask = tri if mask is None else mask & tri
    return mask


def masked_weights(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last axis of ``scores``, with exactly 0 where ``mask`` is False."""
    if mask is None:
        return torch.softmax(scores, dim=-1)
    # where() reads the scores and writes the masked copy in one pass (masked_fill would clone, then fill), and its
    # backward sends blocked scores a gradient of exactly 0: the NaN that softmax's backward makes for a row with
    # no allowed key stays out of the scores' gradient (an additive -inf mask would pass it on).
    weights = torch.softmax(torch.where(mask, scores, float("-inf")), dim=-1)
    # A row with no allowed key is all -inf, and softmax turns it into NaN; make it 0 instead.
    dead_rows = ~mask.any(dim=-1, keepdim=True)
    if dead_rows.any():
        weights = weights.masked_fill(dead_rows, 0.0)
    return weights


def masked_softmax(scores: Tensor, valid_lens: Tensor | None = None, *, mask: Tensor | None = None) -> Tensor:
    """Softmax over keys of ``(B, Tq, Tk)`` or ``(B, h, Tq, Tk)`` scores; keys at ``j >= valid_lens`` get 0.

    ``valid_lens``: ``(B,)`` or ``(B, Tq)`` as in d2l.ai; ``mask``: bool, True = may attend.
    Rows with every key masked get weights of 0 (not NaN, not d2l's uniform row).
    """
    check_tensor("scores", scores, (3, 4), "(batch, queries, keys) or (batch, heads, queries, keys)")
    batch, tq, tk = scores.shape[0], scores.shape[-2], scores.shape[-1]
    combined = build_mask(
        batch=batch, num_queries=tq, num_keys=tk, ndim=scores.dim(),
        valid_lens=valid_lens, attn_mask=mask, device=scores.device,
    )
    return masked_weights(scores, combined)


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    valid_lens: Tensor | None = None,
    attn_mask: Tensor | None = None,
    causal: bool = False,
    dropout_p: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """``softmax(q k^T / sqrt(d)) v`` for ``(B, T, d)`` or ``(B, h, T, d)`` inputs; returns ``(output, weights)``.

    ``output``: ``(..., Tq, dv)``; ``weights``: ``(..., Tq, Tk)``, before dropout, rows summing to 1
    (or 0 for a row with every key masked). ``valid_lens`` ``(B,)`` or ``(B, Tq)`` and ``attn_mask``
    (bool, True = may attend) and ``causal`` are combined. Dropout with ``dropout_p`` is applied to the
    weights that multiply ``v``, whenever ``dropout_p > 0`` (as in the functional PyTorch API).
    """
    layout = "(batch, tokens, d) or (batch, heads, tokens, d)"
    check_tensor("q", q, (3, 4), layout)
    check_tensor("k", k, (3, 4), layout)
    check_tensor("v", v, (3, 4), layout)
    _on_one_device(q=q, k=k, v=v)
    if not q.dim() == k.dim() == v.dim():
        raise ValueError(f"q, k and v must have the same rank, got {_shape(q)}, {_shape(k)}, {_shape(v)}")
    if q.shape[:-2] != k.shape[:-2] or k.shape[:-2] != v.shape[:-2]:
        raise ValueError(
            f"q, k and v must agree on their leading (batch, heads) dimensions, "
            f"got {_shape(q)}, {_shape(k)}, {_shape(v)}"
        )
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(f"k must have the same last dimension as q ({q.shape[-1]}), got {_shape(k)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of keys, got {k.shape[-2]} and {v.shape[-2]}")
    dropout_p = check_probability("dropout_p", dropout_p)
    causal = check_bool("causal", causal)
    mask = build_mask(
        batch=q.shape[0], num_queries=q.shape[-2], num_keys=k.shape[-2], ndim=q.dim(),
        valid_lens=valid_lens, attn_mask=attn_mask, causal=causal, device=q.device,
    )
    scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)  # (..., Tq, Tk)
    weights = masked_weights(scores, mask)  # (..., Tq, Tk)
    used = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return used @ v, weights


def tiled_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    block_size: int = 64,
    causal: bool = False,
    attn_mask: Tensor | None = None,
) -> Tensor:
    """``softmax(q k^T / sqrt(d)) v`` one block of keys at a time, with a running (online) softmax.

    ``q``: ``(..., Tq, d)``, ``k``: ``(..., Tk, d)``, ``v``: ``(..., Tk, dv)`` -> ``(..., Tq, dv)``. Only a
    ``(..., Tq, block_size)`` slice of the scores exists at any time: each query keeps its running maximum
    ``m``, the running sum ``l`` of ``exp(score - m)`` and the running weighted sum of values, and rescales
    both by ``exp(m_old - m_new)`` when a block raises the maximum. The online softmax is Milakov & Gimelshein's
    (2018); applying it to attention block by block, in O(T) memory, Rabe & Staats' (2021); FlashAttention
    (Dao et al., 2022) made it fast on GPUs. Written in plain PyTorch to teach it, not to be fast. ``attn_mask``
    (bool, True = may attend) and ``causal`` as in ``scaled_dot_product_attention``; a fully masked row gives 0.
    """
    check_tensor("q", q, (2, 3, 4), "(..., queries, d)")
    check_tensor("k", k, (2, 3, 4), "(..., keys, d)")
    check_tensor("v", v, (2, 3, 4), "(..., keys, dv)")
    _on_one_device(q=q, k=k, v=v)
    check_int("block_size", block_size)
    causal = check_bool("causal", causal)
    if k.shape[-1] != q.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k must be (..., keys, {q.shape[-1]}) and v (..., keys, dv), got {_shape(k)} and {_shape(v)}")
    num_queries, num_keys = q.shape[-2], k.shape[-2]
    q = q * (1.0 / math.sqrt(q.shape[-1]))
    row_max = q.new_full((*q.shape[:-1], 1), float("-inf"))  # m: (..., Tq, 1)
    row_sum = q.new_zeros((*q.shape[:-1], 1))  # l: (..., Tq, 1)
    acc = q.new_zeros((*q.shape[:-1], v.shape[-1]))  # (..., Tq, dv)
    query_pos = torch.arange(num_queries, device=q.device)[:, None]
    for start in range(0, num_keys, block_size):
        stop = min(start + block_size, num_keys)
        scores = q @ k[..., start:stop, :].transpose(-2, -1)  # (..., Tq, block)
        allowed = None
        if causal:
            allowed = torch.arange(start, stop, device=q.device)[None, :] <= query_pos
        if attn_mask is not None:
            block = attn_mask[..., start:stop].to(q.device)
            allowed = block if allowed is None else allowed & block
        if allowed is not None:
            scores = torch.where(allowed, scores, float("-inf"))
        new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True))
        # A row that has seen no allowed key yet has max -inf; shift it by 0 instead (-inf - -inf is NaN).
        shift = torch.where(new_max == float("-inf"), 0.0, new_max)
        rescale = torch.exp(row_max - shift)  # how much the old max overestimated: <= 1
        p = torch.exp(scores - shift)  # (..., Tq, block), 0 where masked
        row_sum = row_sum * rescale + p.sum(dim=-1, keepdim=True)
        acc = acc * rescale + p @ v[..., start:stop, :]
        row_max = new_max
    # A row with an allowed key has l >= 1 (its maximum contributes exp(0)); a fully masked row has
    # l = 0 and acc = 0, and clamping l to 1 returns 0 for it instead of 0/0.
    return acc / row_sum.clamp(min=1.0)


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: ``score(q, k) = w_v^T tanh(W_q q + W_k k)``, as taught by d2l.ai."""

    def __init__(self, query_size: int, key_size: int, num_hiddens: int, dropout: float = 0.0) -> None:
        super().__init__()
        check_int("query_size", query_size)
        check_int("key_size", key_size)
        check_int("num_hiddens", num_hiddens)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        self.attention_weights: Tensor | None = None

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor | None = None) -> Tensor:
        """``(B, Tq, query_size)``, ``(B, Tk, key_size)``, ``(B, Tk, dv)`` -> ``(B, Tq, dv)``."""
        check_tensor("queries", queries, 3, "(batch, queries, query_size)")
        check_tensor("keys", keys, 3, "(batch, keys, key_size)")
        check_tensor("values", values, 3, "(batch, keys, value_size)")
        check_has_tokens("queries", queries, "(batch, queries, query_size)")
        check_has_tokens("keys", keys, "(batch, keys, key_size)")
        for name, x in (("queries", queries), ("keys", keys), ("values", values)):
            check_same_device(name, x, self.w_v.weight.device, "layer")
        if keys.shape[1] != values.shape[1]:
            raise ValueError(f"keys and values must have the same length, got {keys.shape[1]} and {values.shape[1]}")
        # (B, Tq, 1, H) + (B, 1, Tk, H) -> (B, Tq, Tk, H) -> (B, Tq, Tk)
        features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return self.dropout(self.attention_weights) @ values
