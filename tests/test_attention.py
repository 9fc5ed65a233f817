"""Attention computed by hand: masks combined, additive attention, the scale, head slicing, the causal direction.

Each test pins one thing a plausible bug would change: ``|`` for ``&`` when padding and a mask are combined,
a dropped ``1/sqrt(d)``, a causal mask transposed, heads split from the wrong features, additive attention's
score or mask.
"""

from __future__ import annotations

import math

import pytest
import torch

from mha_lib import (
    AdditiveAttention,
    MultiHeadAttention,
    causal_mask,
    masked_softmax,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
    valid_lens_mask,
)
from mha_lib.attention import build_mask
from mha_lib.reference import load_d2l


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ------------------------------------------------------------------------- padding and a mask, together


def _padding_and_mask() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    valid_lens = torch.tensor([3, 5])  # (B,): keys 3, 4 of sequence 0 are padding
    attn_mask = torch.ones(2, 4, 5, dtype=torch.bool)  # (B, Tq, Tk), True = may attend
    attn_mask[:, :, 1] = False  # nobody may attend to key 1
    attn_mask[1, 2, :] = False
    attn_mask[1, 2, 4] = True  # query 2 of sequence 1 sees key 4 only
    allowed = valid_lens_mask(valid_lens, 4, 5) & attn_mask  # (B, Tq, Tk): both must allow
    return valid_lens, attn_mask, allowed


def test_build_mask_allows_a_key_only_where_both_the_lengths_and_the_mask_allow_it() -> None:
    valid_lens, attn_mask, allowed = _padding_and_mask()
    combined = build_mask(batch=2, num_queries=4, num_keys=5, ndim=3, valid_lens=valid_lens, attn_mask=attn_mask)
    assert torch.equal(combined.expand(2, 4, 5), allowed)
    causal = build_mask(batch=2, num_queries=4, num_keys=5, ndim=3, valid_lens=valid_lens, attn_mask=attn_mask,
                        causal=True)
    assert torch.equal(causal.expand(2, 4, 5), allowed & causal_mask(4, 5))


def test_masked_keys_get_exactly_zero_weight_when_lengths_and_a_mask_are_combined() -> None:
    valid_lens, attn_mask, allowed = _padding_and_mask()
    q, k, v = _randn(2, 4, 8), _randn(2, 5, 8, seed=1), _randn(2, 5, 3, seed=2)
    _, weights = scaled_dot_product_attention(q, k, v, valid_lens=valid_lens, attn_mask=attn_mask)
    softmaxed = masked_softmax(_randn(2, 4, 5, seed=3), valid_lens, mask=attn_mask)
    for w in (weights, softmaxed):
        assert torch.equal(w[~allowed], torch.zeros_like(w[~allowed])), "no weight on a blocked key"
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, dtype=torch.float64))
    assert weights[1, 2, 4] == 1.0, "a query with one allowed key puts all its weight there"
    scores = (q @ k.transpose(1, 2)) / math.sqrt(8)
    expected = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    torch.testing.assert_close(weights, expected)


# ---------------------------------------------------------------------------- scaled dot-product attention


def test_scaled_dot_product_attention_is_softmax_of_q_k_over_sqrt_d_times_v() -> None:
    q, k, v = _randn(2, 3, 4, 16), _randn(2, 3, 6, 16, seed=1), _randn(2, 3, 6, 5, seed=2)
    out, weights = scaled_dot_product_attention(q, k, v)
    by_hand = torch.softmax(torch.einsum("bhqd,bhkd->bhqk", q, k) / 4.0, dim=-1)  # sqrt(16) = 4
    torch.testing.assert_close(weights, by_hand)
    torch.testing.assert_close(out, torch.einsum("bhqk,bhkv->bhqv", by_hand, v))


def test_the_causal_mask_hides_later_keys_not_earlier_ones() -> None:
    expected = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]], dtype=torch.bool)  # query i sees j <= i
    assert torch.equal(causal_mask(3, 4), expected)
    q, k, v = _randn(1, 3, 4), _randn(1, 4, 4, seed=1), _randn(1, 4, 2, seed=2)
    _, weights = scaled_dot_product_attention(q, k, v, causal=True)
    assert weights[0, 0, 0] == 1.0, "the first query sees only the first key"
    assert (weights[0][~expected] == 0).all() and (weights[0][expected] > 0).all()
    mha = MultiHeadAttention(4, 4, None, 0.0, 2, causal=True).double()
    trace = mha.trace(_randn(2, 5, 4, seed=3))
    seen = causal_mask(5, 5)
    assert (trace.weights[..., ~seen] == 0).all() and (trace.weights[..., seen] > 0).all()
    assert torch.equal(trace.mask[0, 0], causal_mask(5, 5))


# ------------------------------------------------------------------------------- heads from weight rows


def test_head_i_uses_rows_i_d_head_to_i_plus_one_d_head_of_each_projection() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(6, 8, None, 0.0, 4, qkv_bias=True, causal=False).double().eval()
    x = _randn(2, 5, 6)
    trace = mha.trace(x)
    out = torch.zeros(2, 5, 8, dtype=torch.float64)
    for i in range(4):
        rows = slice(2 * i, 2 * i + 2)  # d_head = 2
        q = x @ mha.W_query.weight[rows].T + mha.W_query.bias[rows]  # (B, T, d_head)
        k = x @ mha.W_key.weight[rows].T + mha.W_key.bias[rows]
        v = x @ mha.W_value.weight[rows].T + mha.W_value.bias[rows]
        weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(2), dim=-1)  # (B, T, T)
        torch.testing.assert_close(trace.scores[:, i], q @ k.transpose(1, 2) / math.sqrt(2))
        torch.testing.assert_close(trace.weights[:, i], weights)
        torch.testing.assert_close(trace.head_context[:, i], weights @ v)
        out += (weights @ v) @ mha.out_proj.weight[:, rows].T  # head i's block of columns of W_O
    torch.testing.assert_close(trace.output, out + mha.out_proj.bias)
    torch.testing.assert_close(mha(x), trace.output)


def test_split_heads_gives_head_i_features_i_d_head_onward_and_merge_undoes_it() -> None:
    x = torch.arange(2 * 3 * 6, dtype=torch.float32).view(2, 3, 6)  # (B, T, d)
    heads = split_heads(x, 3)  # (B, h, T, d_head)
    assert heads.shape == (2, 3, 3, 2)
    for i in range(3):
        assert torch.equal(heads[:, i], x[..., 2 * i : 2 * i + 2])
    assert torch.equal(merge_heads(heads), x)


# ----------------------------------------------------------------------------------- additive attention


def _additive(seed: int = 0) -> tuple[AdditiveAttention, torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    attention = AdditiveAttention(query_size=5, key_size=4, num_hiddens=7).double().eval()
    return attention, _randn(2, 3, 5), _randn(2, 6, 4, seed=1), _randn(2, 6, 2, seed=2)


def test_additive_attention_is_w_v_tanh_of_w_q_q_plus_w_k_k() -> None:
    attention, queries, keys, values = _additive()
    valid_lens = torch.tensor([2, 6])
    out = attention(queries, keys, values, valid_lens)
    W_q, W_k, w_v = attention.W_q.weight, attention.W_k.weight, attention.w_v.weight[0]  # (7, 5), (7, 4), (7,)
    scores = torch.empty(2, 3, 6, dtype=torch.float64)
    for b in range(2):
        for i in range(3):
            for j in range(6):
                scores[b, i, j] = w_v @ torch.tanh(W_q @ queries[b, i] + W_k @ keys[b, j])
    allowed = torch.arange(6)[None, None, :] < valid_lens[:, None, None]  # (B, 1, Tk)
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    torch.testing.assert_close(attention.attention_weights, weights)
    torch.testing.assert_close(out, weights @ values)
    assert (attention.attention_weights[0, :, 2:] == 0).all(), "padding keys get exactly 0"
    torch.testing.assert_close(attention.attention_weights.sum(-1), torch.ones(2, 3, dtype=torch.float64))


@pytest.mark.parametrize("lens", [None, "batch", "query"])
def test_additive_attention_equals_d2l_with_the_same_weights(lens: str | None) -> None:
    d2l = load_d2l()
    attention, queries, keys, values = _additive(seed=1)
    valid_lens = {None: None, "batch": torch.tensor([2, 5]), "query": torch.tensor([[1, 3, 6], [6, 2, 4]])}[lens]
    theirs = d2l.AdditiveAttention(7, 0.0).double().eval()
    theirs(queries, keys, values, None)  # d2l uses lazy layers: one call fixes their input widths
    with torch.no_grad():
        for name in ("W_q", "W_k", "w_v"):
            getattr(theirs, name).weight.copy_(getattr(attention, name).weight)
        expected = theirs(queries, keys, values, valid_lens)
        out = attention(queries, keys, values, valid_lens)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(attention.attention_weights, theirs.attention_weights, atol=1e-12, rtol=0)
