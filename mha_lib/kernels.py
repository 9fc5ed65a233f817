"""The attention functions the layer calls, each ``(q, k, v, mask, ...) -> (context, weights)``, chosen by name.

As in Hugging Face's models (``eager_attention_forward``, ``sdpa_attention_forward``), the kernel lives beside the
layer, not inside it: ``MultiHeadAttention.forward`` projects, rotates and caches, then calls the function named by
its ``attn_implementation`` (the ``ATTENTION_FUNCTIONS`` registry; ``register_attention_function`` adds one).

* ``eager_attention`` (``"eager"``): the explicit path, the computation notebook 05's compact class writes out
  (scores, bias, mask, softmax, dropout, weights @ values); it returns the weights, and fills a ``recorder``.
* ``sink_attention`` (``"eager_sink"``): the same with gpt-oss's learned sink, one more softmax column per head.
* ``sdpa_attention`` (``"sdpa"``): PyTorch's fused ``F.scaled_dot_product_attention``; it never builds the weights.

Every function takes the same arguments: ``q`` ``(B, h, Tq, d_head)``, ``k`` and ``v`` ``(B, h_kv, Tk, d_head)``
with ``h_kv`` dividing ``h`` (query head ``i`` reads K/V head ``i // (h // h_kv)``), a bool ``mask`` that broadcasts
to ``(B, h, Tq, Tk)`` (True = may attend) or None, and keywords: ``bias``, a float tensor that broadcasts to
``(B, h, Tq, Tk)`` added to the scores before the mask and the softmax (ALiBi; as Hugging Face adds a float
``attention_mask``), or None; ``is_causal`` (the top-left causal triangle on top of ``mask``); ``dropout_p`` (0
outside training); ``sink_logit`` and ``recorder`` (None unless the layer has a sink or is traced). A function
ignores the keywords it does not use (``**kwargs``). The inputs are trusted: the layer checked them at its door
(the public, checked version is ``mha_lib.scaled_dot_product_attention``).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator, Mapping

import torch
import torch.nn.functional as F
from torch import Tensor

from mha_lib._validate import _got, check_bool, check_str
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


def _scores(q: Tensor, k: Tensor, bias: Tensor | None = None) -> Tensor:
    """``(B, h, Tq, Tk)``: ``q k^T / sqrt(d_head)`` (+ ``bias``); scaling the queries costs less than the scores."""
    scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)
    return scores if bias is None else scores + bias


def eager_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, bias: Tensor | None = None,
                    is_causal: bool = False, dropout_p: float = 0.0, recorder: dict[str, Tensor] | None = None,
                    **_: object) -> tuple[Tensor, Tensor]:
    """The explicit path: ``softmax(q k^T / sqrt(d_head) + bias)`` masked, then ``@ v``; returns ``(context, weights)``.

    ``context`` ``(B, h, Tq, d_head)``, ``weights`` ``(B, h, Tq, Tk)`` before dropout, rows summing to 1 (0 for a
    row with no allowed key). ``recorder`` receives the keys and values each head read, the scores (with the bias),
    the mask and the bias.
    """
    groups = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, groups), repeat_kv(v, groups)  # (B, h, Tk, d_head): Llama's repeat_kv
    mask = _causal_and(mask, q.shape[2], k.shape[2], is_causal, q.device)
    scores = _scores(q, k, bias)  # (B, h, Tq, Tk)
    weights = masked_weights(scores, mask)  # (B, h, Tq, Tk): exactly 0 where masked
    context = (F.dropout(weights, dropout_p) if dropout_p > 0 else weights) @ v  # (B, h, Tq, d_head)
    if recorder is not None:
        recorder.update(keys=k, values=v, scores=scores, weights=weights, **_full_mask(mask, scores),
                        **({} if bias is None else {"bias": bias}))
    return context, weights


def sink_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, sink_logit: Tensor,
                   bias: Tensor | None = None, is_causal: bool = False, dropout_p: float = 0.0,
                   recorder: dict[str, Tensor] | None = None, **_: object) -> tuple[Tensor, Tensor]:
    """``eager_attention`` with gpt-oss's sink: ``sink_logit`` ``(h,)`` is one more softmax column per head.

    The sink takes weight and gives no value, so the weights ``(B, h, Tq, Tk)`` sum to 1 minus the sink's weight;
    ``recorder`` also receives ``sink_weights`` ``(B, h, Tq)``.
    """
    groups = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, groups), repeat_kv(v, groups)  # (B, h, Tk, d_head)
    batch, num_queries, num_keys = q.shape[0], q.shape[2], k.shape[2]
    mask = _causal_and(mask, num_queries, num_keys, is_causal, q.device)
    scores = _scores(q, k, bias)  # (B, h, Tq, Tk)
    sink = sink_logit.view(1, -1, 1, 1).expand(batch, -1, num_queries, 1)  # (B, h, Tq, 1)
    allowed = None if mask is None else torch.cat(  # (B, 1, Tq, Tk + 1): the sink is always allowed
        [mask.expand(batch, 1, num_queries, num_keys), mask.new_ones(batch, 1, num_queries, 1)], dim=-1)
    with_sink = masked_weights(torch.cat([scores, sink.to(scores.dtype)], dim=-1), allowed)  # (B, h, Tq, Tk + 1)
    weights = with_sink[..., :-1]  # (B, h, Tq, Tk): rows sum to 1 - the sink's weight
    context = (F.dropout(weights, dropout_p) if dropout_p > 0 else weights) @ v  # (B, h, Tq, d_head)
    if recorder is not None:
        recorder.update(keys=k, values=v, scores=scores, weights=weights, sink_weights=with_sink[..., -1],
                        **_full_mask(mask, scores), **({} if bias is None else {"bias": bias}))
    return context, weights


def sdpa_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, bias: Tensor | None = None,
                   is_causal: bool = False, dropout_p: float = 0.0, **_: object) -> tuple[Tensor, None]:
    """PyTorch's fused kernel: the same context, without ever building the ``(Tq, Tk)`` weights (None).

    SDPA takes one ``attn_mask``, bool or float: a ``bias`` goes in as the float mask, ``-inf`` where ``mask`` (and
    the causal triangle, which then cannot ride on the ``is_causal`` flag) blocks a key.
    """
    if bias is not None:
        mask = _causal_and(mask, q.shape[2], k.shape[2], is_causal, q.device)
        bias = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
        mask, is_causal = bias.to(q.dtype), False
    context = F.scaled_dot_product_attention(  # (B, h, Tq, d_head); enable_gqa: query head i reads K/V head i // g
        q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal, enable_gqa=k.shape[1] != q.shape[1])
    return context, None


def _full_mask(mask: Tensor | None, scores: Tensor) -> dict[str, Tensor]:
    """The mask as the trace shows it: ``(B, h, Tq, Tk)`` bool, all True where nothing was masked."""
    full = torch.ones((), dtype=torch.bool, device=scores.device) if mask is None else mask
    return {"mask": full.expand(scores.shape)}


_KEYWORDS = {"bias": None, "is_causal": False, "dropout_p": 0.0, "sink_logit": None, "recorder": None}


class AttentionFunctions(Mapping[str, AttentionFunction]):
    """The attention functions by name (Hugging Face's ``AttentionInterface``): ``"eager"``, ``"eager_sink"``,
    ``"sdpa"``, and those a user registers. ``MultiHeadAttention(..., attn_implementation=name)`` calls one."""

    def __init__(self, builtin: dict[str, AttentionFunction]) -> None:
        self._functions = dict(builtin)
        self._builtin = frozenset(builtin)

    def __getitem__(self, name: str) -> AttentionFunction:
        return self._functions[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)

    def lookup(self, name: object, argument: str = "attn_implementation") -> AttentionFunction:
        """The function registered as ``name``; a ``ValueError`` listing the registered names otherwise."""
        found = self._functions.get(name) if isinstance(name, str) else None
        if found is not None:  # the path of every forward: one dict read
            return found
        name = check_str(argument, name)
        if name not in self._functions:
            raise ValueError(f"{argument} must be a registered attention function, one of"
                             f" {', '.join(map(repr, self._functions))}, got {name!r}: add your own with"
                             " mha_lib.register_attention_function(name, fn)")
        return self._functions[name]

    def register(self, name: str, fn: AttentionFunction, *, replace: bool = False) -> None:
        """Add ``fn`` as ``name``: ``fn(q, k, v, mask, *, bias, is_causal, dropout_p, **kwargs) -> (context, weights)``.

        ``weights`` may be None. A name already taken needs ``replace=True``; the built-in ones stay.
        """
        name = check_str("name", name, nonempty=True)
        if not callable(fn):
            raise TypeError(f"fn must be a function (q, k, v, mask, **kwargs) -> (context, weights), got {_got(fn)}")
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):  # a builtin without a signature: trusted
            signature = None
        if signature is not None:
            try:
                signature.bind(None, None, None, None, **_KEYWORDS)
            except TypeError as error:
                raise TypeError(f"fn must accept (q, k, v, mask, *, bias, is_causal, dropout_p, **kwargs), but"
                                f" {getattr(fn, '__name__', fn)!s}{signature} cannot ({error}): add **kwargs to"
                                " take the keywords it does not use") from None
        if name in self._builtin:
            raise ValueError(f"name {name!r} is a built-in attention function: choose another name")
        if name in self._functions and not check_bool("replace", replace):
            raise ValueError(f"name {name!r} is registered already: pass replace=True to replace it")
        self._functions[name] = fn

    def unregister(self, name: str) -> None:
        """Remove a function a user registered."""
        self.lookup(name, "name")
        if name in self._builtin:
            raise ValueError(f"name {name!r} is a built-in attention function: it cannot be removed")
        del self._functions[name]


ATTENTION_FUNCTIONS = AttentionFunctions({
    "eager": eager_attention,
    "eager_sink": sink_attention,
    "sdpa": sdpa_attention,
})
"""The kernels by name; ``MultiHeadAttention.attn_implementation`` names the one ``forward`` calls."""

register_attention_function = ATTENTION_FUNCTIONS.register
