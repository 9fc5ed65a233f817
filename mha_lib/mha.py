"""Multi-head attention, and a trace of every intermediate tensor it computes."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from mha_lib._validate import (
    _shape,
    check_int,
    check_last_dim,
    check_probability,
    check_tensor,
)
from mha_lib.attention import attend, build_mask
from mha_lib.heads import merge_heads, split_heads


@dataclass(frozen=True)
class AttentionTrace:
    """Every intermediate of one multi-head attention call (``B`` batch, ``h`` heads)."""

    queries: Tensor  # (B, h, Tq, head_dim), after W_query
    keys: Tensor  # (B, h, Tk, head_dim), after W_key
    values: Tensor  # (B, h, Tk, head_dim), after W_value
    scores: Tensor  # (B, h, Tq, Tk), q k^T / sqrt(head_dim), before masking
    mask: Tensor  # (B, h, Tq, Tk) bool, True = may attend
    weights: Tensor  # (B, h, Tq, Tk), softmax rows (before dropout)
    head_context: Tensor  # (B, h, Tq, head_dim), weights @ values per head
    concat: Tensor  # (B, Tq, d_out), the (gated) heads side by side, before out_proj
    output: Tensor  # (B, Tq, d_out), out_proj(concat): what forward returns

    @property
    def num_heads(self) -> int:
        """The number of heads ``h``."""
        return self.weights.shape[1]


class MultiHeadAttention(nn.Module):
    """Multi-head (causal) attention with the signature of *LLMs from Scratch*, ch. 3.

    ``MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads)`` projects inputs of width
    ``d_in`` (keys and values: ``kv_dim``, default ``d_in``) to ``d_out = num_heads * head_dim``, runs
    scaled dot-product attention in every head in parallel, concatenates the heads and applies
    ``out_proj``. ``causal=True`` hides later tokens (query ``i`` sees keys ``j <= i``);
    ``context_length=None`` means no length limit.

    ``forward`` calls PyTorch's fused kernel (``F.scaled_dot_product_attention``) and never stores the
    ``(Tq, Tk)`` weight table; ``trace`` runs the explicit softmax and returns every intermediate.
    Both go through ``_run``: only the attention kernel differs. Set ``fused = False`` to make
    ``forward`` use the explicit kernel as well.
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
        self.d_in = d_in
        self.d_out = d_out
        self.kv_dim = d_in if kv_dim is None else kv_dim
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.context_length = context_length
        self.causal = bool(causal)
        self.fused = True
        # Created in this order so that a given seed gives the same weights as the reference code.
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(self.kv_dim, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(self.kv_dim, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, head_dim={self.head_dim}, causal={self.causal}"

    def _check_inputs(
        self, queries: Tensor, keys: Tensor | None, values: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        check_tensor("queries", queries, 3, "(batch, queries, d_in)")
        check_last_dim("queries", queries, self.d_in, "d_in")
        if keys is None and values is None:
            keys = values = queries
            names = "queries"
        elif keys is None or values is None:
            missing = "keys" if keys is None else "values"
            raise ValueError(f"{missing} is None: pass both keys and values (cross-attention) or neither")
        else:
            check_tensor("keys", keys, 3, "(batch, keys, kv_dim)")
            check_tensor("values", values, 3, "(batch, keys, kv_dim)")
            check_last_dim("keys", keys, self.kv_dim, "kv_dim")
            check_last_dim("values", values, self.kv_dim, "kv_dim")
            if keys.shape[1] != values.shape[1]:
                raise ValueError(
                    f"keys and values must have the same length, got {_shape(keys)} and {_shape(values)}"
                )
            if not queries.shape[0] == keys.shape[0] == values.shape[0]:
                raise ValueError(
                    "queries, keys and values must have the same batch size, got "
                    f"{queries.shape[0]}, {keys.shape[0]} and {values.shape[0]}"
                )
            names = "keys"
        if self.context_length is not None:
            for name, x in (("queries", queries), (names, keys)):
                if x.shape[1] > self.context_length:
                    raise ValueError(
                        f"{name} has {x.shape[1]} tokens, more than context_length={self.context_length}"
                    )
        return keys, values

    def _run(
        self,
        queries: Tensor,
        keys: Tensor | None,
        values: Tensor | None,
        valid_lens: Tensor | None,
        *,
        record: bool,
        head_gates: Tensor | None = None,
    ) -> Tensor | AttentionTrace:
        keys, values = self._check_inputs(queries, keys, values)
        if head_gates is not None and (not isinstance(head_gates, Tensor) or head_gates.shape != (self.num_heads,)):
            got = tuple(head_gates.shape) if isinstance(head_gates, Tensor) else type(head_gates).__name__
            raise ValueError(f"head_gates must be a tensor of shape ({self.num_heads},) (one per head), got {got}")
        batch, num_queries, num_keys = queries.shape[0], queries.shape[1], keys.shape[1]
        fused = self.fused and not record
        # The fused kernel takes the causal mask as a flag (is_causal) and never builds it; the explicit
        # path needs it as a tensor, built once here and reused for the trace.
        mask = build_mask(
            batch=batch, num_queries=num_queries, num_keys=num_keys, ndim=4,
            valid_lens=valid_lens, causal=self.causal and not fused, device=queries.device,
        )
        dropout_p = self.dropout.p if self.training else 0.0
        q = split_heads(self.W_query(queries), self.num_heads)  # (B, h, Tq, head_dim)
        k = split_heads(self.W_key(keys), self.num_heads)  # (B, h, Tk, head_dim)
        v = split_heads(self.W_value(values), self.num_heads)  # (B, h, Tk, head_dim)
        context, scores, weights = attend(
            q, k, v, mask, dropout_p=dropout_p, is_causal=self.causal and fused, fused=fused
        )
        gated = context if head_gates is None else context * head_gates.view(1, -1, 1, 1).to(context.dtype)
        concat = merge_heads(gated)  # (B, Tq, d_out)
        output = self.out_proj(concat)
        if not record:
            return output
        assert scores is not None and weights is not None
        full_mask = mask if mask is not None else torch.ones((), dtype=torch.bool, device=queries.device)
        return AttentionTrace(
            queries=q, keys=k, values=v, scores=scores,
            mask=full_mask.expand(batch, self.num_heads, num_queries, num_keys),
            weights=weights, head_context=context, concat=concat, output=output,
        )

    def forward(
        self,
        queries: Tensor,
        keys: Tensor | None = None,
        values: Tensor | None = None,
        valid_lens: Tensor | None = None,
        *,
        head_gates: Tensor | None = None,
    ) -> Tensor:
        """``(B, Tq, d_in)`` -> ``(B, Tq, d_out)``; with ``keys``/``values`` ``(B, Tk, kv_dim)``: cross-attention.

        ``valid_lens``: ``(B,)`` or ``(B, Tq)``, how many leading keys each query may see (d2l semantics).
        ``head_gates``: ``(h,)``, multiplies each head's context before the concatenation (1 = unchanged,
        0 = head removed); used to ablate heads and to score their importance.
        """
        out = self._run(queries, keys, values, valid_lens, record=False, head_gates=head_gates)
        assert isinstance(out, Tensor)
        return out

    def trace(
        self,
        queries: Tensor,
        keys: Tensor | None = None,
        values: Tensor | None = None,
        valid_lens: Tensor | None = None,
        *,
        head_gates: Tensor | None = None,
    ) -> AttentionTrace:
        """Same arguments as ``forward``; returns every intermediate, ``trace(...).output == forward(...)``.

        ``head_context`` is each head's output before ``head_gates``; ``concat`` is taken after them.
        """
        out = self._run(queries, keys, values, valid_lens, record=True, head_gates=head_gates)
        assert isinstance(out, AttentionTrace)
        return out
