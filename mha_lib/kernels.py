"""The attention functions the layer calls, each ``(q, k, v, mask, ...) -> (context, weights)``, chosen by name.

As in Hugging Face's models (``eager_attention_forward``, ``sdpa_attention_forward``), the kernel lives beside the
layer, not inside it: ``MultiHeadAttention.forward`` projects, rotates and caches, then calls one of these.

* ``eager_attention``: the explicit path, the computation notebook 05's compact class writes out (scores, mask,
  softmax, dropout, weights @ values); it returns the weights, and fills a ``recorder`` for ``trace``.
* ``sink_attention``: the same with gpt-oss's learned sink, one more softmax column per head that gives no value.
* ``sdpa_attention``: PyTorch's fused ``F.scaled_dot_product_attention``; it never builds the weights (None).

Every function takes the same arguments: ``q`` ``(B, h, Tq, d_head)``, ``k`` and ``v`` ``(B, h_kv, Tk, d_head)``
with ``h_kv`` dividing ``h`` (query head ``i`` reads K/V head ``i // (h // h_kv)``), a bool ``mask`` that broadcasts
to ``(B, h, Tq, Tk)`` (True = may attend) or None, ``is_causal`` (the top-left causal triangle on top of ``mask``),
``dropout_p`` (0 outside training). The inputs are trusted: the layer checked them at its door (the public,
checked version is ``mha_lib.scaled_dot_product_attention``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from mha_lib.attention import masked_weights

AttentionFunction = Callable[..., "tuple[Tensor, Tensor | None]"]


def repeat_kv(x: Tensor, groups: int) -> Tensor:
    """``(B, h_kv, T, d)`` -> ``(B, h_kv * groups, T, d)``: K/V head ``j`` serves query heads ``j*g .. j*g + g - 1``."""
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)


def _causal_and(mask: Tensor | None, num_queries: int, num_keys: int, is_causal: bool,
                device: torch.device) -> Tensor | None:
    """``mask`` with the causal triangle ``(Tq, Tk)`` added when ``is_causal`` (the flag SDPA takes)."""
    if not is_causal:
        return mask
    triangle = torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril()  # key j <= query i
    return triangle if mask is None else mask & triangle


def _scores(q: Tensor, k: Tensor) -> Tensor:
    """``(B, h, Tq, Tk)``: ``q k^T / sqrt(d_head)``; scaling the ``(Tq, d_head)`` queries costs less than the scores."""
    return (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)


def eager_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, is_causal: bool = False,
                    dropout_p: float = 0.0, recorder: dict[str, Tensor] | None = None,
                    **_: object) -> tuple[Tensor, Tensor]:
    """The explicit path: ``softmax(q k^T / sqrt(d_head))`` masked, then ``@ v``; returns ``(context, weights)``.

    ``context`` ``(B, h, Tq, d_head)``, ``weights`` ``(B, h, Tq, Tk)`` before dropout, rows summing to 1 (0 for a
    row with no allowed key). ``recorder`` receives the keys and values each head read, the scores, the mask.
    """
    groups = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, groups), repeat_kv(v, groups)  # (B, h, Tk, d_head): Llama's repeat_kv
    mask = _causal_and(mask, q.shape[2], k.shape[2], is_causal, q.device)
    scores = _scores(q, k)  # (B, h, Tq, Tk)
    weights = masked_weights(scores, mask)  # (B, h, Tq, Tk): exactly 0 where masked
    context = (F.dropout(weights, dropout_p) if dropout_p > 0 else weights) @ v  # (B, h, Tq, d_head)
    if recorder is not None:
        recorder.update(keys=k, values=v, scores=scores, weights=weights, **_full_mask(mask, scores))
    return context, weights


def sink_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, sink_logit: Tensor,
                   is_causal: bool = False, dropout_p: float = 0.0, recorder: dict[str, Tensor] | None = None,
                   **_: object) -> tuple[Tensor, Tensor]:
    """``eager_attention`` with gpt-oss's sink: ``sink_logit`` ``(h,)`` is one more softmax column per head.

    The sink takes weight and gives no value, so the weights ``(B, h, Tq, Tk)`` sum to 1 minus the sink's weight;
    ``recorder`` also receives ``sink_weights`` ``(B, h, Tq)``.
    """
    groups = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, groups), repeat_kv(v, groups)  # (B, h, Tk, d_head)
    batch, num_queries, num_keys = q.shape[0], q.shape[2], k.shape[2]
    mask = _causal_and(mask, num_queries, num_keys, is_causal, q.device)
    scores = _scores(q, k)  # (B, h, Tq, Tk)
    sink = sink_logit.view(1, -1, 1, 1).expand(batch, -1, num_queries, 1)  # (B, h, Tq, 1)
    allowed = None if mask is None else torch.cat(  # (B, 1, Tq, Tk + 1): the sink is always allowed
        [mask.expand(batch, 1, num_queries, num_keys), mask.new_ones(batch, 1, num_queries, 1)], dim=-1)
    with_sink = masked_weights(torch.cat([scores, sink.to(scores.dtype)], dim=-1), allowed)  # (B, h, Tq, Tk + 1)
    weights = with_sink[..., :-1]  # (B, h, Tq, Tk): rows sum to 1 - the sink's weight
    context = (F.dropout(weights, dropout_p) if dropout_p > 0 else weights) @ v  # (B, h, Tq, d_head)
    if recorder is not None:
        recorder.update(keys=k, values=v, scores=scores, weights=weights, sink_weights=with_sink[..., -1],
                        **_full_mask(mask, scores))
    return context, weights


def sdpa_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, is_causal: bool = False,
                   dropout_p: float = 0.0, **_: object) -> tuple[Tensor, None]:
    """PyTorch's fused kernel: the same context, without ever building the ``(Tq, Tk)`` weights (None)."""
    context = F.scaled_dot_product_attention(  # (B, h, Tq, d_head); enable_gqa: query head i reads K/V head i // g
        q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal, enable_gqa=k.shape[1] != q.shape[1])
    return context, None


def _full_mask(mask: Tensor | None, scores: Tensor) -> dict[str, Tensor]:
    """The mask as the trace shows it: ``(B, h, Tq, Tk)`` bool, all True where nothing was masked."""
    full = torch.ones((), dtype=torch.bool, device=scores.device) if mask is None else mask
    return {"mask": full.expand(scores.shape)}


ATTENTION_FUNCTIONS: dict[str, AttentionFunction] = {
    "eager": eager_attention,
    "eager_sink": sink_attention,
    "sdpa": sdpa_attention,
}
"""The kernels by name, as ``MultiHeadAttention.attention_function`` picks them."""
