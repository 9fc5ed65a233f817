"""``AttentionTrace``: every intermediate of one multi-head attention call, and the check that an argument is one.

The layer (``mha_lib.mha``) fills a trace from its own forward pass; the tables, figures and model kits read it.
It lives below the layer, so that a module that only reads traces never needs to import the layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from mha_lib._validate import _got, check_index


@dataclass(frozen=True)
class AttentionTrace:
    """Every intermediate of one multi-head attention call (``B`` batch, ``h`` heads)."""

    queries: Tensor  # (B, h, Tq, d_head), after W_query (and RoPE)
    keys: Tensor  # (B, h, Tk, d_head), after W_key (and RoPE): the keys each query head reads
    values: Tensor  # (B, h, Tk, d_head), after W_value: the values each query head reads
    scores: Tensor  # (B, h, Tq, Tk), q k^T / sqrt(d_head) (+ bias, with ALiBi), before masking
    mask: Tensor  # (B, h, Tq, Tk) bool, True = may attend
    weights: Tensor  # (B, h, Tq, Tk), softmax rows (before dropout)
    head_context: Tensor  # (B, h, Tq, d_head), weights @ values per head, before the head hooks and gates
    concat: Tensor  # (B, Tq, d_out), the heads side by side after the hooks and gates, before out_proj
    output: Tensor  # (B, Tq, d_out), out_proj(concat): what forward returns
    # Grouped-query attention, positions and sinks (notebook 11). For plain MHA kv_keys is keys, kv_values is values.
    kv_keys: Tensor | None = None  # (B, h_kv, Tk, d_head): the K heads as computed and cached, shared by query heads
    kv_values: Tensor | None = None  # (B, h_kv, Tk, d_head): the V heads
    query_positions: Tensor | None = None  # (Tq,) int64: each query's position (offset by the cached tokens)
    key_positions: Tensor | None = None  # (Tk,) int64: each key's position (a windowed cache skips some)
    sink_weights: Tensor | None = None  # (B, h, Tq): the weight a learned sink logit took (sink_logit=True)
    bias: Tensor | None = None  # (h, Tq, Tk): what the layer added to the scores (alibi=True), None without

    @property
    def num_heads(self) -> int:
        """The number of (query) heads ``h``."""
        return self.weights.shape[1]

    @property
    def num_kv_heads(self) -> int:
        """The number of K/V heads ``h_kv`` (``h`` for plain multi-head attention)."""
        return self.num_heads if self.kv_keys is None else self.kv_keys.shape[1]

    @property
    def queries_per_kv_head(self) -> int:
        """How many query heads read each K/V head: ``h // h_kv``."""
        return self.num_heads // self.num_kv_heads

    @property
    def kv_groups(self) -> list[list[int]]:
        """``kv_groups[j]``: the query heads that read K/V head ``j`` (consecutive, as in ``enable_gqa``)."""
        g = self.queries_per_kv_head
        return [list(range(j * g, (j + 1) * g)) for j in range(self.num_kv_heads)]

    def kv_head_of(self, head: int) -> int:
        """The K/V head that query head ``head`` reads: ``head // queries_per_kv_head``."""
        head = check_index("head", head, self.num_heads, what=f" ({self.num_heads} query heads)")
        return head // self.queries_per_kv_head


def check_trace(value: object, name: str = "trace") -> AttentionTrace:
    """Return ``value`` if it is an ``AttentionTrace``; a tensor gets a hint to call ``mha.trace(x)``."""
    if not isinstance(value, AttentionTrace):
        if isinstance(value, Tensor):
            hint = ": call trace = mha.trace(x), which returns every intermediate (mha(x) returns only the output)"
        elif isinstance(getattr(value, "attn", None), AttentionTrace):
            hint = f": pass its attention, {name}.attn"
        elif isinstance(value, (list, tuple)) and value and isinstance(getattr(value[0], "attn", None), AttentionTrace):
            hint = f": a model's trace has one entry per layer, pass one layer's attention, {name}[layer].attn"
        else:
            hint = " (the result of mha.trace(x))"
        if isinstance(value, (list, tuple)):
            got = f"a {type(value).__name__} of {len(value)}"
        else:
            got = _got(value) if isinstance(value, Tensor) else f"a {type(value).__name__}"
        raise TypeError(f"{name} must be an AttentionTrace, got {got}{hint}")
    return value
