"""Notebook 11's check: the library passes; the blocked polarity, the upper triangle, a window one key too wide, a sink
that ignores causality or is forgotten, indices instead of positions, or a top-left aligned mask fails at its case."""

from __future__ import annotations

import torch

from mha_lib import causal_window_mask, checks


def _mask(query_positions, key_positions, window=None, sink=0, *, wide=False, sink_causal=True, use_sink=True,
          by_index=False, top_left=False):
    if by_index:
        query_positions, key_positions = torch.arange(len(query_positions)), torch.arange(len(key_positions))
    if top_left:
        query_positions = query_positions - query_positions[0]
    i, j = query_positions[:, None], key_positions[None, :]
    causal = j <= i
    if window is None:
        return causal
    near = (i - j <= window) if wide else (i - j < window)
    if use_sink:
        near = near | (j < sink)
    return (causal & near) if sink_causal else ((causal & (i - j < window)) | (j < sink))


def _blocked(query_positions, key_positions, window=None, sink=0):  # masked_fill's polarity, True = hidden
    return ~causal_window_mask(query_positions, key_positions, window=window, sink=sink)


def _upper(query_positions, key_positions, window=None, sink=0):  # the future instead of the past
    return query_positions[:, None] <= key_positions[None, :]


def _as_ints(query_positions, key_positions, window=None, sink=0):
    return causal_window_mask(query_positions, key_positions, window=window, sink=sink).long()


ROWS = [
    (checks.causal_window_mask, causal_window_mask,
     [(_blocked, 1), (_upper, 1), (_as_ints, 1),
      (lambda q, k, window=None, sink=0: _mask(q, k, window, sink, wide=True), 2),
      (lambda q, k, window=None, sink=0: _mask(q, k, window, sink, sink_causal=False), 4),
      (lambda q, k, window=None, sink=0: _mask(q, k, window, sink, use_sink=False), 4),
      (lambda q, k, window=None, sink=0: _mask(q, k, window, sink, by_index=True), 6),
      (lambda q, k, window=None, sink=0: _mask(q, k, window, sink, top_left=True), 6)]),
]
