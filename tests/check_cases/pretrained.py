"""Notebook 12's check: the library's loader passes; the usual slips in copying a real layer fail at their case."""

from __future__ import annotations

import torch

from mha_lib import MultiHeadAttention, checks
from mha_lib.pretrained import load_attention_layer


def _load(state, layer, num_heads, *, transpose=False, causal=False, biases=True, fixed_layer=None, width=None,
          swap_query_key=False):
    """A learner's loader, with one switch per slip (defaults: the right answer)."""
    layer = layer if fixed_layer is None else fixed_layer
    prefix = f"encoder.layer.{layer}.attention."
    d_model = state[prefix + "self.query.weight"].shape[1] if width is None else width
    attn = MultiHeadAttention(d_model, d_model, None, 0.0, num_heads, qkv_bias=True, causal=causal)
    names = {"self.query": attn.W_query, "self.key": attn.W_key, "self.value": attn.W_value,
             "output.dense": attn.out_proj}
    if swap_query_key:
        names["self.query"], names["self.key"] = attn.W_key, attn.W_query
    with torch.no_grad():
        for key, linear in names.items():
            weight = state[prefix + key + ".weight"]
            linear.weight.copy_(weight.T if transpose else weight)
            linear.bias.copy_(state[prefix + key + ".bias"] if biases else torch.zeros_like(linear.bias))
    return attn


ROWS = [
    (checks.load_attention, load_attention_layer, [
        (lambda s, lay, h: _load(s, lay, h, transpose=True), 1),
        (lambda s, lay, h: _load(s, lay, h, causal=True), 1),
        (lambda s, lay, h: _load(s, lay, h, swap_query_key=True), 1),
        (lambda s, lay, h: _load(s, lay, h, biases=False), 2),
        (lambda s, lay, h: _load(s, lay, h, fixed_layer=0), 3),
        (lambda s, lay, h: _load(s, lay, h, width=8), 4),
    ]),
]
