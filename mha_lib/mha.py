"""Multi-head attention in one method, a trace of every intermediate, and a hook on each head's output.

``MultiHeadAttention.forward`` reads top to bottom on one screen: check the inputs (once, at the door), project,
split the heads, rotate (RoPE), cache, mask, attend, run the head hooks, merge the heads, project out. *Attend* is
one call of a kernel chosen by name from ``mha_lib.kernels``: ``"sdpa"`` (PyTorch's fused kernel, the default),
``"eager"`` (the explicit softmax, when a trace is recorded or ``fused = False``) or ``"eager_sink"`` (a learned
sink column). ``trace`` calls ``forward`` with a recorder and returns every intermediate (``mha_lib.trace``), so
``trace(x).output`` is exactly what ``forward(x)`` computes (up to the kernel's rounding).

Open heads (``mha_lib.hooks``): a *head hook* is a function ``fn(context) -> context`` on every head's output
``(B, h, Tq, d_head)`` just before the merge (``None`` keeps it unchanged). ``head_gates`` ``(h,)`` is one such hook
(``gate_heads``); ``on_head(i, fn)`` builds a hook that changes head ``i`` only; ``register_head_hook`` keeps one on
the layer.

Bad input gets a ``TypeError`` (wrong type or dtype) or a ``ValueError`` (wrong shape, device or value) naming
the argument, what was expected and what came. **NaN and inf** in ``queries``, ``keys`` or ``values`` raise a
``ValueError`` that names the argument and counts them: a non-finite input would reach every query that attends
to it and, silently, every table and figure downstream. (Inside a model this usually means training diverged.)
It reads values, so by default only in CPU memory: on a GPU the host would wait for the device at every call
(``mha_lib.set_value_checks``). ``forward`` reads no other value on the host (``tests/test_host_reads.py``).
Devices: ``queries``, ``keys`` and ``values`` must be on the weights' device (a ``ValueError`` names both); masks
follow the inputs (``valid_lens`` and ``head_gates`` are moved to their device).

Attention as modern decoders run it, each a keyword-only option and a few lines of ``forward`` (notebook 11):
``num_kv_heads`` (grouped-query attention: query head ``i`` reads K/V head ``i // queries_per_kv_head``; 1 is
multi-query attention), ``rope_base`` (rotary positions on queries and keys), ``window`` and ``sink`` (a sliding
window that keeps the first ``sink`` tokens visible), ``sink_logit`` (gpt-oss's learned per-head sink: one more
softmax column that takes weight and gives no value) and ``kv_cache`` (decoding token by token, ``mha_lib.KVCache``).
Their defaults leave the layer as it was.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from mha_lib._validate import (
    _got,
    _shape,
    check_device,
    check_finite,
    check_int,
    check_last_dim,
    check_number,
    check_probability,
    check_same_device,
    check_tensor,
    reads_values,
)
from mha_lib.attention import build_mask, check_has_tokens
from mha_lib.cache import KVCache, _window_mask
from mha_lib.heads import _merge_heads, _split_heads
from mha_lib.hooks import HeadHook, gate_heads, on_head, run_head_hooks
from mha_lib.kernels import ATTENTION_FUNCTIONS
from mha_lib.positional import _rotate_pair
from mha_lib.trace import AttentionTrace

__all__ = ["AttentionTrace", "HeadHook", "MultiHeadAttention", "gate_heads", "on_head"]


def _autocast_on(device_type: str) -> bool:
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4: no device argument
        return torch.is_autocast_enabled() if device_type == "cuda" else torch.is_autocast_cpu_enabled()


def _positions(q: Tensor, k: Tensor, start: int, key_pos: Tensor | None, *, cached: bool) -> tuple[Tensor, Tensor]:
    """``(Tq,)`` and ``(Tk,)``: the positions of the queries (``start ..``) and of the keys they read.

    ``key_pos`` where the cache kept a window's keys; otherwise the keys are in order, ending with the newest token
    (with a cache) or starting at 0 (without: self- or cross-attention).
    """
    query_pos = torch.arange(start, start + q.shape[2], device=q.device)
    if key_pos is None:
        end = start + q.shape[2] if cached else k.shape[2]
        key_pos = torch.arange(end - k.shape[2], end, device=q.device)
    return query_pos, key_pos


class MultiHeadAttention(nn.Module):
    """Multi-head (causal) attention with the signature of *LLMs from Scratch*, ch. 3.

    ``MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads)`` projects inputs of width
    ``d_in`` (keys and values: ``kv_dim``, default ``d_in``) to ``d_out = num_heads * d_head``, runs
    scaled dot-product attention in every head in parallel, concatenates the heads and applies
    ``out_proj``. ``causal=True`` hides later tokens (query ``i`` sees keys ``j <= i``);
    ``context_length=None`` means no length limit. ``device`` and ``dtype`` place the weights.

    ``forward`` calls PyTorch's fused kernel (``F.scaled_dot_product_attention``, ``kernels.sdpa_attention``) and
    never stores the ``(Tq, Tk)`` weight table; ``trace`` runs the explicit softmax (``kernels.eager_attention``) and
    returns every intermediate. Set ``fused = False`` to make ``forward`` use the explicit kernel as well.

    Options of modern decoders (keyword-only; the defaults are the layer above):

    - ``num_kv_heads``: the ``num_heads`` query heads share ``num_kv_heads`` key/value heads, each read by
      ``queries_per_kv_head = num_heads // num_kv_heads`` consecutive query heads; ``W_key`` and ``W_value`` project
      to ``num_kv_heads * head_dim``. ``num_heads`` (default) is multi-head attention, 1 is multi-query attention.
    - ``rope_base``: rotary positions (RoPE, ``mha_lib.positional.apply_rope``) on queries and keys, e.g. 10000.0.
    - ``window``: causal query ``i`` sees keys ``i - window + 1 .. i``; ``sink`` keeps the first ``sink`` tokens
      visible to every later query as well.
    - ``sink_logit``: a learned logit per head, ``sink_logit`` ``(h,)``, appended as one more softmax column that
      takes weight and gives no value (gpt-oss). Runs the explicit softmax (the fused kernel has no such column).
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
        num_kv_heads: int | None = None,
        rope_base: float | None = None,
        window: int | None = None,
        sink: int = 0,
        sink_logit: bool = False,
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
        num_kv_heads = num_heads if num_kv_heads is None else check_int("num_kv_heads", num_kv_heads)
        if num_heads % num_kv_heads:
            raise ValueError(
                f"num_heads must be divisible by num_kv_heads (each K/V head is read by the same number of query"
                f" heads), got num_heads={num_heads} and num_kv_heads={num_kv_heads}"
                f" (num_heads % num_kv_heads = {num_heads % num_kv_heads})"
            )
        if rope_base is not None:
            rope_base = check_number("rope_base", rope_base, positive=True)
            if (d_out // num_heads) % 2:
                raise ValueError(f"rope_base needs an even head_dim (RoPE rotates features in pairs), got head_dim="
                                 f"{d_out // num_heads} (d_out={d_out}, num_heads={num_heads})")
        if window is not None:
            window = check_int("window", window)
            if not causal:
                raise ValueError(f"window={window} needs causal=True: a query sees the window keys up to itself")
        sink = check_int("sink", sink, minimum=0)
        if sink and window is None:
            raise ValueError(f"sink={sink} keeps the first tokens visible outside a window, but window is None:"
                             " pass a window too, or sink=0")
        if not isinstance(sink_logit, bool):
            raise TypeError(f"sink_logit must be True or False, got {_got(sink_logit)}")
        device = check_device("device", device)
        self.d_in = d_in
        self.d_out = d_out
        self.kv_dim = d_in if kv_dim is None else kv_dim
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.queries_per_kv_head = num_heads // num_kv_heads
        self.head_dim = d_out // num_heads
        self.context_length = context_length
        self.causal = bool(causal)
        self.rope_base = rope_base
        self.window = window
        self.sink = sink
        self.fused = True
        self._head_hooks: OrderedDict[int, HeadHook] = OrderedDict()
        # Created in this order so that a given seed gives the same weights as the reference code.
        place = {"device": device, "dtype": dtype}
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, **place)
        self.W_key = nn.Linear(self.kv_dim, num_kv_heads * self.head_dim, bias=qkv_bias, **place)
        self.W_value = nn.Linear(self.kv_dim, num_kv_heads * self.head_dim, bias=qkv_bias, **place)
        self.out_proj = nn.Linear(d_out, d_out, **place)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        # gpt-oss starts its sinks from a checkpoint; 0 here: the sink counts as one more key of score 0.
        self.sink_logit = nn.Parameter(torch.zeros(num_heads, **place)) if sink_logit else None

    def extra_repr(self) -> str:
        extras = [f"num_kv_heads={self.num_kv_heads}"] if self.num_kv_heads != self.num_heads else []
        extras += [f"rope_base={self.rope_base:g}"] if self.rope_base is not None else []
        extras += [f"window={self.window}"] if self.window is not None else []
        extras += [f"sink={self.sink}"] if self.sink else []
        extras += ["sink_logit=True"] if self.sink_logit is not None else []
        return ", ".join([f"num_heads={self.num_heads}, head_dim={self.head_dim}, causal={self.causal}", *extras])

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

    def forward(self, queries: Tensor, keys: Tensor | None = None, values: Tensor | None = None,
                valid_lens: Tensor | None = None, *, kv_cache: KVCache | None = None, head_gates: Tensor | None = None,
                head_hook: HeadHook | None = None, recorder: dict[str, Tensor] | None = None) -> Tensor:
        """``(B, Tq, d_in)`` -> ``(B, Tq, d_out)``; with ``keys``/``values`` ``(B, Tk, kv_dim)``: cross-attention.

        ``valid_lens``: ``(B,)`` or ``(B, Tq)``, how many leading keys each query may see (d2l semantics).
        ``kv_cache``: a ``KVCache`` holding the earlier tokens of these sequences (causal self-attention): ``queries``
        are the next tokens, their keys and values join the cache, and they attend to everything it kept.
        ``head_gates``: ``(h,)``, multiplies each head's context (1 = unchanged, 0 = head removed).
        ``head_hook``: a head hook for this call. Hooks run in this order: gates, ``head_hook``, then the
        registered ones. ``recorder``: a dict that receives every intermediate (use ``trace`` instead).
        """
        keys, values, start = self._check_inputs(queries, keys, values, valid_lens, kv_cache)  # start: tokens cached
        # Checked once, above: from here on the library's unchecked helpers (_split_heads, _rotate, ...) do the work.
        q = _split_heads(self.W_query(queries), self.num_heads)  # (B, h, Tq, d_head)
        k = _split_heads(self.W_key(keys), self.num_kv_heads)  # (B, h_kv, Tk, d_head): h_kv = h unless K/V are shared
        v = _split_heads(self.W_value(values), self.num_kv_heads)  # (B, h_kv, Tk, d_head)
        if self.rope_base is not None:  # rotary positions: token t of this call sits at position start + t
            q, k = _rotate_pair(q, k, start, self.rope_base)
        key_pos = None  # (Tk,) the keys' positions, where a window left gaps; else made only where needed (_positions)
        if kv_cache is not None:  # the earlier tokens' keys and values come first: (B, h_kv, T_cached + Tk, d_head)
            k, v, key_pos = kv_cache._append(self, k, v, self.window, self.sink)
        mask, is_causal = self._mask(q, k, start, key_pos, valid_lens, cached=kv_cache is not None)
        attend = ATTENTION_FUNCTIONS[self._kernel_name(tracing=recorder is not None)]  # "sdpa", "eager", "eager_sink"
        context, _ = attend(q, k, v, mask, is_causal=is_causal, dropout_p=self.dropout.p if self.training else 0.0,
                            sink_logit=self.sink_logit, recorder=recorder)  # (B, h, Tq, d_head)
        if recorder is not None:  # the kernel recorded the keys and values it read, the scores, mask and weights
            query_pos, key_pos = _positions(q, k, start, key_pos, cached=kv_cache is not None)
            recorder.update(queries=q, head_context=context, kv_keys=k, kv_values=v, query_positions=query_pos,
                            key_positions=key_pos)
        context = self._run_head_hooks(context, head_gates, head_hook)  # (B, h, Tq, d_head)
        concat = _merge_heads(context)  # (B, Tq, d_out): the heads side by side
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
        kv_cache: KVCache | None = None,
        head_gates: Tensor | None = None,
        head_hook: HeadHook | None = None,
    ) -> AttentionTrace:
        """Same arguments as ``forward``; returns every intermediate, ``trace(...).output == forward(...)``.

        ``head_context`` is each head's output before the hooks and gates; ``concat`` is taken after them.
        With ``kv_cache``, the call adds its tokens to the cache, as ``forward`` does.
        """
        recorder: dict[str, Tensor] = {}
        # forward itself, not self(...): a forward hook that calls trace must not run again inside it
        self.forward(queries, keys, values, valid_lens, kv_cache=kv_cache, head_gates=head_gates, head_hook=head_hook,
                     recorder=recorder)
        return AttentionTrace(**recorder)

    # ------------------------------------------------------------------------------------------ helpers

    def _kernel_name(self, *, tracing: bool) -> str:
        """The attention function ``forward`` calls (``mha_lib.kernels.ATTENTION_FUNCTIONS``).

        ``"sdpa"``, PyTorch's fused kernel, unless ``fused = False`` or a trace needs the weights (``"eager"``), or
        the layer has a learned sink column, which the fused kernel lacks (``"eager_sink"``).
        """
        if self.sink_logit is not None:
            return "eager_sink"
        return "sdpa" if self.fused and not tracing else "eager"

    def _mask(self, q: Tensor, k: Tensor, start: int, key_pos: Tensor | None, valid_lens: Tensor | None, *,
              cached: bool) -> tuple[Tensor | None, bool]:
        """The kernel's ``(mask, is_causal)``: a bool mask broadcasting to ``(B, h, Tq, Tk)`` (or None), and a flag.

        Causal without a cache or a window is the plain triangle, passed as the flag (the fused kernel then skips
        the masked half); with padding it joins the mask. Otherwise the mask comes from positions: ``j <= i``, and
        ``i - j < window`` or ``j < sink``. One new token needs none: the cache kept exactly the keys it may see.
        """
        triangle = self.causal and not cached and self.window is None
        by_position = None
        if self.causal and not triangle and q.shape[2] > 1:
            by_position = _window_mask(*_positions(q, k, start, key_pos, cached=cached), self.window, self.sink)
        if valid_lens is None and by_position is None:
            return None, triangle
        mask = build_mask(batch=q.shape[0], num_queries=q.shape[2], num_keys=k.shape[2], ndim=4,
                          valid_lens=valid_lens, attn_mask=by_position, causal=triangle and valid_lens is not None,
                          device=q.device)
        return mask, triangle and mask is None

    def _run_head_hooks(self, context: Tensor, head_gates: Tensor | None, head_hook: HeadHook | None) -> Tensor:
        """Apply ``head_gates``, then ``head_hook``, then the registered hooks to ``(B, h, Tq, d_head)``."""
        hooks = [] if head_gates is None else [gate_heads(self._check_gates(head_gates))]
        if head_hook is not None:
            if not callable(head_hook):
                raise TypeError(f"head_hook must be a function of the head outputs (B, h, Tq, d_head), "
                                f"got {_got(head_hook)}")
            hooks.append(head_hook)
        if not hooks and not self._head_hooks:
            return context
        return run_head_hooks(context, [*hooks, *self._head_hooks.values()])

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

    def _check_inputs(self, queries: Tensor, keys: Tensor | None, values: Tensor | None, valid_lens: Tensor | None,
                      kv_cache: KVCache | None) -> tuple[Tensor, Tensor, int]:
        """Check the inputs; return ``(keys, values, start)``: ``queries`` for self-attention, the tokens cached."""
        self._check_input("queries", queries, "(batch, queries, d_in)", self.d_in, "d_in")
        start = 0
        if kv_cache is not None:
            if not isinstance(kv_cache, KVCache):
                raise TypeError(f"kv_cache must be a mha_lib.KVCache (cache = KVCache()), got {_got(kv_cache)}")
            if not self.causal:
                raise ValueError("kv_cache needs a causal layer (causal=True), but this layer has causal=False:"
                                 " without the causal mask every earlier output changes when a token is appended,"
                                 " so there is nothing to reuse")
            if keys is not None or values is not None:
                raise ValueError("kv_cache works with self-attention only, mha(x_new, kv_cache=cache): for"
                                 " cross-attention, compute the keys and values of the encoder's output once")
            if valid_lens is not None:
                raise ValueError("valid_lens cannot be combined with kv_cache: a cache holds whole sequences"
                                 " (decode sequences of equal length together, or one at a time)")
            start = kv_cache.check(self, queries.shape[0])
        if self.window is not None and (keys is not None or values is not None):
            raise ValueError(f"window={self.window} works with self-attention only, mha(x): a window is measured"
                             " between positions of one sequence")
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
            if start + queries.shape[1] > self.context_length:
                raise ValueError(
                    f"queries has {queries.shape[1]} tokens after the {start} in kv_cache: {start + queries.shape[1]}"
                    f" in all, more than context_length={self.context_length}"
                )
        return keys, values, start

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
        if reads_values(x):  # on a GPU, reading values would make the host wait for it (set_value_checks)
            check_finite(name, x)
