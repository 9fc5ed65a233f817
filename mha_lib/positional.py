"""Positional information: the sinusoidal table, learned positions and rotary embeddings (RoPE)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from mha_lib._validate import check_int, check_last_dim, check_probability, check_tensor


def _check_even(name: str, value: int) -> int:
    check_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even (dimensions come in sin/cos pairs), got {value}")
    return value


def sinusoidal_table(
    max_len: int, d_model: int, *, base: float = 10000.0, dtype: torch.dtype = torch.float32
) -> Tensor:
    """``(max_len, d_model)``: ``P[p, 2i] = sin(p / base^(2i/d))``, ``P[p, 2i+1] = cos(p / base^(2i/d))``."""
    check_int("max_len", max_len)
    _check_even("d_model", d_model)
    position = torch.arange(max_len, dtype=dtype)[:, None]
    angle = position / torch.pow(base, torch.arange(0, d_model, 2, dtype=dtype) / d_model)
    table = torch.zeros(max_len, d_model, dtype=dtype)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


def offset_rotation(offset: int | float, d_model: int, *, base: float = 10000.0) -> Tensor:
    """``(d_model, d_model)`` block-diagonal ``M`` with ``P[p + offset] = M @ P[p]`` for every position ``p``."""
    _check_even("d_model", d_model)
    freqs = 1.0 / torch.pow(base, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    cos, sin = torch.cos(offset * freqs), torch.sin(offset * freqs)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    # [sin(a+b), cos(a+b)] = [[cos b, sin b], [-sin b, cos b]] @ [sin a, cos a]
    m[idx, idx], m[idx, idx + 1] = cos, sin
    m[idx + 1, idx], m[idx + 1, idx + 1] = -sin, cos
    return m


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to ``(B, T, d)`` inputs, then dropout; numerically the same as d2l's."""

    P: Tensor

    def __init__(self, num_hiddens: int, dropout: float, max_len: int = 1000) -> None:
        super().__init__()
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        self.register_buffer("P", sinusoidal_table(max_len, num_hiddens)[None], persistent=False)  # (1, max_len, d)

    def forward(self, X: Tensor) -> Tensor:
        """``(B, T, d)`` -> ``(B, T, d)``."""
        check_tensor("X", X, 3, "(batch, tokens, num_hiddens)")
        check_last_dim("X", X, self.P.shape[-1], "num_hiddens")
        if X.shape[1] > self.P.shape[1]:
            raise ValueError(f"X has {X.shape[1]} tokens, more than max_len={self.P.shape[1]}")
        return self.dropout(X + self.P[:, : X.shape[1]].to(X.dtype))


class LearnedPositionalEmbedding(nn.Module):
    """Adds a trained vector per position (GPT-2, BERT) to ``(B, T, d)`` inputs."""

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.max_len = check_int("max_len", max_len)
        self.embedding = nn.Embedding(max_len, check_int("d_model", d_model))

    def forward(self, X: Tensor) -> Tensor:
        """``(B, T, d)`` -> ``(B, T, d)``."""
        check_tensor("X", X, 3, "(batch, tokens, d_model)")
        check_last_dim("X", X, self.embedding.embedding_dim, "d_model")
        if X.shape[1] > self.max_len:
            raise ValueError(f"X has {X.shape[1]} tokens, more than max_len={self.max_len}")
        return X + self.embedding(torch.arange(X.shape[1], device=X.device))


def rope_angles(num_positions: int, dim: int, *, offset: int = 0, base: float = 10000.0) -> Tensor:
    """``(T, dim/2)``: angle ``(offset + p) * base^(-2i/dim)`` for position ``p`` and pair ``i``."""
    check_int("num_positions", num_positions)
    _check_even("dim", dim)
    freqs = 1.0 / torch.pow(base, torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    positions = torch.arange(offset, offset + num_positions, dtype=torch.float64)
    return positions[:, None] * freqs[None, :]


def apply_rope(x: Tensor, *, offset: int = 0, base: float = 10000.0) -> Tensor:
    """Rotate each feature pair ``(2i, 2i+1)`` of ``(..., T, dim)`` by its position's angle (RoFormer)."""
    check_tensor("x", x, (2, 3, 4), "(..., tokens, dim)")
    angles = rope_angles(x.shape[-2], x.shape[-1], offset=offset, base=base).to(x.device)
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
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
        self.base = float(base)

    def forward(self, q: Tensor, k: Tensor, *, offset: int = 0) -> tuple[Tensor, Tensor]:
        """Rotate ``q`` and ``k`` (each ``(..., T, head_dim)``) by their positions."""
        check_last_dim("q", q, self.head_dim, "head_dim")
        check_last_dim("k", k, self.head_dim, "head_dim")
        return apply_rope(q, offset=offset, base=self.base), apply_rope(k, offset=offset, base=self.base)
