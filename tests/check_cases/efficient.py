"""Notebook 10's check: the library passes; the usual slips in an online softmax fail at their case."""

from __future__ import annotations

import math

import torch

from mha_lib import checks
from mha_lib.attention import tiled_attention


def _online(q, k, v, block_size=64, causal=False, *, scale=True, rescale_output=True, running_max=True,
            whole_blocks_only=False):
    """Attention over blocks of keys, with one switch per slip a learner makes (all default: the right answer)."""
    if scale:
        q = q / math.sqrt(q.shape[-1])
    m = torch.full((*q.shape[:-1], 1), float("-inf"))
    l = torch.zeros_like(m)
    o = torch.zeros((*q.shape[:-1], v.shape[-1]))
    stop = k.shape[-2] // block_size * block_size if whole_blocks_only else k.shape[-2]
    for start in range(0, stop, block_size):
        s = q @ k[..., start:start + block_size, :].transpose(-2, -1)  # (..., T_q, block)
        if causal:
            keys = torch.arange(start, start + s.shape[-1])
            s = s.masked_fill(keys[None, :] > torch.arange(q.shape[-2])[:, None], float("-inf"))
        m_new = torch.maximum(m, s.amax(-1, keepdim=True)) if running_max else torch.zeros_like(m)
        rescale = torch.exp(m - m_new) if running_max else torch.ones_like(m)
        p = torch.exp(s - m_new)
        l = rescale * l + p.sum(-1, keepdim=True)
        o = (rescale * o if rescale_output else o) + p @ v[..., start:start + block_size, :]
        m = m_new
    return o / l


def _whole_table(q, k, v, block_size=64, causal=False):
    """Ordinary attention: right numbers, but the whole table of scores."""
    mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril() if causal else None
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _no_causal(q, k, v, block_size=64):
    return _online(q, k, v, block_size)


ROWS = [
    (checks.online_attention, lambda q, k, v, block_size, causal=False: tiled_attention(
        q, k, v, block_size=block_size, causal=causal), [
        (lambda *a, **kw: _online(*a, **kw, scale=False), 1),
        (lambda *a, **kw: _online(*a, **kw, rescale_output=False), 2),
        (_whole_table, 2),
        (lambda *a, **kw: _online(*a, **kw, whole_blocks_only=True), 3),
        (_no_causal, 4),  # no causal argument: the call raises a TypeError, reported at the first causal case
        (lambda *a, **kw: _online(*a, **kw, running_max=False), 7),
    ]),
    (checks.online_attention, _online, []),  # a learner's own correct loop passes too
]
