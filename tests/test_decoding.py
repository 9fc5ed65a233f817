"""Notebook 11's layer options, each against an independent reference.

- ``num_kv_heads`` (GQA, MQA) equals ``F.scaled_dot_product_attention(..., enable_gqa=True)`` and a plain multi-head
  layer whose key and value heads are copies, on both kernels;
- ``kv_cache``: decoding token by token, or chunk by chunk, equals the full causal forward, with RoPE, windows
  and sinks; a windowed cache keeps only what the window needs;
- ``window`` and ``sink`` masks equal masks built by hand with loops; ``rope_base`` equals RoPE applied by hand;
- ``sink_logit`` equals gpt-oss's extra softmax column and the formula ``(1 - sigmoid(s - logsumexp)) x attention``;
- bad input is refused with an error naming the argument; the defaults leave the layer unchanged.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from mha_lib import KVCache, MultiHeadAttention, causal_window_mask, kv_cache_bytes_per_token, split_heads
from mha_lib.positional import apply_rope


def _layer(num_heads: int = 4, num_kv_heads: int | None = None, *, seed: int = 0, d: int = 16, **options):
    torch.manual_seed(seed)
    return MultiHeadAttention(d, d, None, 0.0, num_heads, num_kv_heads=num_kv_heads, **options).eval()


def _x(batch: int = 2, tokens: int = 9, d: int = 16, seed: int = 1) -> torch.Tensor:
    return torch.randn(batch, tokens, d, generator=torch.Generator().manual_seed(seed))  # (B, T, d)


def _has_enable_gqa() -> bool:
    q = torch.zeros(1, 2, 1, 2)
    try:
        F.scaled_dot_product_attention(q, q[:, :1], q[:, :1], enable_gqa=True)
    except TypeError:
        return False
    return True


NEEDS_GQA = pytest.mark.skipif(not _has_enable_gqa(), reason="this torch has no enable_gqa (added in 2.5)")
BOTH_KERNELS = pytest.mark.parametrize("fused", [True, False], ids=["fused", "explicit"])


# ------------------------------------------------------------------------------------ defaults are unchanged


def test_the_defaults_build_the_same_layer_as_before() -> None:
    torch.manual_seed(3)
    plain = MultiHeadAttention(12, 12, 8, 0.0, 3)
    torch.manual_seed(3)
    explicit = MultiHeadAttention(12, 12, 8, 0.0, 3, num_kv_heads=3, rope_base=None, window=None, sink=0,
                                  sink_logit=False)
    assert repr(plain) == repr(explicit)
    assert plain.extra_repr() == "num_heads=3, head_dim=4, causal=True"
    assert list(plain.state_dict()) == ["W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight",
                                        "out_proj.bias"]
    x = _x(2, 8, 12)
    for a, b in zip(plain.state_dict().values(), explicit.state_dict().values()):
        assert torch.equal(a, b)
    assert torch.equal(plain(x), explicit(x))
    assert plain.sink_logit is None and plain.num_kv_heads == 3 and plain.queries_per_kv_head == 1


def test_options_show_in_the_repr_only_when_set() -> None:
    layer = _layer(4, 2, rope_base=10000.0, window=8, sink=2, sink_logit=True)
    assert layer.extra_repr() == ("num_heads=4, head_dim=4, causal=True, num_kv_heads=2, rope_base=10000, window=8,"
                                  " sink=2, sink_logit=True")


def test_a_plain_trace_keeps_its_fields_and_adds_the_shared_heads() -> None:
    layer, x = _layer(4), _x()
    trace = layer.trace(x)
    assert trace.keys is trace.kv_keys and trace.values is trace.kv_values
    assert trace.keys.shape == (2, 4, 9, 4) and trace.num_kv_heads == 4 and trace.kv_groups == [[0], [1], [2], [3]]
    assert torch.equal(trace.query_positions, torch.arange(9)) and torch.equal(trace.key_positions, torch.arange(9))
    assert trace.sink_weights is None


# ------------------------------------------------------------------------------------ grouped-query attention


@NEEDS_GQA
@BOTH_KERNELS
@pytest.mark.parametrize(("num_heads", "num_kv_heads"), [(4, 4), (4, 2), (4, 1), (6, 3), (6, 2)])
@pytest.mark.parametrize("causal", [True, False])
def test_gqa_equals_sdpa_with_enable_gqa(num_heads: int, num_kv_heads: int, causal: bool, fused: bool) -> None:
    layer = _layer(num_heads, num_kv_heads, d=24, causal=causal, qkv_bias=True)
    layer.fused = fused
    x = _x(3, 7, 24)
    q = split_heads(layer.W_query(x), num_heads)  # (B, h, T, d_head)
    k = split_heads(layer.W_key(x), num_kv_heads)  # (B, h_kv, T, d_head)
    v = split_heads(layer.W_value(x), num_kv_heads)
    context = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)  # (B, h, T, d_head)
    expected = layer.out_proj(context.transpose(1, 2).reshape(3, 7, 24))
    assert_close(layer(x), expected)
    assert_close(layer.trace(x).output, expected)


@BOTH_KERNELS
@pytest.mark.parametrize(("num_heads", "num_kv_heads"), [(4, 2), (4, 1), (6, 3), (8, 2)])
def test_gqa_equals_multi_head_attention_with_copied_kv_heads(num_heads: int, num_kv_heads: int, fused: bool) -> None:
    d = 48
    gqa = _layer(num_heads, num_kv_heads, d=d, qkv_bias=True)
    mha = _layer(num_heads, d=d, qkv_bias=True, seed=9)
    g, d_head = num_heads // num_kv_heads, d // num_heads
    with torch.no_grad():
        mha.W_query.load_state_dict(gqa.W_query.state_dict())
        mha.out_proj.load_state_dict(gqa.out_proj.state_dict())
        for small, big in ((gqa.W_key, mha.W_key), (gqa.W_value, mha.W_value)):
            # K/V head j (rows j*d_head .. ) becomes query heads j*g .. j*g + g - 1: repeat_interleave of row blocks
            big.weight.copy_(small.weight.view(num_kv_heads, d_head, d).repeat_interleave(g, dim=0).reshape(d, d))
            big.bias.copy_(small.bias.view(num_kv_heads, d_head).repeat_interleave(g, dim=0).reshape(d))
    gqa.fused = mha.fused = fused
    x = _x(2, 10, d)
    valid_lens = torch.tensor([10, 6])
    assert_close(gqa(x), mha(x))
    assert_close(gqa(x, valid_lens=valid_lens), mha(x, valid_lens=valid_lens))
    traced, reference = gqa.trace(x), mha.trace(x)
    assert_close(traced.weights, reference.weights)
    assert_close(traced.keys, reference.keys)
    assert gqa.W_key.weight.shape == (num_kv_heads * d_head, d)


def test_the_trace_shows_which_query_heads_read_each_kv_head() -> None:
    trace = _layer(6, 2, d=24).trace(_x(2, 5, 24))
    assert trace.num_heads == 6 and trace.num_kv_heads == 2 and trace.queries_per_kv_head == 3
    assert trace.kv_groups == [[0, 1, 2], [3, 4, 5]]
    assert [trace.kv_head_of(i) for i in range(6)] == [0, 0, 0, 1, 1, 1]
    assert trace.kv_keys.shape == (2, 2, 5, 4) and trace.keys.shape == (2, 6, 5, 4)
    for kv_head, heads in enumerate(trace.kv_groups):
        for head in heads:
            assert torch.equal(trace.keys[:, head], trace.kv_keys[:, kv_head])
            assert torch.equal(trace.values[:, head], trace.kv_values[:, kv_head])
    with pytest.raises(ValueError, match=r"head must be in \[0, 6\) \(6 query heads\)"):
        trace.kv_head_of(6)


def test_gqa_gradients_agree_between_kernels() -> None:
    x = _x(2, 6, 16).requires_grad_(True)
    grads = []
    for fused in (True, False):
        layer = _layer(4, 2)
        layer.fused = fused
        x.grad = None
        layer(x).pow(2).sum().backward()
        grads.append((x.grad.clone(), layer.W_key.weight.grad.clone()))
    assert_close(grads[0][0], grads[1][0])
    assert_close(grads[0][1], grads[1][1])


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_gqa_runs_in_other_dtypes(dtype: torch.dtype) -> None:
    layer = _layer(4, 2).to(dtype)
    x = _x().to(dtype)
    tol = 1e-9 if dtype == torch.float64 else 3e-2
    assert_close(layer(x), layer.trace(x).output, atol=tol, rtol=tol)


# ------------------------------------------------------------------------------------ masks by position


def _mask_by_loops(num_queries: int, num_keys: int, window: int | None, sink: int, offset: int = 0) -> torch.Tensor:
    """(Tq, Tk): query q is at position offset + q, key k at position k; one loop per entry."""
    mask = torch.zeros(num_queries, num_keys, dtype=torch.bool)
    for q in range(num_queries):
        i = offset + q
        for j in range(num_keys):
            mask[q, j] = j <= i and (window is None or i - j < window or j < sink)
    return mask


@pytest.mark.parametrize(("tokens", "window", "sink"), [(7, None, 0), (7, 1, 0), (7, 3, 0), (9, 4, 2), (5, 8, 0),
                                                         (6, 2, 6), (10, 3, 1)])
def test_window_and_sink_masks_equal_masks_built_by_hand(tokens: int, window: int | None, sink: int) -> None:
    by_hand = _mask_by_loops(tokens, tokens, window, sink)
    positions = torch.arange(tokens)
    assert torch.equal(causal_window_mask(positions, positions, window=window, sink=sink), by_hand)
    layer = _layer(2, window=window, sink=sink)
    trace = layer.trace(_x(2, tokens))
    assert torch.equal(trace.mask, by_hand.expand(2, 2, tokens, tokens))
    assert (trace.weights[~by_hand.expand_as(trace.weights)] == 0).all()
    assert_close(trace.weights.sum(-1), torch.ones(2, 2, tokens))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9), st.integers(0, 6), st.one_of(st.none(), st.integers(1, 8)), st.integers(0, 3))
def test_the_mask_by_position_equals_loops_for_cached_queries(num_queries, offset, window, sink) -> None:
    if window is None:
        sink = 0
    query_positions = torch.arange(offset, offset + num_queries)
    key_positions = torch.arange(offset + num_queries)
    expected = _mask_by_loops(num_queries, offset + num_queries, window, sink, offset)
    assert torch.equal(causal_window_mask(query_positions, key_positions, window=window, sink=sink), expected)


def test_a_sink_stays_causal() -> None:
    mask = causal_window_mask(torch.arange(4), torch.arange(4), window=1, sink=3)
    assert mask.tolist() == [[True, False, False, False], [True, True, False, False], [True, True, True, False],
                             [True, True, True, True]]


def test_a_window_as_long_as_the_sequence_is_plain_causal_attention() -> None:
    x = _x(2, 6)
    assert_close(_layer(4, 2, window=6)(x), _layer(4, 2)(x))
    assert not torch.allclose(_layer(4, 2, window=2)(x), _layer(4, 2)(x))


def test_a_window_combines_with_padding() -> None:
    layer, x, lens = _layer(2, window=3), _x(2, 6), torch.tensor([6, 4])
    trace = layer.trace(x, valid_lens=lens)
    expected = _mask_by_loops(6, 6, 3, 0)[None] & (torch.arange(6) < lens[:, None])[:, None, :]  # (B, T, T)
    assert torch.equal(trace.mask[:, 0], expected)
    assert_close(layer(x, valid_lens=lens), trace.output)


# ------------------------------------------------------------------------------------ RoPE


@BOTH_KERNELS
def test_rope_equals_rotary_embedding_applied_by_hand(fused: bool) -> None:
    layer = _layer(4, 2, rope_base=500.0)
    layer.fused = fused
    x = _x(2, 7)
    q = apply_rope(split_heads(layer.W_query(x), 4), base=500.0)  # (B, h, T, d_head)
    k = apply_rope(split_heads(layer.W_key(x), 2), base=500.0)  # (B, h_kv, T, d_head)
    v = split_heads(layer.W_value(x), 2).repeat_interleave(2, dim=1)
    context = F.scaled_dot_product_attention(q, k.repeat_interleave(2, dim=1), v, is_causal=True)
    assert_close(layer(x), layer.out_proj(context.transpose(1, 2).reshape(2, 7, 16)))


def test_rope_makes_scores_depend_on_relative_position_only() -> None:
    layer = _layer(2, rope_base=10000.0)
    token = _x(1, 1)
    x = token.expand(1, 8, 16)  # the same token everywhere: q.k depends on i - j only
    scores = layer.trace(x).scores[0, 0]  # (T, T)
    for lag in range(4):
        diagonal = scores.diagonal(-lag)
        assert_close(diagonal, diagonal[:1].expand_as(diagonal), atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------------------ the KV cache


CACHE_CASES = [
    pytest.param({}, id="mha"),
    pytest.param({"num_kv_heads": 2}, id="gqa"),
    pytest.param({"num_kv_heads": 1}, id="mqa"),
    pytest.param({"num_kv_heads": 2, "rope_base": 10000.0}, id="gqa-rope"),
    pytest.param({"window": 3}, id="window"),
    pytest.param({"num_kv_heads": 2, "rope_base": 10000.0, "window": 4}, id="gqa-rope-window"),
    pytest.param({"num_kv_heads": 1, "rope_base": 100.0, "window": 3, "sink": 2}, id="mqa-rope-window-sink"),
    pytest.param({"window": 1}, id="window-1"),
    pytest.param({"num_kv_heads": 2, "sink_logit": True, "window": 4}, id="sink-logit"),
    pytest.param({"qkv_bias": True, "rope_base": 10000.0}, id="bias-rope"),
]


@BOTH_KERNELS
@pytest.mark.parametrize("options", CACHE_CASES)
def test_decoding_token_by_token_equals_the_full_forward(options: dict, fused: bool) -> None:
    layer = _layer(4, **options)
    if options.get("sink_logit"):
        with torch.no_grad():
            layer.sink_logit.copy_(torch.tensor([0.5, -1.0, 2.0, 0.0]))
    layer.fused = fused
    x = _x(2, 11)
    with torch.no_grad():
        full = layer(x)  # (B, T, d)
        cache = KVCache()
        steps = [layer(x[:, t : t + 1], kv_cache=cache) for t in range(11)]
    assert_close(torch.cat(steps, dim=1), full)
    assert cache.offset == 11


@pytest.mark.parametrize("options", CACHE_CASES)
@pytest.mark.parametrize("chunks", [(4, 4, 3), (1, 9, 1), (11,)])
def test_prefill_then_chunks_equal_the_full_forward(options: dict, chunks: tuple[int, ...]) -> None:
    layer, x = _layer(4, **options), _x(2, 11)
    cache, outputs, start = KVCache(), [], 0
    with torch.no_grad():
        for size in chunks:
            outputs.append(layer(x[:, start : start + size], kv_cache=cache))
            start += size
        assert_close(torch.cat(outputs, dim=1), layer(x))


def test_a_traced_step_reads_the_cache_with_its_positions() -> None:
    layer, x = _layer(4, 2, rope_base=10000.0, window=4, sink=1), _x(2, 9)
    cache = KVCache()
    layer(x[:, :8], kv_cache=cache)
    step = layer.trace(x[:, 8:], kv_cache=cache)
    assert step.query_positions.tolist() == [8]
    assert step.key_positions.tolist() == [0, 5, 6, 7, 8]  # the sink, then the window of 4 (8 itself included)
    assert step.kv_keys.shape == (2, 2, 5, 4) and step.weights.shape == (2, 4, 1, 5)
    assert_close(step.output, layer(x)[:, 8:])


@pytest.mark.parametrize(("window", "sink"), [(None, 0), (1, 0), (3, 0), (4, 2), (12, 0)])
def test_a_windowed_cache_keeps_only_what_the_window_needs(window: int | None, sink: int) -> None:
    layer, x = _layer(4, 2, window=window, sink=sink), _x(1, 10)
    cache = KVCache()
    for t in range(10):
        layer(x[:, t : t + 1], kv_cache=cache)
        seen = t + 1
        kept = list(range(seen)) if window is None else [p for p in range(seen) if p > seen - window or p < sink]
        assert cache.positions.tolist() == kept, t
        assert cache.keys.shape == cache.values.shape == (1, 2, len(kept), 4)
    assert cache.nbytes == 2 * len(kept) * 2 * 4 * 4  # K and V, h_kv = 2, d_head = 4, float32


def test_the_cache_tracks_the_offset_that_rope_needs() -> None:
    layer, x = _layer(2, rope_base=10000.0), _x(1, 6)
    cache = KVCache()
    layer(x[:, :5], kv_cache=cache)
    assert cache.offset == 5 and repr(cache) == "KVCache(offset=5, keys=(1, 2, 5, 8), values=(1, 2, 5, 8))"
    last = layer(x[:, 5:], kv_cache=cache)
    assert_close(last, layer(x)[:, 5:])
    # The same token without the offset, i.e. at position 0, is another computation.
    lost = KVCache()
    layer(x[:, :5], kv_cache=lost)
    lost.offset = 0
    assert not torch.allclose(layer(x[:, 5:], kv_cache=lost), last, atol=1e-4)
    assert repr(KVCache()) == "KVCache(empty)" and KVCache().nbytes == 0


@pytest.mark.parametrize(("num_layers", "num_kv_heads"), [(1, 4), (3, 2), (2, 1)])
def test_the_bytes_per_token_formula_equals_the_measured_caches(num_layers: int, num_kv_heads: int) -> None:
    layers = [_layer(4, num_kv_heads, d=32, seed=s) for s in range(num_layers)]  # head_dim 8
    caches = [KVCache() for _ in layers]
    x = _x(1, 7, 32)
    with torch.no_grad():
        for t in range(7):
            h = x[:, t : t + 1]
            for layer, cache in zip(layers, caches):
                h = h + layer(h, kv_cache=cache)
    measured = sum(c.nbytes for c in caches) / 7
    assert measured == kv_cache_bytes_per_token(num_layers, num_kv_heads, 8, bytes_per_element=4)
    assert kv_cache_bytes_per_token(12, 12, 64) == 36 * 1024  # GPT-2 small in 16-bit: 36 KiB
    assert kv_cache_bytes_per_token(32, 32, 128) == 512 * 1024  # Llama-2-7B
    assert kv_cache_bytes_per_token(32, 8, 128) == 128 * 1024  # Llama-3-8B and Mistral-7B


# ------------------------------------------------------------------------------------ the learned sink logit


@BOTH_KERNELS
def test_the_sink_logit_is_one_more_softmax_column_with_no_value(fused: bool) -> None:
    layer = _layer(4, 2, sink_logit=True)
    layer.fused = fused
    sinks = torch.tensor([-1.0, 0.0, 1.5, 4.0])
    with torch.no_grad():
        layer.sink_logit.copy_(sinks)
    x = _x(2, 6)
    trace = layer.trace(x)
    # gpt-oss's way: append the logit as a column, softmax, drop the column
    column = sinks.view(1, 4, 1, 1).expand(2, 4, 6, 1)
    scores = trace.scores.masked_fill(~trace.mask, float("-inf"))
    expected = torch.softmax(torch.cat([scores, column], dim=-1), dim=-1)
    assert_close(trace.weights, expected[..., :-1])
    assert_close(trace.sink_weights, expected[..., -1])
    # the formula: the sink takes sigmoid(s - logsumexp(scores)), the keys share the rest as before
    taken = torch.sigmoid(sinks.view(1, 4, 1) - torch.logsumexp(scores, dim=-1))  # (B, h, T)
    assert_close(trace.sink_weights, taken)
    plain = torch.softmax(scores, dim=-1)
    assert_close(trace.weights, (1 - taken)[..., None] * plain)
    assert_close(layer(x), trace.output)


def test_the_sink_logit_learns() -> None:
    layer = _layer(2, sink_logit=True)
    layer(_x()).pow(2).sum().backward()
    assert layer.sink_logit.grad is not None and layer.sink_logit.grad.abs().sum() > 0
    assert "sink_logit" in layer.state_dict()


def test_a_large_sink_logit_switches_a_head_off() -> None:
    layer, x = _layer(2, sink_logit=True), _x()
    with torch.no_grad():
        layer.sink_logit.copy_(torch.tensor([40.0, 0.0]))
    trace = layer.trace(x)
    assert trace.head_context[:, 0].abs().max() < 1e-6 and trace.head_context[:, 1].abs().max() > 1e-3


# ------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(("options", "error", "match"), [
    ({"num_heads": 4, "num_kv_heads": 3}, ValueError,
     r"num_heads must be divisible by num_kv_heads .* got num_heads=4 and num_kv_heads=3 \(num_heads % num_kv_heads"),
    ({"num_heads": 4, "num_kv_heads": 8}, ValueError, "num_heads must be divisible by num_kv_heads"),
    ({"num_heads": 4, "num_kv_heads": 0}, ValueError, "num_kv_heads must be >= 1, got 0"),
    ({"num_heads": 4, "num_kv_heads": 2.0}, TypeError,
     "num_kv_heads must be an int, got float 2.0: write num_kv_heads=2"),
    ({"window": 0}, ValueError, "window must be >= 1, got 0"),
    ({"window": -3}, ValueError, "window must be >= 1, got -3"),
    ({"window": 4.0}, TypeError, "window must be an int"),
    ({"window": 4, "causal": False}, ValueError, "window=4 needs causal=True"),
    ({"sink": 2}, ValueError, "sink=2 keeps the first tokens visible outside a window, but window is None"),
    ({"window": 3, "sink": -1}, ValueError, "sink must be >= 0, got -1"),
    ({"rope_base": -1.0}, ValueError, "rope_base must be positive"),
    ({"rope_base": "10000"}, TypeError, "rope_base must be a number"),
    ({"num_heads": 2, "d": 6, "rope_base": 10000.0}, ValueError, "rope_base needs an even head_dim .* got head_dim=3"),
    ({"sink_logit": 1}, TypeError, "sink_logit must be True or False, got int 1"),
])
def test_bad_options_are_refused_by_name(options: dict, error: type, match: str) -> None:
    options = {"num_heads": 2, "d": 16, **options}
    d, num_heads = options.pop("d"), options.pop("num_heads")
    with pytest.raises(error, match=match):
        MultiHeadAttention(d, d, None, 0.0, num_heads, **options)


def test_a_cache_from_another_layer_is_refused() -> None:
    first, second, x = _layer(2), _layer(2, seed=5), _x()
    cache = KVCache()
    first(x[:, :3], kv_cache=cache)
    with pytest.raises(ValueError, match="kv_cache belongs to another layer: .* caches = \\[KVCache\\(\\) for _ in"):
        second(x[:, 3:4], kv_cache=cache)


def test_a_cache_of_another_batch_size_is_refused() -> None:
    layer, cache = _layer(2), KVCache()
    layer(_x(2, 3), kv_cache=cache)
    with pytest.raises(ValueError, match="kv_cache holds 2 sequences but queries has 3: start a new KVCache"):
        layer(_x(3, 1), kv_cache=cache)


def test_a_cache_for_a_non_causal_layer_is_refused() -> None:
    with pytest.raises(ValueError, match="kv_cache needs a causal layer \\(causal=True\\), but this layer has causal"):
        _layer(2, causal=False)(_x(), kv_cache=KVCache())


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda layer, x: layer(x, x, x, kv_cache=KVCache()), ValueError, "kv_cache works with self-attention only"),
    (lambda layer, x: layer(x, valid_lens=torch.tensor([3, 3]), kv_cache=KVCache()), ValueError,
     "valid_lens cannot be combined with kv_cache"),
    (lambda layer, x: layer(x, kv_cache={}), TypeError,
     "kv_cache must be a mha_lib.KVCache \\(cache = KVCache\\(\\)\\)"),
    (lambda layer, x: _layer(2, window=3)(x, x, x), ValueError, "window=3 works with self-attention only"),
])
def test_bad_cache_calls_are_refused_by_name(call, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call(_layer(2), _x())


def test_the_context_length_counts_the_cached_tokens() -> None:
    torch.manual_seed(0)
    layer, cache = MultiHeadAttention(16, 16, 8, 0.0, 2), KVCache()
    layer(_x(1, 6), kv_cache=cache)
    layer(_x(1, 2), kv_cache=cache)
    with pytest.raises(ValueError, match="queries has 1 tokens after the 8 in kv_cache: 9 in all, more than context"):
        layer(_x(1, 1), kv_cache=cache)


@pytest.mark.parametrize(("args", "error", "match"), [
    ((torch.arange(3.0), torch.arange(3)), TypeError, "query_positions must be a 1-D tensor of integer positions"),
    ((torch.arange(3), [0, 1]), TypeError,
     "key_positions must be a 1-D tensor of integer positions, e.g. torch.arange\\(T\\), got list"),
    ((torch.arange(4).view(2, 2), torch.arange(3)), ValueError, "query_positions must be a 1-D tensor"),
])
def test_the_mask_function_refuses_bad_positions(args, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        causal_window_mask(*args)


def test_the_mask_function_refuses_bad_windows_and_sinks() -> None:
    positions = torch.arange(4)
    with pytest.raises(ValueError, match="window must be >= 1, got 0"):
        causal_window_mask(positions, positions, window=0)
    with pytest.raises(ValueError, match="sink=1 keeps the first tokens visible outside a window"):
        causal_window_mask(positions, positions, sink=1)
    with pytest.raises(TypeError, match="num_kv_heads must be an int"):
        kv_cache_bytes_per_token(2, 1.5, 64)


def test_mqa_uses_one_kv_head_and_saves_parameters() -> None:
    mha, mqa = _layer(8, d=64), _layer(8, 1, d=64)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(mha) - count(mqa) == 2 * 64 * (64 - 8)  # W_key and W_value shrink from 64 to 8 rows
    assert math.isclose(kv_cache_bytes_per_token(1, 1, 8) / kv_cache_bytes_per_token(1, 8, 8), 1 / 8)
