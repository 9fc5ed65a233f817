"""mha_lib equals PyTorch's and d2l's attention when the weights are the same."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from mha_lib import MultiHeadAttention, scaled_dot_product_attention
from mha_lib.attention import causal_mask, masked_softmax
from mha_lib.reference import load_d2l, to_d2l_mha, to_torch_mha, torch_mha_masks

TOL = {torch.float32: {"atol": 1e-5, "rtol": 1e-5}, torch.float64: {"atol": 1e-10, "rtol": 1e-10}}
DTYPES = [torch.float32, torch.float64]


def _close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    torch.testing.assert_close(actual, expected, **TOL[expected.dtype])


def _valid_lens(kind: str | None, batch: int, tq: int, tk: int, gen: torch.Generator) -> torch.Tensor | None:
    """Lengths >= 1, so that no query row is fully masked (PyTorch returns NaN there; we return 0)."""
    if kind is None:
        return None
    shape = (batch,) if kind == "batch" else (batch, tq)
    return torch.randint(1, tk + 1, shape, generator=gen)


def _inputs(batch, tq, tk, d_in, kv_dim, cross, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, tq, d_in, generator=gen, dtype=dtype)
    if not cross:
        return gen, x, None
    return gen, x, torch.randn(batch, tk, kv_dim, generator=gen, dtype=dtype)


# (cross, valid_lens kind, causal, qkv_bias, kv_dim differs, heads)
TORCH_CASES = [
    (cross, lens, causal, bias, kv, heads)
    for cross, lens, causal, bias, kv, heads in itertools.product(
        [False, True], [None, "batch", "query"], [False, True], [False, True], [False, True], [1, 2, 4, 8]
    )
    if (cross or not kv) and (heads in (1, 8) or (lens == "query" and bias))
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("cross,lens,causal,bias,kv_differs,heads", TORCH_CASES)
def test_equals_torch_multihead_attention(dtype, cross, lens, causal, bias, kv_differs, heads) -> None:
    batch, tq, tk, d = 3, 5, 7 if cross else 5, 16
    kv_dim = 12 if kv_differs else d
    mha = MultiHeadAttention(d, d, None, 0.0, heads, qkv_bias=bias, causal=causal, kv_dim=kv_dim).to(dtype).eval()
    gen, x, y = _inputs(batch, tq, tk, d, kv_dim, cross, dtype)
    valid_lens = _valid_lens(lens, batch, tq, tk, gen)
    ref = to_torch_mha(mha)
    key_padding_mask, attn_mask = torch_mha_masks(batch, tq, tk, heads, valid_lens=valid_lens, causal=causal)
    kv = x if y is None else y
    with torch.no_grad():
        expected, expected_weights = ref(
            x, kv, kv, key_padding_mask=key_padding_mask, attn_mask=attn_mask, average_attn_weights=False
        )
        trace = mha.trace(x, y, y, valid_lens) if cross else mha.trace(x, valid_lens=valid_lens)
        out = mha(x, y, y, valid_lens) if cross else mha(x, valid_lens=valid_lens)
    _close(out, expected)
    _close(trace.output, expected)
    _close(trace.weights, expected_weights)


def test_average_attn_weights_is_the_mean_over_heads() -> None:
    mha = MultiHeadAttention(8, 8, None, 0.0, 4, causal=False).eval()
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        _, averaged = to_torch_mha(mha)(x, x, x)  # PyTorch's default: average_attn_weights=True
        trace = mha.trace(x)
    assert averaged.shape == (2, 5, 5)
    _close(averaged, trace.weights.mean(dim=1))


# (cross, valid_lens kind, qkv_bias, d_in != d_out, kv_dim differs, heads)
D2L_CASES = [
    (cross, lens, bias, wide, kv, heads)
    for cross, lens, bias, wide, kv, heads in itertools.product(
        [False, True], [None, "batch", "query"], [False, True], [False, True], [False, True], [1, 3, 5]
    )
    if (cross or not kv) and (heads != 3 or (lens == "query" and wide))
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("cross,lens,bias,wide,kv_differs,heads", D2L_CASES)
def test_equals_d2l_multihead_attention(dtype, cross, lens, bias, wide, kv_differs, heads) -> None:
    batch, tq, tk = 2, 4, 6 if cross else 4
    d_in, d_out = (7, 15) if wide else (15, 15)
    kv_dim = 9 if kv_differs else d_in
    mha = MultiHeadAttention(d_in, d_out, None, 0.0, heads, qkv_bias=bias, causal=False, kv_dim=kv_dim)
    mha = mha.to(dtype).eval()
    if not bias:
        with torch.no_grad():
            mha.out_proj.bias.zero_()
    gen, x, y = _inputs(batch, tq, tk, d_in, kv_dim, cross, dtype)
    valid_lens = _valid_lens(lens, batch, tq, tk, gen)
    ref = to_d2l_mha(mha).eval()
    kv = x if y is None else y
    with torch.no_grad():
        expected = ref(x, kv, kv, valid_lens)
        out = mha(x, kv, kv, valid_lens)
        trace = mha.trace(x, kv, kv, valid_lens)
    _close(out, expected)
    _close(trace.output, expected)
    # d2l keeps the weights of its last call, heads folded into the batch: (B*h, Tq, Tk)
    _close(trace.weights.reshape(-1, tq, tk), ref.attention.attention_weights)


def test_d2l_chapter_example() -> None:
    """The d2l chapter's check: 2 sequences, 4 queries, 6 key-value pairs, valid_lens [3, 2] -> (2, 4, 100)."""
    mha = MultiHeadAttention(100, 100, None, 0.5, 5, causal=False).eval()
    with torch.no_grad():
        mha.out_proj.bias.zero_()
    x, y = torch.ones(2, 4, 100), torch.ones(2, 6, 100)
    valid_lens = torch.tensor([3, 2])
    out = mha(x, y, y, valid_lens)
    assert out.shape == (2, 4, 100)
    _close(out, to_d2l_mha(mha).eval()(x, y, y, valid_lens))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lens", [None, "batch", "query"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d_in,d_out,heads", [(6, 6, 1), (6, 12, 3), (10, 8, 4), (8, 8, 8)])
def test_equals_functional_sdpa(dtype, lens, causal, d_in, d_out, heads) -> None:
    """The layer equals projections + F.scaled_dot_product_attention + out_proj, written out independently."""
    batch, t = 3, 6
    mha = MultiHeadAttention(d_in, d_out, t, 0.0, heads, qkv_bias=True, causal=causal).to(dtype).eval()
    gen, x, _ = _inputs(batch, t, t, d_in, d_in, False, dtype, seed=3)
    valid_lens = _valid_lens(lens, batch, t, t, gen)

    def heads_of(z):  # (B, T, d_out) -> (B, h, T, d_out/h)
        return z.view(batch, t, heads, d_out // heads).transpose(1, 2)

    q, k, v = (heads_of(layer(x)) for layer in (mha.W_query, mha.W_key, mha.W_value))
    allowed = torch.ones(batch, 1, t, t, dtype=torch.bool)
    if valid_lens is not None:
        lens_q = valid_lens[:, None].expand(batch, t) if valid_lens.dim() == 1 else valid_lens
        allowed &= (torch.arange(t)[None, None, :] < lens_q[:, :, None])[:, None]
    if causal:
        allowed &= torch.ones(t, t, dtype=torch.bool).tril()
    context = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    expected = mha.out_proj(context.transpose(1, 2).reshape(batch, t, d_out))
    with torch.no_grad():
        _close(mha(x, valid_lens=valid_lens), expected)
        _close(mha.trace(x, valid_lens=valid_lens).output, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rank", [3, 4])
def test_functional_attention_equals_torch_sdpa(dtype, rank) -> None:
    gen = torch.Generator().manual_seed(5)
    shape = (2, 3)[: rank - 2]
    q = torch.randn(*shape, 4, 8, generator=gen, dtype=dtype)
    k = torch.randn(*shape, 6, 8, generator=gen, dtype=dtype)
    v = torch.randn(*shape, 6, 5, generator=gen, dtype=dtype)
    out, weights = scaled_dot_product_attention(q, k, v, causal=True)
    _close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    _close(out, weights @ v)
    mask = torch.rand(*shape, 4, 6, generator=gen) > 0.3
    mask[..., 0] = True
    out, _ = scaled_dot_product_attention(q, k, v, attn_mask=mask)
    _close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


@pytest.mark.parametrize("lens_shape", ["batch", "query"])
def test_masked_softmax_equals_d2l(lens_shape) -> None:
    d2l = load_d2l()
    gen = torch.Generator().manual_seed(2)
    scores = torch.randn(3, 4, 6, generator=gen, dtype=torch.float64)
    valid_lens = _valid_lens(lens_shape, 3, 4, 6, gen)
    _close(masked_softmax(scores, valid_lens), d2l.masked_softmax(scores.clone(), valid_lens))


def test_causal_mask_matches_sdpa_is_causal() -> None:
    q, k, v = torch.randn(1, 3, 4), torch.randn(1, 5, 4), torch.randn(1, 5, 4)
    _close(
        F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(3, 5)),
        F.scaled_dot_product_attention(q, k, v, is_causal=True),
    )
