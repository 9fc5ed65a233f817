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

from mha_lib._validate import check_bool
from mha_lib.arguments import check_gates, check_head_hook, check_inputs, check_kernel_output, check_options
from mha_lib.attention import build_mask
from mha_lib.cache import KVCache, _window_mask
from mha_lib.heads import _merge_heads, _split_heads
from mha_lib.hooks import HeadHook, gate_heads, on_head, run_head_hooks
from mha_lib.kernels import ATTENTION_FUNCTIONS
from mha_lib.positional import _alibi_bias, _rotate_pair, alibi_slopes
from mha_lib.trace import AttentionTrace

__all__ = ["AttentionTrace", "HeadHook", "MultiHeadAttention", "gate_heads", "on_head"]

_BUILT_IN = ("sdpa", "eager", "eager_sink")  # their output is trusted; a user's function's is checked


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
    returns every intermediate. ``attn_implementation`` names the kernel ``forward`` calls, from the registry
    ``mha_lib.kernels.ATTENTION_FUNCTIONS`` (as in Hugging Face): ``"sdpa"`` (the default), ``"eager"`` (the
    explicit softmax), ``"eager_sink"`` (the default with ``sink_logit``), or a function of your own added with
    ``mha_lib.register_attention_function(name, fn)``; it may be changed later, ``layer.attn_implementation =
    "eager"``. ``fused = False`` is the same as ``"eager"``. ``trace`` always runs the explicit kernel.

    Options of modern decoders (keyword-only; the defaults are the layer above):

    - ``num_kv_heads``: the ``num_heads`` query heads share ``num_kv_heads`` key/value heads, each read by
      ``queries_per_kv_head = num_heads // num_kv_heads`` consecutive query heads; ``W_key`` and ``W_value`` project
      to ``num_kv_heads * head_dim``. ``num_heads`` (default) is multi-head attention, 1 is multi-query attention.
    - ``rope_base``: rotary positions (RoPE, ``mha_lib.positional.apply_rope``) on queries and keys, e.g. 10000.0.
    - ``window``: causal query ``i`` sees keys ``i - window + 1 .. i``; ``sink`` keeps the first ``sink`` tokens
      visible to every later query as well.
    - ``sink_logit``: a learned logit per head, ``sink_logit`` ``(h,)``, appended as one more softmax column that
      takes weight and gives no value (gpt-oss). Runs the explicit softmax (the fused kernel has no such column).
    - ``alibi``: no position in the embeddings; instead each head ``h`` adds ``-m_h (i - j)`` to the score of query
      ``i`` for key ``j``, with the slopes ``m_h`` of Press, Smith and Lewis (2022, ``positional.alibi_slopes``; kept
      in the buffer ``alibi_slopes``). Self-attention only; ``|i - j|`` when ``causal=False``.
    """

    alibi_slopes: Tensor | None  # (h,) ALiBi's slopes, a buffer (not saved in the state dict); None without ALiBi

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
        alibi: bool = False,
        attn_implementation: str | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        o = check_options(d_in, d_out, context_length, dropout, num_heads, qkv_bias, causal=causal, kv_dim=kv_dim,
                          num_kv_heads=num_kv_heads, rope_base=rope_base, window=window, sink=sink,
                          sink_logit=sink_logit, alibi=alibi, attn_implementation=attn_implementation,
                          device=device)  # mha_lib.arguments: every argument checked
        ATTENTION_FUNCTIONS.lookup(o.attn_implementation)  # a registered kernel, or a ValueError listing them
        self.d_in, self.d_out, self.kv_dim = o.d_in, o.d_out, o.kv_dim
        self.num_heads, self.num_kv_heads, self.head_dim = o.num_heads, o.num_kv_heads, o.head_dim
        self.queries_per_kv_head = o.num_heads // o.num_kv_heads
        self.context_length, self.causal, self.window, self.sink = o.context_length, o.causal, o.window, o.sink
        self.rope_base, self.alibi, self.attn_implementation = o.rope_base, o.alibi, o.attn_implementation
        self._head_hooks: OrderedDict[int, HeadHook] = OrderedDict()
        # Created in this order so that a given seed gives the same weights as the reference code.
        kv_width, device = o.num_kv_heads * o.head_dim, o.device
        self.W_query = nn.Linear(o.d_in, o.d_out, bias=o.qkv_bias, device=device, dtype=dtype)
        self.W_key = nn.Linear(o.kv_dim, kv_width, bias=o.qkv_bias, device=device, dtype=dtype)
        self.W_value = nn.Linear(o.kv_dim, kv_width, bias=o.qkv_bias, device=device, dtype=dtype)
        self.out_proj = nn.Linear(o.d_out, o.d_out, device=device, dtype=dtype)
        self.dropout = nn.Dropout(o.dropout)
        # gpt-oss starts its sinks from a checkpoint; 0 here: the sink counts as one more key of score 0.
        self.sink_logit = nn.Parameter(torch.zeros(o.num_heads, device=device, dtype=dtype)) if o.sink_logit else None
        slopes = alibi_slopes(o.num_heads).to(device=device, dtype=dtype or torch.get_default_dtype())
        self.register_buffer("alibi_slopes", slopes if o.alibi else None, persistent=False)  # (h,): follows .to()

    @property
    def fused(self) -> bool:
        """Whether ``forward`` calls PyTorch's fused kernel (``attn_implementation == "sdpa"``).

        ``fused = False`` selects the explicit kernel, ``"eager"``, and ``True`` ``"sdpa"`` (with a sink column the
        kernel stays ``"eager_sink"``, the only one that has it).
        """
        return self.attn_implementation == "sdpa"

    @fused.setter
    def fused(self, value: bool) -> None:
        value = check_bool("fused", value)
        if self.sink_logit is None:
            self.attn_implementation = "sdpa" if value else "eager"

    def extra_repr(self) -> str:
        extras = [f"num_kv_heads={self.num_kv_heads}"] if self.num_kv_heads != self.num_heads else []
        extras += [f"rope_base={self.rope_base:g}"] if self.rope_base is not None else []
        extras += [f"window={self.window}"] if self.window is not None else []
        extras += [f"sink={self.sink}"] if self.sink else []
        extras += ["sink_logit=True"] if self.sink_logit is not None else []
        extras += ["alibi=True"] if self.alibi else []
        default = "eager_sink" if self.sink_logit is not None else "sdpa"
        extras += [f"attn_implementation={self.attn_implementation!r}"] if self.attn_implementation != default else []
        return ", ".join([f"num_heads={self.num_heads}, head_dim={self.head_dim}, causal={self.causal}", *extras])

    def register_head_hook(self, fn: HeadHook) -> RemovableHandle:
        """Run ``fn`` on every call's head outputs ``(B, h, Tq, d_head)`` before the merge, until removed.

        ``fn`` returns the replacement (same shape) or None (unchanged). Returns a handle: ``handle.remove()``,
        or ``with mha.register_head_hook(fn): ...`` to keep the hook for one block of code only.
        """
        check_head_hook("fn", fn)
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
        queries, keys, values, start = check_inputs(self, queries, keys, values, valid_lens, kv_cache)  # start: cached
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
        bias = None  # ALiBi: (h, Tq, Tk), -m_h (i - j) added to head h's scores
        if self.alibi_slopes is not None:
            bias = _alibi_bias(*_positions(q, k, start, key_pos, cached=kv_cache is not None), self.alibi_slopes,
                               self.causal)
        name = self._kernel_name(tracing=recorder is not None)  # "sdpa", "eager", "eager_sink" or a user's
        result = ATTENTION_FUNCTIONS.lookup(name)(
            q, k, v, mask, bias=bias, is_causal=is_causal, dropout_p=self.dropout.p if self.training else 0.0,
            sink_logit=self.sink_logit, recorder=recorder)
        context = result[0] if name in _BUILT_IN else check_kernel_output(name, result, q)  # (B, h, Tq, d_head)
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

        ``attn_implementation``, unless a trace needs the weights: then the explicit kernel, ``"eager"`` (or
        ``"eager_sink"`` for a layer with a learned sink column, which the fused kernel lacks).
        """
        if tracing:
            return "eager" if self.sink_logit is None else "eager_sink"
        return self.attn_implementation

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
        hooks = [] if head_gates is None else [gate_heads(check_gates(head_gates, self.num_heads))]
        if head_hook is not None:
            check_head_hook("head_hook", head_hook)
            hooks.append(head_hook)
        if not hooks and not self._head_hooks:
            return context
        return run_head_hooks(context, [*hooks, *self._head_hooks.values()])
