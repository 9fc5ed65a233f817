"""Decoding one token at a time: the KV cache, the causal window mask by position, and the cache's size.

A language model writes one token per step. Under the causal mask the keys and values of the tokens already seen
never change, so a layer keeps them in a ``KVCache`` and each step projects only the new token:
``mha(x_new, kv_cache=cache)``. The cache also counts the tokens seen (``offset``: the position of the next one,
which is RoPE's offset) and, for a layer with a ``window``, keeps only the keys the next queries can still see:
the last ``window - 1`` positions (the new token makes ``window``) and the first ``sink`` ones.

``causal_window_mask`` is the mask by absolute position that such a layer uses, True where a query **may attend**
(mha_lib's polarity): key ``j`` for query ``i`` when ``j <= i`` and, with a window, ``i - j < window`` or ``j < sink``.
``kv_cache_bytes_per_token`` is the formula ``2 x layers x kv_heads x head_dim x bytes``.
"""

from __future__ import annotations

import weakref

import torch
from torch import Tensor

from mha_lib._validate import _got, _shape, check_int

__all__ = ["KVCache", "causal_window_mask", "kv_cache_bytes_per_token"]


def _check_positions(name: str, positions: object) -> Tensor:
    if not isinstance(positions, Tensor) or positions.is_floating_point() or positions.dtype == torch.bool:
        got = f"dtype {positions.dtype}" if isinstance(positions, Tensor) else _got(positions)
        raise TypeError(f"{name} must be a 1-D tensor of integer positions, e.g. torch.arange(T), got {got}")
    if positions.dim() != 1:
        raise ValueError(f"{name} must be a 1-D tensor of integer positions, got shape {_shape(positions)}")
    return positions


def causal_window_mask(query_positions: Tensor, key_positions: Tensor, *, window: int | None = None,
                       sink: int = 0) -> Tensor:
    """``(Tq, Tk)`` bool, True where the query at position ``i`` may attend the key at position ``j``.

    Causal: ``j <= i``. With a ``window``: also ``i - j < window`` (the ``window`` latest positions, the query's own
    included), or ``j < sink`` (the first ``sink`` tokens stay visible, StreamingLLM's attention sinks). Positions are
    absolute, so the same rule serves a whole sequence (``torch.arange(T)`` twice) and a cached step (the new
    queries' positions against the positions the cache kept).
    """
    query_positions = _check_positions("query_positions", query_positions)
    key_positions = _check_positions("key_positions", key_positions)
    sink = check_int("sink", sink, minimum=0)
    if window is not None:
        window = check_int("window", window)
    elif sink:
        raise ValueError(f"sink={sink} keeps the first tokens visible outside a window, but window is None: "
                         "pass a window too, or sink=0")
    return _window_mask(query_positions, key_positions, window, sink)


def _window_mask(query_positions: Tensor, key_positions: Tensor, window: int | None, sink: int) -> Tensor:
    """``causal_window_mask`` without the checks, for a layer that checked ``window`` and ``sink`` when built."""
    i, j = query_positions[:, None], key_positions.to(query_positions.device)[None, :]  # (Tq, 1), (1, Tk)
    allowed = j <= i  # (Tq, Tk): causal
    if window is not None:
        allowed = allowed & ((i - j < window) | (j < sink))
    return allowed


def kv_cache_bytes_per_token(num_layers: int, num_kv_heads: int, head_dim: int, *, bytes_per_element: int = 2) -> int:
    """Bytes a KV cache holds per token: ``2 (K and V) x num_layers x num_kv_heads x head_dim x bytes_per_element``.

    ``bytes_per_element`` is 2 for float16/bfloat16 (the default, how models are served), 4 for float32.
    """
    for name, value in (("num_layers", num_layers), ("num_kv_heads", num_kv_heads), ("head_dim", head_dim),
                        ("bytes_per_element", bytes_per_element)):
        check_int(name, value)
    return 2 * num_layers * num_kv_heads * head_dim * bytes_per_element


class KVCache:
    """One layer's keys and values of the tokens seen so far, for ``mha(x_new, kv_cache=cache)``.

    Start empty, ``cache = KVCache()``; the first call binds it to its layer and batch. After each call:
    ``keys`` and ``values`` are ``(B, h_kv, T_kept, d_head)`` (the K/V heads, after RoPE), ``positions`` is
    ``(T_kept,)``, the absolute position of each kept key, and ``offset`` is the number of tokens seen, the position
    the next token will have. Without a window every token is kept; with one, only what the next queries can see.
    One cache per layer and per batch of sequences: a model of ``L`` layers decodes with ``L`` caches.
    """

    def __init__(self) -> None:
        self.keys: Tensor | None = None  # (B, h_kv, T_kept, d_head)
        self.values: Tensor | None = None  # (B, h_kv, T_kept, d_head)
        self._positions: Tensor | None = None  # (T_kept,) int64; None while every token seen is kept (no window)
        self.offset = 0  # tokens seen so far: the position of the next token
        self._in_sequence = True  # every token came as the next one (no positions given): what is kept is known
        self._layer: weakref.ReferenceType[object] | None = None

    @property
    def positions(self) -> Tensor | None:
        """``(T_kept,)`` int64: the absolute position of each kept key (None while empty)."""
        if self._positions is None and self.keys is not None:  # every token kept: 0 .. offset - 1, made when asked
            return torch.arange(self.offset - self.keys.shape[2], self.offset, device=self.keys.device)
        return self._positions

    @positions.setter
    def positions(self, positions: Tensor | None) -> None:
        self._positions = positions

    def __repr__(self) -> str:
        if self.keys is None or self.values is None:
            return "KVCache(empty)"
        return f"KVCache(offset={self.offset}, keys={_shape(self.keys)}, values={_shape(self.values)})"

    @property
    def batch_size(self) -> int | None:
        """The number of sequences held (None while empty)."""
        return None if self.keys is None else self.keys.shape[0]

    @property
    def nbytes(self) -> int:
        """The bytes of the kept keys and values."""
        if self.keys is None or self.values is None:
            return 0
        return self.keys.numel() * self.keys.element_size() + self.values.numel() * self.values.element_size()

    def check(self, layer: object, batch_size: int) -> int:
        """Refuse a cache of another layer or another batch size; return ``offset``, the next token's position."""
        owner = None if self._layer is None else self._layer()
        if self._layer is not None and owner is not layer:
            raise ValueError("kv_cache belongs to another layer: a KVCache holds one layer's keys and values;"
                             " give each layer its own, e.g. caches = [KVCache() for _ in layers]")
        if self.batch_size is not None and self.batch_size != batch_size:
            raise ValueError(f"kv_cache holds {self.batch_size} sequences but queries has {batch_size}:"
                             " start a new KVCache() for a new batch")
        return self.offset

    def update(self, layer: object, keys: Tensor, values: Tensor, positions: Tensor, *,
               window: int | None = None, sink: int = 0) -> tuple[Tensor, Tensor, Tensor]:
        """Append the new ``(B, h_kv, T_new, d_head)`` keys and values; return everything the new queries read.

        Returns ``(keys, values, positions)`` with the cached tokens first, then the new ones. What is kept for the
        next call: everything, or with a ``window`` the last ``window - 1`` positions and the first ``sink``.
        """
        self.check(layer, keys.shape[0])
        keys, values, kept = self._append(layer, keys, values, window, sink, positions)
        assert kept is not None  # positions were given, so they come back (with the earlier ones before them)
        return keys, values, kept

    def _append(self, layer: object, keys: Tensor, values: Tensor, window: int | None, sink: int,
                positions: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor | None]:
        """``update`` without the check, for a layer that called ``check`` at its door.

        ``positions`` None: the new tokens are the next ones, ``offset ..``; then, without a window, no positions are
        made (every token is kept, so they are ``0 .. offset - 1``) and None comes back in their place.
        """
        self._in_sequence = self._in_sequence and positions is None
        in_order = window is None and positions is None and self._positions is None  # every token kept, in order
        earlier = None if in_order else self.positions  # (T_kept,) before this call
        start, self.offset = self.offset, self.offset + keys.shape[2]
        if self.keys is not None and self.values is not None:
            keys = torch.cat([self.keys, keys], dim=2)  # (B, h_kv, T_kept + T_new, d_head)
            values = torch.cat([self.values, values], dim=2)
        if self._layer is None:
            self._layer = weakref.ref(layer)
        if in_order:  # positions 0 .. offset - 1: made only when someone asks for them
            self.keys, self.values = keys, values
            return keys, values, None
        if positions is None:
            positions = torch.arange(start, self.offset, device=keys.device)
        if earlier is not None:
            positions = torch.cat([earlier, positions])
        if window is None:  # every token stays
            self.keys, self.values, self._positions = keys, values, positions
        else:  # the next query, at position offset, sees offset - window + 1 .. offset, and the sinks
            self.keys, self.values, self._positions = self._keep(keys, values, positions, window, sink)
        return keys, values, positions

    def _keep(self, keys: Tensor, values: Tensor, positions: Tensor, window: int, sink: int
              ) -> tuple[Tensor, Tensor, Tensor]:
        """What a window keeps of ``(B, h_kv, T, d_head)`` keys and values at ``positions`` ``(T,)``.

        A key stays if ``position > offset - window`` or ``position < sink``. When every token came in order, the
        kept positions are known without reading them: the first ``min(sink, offset)`` and the last
        ``min(window - 1, offset)``, so two slices keep them (a boolean index would read the positions on the host,
        and on a GPU wait for it at every step).
        """
        if not self._in_sequence:  # positions given by the caller: select by value
            keep = (positions > self.offset - window) | (positions < sink)
            return keys[:, :, keep], values[:, :, keep], positions[keep]
        total, first, last = positions.shape[0], min(sink, self.offset), min(window - 1, self.offset)
        if first + last >= total:
            return keys, values, positions
        parts = [slice(0, first), slice(total - last, total)] if first else [slice(total - last, total)]
        return (torch.cat([keys[:, :, s] for s in parts], dim=2), torch.cat([values[:, :, s] for s in parts], dim=2),
                torch.cat([positions[s] for s in parts]))
