"""Positional information: the sinusoidal table, learned positions, rotary embeddings (RoPE) and ALiBi's biases.

Bad input follows ``mha_lib._validate``: ``TypeError`` for a wrong type, ``ValueError`` for a wrong value, each
naming the argument. Inputs may hold any float values: positions are added or rotated in, nothing is checked for
NaN here (the tables and figures that show results refuse non-finite values).
"""

from __future__ import annotations

import functools
import math

import torch
from torch import Tensor, nn

from mha_lib._validate import (
    _shape,
    check_bool,
    check_int,
    check_last_dim,
    check_number,
    check_probability,
    check_tensor,
)
from mha_lib.i18n import _


def _check_even(name: str, value: int) -> int:
    check_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even (dimensions come in sin/cos pairs), got {value}")
    return value


@functools.lru_cache(maxsize=64)
def _frequencies(dim: int, base: float) -> Tensor:
    """``(dim/2,)`` float64: ``base^(-2i/dim)``, the angular speed of feature pair ``i`` (kept: never modify it)."""
    with torch.inference_mode(False):  # an ordinary CPU tensor, whatever mode or default device the first call saw
        return 1.0 / torch.pow(base, torch.arange(0, dim, 2, dtype=torch.float64, device="cpu") / dim)


def sinusoidal_table(
    max_len: int, d_model: int, *, base: float = 10000.0, dtype: torch.dtype = torch.float32
) -> Tensor:
    """``(max_len, d_model)``: ``P[p, 2i] = sin(p / base^(2i/d))``, ``P[p, 2i+1] = cos(p / base^(2i/d))``.

    Computed in ``dtype`` exactly as d2l.ai's ``PositionalEncoding`` computes it, so the two agree bit for bit.
    """
    check_int("max_len", max_len)
    _check_even("d_model", d_model)
    base = check_number("base", base, positive=True)
    position = torch.arange(max_len, dtype=dtype)[:, None]
    angle = position / torch.pow(base, torch.arange(0, d_model, 2, dtype=dtype) / d_model)  # (max_len, d/2)
    table = torch.zeros(max_len, d_model, dtype=dtype)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


def offset_rotation(
    offset: int | float, d_model: int, *, base: float = 10000.0, dtype: torch.dtype = torch.float64
) -> Tensor:
    """``(d_model, d_model)`` block-diagonal ``M`` with ``P[p + offset] = M @ P[p]`` for every position ``p``.

    Each ``2 x 2`` block rotates one ``(sin, cos)`` pair by the angle ``offset * base^(-2i/d)``; ``M``
    depends on the offset only, never on ``p``.
    """
    offset = check_number("offset", offset)
    _check_even("d_model", d_model)
    freqs = _frequencies(d_model, check_number("base", base, positive=True))
    cos, sin = torch.cos(offset * freqs), torch.sin(offset * freqs)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    # [sin(a+b), cos(a+b)] = [[cos b, sin b], [-sin b, cos b]] @ [sin a, cos a]
    m[idx, idx], m[idx, idx + 1] = cos, sin
    m[idx + 1, idx], m[idx + 1, idx + 1] = -sin, cos
    return m.to(dtype)


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to ``(B, T, d)`` inputs, then dropout; numerically the same as d2l's."""

    P: Tensor

    def __init__(self, num_hiddens: int, dropout: float, max_len: int = 1000) -> None:
        super().__init__()
        _check_even("num_hiddens", num_hiddens)
        check_int("max_len", max_len)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        self.register_buffer("P", sinusoidal_table(max_len, num_hiddens)[None], persistent=False)  # (1, max_len, d)

    @property
    def max_len(self) -> int:
        """The number of positions in the table."""
        return self.P.shape[1]

    def forward(self, X: Tensor) -> Tensor:
        """``(B, T, d)`` -> ``(B, T, d)``."""
        check_tensor("X", X, 3, "(batch, tokens, num_hiddens)")
        check_last_dim("X", X, self.P.shape[-1], "num_hiddens")
        if X.shape[1] > self.max_len:
            raise ValueError(
                _("X has {tokens} tokens, more than max_len={max_len}: the table has no row for them").format(
                    tokens=X.shape[1], max_len=self.max_len)
            )
        return self.dropout(X + self.P[:, : X.shape[1]].to(device=X.device, dtype=X.dtype))


class LearnedPositionalEmbedding(nn.Module):
    """Adds a trained vector per position (GPT-2, BERT) to ``(B, T, d)`` inputs; ``max_len`` positions at most."""

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.max_len = check_int("max_len", max_len)
        self.embedding = nn.Embedding(max_len, check_int("d_model", d_model))  # (max_len, d_model), N(0, 1)

    def forward(self, X: Tensor) -> Tensor:
        """``(B, T, d)`` -> ``(B, T, d)``."""
        check_tensor("X", X, 3, "(batch, tokens, d_model)")
        check_last_dim("X", X, self.embedding.embedding_dim, "d_model")
        if X.shape[1] > self.max_len:
            raise ValueError(
                _("X has {tokens} tokens, more than max_len={max_len}: a learned table cannot extrapolate").format(
                    tokens=X.shape[1], max_len=self.max_len)
            )
        return X + self.embedding(torch.arange(X.shape[1], device=X.device)).to(X.dtype)


def rope_angles(num_positions: int, dim: int, *, offset: int = 0, base: float = 10000.0) -> Tensor:
    """``(T, dim/2)`` float64: angle ``(offset + p) * base^(-2i/dim)`` for position ``p`` and pair ``i``."""
    check_int("num_positions", num_positions)
    _check_even("dim", dim)
    freqs = _frequencies(dim, check_number("base", base, positive=True))
    offset = check_int("offset", offset, minimum=None)  # the position of the first token
    positions = torch.arange(offset, offset + num_positions, dtype=torch.float64)
    return positions[:, None] * freqs[None, :]


def apply_rope(x: Tensor, *, offset: int = 0, base: float = 10000.0) -> Tensor:
    """Rotate each feature pair ``(2i, 2i+1)`` of ``(..., T, dim)`` by its position's angle (RoFormer).

    Token ``t`` sits at position ``offset + t`` (``offset`` > 0 when continuing a sequence, e.g. with a KV cache).
    """
    check_tensor("x", x, (2, 3, 4), "(..., tokens, dim)")
    if x.shape[-1] % 2:
        raise ValueError(f"x must have an even last dimension (features rotate in pairs), got shape {_shape(x)}")
    check_int("offset", offset, minimum=None)
    return _rotate(x, offset, check_number("base", base, positive=True))


def _rotate(x: Tensor, offset: int, base: float) -> Tensor:
    """``apply_rope`` without the checks, for callers that checked its arguments already."""
    return _turn(x, *_cos_sin(x.shape[-2], x.shape[-1], offset, base, x))


def _rotate_pair(q: Tensor, k: Tensor, offset: int, base: float) -> tuple[Tensor, Tensor]:
    """``_rotate`` of queries and keys ``(..., T, dim)``; one table of angles when they have the same length."""
    cos_sin = _cos_sin(q.shape[-2], q.shape[-1], offset, base, q)
    k_cos_sin = cos_sin if k.shape[-2] == q.shape[-2] else _cos_sin(k.shape[-2], k.shape[-1], offset, base, k)
    return _turn(q, *cos_sin), _turn(k, *k_cos_sin)


def _cos_sin(num_positions: int, dim: int, offset: int, base: float, like: Tensor) -> tuple[Tensor, Tensor]:
    """``(T, dim/2)`` each: the cosine and sine of every position's angles, on ``like``'s device and dtype."""
    positions = torch.arange(offset, offset + num_positions, dtype=torch.float64)
    angles = (positions[:, None] * _frequencies(dim, base)[None, :]).to(like.device)  # (T, dim/2), float64
    return torch.cos(angles).to(like.dtype), torch.sin(angles).to(like.dtype)


def _turn(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Turn each feature pair ``(2i, 2i+1)`` of ``x`` ``(..., T, dim)`` by the angles whose ``cos``, ``sin`` come."""
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


class RotaryEmbedding(nn.Module):
    """Applies RoPE to queries and keys ``(B, h, T, head_dim)``, so ``q_m . k_n`` depends on ``m - n`` only."""

    def __init__(self, head_dim: int, *, base: float = 10000.0) -> None:
        super().__init__()
        self.head_dim = _check_even("head_dim", head_dim)
        self.base = check_number("base", base, positive=True)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base:g}"

    def forward(self, q: Tensor, k: Tensor, *, offset: int = 0) -> tuple[Tensor, Tensor]:
        """Rotate ``q`` and ``k`` (each ``(..., T, head_dim)``) by their positions ``offset, offset + 1, ...``."""
        check_tensor("q", q, (2, 3, 4), "(..., tokens, head_dim)")
        check_tensor("k", k, (2, 3, 4), "(..., tokens, head_dim)")
        check_last_dim("q", q, self.head_dim, "head_dim")
        check_last_dim("k", k, self.head_dim, "head_dim")
        return apply_rope(q, offset=offset, base=self.base), apply_rope(k, offset=offset, base=self.base)


def alibi_slopes(num_heads: int) -> Tensor:
    """``(num_heads,)`` float64: ALiBi's slope ``m`` of each head (Press, Smith and Lewis, 2022, arXiv 2108.12409).

    For ``n`` heads, ``n`` a power of 2: the geometric sequence that starts at ``2^(-8/n)`` with that same ratio,
    ``m_i = 2^(-8i/n)`` for ``i = 1 .. n`` (8 heads: 1/2, 1/4, ..., 1/256). Otherwise the paper's rule: the slopes
    of the largest power of 2 below ``n``, ``k``, then every other slope of ``2k`` heads, for the remaining ``n - k``.
    """
    check_int("num_heads", num_heads)
    return torch.tensor(_slopes(num_heads), dtype=torch.float64)


def _slopes(n: int) -> list[float]:
    k = 2 ** math.floor(math.log2(n))  # the largest power of 2 <= n
    slopes = [2.0 ** (-8.0 * i / k) for i in range(1, k + 1)]  # start 2^(-8/k), ratio 2^(-8/k)
    return slopes if k == n else slopes + _slopes(2 * k)[0::2][: n - k]


def alibi_bias(query_positions: Tensor, key_positions: Tensor, slopes: Tensor, *, causal: bool = True) -> Tensor:
    """``(h, Tq, Tk)``: ALiBi's bias ``-m_h (i - j)`` for the query at position ``i`` and the key at ``j``.

    Added to the scores ``q k^T / sqrt(d_head)`` before the softmax: each head penalises a key linearly with its
    distance, steeply (large ``m``, a local head) or gently (small ``m``). The paper's models are causal, so
    ``i - j >= 0`` where a key is visible; ``causal=False`` uses the distance ``|i - j|`` in both directions.
    """
    for name, pos in (("query_positions", query_positions), ("key_positions", key_positions)):
        if not isinstance(pos, Tensor) or pos.is_floating_point() or pos.dtype == torch.bool or pos.dim() != 1:
            raise TypeError(f"{name} must be a 1-D tensor of integer positions, e.g. torch.arange(T), got "
                            f"{_shape(pos) if isinstance(pos, Tensor) else type(pos).__name__}")
    slopes = check_tensor("slopes", slopes, 1, "(heads,)")
    return _alibi_bias(query_positions, key_positions, slopes, check_bool("causal", causal))


def _alibi_bias(query_positions: Tensor, key_positions: Tensor, slopes: Tensor, causal: bool) -> Tensor:
    """``alibi_bias`` without the checks, in ``slopes``' dtype and on its device, for the layer."""
    distance = query_positions[:, None] - key_positions.to(query_positions.device)[None, :]  # (Tq, Tk): i - j
    if not causal:
        distance = distance.abs()
    return -slopes[:, None, None] * distance.to(device=slopes.device, dtype=slopes.dtype)  # (h, Tq, Tk)
