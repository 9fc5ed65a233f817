"""ALiBi (Press, Smith and Lewis, 2022) as ``MultiHeadAttention(..., alibi=True)``, and the kernel contract it rides on.

- the slopes are the paper's: ``2^(-8i/n)`` for ``n`` a power of 2, its interleaving rule otherwise;
- the layer equals an explicit reference (scores + ``-m (i - j)``, causal mask, softmax) on every kernel, with a
  window, padding and grouped K/V heads, and its gradients agree between kernels;
- decoding with a KV cache (and a window with a sink) equals the full forward;
- kernels take an additive float ``bias``; the kernel is chosen by a public name from a registry a user extends.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from mha_lib import ATTENTION_FUNCTIONS, KVCache, MultiHeadAttention, register_attention_function
from mha_lib.attention import tiled_attention
from mha_lib.kernels import eager_attention
from mha_lib.positional import alibi_bias, alibi_slopes

KERNELS = pytest.mark.parametrize("kernel", ["sdpa", "eager"])


def _layer(num_heads: int = 4, d: int = 16, seed: int = 0, **options) -> MultiHeadAttention:
    torch.manual_seed(seed)
    return MultiHeadAttention(d, d, None, 0.0, num_heads, alibi=True, **options).eval()


def _x(batch: int = 2, tokens: int = 9, d: int = 16) -> torch.Tensor:
    return torch.randn(batch, tokens, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64)


# ------------------------------------------------------------------------------------ the slopes


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 32])
def test_slopes_for_a_power_of_two_are_the_geometric_sequence_from_2_to_the_minus_8_over_n(n: int) -> None:
    expected = torch.tensor([2.0 ** (-8.0 * i / n) for i in range(1, n + 1)], dtype=torch.float64)
    assert_close(alibi_slopes(n), expected, rtol=1e-15, atol=0)
    assert alibi_slopes(n)[0] == 2.0 ** (-8.0 / n) and alibi_slopes(n)[-1] == 2.0 ** -8


def test_eight_heads_get_one_half_to_one_256th() -> None:
    assert alibi_slopes(8).tolist() == [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]


@pytest.mark.parametrize(("n", "expected"), [
    # the slopes of the largest power of 2 below n, then every other slope of twice that many heads
    (3, [2 ** -4, 2 ** -8, 2 ** -2]),
    (6, [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]),
    (12, [2 ** -i for i in range(1, 9)] + [2 ** -0.5, 2 ** -1.5, 2 ** -2.5, 2 ** -3.5]),
])
def test_slopes_for_other_head_counts_follow_the_papers_rule(n: int, expected: list[float]) -> None:
    assert_close(alibi_slopes(n), torch.tensor(expected, dtype=torch.float64), rtol=1e-15, atol=0)


def test_the_bias_is_minus_the_slope_times_the_distance() -> None:
    slopes = alibi_slopes(2)
    bias = alibi_bias(torch.arange(4), torch.arange(4), slopes)
    for h in range(2):
        for i in range(4):
            for j in range(4):
                assert bias[h, i, j] == -slopes[h] * (i - j)
    assert torch.equal(alibi_bias(torch.arange(4), torch.arange(4), slopes, causal=False), -(bias.abs()))
    with pytest.raises(TypeError, match="query_positions must be a 1-D tensor of integer positions"):
        alibi_bias(torch.arange(4.0), torch.arange(4), slopes)
    with pytest.raises(TypeError, match="num_heads must be an int, got float 8.0: write num_heads=8"):
        alibi_slopes(8.0)


# ------------------------------------------------------------------------------------ the layer against a reference


def _reference(layer: MultiHeadAttention, x: torch.Tensor, *, window: int | None = None, sink: int = 0,
               valid_lens: torch.Tensor | None = None) -> torch.Tensor:
    """Everything written out: heads, scores + ALiBi, the mask by loops, softmax, values, out_proj."""
    batch, tokens, _ = x.shape
    h, h_kv, d = layer.num_heads, layer.num_kv_heads, layer.head_dim
    q = layer.W_query(x).view(batch, tokens, h, d).transpose(1, 2)
    k = layer.W_key(x).view(batch, tokens, h_kv, d).transpose(1, 2).repeat_interleave(h // h_kv, dim=1)
    v = layer.W_value(x).view(batch, tokens, h_kv, d).transpose(1, 2).repeat_interleave(h // h_kv, dim=1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, h, T, T)
    slopes = alibi_slopes(h)
    allowed = torch.zeros(batch, 1, tokens, tokens, dtype=torch.bool)
    for i in range(tokens):
        for j in range(tokens):
            distance = i - j if layer.causal else abs(i - j)
            scores[:, :, i, j] = scores[:, :, i, j] - slopes.to(scores.dtype) * distance
            visible = (not layer.causal or j <= i) and (window is None or i - j < window or j < sink)
            for b in range(batch):
                allowed[b, 0, i, j] = visible and (valid_lens is None or j < valid_lens[b])
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).nan_to_num(0.0)
    context = (weights @ v).transpose(1, 2).reshape(batch, tokens, h * d)
    return layer.out_proj(context)


@KERNELS
@pytest.mark.parametrize(("num_heads", "options"), [
    (4, {}), (6, {}), (4, {"num_kv_heads": 2}), (4, {"window": 3}), (4, {"window": 4, "sink": 2}),
    (4, {"causal": False}), (3, {"qkv_bias": True}),
], ids=["4 heads", "6 heads", "GQA", "window", "window + sink", "non-causal", "3 heads"])
def test_the_layer_equals_an_explicit_reference(kernel: str, num_heads: int, options: dict) -> None:
    layer = _layer(num_heads, d=24, **options).double()
    layer.attn_implementation = kernel
    x = _x(2, 9, 24)
    with torch.no_grad():
        expected = _reference(layer, x, window=options.get("window"), sink=options.get("sink", 0))
        assert_close(layer(x), expected)
        assert_close(layer.trace(x).output, expected)


@KERNELS
def test_padding_and_a_sequence_with_no_key(kernel: str) -> None:
    layer = _layer(causal=False, attn_implementation=kernel).double()
    x, lens = _x(3, 6), torch.tensor([6, 2, 0])
    with torch.no_grad():
        out = layer(x, valid_lens=lens)
        assert_close(out, _reference(layer, x, valid_lens=lens))
    assert torch.isfinite(out).all() and torch.equal(out[2], layer.out_proj.bias.detach().expand(6, 16))


def test_the_trace_shows_the_bias_it_added() -> None:
    layer, x = _layer().double(), _x()
    trace = layer.trace(x)
    bias = alibi_bias(torch.arange(9), torch.arange(9), alibi_slopes(4))
    assert_close(trace.bias, bias)
    plain = trace.queries @ trace.keys.transpose(-2, -1) / math.sqrt(4)
    assert_close(trace.scores - trace.bias, plain)
    assert MultiHeadAttention(16, 16, None, 0.0, 4).trace(x.float()).bias is None


def test_gradients_agree_between_kernels() -> None:
    grads = []
    for kernel in ("sdpa", "eager"):
        layer = _layer(attn_implementation=kernel).double()
        x = _x().requires_grad_(True)
        layer(x).pow(2).sum().backward()
        grads.append((x.grad, layer.W_query.weight.grad))
    assert_close(grads[0][0], grads[1][0])
    assert_close(grads[0][1], grads[1][1])


def test_the_slopes_follow_the_layer_to_another_dtype() -> None:
    layer = _layer()
    assert layer.alibi_slopes.dtype == torch.float32 and "alibi_slopes" not in layer.state_dict()
    assert layer.to(torch.float64).alibi_slopes.dtype == torch.float64
    with torch.no_grad():
        assert_close(layer(_x()), _reference(layer, _x()))


# ------------------------------------------------------------------------------------ decoding


@KERNELS
@pytest.mark.parametrize("options", [{}, {"window": 3}, {"window": 4, "sink": 1}, {"num_kv_heads": 2}],
                         ids=["plain", "window", "window + sink", "GQA"])
def test_decoding_with_a_cache_equals_the_full_forward(kernel: str, options: dict) -> None:
    layer = _layer(attn_implementation=kernel, **options).double()
    x = _x(2, 11)
    cache = KVCache()
    with torch.no_grad():
        full = layer(x)
        steps = [layer(x[:, :4], kv_cache=cache)]  # a prompt of 4, then one token at a time
        steps += [layer(x[:, t:t + 1], kv_cache=cache) for t in range(4, 9)]
        steps.append(layer(x[:, 9:], kv_cache=cache))  # a chunk of 2
    assert_close(torch.cat(steps, dim=1), full)
    if "window" in options:
        assert cache.keys.shape[2] == options["window"] - 1 + options.get("sink", 0)


# ------------------------------------------------------------------------------------ options and errors


def test_alibi_shows_in_the_repr_and_is_off_by_default() -> None:
    assert _layer().extra_repr() == "num_heads=4, head_dim=4, causal=True, alibi=True"
    plain = MultiHeadAttention(16, 16, None, 0.0, 4)
    assert not plain.alibi and plain.alibi_slopes is None


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: _layer(rope_base=10000.0), ValueError, "alibi=True and rope_base=10000 are two ways to give positions"),
    (lambda: MultiHeadAttention(8, 8, None, 0.0, 2, alibi="yes"), TypeError,
     "alibi must be True or False, got str 'yes'"),
    (lambda: _layer(kv_dim=8)(torch.randn(1, 3, 16), torch.randn(1, 4, 8), torch.randn(1, 4, 8)), ValueError,
     r"alibi=True works with self-attention only, mha\(x\)"),
])
def test_bad_alibi_options_are_named(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()


# ------------------------------------------------------------------------------------ the kernel registry


@pytest.fixture
def registered():
    names: list[str] = []

    def register(name, fn, **kwargs):
        register_attention_function(name, fn, **kwargs)
        names.append(name)

    yield register
    for name in names:
        if name in ATTENTION_FUNCTIONS:
            ATTENTION_FUNCTIONS.unregister(name)


def test_a_learners_kernel_is_registered_and_chosen_by_name(registered) -> None:
    def tiled(q, k, v, mask, *, is_causal=False, bias=None, **kwargs):  # notebook 10's online softmax
        assert bias is None, "this kernel takes no bias"
        return tiled_attention(q, k, v, block_size=3, causal=is_causal, attn_mask=mask), None

    registered("tiled", tiled)
    torch.manual_seed(0)
    layer = MultiHeadAttention(16, 16, None, 0.0, 4, attn_implementation="tiled")
    assert layer.extra_repr().endswith("attn_implementation='tiled'") and not layer.fused
    x = torch.randn(2, 7, 16)
    with torch.no_grad():
        assert_close(layer(x), layer.trace(x).output)
        assert_close(layer(x, valid_lens=torch.tensor([7, 2])), layer.trace(x, valid_lens=torch.tensor([7, 2])).output)


def test_a_kernel_receives_the_bias(registered) -> None:
    seen = []

    def spy(q, k, v, mask, **kwargs):
        seen.append(kwargs["bias"])
        return eager_attention(q, k, v, mask, **kwargs)

    registered("spy", spy)
    layer = _layer(attn_implementation="spy")
    with torch.no_grad():
        assert_close(layer(_x().float()), layer.trace(_x().float()).output)
    assert seen[0].shape == (4, 9, 9)


def test_fused_is_a_view_of_the_kernel_name() -> None:
    layer = MultiHeadAttention(8, 8, None, 0.0, 2)
    assert layer.fused and layer.attn_implementation == "sdpa"
    layer.fused = False
    assert layer.attn_implementation == "eager" and layer.extra_repr().endswith("attn_implementation='eager'")
    layer.fused = True
    assert layer.attn_implementation == "sdpa"
    with pytest.raises(TypeError, match="fused must be True or False, got str 'no'"):
        layer.fused = "no"
    sink = MultiHeadAttention(8, 8, None, 0.0, 2, sink_logit=True)
    assert sink.attn_implementation == "eager_sink" and not sink.fused


def test_registry_errors_name_the_fix(registered) -> None:
    with pytest.raises(ValueError, match=r"attn_implementation must be a registered attention function, one of"
                                         r" 'eager', 'eager_sink', 'sdpa'.*, got 'flash': add your own with"
                                         r" mha_lib.register_attention_function\(name, fn\)"):
        MultiHeadAttention(8, 8, None, 0.0, 2, attn_implementation="flash")
    with pytest.raises(TypeError, match="attn_implementation must be a str, got bool True"):
        MultiHeadAttention(8, 8, None, 0.0, 2, attn_implementation=True)
    with pytest.raises(ValueError, match="sink_logit=True needs a kernel with a sink column"):
        MultiHeadAttention(8, 8, None, 0.0, 2, sink_logit=True, attn_implementation="sdpa")
    with pytest.raises(TypeError, match="fn must be a function"):
        register_attention_function("mine", 3)
    with pytest.raises(TypeError, match=r"fn must accept \(q, k, v, mask, \*, bias, is_causal, dropout_p, \*\*kw"):
        register_attention_function("mine", lambda q, k, v, mask: (q, None))
    with pytest.raises(ValueError, match="name 'sdpa' is a built-in attention function"):
        register_attention_function("sdpa", eager_attention)
    registered("mine", eager_attention)
    with pytest.raises(ValueError, match="name 'mine' is registered already: pass replace=True"):
        register_attention_function("mine", eager_attention)
    register_attention_function("mine", eager_attention, replace=True)
    with pytest.raises(ValueError, match="it cannot be removed"):
        ATTENTION_FUNCTIONS.unregister("eager")


def test_a_kernel_returning_the_wrong_thing_is_named(registered) -> None:
    registered("bad_shape", lambda q, k, v, mask, **kwargs: (q[..., :1], None))
    registered("no_tuple", lambda q, k, v, mask, **kwargs: q)
    x = torch.randn(1, 3, 8)
    with pytest.raises(ValueError, match=r"the attention function 'bad_shape' returned a context of shape"
                                         r" \(1, 2, 3, 1\), expected \(1, 2, 3, 4\)"):
        MultiHeadAttention(8, 8, None, 0.0, 2, attn_implementation="bad_shape")(x)
    with pytest.raises(TypeError, match=r"the attention function 'no_tuple' must return \(context, weights\)"):
        MultiHeadAttention(8, 8, None, 0.0, 2, attn_implementation="no_tuple")(x)
