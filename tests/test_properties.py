"""Properties that must hold for every input: checked on many random shapes with hypothesis."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_lib import MultiHeadAttention, merge_heads, split_heads, transpose_output, transpose_qkv
from mha_lib.attention import masked_softmax, scaled_dot_product_attention

SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def layers(draw, causal=None):
    """A random MultiHeadAttention (float64, eval mode) and a matching input."""
    heads = draw(st.integers(1, 4))
    head_dim = draw(st.integers(1, 4))
    d_in = draw(st.integers(1, 6))
    batch, tokens = draw(st.integers(1, 3)), draw(st.integers(1, 7))
    seed = draw(st.integers(0, 2**16))
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_in, heads * head_dim, None, 0.0, heads, qkv_bias=draw(st.booleans()),
                             causal=draw(st.booleans() if causal is None else causal)).double().eval()
    x = torch.randn(batch, tokens, d_in, dtype=torch.float64)
    return mha, x


@st.composite
def lengths(draw, batch, tq, tk, minimum=0):
    if draw(st.booleans()):
        return torch.tensor(draw(st.lists(st.integers(minimum, tk), min_size=batch, max_size=batch)))
    rows = draw(st.lists(st.lists(st.integers(minimum, tk), min_size=tq, max_size=tq), min_size=batch, max_size=batch))
    return torch.tensor(rows)


@SETTINGS
@given(data=st.data(), layer=layers())
def test_rows_sum_to_one_and_masked_keys_get_zero(data, layer) -> None:
    mha, x = layer
    batch, tokens = x.shape[:2]
    valid_lens = data.draw(lengths(batch, tokens, tokens))
    trace = mha.trace(x, valid_lens=valid_lens)
    live = trace.mask.any(-1)
    sums = trace.weights.sum(-1)
    torch.testing.assert_close(sums[live], torch.ones_like(sums[live]))
    assert torch.all(trace.weights[~trace.mask] == 0)
    assert torch.all(sums[~live] == 0), "a query that may see no key gets weights of 0"
    assert torch.isfinite(mha(x, valid_lens=valid_lens)).all()


@SETTINGS
@given(layer=layers(causal=st.just(True)), data=st.data())
def test_causal_outputs_ignore_the_future(layer, data) -> None:
    mha, x = layer
    tokens = x.shape[1]
    t = data.draw(st.integers(0, tokens - 1))
    changed = x.clone()
    changed[:, t + 1 :] = torch.randn_like(changed[:, t + 1 :]) * 10
    torch.testing.assert_close(mha(changed)[:, : t + 1], mha(x)[:, : t + 1])
    torch.testing.assert_close(mha.trace(changed).output[:, : t + 1], mha.trace(x).output[:, : t + 1])


@SETTINGS
@given(layer=layers(causal=st.just(False)), data=st.data())
def test_keys_beyond_valid_lens_are_ignored(layer, data) -> None:
    mha, x = layer
    batch, tq = x.shape[:2]
    tk = data.draw(st.integers(1, 7))
    kv = torch.randn(batch, tk, mha.kv_dim, dtype=torch.float64)
    valid_lens = data.draw(lengths(batch, tq, tk, minimum=1))
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(batch, tq)
    changed = kv.clone()
    for b in range(batch):
        cut = int(lens[b].max())  # keys no query of sequence b may see
        changed[b, cut:] = torch.randn_like(changed[b, cut:]) * 10
    torch.testing.assert_close(mha(x, changed, changed, valid_lens), mha(x, kv, kv, valid_lens))


@SETTINGS
@given(layer=layers(causal=st.just(False)), seed=st.integers(0, 1000))
def test_self_attention_without_positions_is_permutation_equivariant(layer, seed) -> None:
    mha, x = layer
    perm = torch.randperm(x.shape[1], generator=torch.Generator().manual_seed(seed))
    torch.testing.assert_close(mha(x[:, perm]), mha(x)[:, perm])


@SETTINGS
@given(
    batch=st.integers(1, 3), tokens=st.integers(1, 6), heads=st.integers(1, 5), head_dim=st.integers(1, 4)
)
def test_head_reshapes_are_inverses(batch, tokens, heads, head_dim) -> None:
    x = torch.randn(batch, tokens, heads * head_dim)
    split = split_heads(x, heads)
    assert split.shape == (batch, heads, tokens, head_dim)
    torch.testing.assert_close(merge_heads(split), x)
    folded = transpose_qkv(x, heads)
    assert folded.shape == (batch * heads, tokens, head_dim)
    torch.testing.assert_close(transpose_output(folded, heads), x)
    torch.testing.assert_close(folded, split.reshape(batch * heads, tokens, head_dim))
    # head i of sequence b holds features i*head_dim:(i+1)*head_dim
    torch.testing.assert_close(split[:, -1], x[..., (heads - 1) * head_dim :])


@SETTINGS
@given(data=st.data(), batch=st.integers(1, 3), tq=st.integers(1, 5), tk=st.integers(1, 5))
def test_masked_softmax_rows(data, batch, tq, tk) -> None:
    scores = torch.randn(batch, tq, tk, dtype=torch.float64) * 5
    valid_lens = data.draw(lengths(batch, tq, tk))
    weights = masked_softmax(scores, valid_lens)
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(batch, tq)
    visible = torch.arange(tk)[None, None, :] < lens[:, :, None]
    assert torch.all(weights[~visible] == 0)
    torch.testing.assert_close(weights.sum(-1), (lens > 0).double())


def test_fully_masked_rows_give_zero_output_and_finite_gradients() -> None:
    torch.manual_seed(0)
    q = torch.randn(2, 3, 4, requires_grad=True)
    k = torch.randn(2, 5, 4, requires_grad=True)
    v = torch.randn(2, 5, 4, requires_grad=True)
    out, weights = scaled_dot_product_attention(q, k, v, valid_lens=torch.tensor([0, 2]))
    assert torch.all(out[0] == 0) and torch.all(weights[0] == 0)
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    mha = MultiHeadAttention(4, 4, None, 0.0, 2, causal=False)
    x = torch.randn(2, 3, 4, requires_grad=True)
    y = mha(x, valid_lens=torch.tensor([0, 3]))
    torch.testing.assert_close(y[0], mha.out_proj.bias.expand(3, 4))  # zero context -> only the output bias
    y.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_dropout_only_in_training() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 8, None, 0.5, 2, causal=False)
    x = torch.randn(2, 6, 8)
    mha.eval()
    torch.testing.assert_close(mha(x), mha(x))
    torch.testing.assert_close(mha.trace(x).output, mha(x))
    mha.train()
    assert not torch.allclose(mha(x), mha(x)), "training mode drops attention weights at random"
    mha.train(False)
    torch.testing.assert_close(mha(x), mha.trace(x).output)
