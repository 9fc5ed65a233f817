"""Reshaping between one wide projection and several narrow heads.

Two equivalent layouts are used in the literature:

* ``split_heads`` / ``merge_heads`` keep heads as their own axis, ``(B, h, T, d/h)``
  (*LLMs from Scratch*, PyTorch's ``F.scaled_dot_product_attention``);
* ``transpose_qkv`` / ``transpose_output`` fold heads into the batch, ``(B*h, T, d/h)``
  (d2l.ai), so that 3-D batched matrix products treat each head as one more sequence.

The heads of a model are named by ``(layer, head)`` tuples (``head_index``); ``head_label`` gives the
display label ``"L0H1"``, for printing only.
"""

from __future__ import annotations

import pandas as pd
from torch import Tensor

from mha_lib._validate import check_int, check_tensor


def _check_divisible(x: Tensor, num_heads: int) -> int:
    check_int("num_heads", num_heads)
    if x.shape[-1] % num_heads:
        raise ValueError(
            f"the last dimension of x ({x.shape[-1]}) must be divisible by num_heads ({num_heads})"
        )
    return x.shape[-1] // num_heads


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """``(B, T, d)`` -> ``(B, h, T, d/h)``: head ``i`` gets features ``i*d/h : (i+1)*d/h``."""
    check_tensor("x", x, 3, "(batch, tokens, d)")
    _check_divisible(x, num_heads)
    return _split_heads(x, num_heads)


def _split_heads(x: Tensor, num_heads: int) -> Tensor:
    """``split_heads`` without the checks, for callers that checked ``x`` already (the layer)."""
    batch, tokens, width = x.shape
    return x.view(batch, tokens, num_heads, width // num_heads).transpose(1, 2)  # (B, T, h, d/h) -> (B, h, T, d/h)


def merge_heads(x: Tensor) -> Tensor:
    """``(B, h, T, d/h)`` -> ``(B, T, d)``: the concatenation of the heads, inverse of ``split_heads``."""
    check_tensor("x", x, 4, "(batch, heads, tokens, head_dim)")
    return _merge_heads(x)


def _merge_heads(x: Tensor) -> Tensor:
    """``merge_heads`` without the checks, for callers that built ``x`` themselves (the layer)."""
    batch, heads, tokens, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, tokens, heads * head_dim)  # (B, T, h, d/h) -> (B, T, d)


def transpose_qkv(x: Tensor, num_heads: int) -> Tensor:
    """``(B, T, d)`` -> ``(B*h, T, d/h)``, d2l's layout: row ``b*h + i`` is head ``i`` of sequence ``b``."""
    check_tensor("x", x, 3, "(batch, tokens, d)")
    split = split_heads(x, num_heads)
    return split.reshape(-1, split.shape[2], split.shape[3])


def transpose_output(x: Tensor, num_heads: int) -> Tensor:
    """``(B*h, T, d/h)`` -> ``(B, T, d)``, the inverse of ``transpose_qkv``."""
    check_tensor("x", x, 3, "(batch * heads, tokens, head_dim)")
    check_int("num_heads", num_heads)
    if x.shape[0] % num_heads:
        raise ValueError(f"the first dimension of x ({x.shape[0]}) must be divisible by num_heads ({num_heads})")
    return merge_heads(x.reshape(-1, num_heads, x.shape[1], x.shape[2]))


# ------------------------------------------------------------------------------ naming the heads of a model


def head_label(layer: int, head: int) -> str:
    """``"L{layer}H{head}"``: a head's display label, for printing only (name heads by ``(layer, head)`` in code)."""
    return f"L{check_int('layer', layer, minimum=0)}H{check_int('head', head, minimum=0)}"


def head_index(num_layers: int, num_heads: int) -> pd.MultiIndex:
    """Every head of a model as a ``pd.MultiIndex`` of ``(layer, head)`` tuples named ``("layer", "head")``."""
    check_int("num_layers", num_layers)
    check_int("num_heads", num_heads)
    return pd.MultiIndex.from_product([range(num_layers), range(num_heads)], names=["layer", "head"])
