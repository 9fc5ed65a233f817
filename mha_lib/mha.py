"""Multi-head attention in one method, a trace of every intermediate, and a hook on each head's output.

``MultiHeadAttention.forward`` is the whole computation, top to bottom: check the inputs, project, split the
heads, attend (PyTorch's fused kernel, or the explicit softmax when a trace is recorded or ``fused = False``),
apply the head hooks, merge the heads, project out. ``trace`` calls ``forward`` with a recorder and returns
every intermediate, so ``trace(x).output`` is exactly what ``forward(x)`` computes (up to the kernel's rounding).

Open heads: a *head hook* is a function ``fn(context) -> context`` on every head's output ``(B, h, Tq, d_head)``
just before the merge (``None`` keeps it unchanged). ``head_gates`` ``(h,)`` is one such hook (``gate_heads``);
``on_head(i, fn)`` builds a hook that changes head ``i`` only; ``register_head_hook`` keeps one on the layer.

Bad input gets a ``TypeError`` (wrong type or dtype) or a ``ValueError`` (wrong shape, device or value) naming
the argument, what was expected and what came. **NaN and inf** in ``queries``, ``keys`` or ``values`` raise a
``ValueError`` that names the argument and counts them: a non-finite input would reach every query that attends
to it and, silently, every table and figure downstream. (Inside a model this usually means training diverged.)
Devices: ``queries``, ``keys`` and ``values`` must be on the weights' device (a ``ValueError`` names both); masks
follow the inputs (``valid_lens`` and ``head_gates`` are moved to their device).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from mha_lib._validate import (
    _got,
    _shape,
    check_device,
    check_finite,
    check_index,
    check_int,
    check_last_dim,
    check_probability,
    check_same_device,
    check_tensor,
)
from mha_lib.attention import build_mask, check_has_tokens, masked_weights
from mha_lib.heads import merge_heads, split_heads

HeadHook = Callable[[Tensor], "Tensor | None"]
"""``fn(context)`` with ``context`` ``(B, h, Tq, d_head)``; returns the replacement (same shape) or None (unchanged)."""


@dataclass(frozen=True)
class AttentionTrace:
    """Every intermediate of one multi-head attention call (``B`` batch, ``h`` heads)."""

    queries: Tensor  # (B, h, Tq, d_head), after W_query
    keys: Tensor  # (B, h, Tk, d_head), after W_key
    values: Tensor  # (B, h, Tk, d_head), after W_value
    scores: Tensor  # (B, h, Tq, Tk), q k^T / sqrt(d_head), before masking
    mask: Tensor  # (B, h, Tq, Tk) bool, True = may attend
    weights: Tensor  # (B, h, Tq, Tk), softmax rows (before dropout)
    head_context: Tensor  # (B, h, Tq, d_head), weights @ values per head, before the head hooks and gates
    concat: Tensor  # (B, Tq, d_out), the heads side by side after the hooks and gates, before out_proj
    output: Tensor  # (B, Tq, d_out), out_proj(concat): what forward returns

    @property
    def num_heads(self) -> int:
        """The number of heads ``h``."""
        return self.weights.shape[1]


def gate_heads(gates: Tensor) -> HeadHook:
    """A head hook multiplying head ``i``'s context by ``gates[i]`` (``(h,)``: 1 = unchanged, 0 = head removed)."""
    return lambda context: context * gates.to(device=context.device, dtype=context.dtype).view(1, -1, 1, 1)


def on_head(head: int, fn: Callable[[Tensor], Tensor]) -> HeadHook:
    """A head hook that replaces head ``head``'s context ``(B, Tq, d_head)`` by ``fn(context)``; others unchanged.

    ``on_head(2, torch.zeros_like)`` removes head 2; ``on_head(2, lambda c: mean.expand_as(c))`` mean-ablates it.
    """
    check_int("head", head, minimum=0)

    def hook(context: Tensor) -> Tensor:
        check_index("head", head, context.shape[1], what=f" ({context.shape[1]} heads)")
        patched = context.clone()
        patched[:, head] = fn(context[:, head])
        return patched

    return hook


def _autocast_on(device_type: str) -> bool:
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4: no device argument
        return torch.is_autocast_enabled() if device_type == "cuda" else torch.is_autocast_cpu_enabled()


class MultiHeadAttention(nn.Module):
    """Multi-head (causal) attention with the signature of *LLMs from Scratch*, ch. 3.

    ``MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads)`` projects inputs of width
    ``d_in`` (keys and values: ``kv_dim``, default ``d_in``) to ``d_out = num_heads * d_head``, runs
    scaled dot-product attention in every head in parallel, concatenates the heads and applies
    ``out_proj``. ``causal=True`` hides later tokens (query ``i`` sees keys ``j <= i``);
    ``context_length=None`` means no length limit. ``device`` and ``dtype`` place the weights.

    ``forward`` calls PyTorch's fused kernel (``F.scaled_dot_product_attention``) and never stores the
    ``(Tq, Tk)`` weight table; ``trace`` runs the explicit softmax and returns every intermediate.
    Set ``fused = False`` to make ``forward`` use the explicit kernel as well.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int | None,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
        *,
        causal: bool = True,
        kv_dim: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_int("d_in", d_in)
        check_int("d_out", d_out)
        check_int("num_heads", num_heads)
        if context_length is not None:
            check_int("context_length", context_length)
        if kv_dim is not None:
            check_int("kv_dim", kv_dim)
        if d_out % num_heads:
            raise ValueError(
                f"d_out must be divisible by num_heads, got d_out={d_out} and num_heads={num_heads}"
                f" (d_out % num_heads = {d_out % num_heads})"
            )
        device = check_device("device", device)
        self.d_in = d_in
        self.d_out = d_out
        self.kv_dim = d_in if kv_dim is None else kv_dim
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.context_length = context_length
        self.causal = bool(causal)
        self.fused = True
        self._head_hooks: OrderedDict[int, HeadHook] = OrderedDict()
        # Created in this order so that a given seed gives the same weights as the reference code.
        place = {"device": device, "dtype": dtype}
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, **place)
        self.W_key = nn.Linear(self.kv_dim, d_out, bias=qkv_bias, **place)
        self.W_value = nn.Linear(self.kv_dim, d_out, bias=qkv_bias, **place)
        self.out_proj = nn.Linear(d_out, d_out, **place)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, head_dim={self.head_dim}, causal={self.causal}"

    def register_head_hook(self, fn: HeadHook) -> RemovableHandle:
        """Run ``fn`` on every call's head outputs ``(B, h, Tq, d_head)`` before the merge, until removed.

        ``fn`` returns the replacement (same shape) or None (unchanged). Returns a handle: ``handle.remove()``,
        or ``with mha.register_head_hook(fn): ...`` to keep the hook for one block of code only.
        """
        if not callable(fn):
            raise TypeError(f"fn must be a function of the head outputs (B, h, Tq, d_head), got {_got(fn)}")
        handle = RemovableHandle(self._head_hooks)
        self._head_hooks[handle.id] = fn
        return handle

    def forward(
        self,
        queries: Tensor,
        keys: Tensor | None = None,
        values: Tensor | None = None,
        valid_lens: Tensor | None = None,
        *,
        head_gates: Tensor | None = None,
        head_hook: HeadHook | None = None,
        recorder: dict[str, Tensor] | None = None,
    ) -> Tensor:
        """``(B, Tq, d_in)`` -> ``(B, Tq, d_out)``; with ``keys``/``values`` ``(B, Tk, kv_dim)``: cross-attention.

        ``valid_lens``: ``(B,)`` or ``(B, Tq)``, how many leading keys each query may see (d2l semantics).
        ``head_gates``: ``(h,)``, multiplies each head's context (1 = unchanged, 0 = head removed).
        ``head_hook``: a head hook for this call. Hooks run in this order: gates, ``head_hook``, then the
        registered ones. ``recorder``: a dict that receives every intermediate (use ``trace`` instead).
        """
        keys, values = self._check_inputs(queries, keys, values)  # self-attention: keys = values = queries
        batch, num_queries, num_keys = queries.shape[0], queries.shape[1], keys.shape[1]
        q = split_heads(self.W_query(queries), self.num_heads)  # (B, h, Tq, d_head)
        k = split_heads(self.W_key(keys), self.num_heads)  # (B, h, Tk, d_head)
        v = split_heads(self.W_value(values), self.num_heads)  # (B, h, Tk, d_head)
        shape = {"batch": batch, "num_queries": num_queries, "num_keys": num_keys, "ndim": 4}
        if self.fused and recorder is None:
            # The fused kernel never builds the (Tq, Tk) table. Causal alone goes as a flag; (B,) lengths as one
            # (B, 1, 1, Tk) row; only causal with padding needs a (Tq, Tk) mask.
            mask = build_mask(**shape, valid_lens=valid_lens, causal=self.causal and valid_lens is not None,
                              device=queries.device)
            context = F.scaled_dot_product_attention(  # (B, h, Tq, d_head)
                q, k, v, attn_mask=mask, dropout_p=self.dropout.p if self.training else 0.0,
                is_causal=self.causal and mask is None,
            )
        else:
            mask = build_mask(**shape, valid_lens=valid_lens, causal=self.causal, device=queries.device)
            # Scaling the (Tq, d_head) queries costs less than scaling the (Tq, Tk) scores.
            scores = (q * (1.0 / math.sqrt(self.head_dim))) @ k.transpose(-2, -1)  # (B, h, Tq, Tk)
            weights = masked_weights(scores, mask)  # (B, h, Tq, Tk): rows sum to 1, exactly 0 where masked
            context = self.dropout(weights) @ v  # (B, h, Tq, d_head)
            if recorder is not None:
                full = torch.ones((), dtype=torch.bool, device=q.device) if mask is None else mask
                recorder.update(queries=q, keys=k, values=v, scores=scores, weights=weights, head_context=context,
                                mask=full.expand(batch, self.num_heads, num_queries, num_keys))
        context = self._run_head_hooks(context, head_gates, head_hook)  # (B, h, Tq, d_head)
        concat = merge_heads(context)  # (B, Tq, d_out): the heads side by side
        output = self.out_proj(concat)  # (B, Tq, d_out)
        if recorder is not None:
            recorder.update(concat=concat, output=output)
        return output

    def trace(
        self,
        queries: Tensor,
        keys: Tensor | None = None,
        values: Tensor | None = None,
        valid_lens: Tensor | None = None,
        *,
        head_gates: Tensor | None = None,
        head_hook: HeadHook | None = None,
    ) -> AttentionTrace:
        """Same arguments as ``forward``; returns every intermediate, ``trace(...).output == forward(...)``.

        ``head_context`` is each head's output before the hooks and gates; ``concat`` is taken after them.
        """
        recorder: dict[str, Tensor] = {}
        # forward itself, not self(...): a forward hook that calls trace must not run again inside it
        self.forward(queries, keys, values, valid_lens, head_gates=head_gates, head_hook=head_hook, recorder=recorder)
        return AttentionTrace(**recorder)

    # ------------------------------------------------------------------------------------------ helpers

    def _run_head_hooks(self, context: Tensor, head_gates: Tensor | None, head_hook: HeadHook | None) -> Tensor:
        """Apply ``head_gates``, then ``head_hook``, then the registered hooks to ``(B, h, Tq, d_head)``."""
        hooks = [] if head_gates is None else [gate_heads(self._check_gates(head_gates))]
        if head_hook is not None:
            if not callable(head_hook):
                raise TypeError(f"head_hook must be a function of the head outputs (B, h, Tq, d_head), "
                                f"got {_got(head_hook)}")
            hooks.append(head_hook)
        for fn in [*hooks, *self._head_hooks.values()]:
            result = fn(context)
            if result is None:
                continue
            if not isinstance(result, Tensor) or result.shape != context.shape:
                got = _shape(result) if isinstance(result, Tensor) else _got(result)
                raise ValueError(
                    f"a head hook must return a tensor of the shape it received, {_shape(context)}"
                    f" (batch, heads, queries, d_head), or None; {getattr(fn, '__name__', fn)!s} returned {got}"
                )
            context = result
        return context

    def _check_gates(self, head_gates: object) -> Tensor:
        if not isinstance(head_gates, Tensor):
            raise TypeError(
                f"head_gates must be a tensor of shape ({self.num_heads},) (one per head), got {_got(head_gates)}"
            )
        if head_gates.shape != (self.num_heads,):
            raise ValueError(
                f"head_gates must be a tensor of shape ({self.num_heads},) (one per head), got {_shape(head_gates)}"
            )
        return head_gates

    def _check_inputs(self, queries: Tensor, keys: Tensor | None, values: Tensor | None) -> tuple[Tensor, Tensor]:
        """Check the inputs and return ``(keys, values)``, which are ``queries`` for self-attention."""
        self._check_input("queries", queries, "(batch, queries, d_in)", self.d_in, "d_in")
        if isinstance(keys, Tensor) and values is None and not keys.is_floating_point():
            raise TypeError(
                f"keys must be a floating-point tensor (batch, keys, kv_dim), got integers of shape {_shape(keys)}:"
                " if these are padding lengths, pass them by name, mha(x, valid_lens=valid_lens)"
                " (the 2nd and 3rd arguments are keys and values, for cross-attention)"
            )
        if keys is None and values is None:
            if self.kv_dim != self.d_in:
                raise ValueError(
                    f"keys and values are None (self-attention), but this layer has kv_dim={self.kv_dim} and"
                    f" d_in={self.d_in}: pass keys and values of width {self.kv_dim} (cross-attention)"
                )
            keys = values = queries
            kv_name = "queries"
        elif keys is None or values is None:
            missing = "keys" if keys is None else "values"
            raise ValueError(f"{missing} is None: pass both keys and values (cross-attention) or neither")
        else:
            self._check_input("keys", keys, "(batch, keys, kv_dim)", self.kv_dim, "kv_dim")
            self._check_input("values", values, "(batch, keys, kv_dim)", self.kv_dim, "kv_dim")
            if keys.shape[1] != values.shape[1]:
                raise ValueError(
                    f"keys and values must have the same length, got {_shape(keys)} and {_shape(values)}"
                )
            if not queries.shape[0] == keys.shape[0] == values.shape[0]:
                raise ValueError(
                    "queries, keys and values must have the same batch size, got "
                    f"{queries.shape[0]}, {keys.shape[0]} and {values.shape[0]}"
                )
            kv_name = "keys"
        if self.context_length is not None:
            for name, x in (("queries", queries), (kv_name, keys)):
                if x.shape[1] > self.context_length:
                    raise ValueError(
                        f"{name} has {x.shape[1]} tokens, more than context_length={self.context_length}"
                    )
        return keys, values

    def _check_input(self, name: str, x: object, layout: str, width: int, width_name: str) -> None:
        """One input: a 3-D float tensor of width ``width``, with tokens, on the weights' device and dtype, finite."""
        check_tensor(name, x, 3, layout)
        assert isinstance(x, Tensor)
        check_last_dim(name, x, width, width_name)
        check_has_tokens(name, x, layout)
        weight = self.out_proj.weight
        check_same_device(name, x, weight.device, "layer")
        if x.dtype != weight.dtype and not _autocast_on(x.device.type):
            raise TypeError(
                f"{name} has dtype {x.dtype} but the layer's weights are {weight.dtype}: convert it with"
                f" {name}.to({weight.dtype}) or the layer with layer.to({x.dtype})"
            )
        check_finite(name, x)
