"""The fused path (``forward``), the explicit path (``trace``, ``fused = False``) and the tiled online softmax agree."""

from __future__ import annotations

import copy

import pytest
import torch

from mha_lib import MultiHeadAttention, scaled_dot_product_attention
from mha_lib.attention import tiled_attention

TOL = {torch.float32: {"atol": 2e-5, "rtol": 2e-5}, torch.float64: {"atol": 1e-10, "rtol": 1e-10}}
DTYPES = [torch.float32, torch.float64]

# (name, causal, cross-attention, valid_lens kind)
MASKS = [
    ("none", False, False, None),
    ("causal", True, False, None),
    ("valid_lens (B,)", False, False, "batch"),
    ("valid_lens (B, Tq)", False, False, "query"),
    ("causal + valid_lens (B,)", True, False, "batch"),
    ("causal + valid_lens (B, Tq)", True, False, "query"),
    ("cross", False, True, None),
    ("cross + valid_lens (B,)", False, True, "batch"),
    ("cross + causal + valid_lens (B, Tq)", True, True, "query"),
]
# (batch, Tq, Tk, d_in, d_out, heads)
SHAPES = [(1, 1, 1, 4, 4, 1), (2, 5, 7, 16, 16, 4), (3, 9, 6, 12, 24, 3)]


def _case(mask_case, shape, dtype, *, min_len=1, seed=0):
    _, causal, cross, lens = mask_case
    batch, tq, tk, d_in, d_out, heads = shape
    tk = tk if cross else tq
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    kv_dim = d_in + 2 if cross else None
    mha = MultiHeadAttention(d_in, d_out, None, 0.0, heads, qkv_bias=True, causal=causal, kv_dim=kv_dim)
    mha = mha.to(dtype)
    x = torch.randn(batch, tq, d_in, generator=gen, dtype=dtype)
    y = torch.randn(batch, tk, kv_dim, generator=gen, dtype=dtype) if cross else None
    valid_lens = None
    if lens is not None:
        size = (batch,) if lens == "batch" else (batch, tq)
        valid_lens = torch.randint(min_len, tk + 1, size, generator=gen)
    return mha, x, y, valid_lens


def _paths(mha, x, y, valid_lens):
    """The layer's output by the three routes: fused forward, explicit forward, trace."""
    explicit = copy.deepcopy(mha)
    explicit.fused = False
    return {
        "fused": mha(x, y, y, valid_lens),
        "explicit": explicit(x, y, y, valid_lens),
        "trace": mha.trace(x, y, y, valid_lens).output,
    }


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("mask_case", MASKS, ids=[m[0] for m in MASKS])
def test_fused_explicit_and_trace_give_the_same_output(mask_case, shape, dtype) -> None:
    mha, x, y, valid_lens = _case(mask_case, shape, dtype)
    with torch.no_grad():
        outs = _paths(mha, x, y, valid_lens)
    assert outs["fused"].shape == (shape[0], shape[1], shape[4])
    torch.testing.assert_close(outs["explicit"], outs["fused"], **TOL[dtype])
    torch.testing.assert_close(outs["trace"], outs["fused"], **TOL[dtype])


def _grads(mha, x, y, valid_lens, route):
    mha = copy.deepcopy(mha)
    mha.fused = route == "fused"
    x = x.clone().requires_grad_(True)
    y = None if y is None else y.clone().requires_grad_(True)
    out = mha.trace(x, y, y, valid_lens).output if route == "trace" else mha(x, y, y, valid_lens)
    # A fixed random upstream gradient, so that every output element matters.
    upstream = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=out.dtype)
    (out * upstream).sum().backward()
    inputs = {"x": x.grad} | ({} if y is None else {"y": y.grad})
    return inputs | {name: p.grad for name, p in mha.named_parameters()}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mask_case", MASKS, ids=[m[0] for m in MASKS])
def test_gradients_match_for_inputs_and_weights(mask_case, dtype) -> None:
    mha, x, y, valid_lens = _case(mask_case, SHAPES[1], dtype)
    expected = _grads(mha, x, y, valid_lens, "fused")
    for route in ("explicit", "trace"):
        got = _grads(mha, x, y, valid_lens, route)
        assert got.keys() == expected.keys()
        for name in expected:
            torch.testing.assert_close(got[name], expected[name], **TOL[dtype], msg=f"{route}: d/d{name}")


@pytest.mark.parametrize("route", ["fused", "explicit", "trace"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_fully_masked_rows_give_zero_and_finite_gradients(route, dtype) -> None:
    mha, x, _, _ = _case(MASKS[2], SHAPES[1], dtype)
    valid_lens = torch.tensor([0, 3])  # the first sequence has no key to attend to
    trace = mha.trace(x, valid_lens=valid_lens)
    assert torch.equal(trace.weights[0], torch.zeros_like(trace.weights[0]))
    assert torch.equal(trace.head_context[0], torch.zeros_like(trace.head_context[0]))
    grads = _grads(mha, x, None, valid_lens, route)
    out = mha(x, valid_lens=valid_lens) if route == "fused" else trace.output
    # Zero context: the first sequence's output is just out_proj's bias.
    torch.testing.assert_close(out[0], mha.out_proj.bias.expand_as(out[0]).detach(), **TOL[dtype])
    for name, grad in grads.items():
        assert grad is not None and torch.isfinite(grad).all(), f"{route}: d/d{name} is not finite"
    assert torch.equal(grads["x"][0], torch.zeros_like(grads["x"][0])), "no key, no query: x[0] gets no gradient"


def test_fully_masked_rows_with_causal_and_query_lengths() -> None:
    mha, x, _, _ = _case(MASKS[5], SHAPES[1], torch.float64)
    valid_lens = torch.tensor([[0, 1, 0, 2, 5], [5, 0, 3, 0, 1]])
    with torch.no_grad():
        outs = _paths(mha, x, None, valid_lens)
    torch.testing.assert_close(outs["explicit"], outs["fused"], **TOL[torch.float64])
    torch.testing.assert_close(outs["trace"], outs["fused"], **TOL[torch.float64])


def test_dropout_only_in_training_on_both_paths() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 8, None, 0.5, 2, causal=True)
    x = torch.randn(2, 6, 8)
    mha.eval()
    with torch.no_grad():
        torch.testing.assert_close(mha(x), mha.trace(x).output)
        mha.train()
        assert not torch.allclose(mha(x), mha.trace(x).output), "dropout changes the output in training"


def test_forward_switches_path_with_the_fused_flag() -> None:
    mha, x, _, _ = _case(MASKS[1], SHAPES[1], torch.float32)
    assert mha.fused, "the fused path is the default"
    saved: list[tuple[int, ...]] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(tuple(t.shape))
        return t

    table = (2, 4, 5, 5)  # (B, h, T, T)
    for fused in (True, False):
        mha.fused = fused
        saved.clear()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            mha(x)
        assert (table in saved) is not fused, "only the explicit path keeps a (B, h, T, T) table for backward"


def test_padding_lengths_reach_the_kernel_as_one_row_per_sequence() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 16, None, 0.0, 4, causal=False)
    x = torch.randn(3, 6, 16, requires_grad=True)
    valid_lens = torch.tensor([6, 2, 0])
    saved: list[tuple[int, ...]] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = mha(x, valid_lens=valid_lens)
    assert not any(s[-2:] == (6, 6) for s in saved), "no (T, T) mask or table is kept"
    torch.testing.assert_close(out, mha.trace(x, valid_lens=valid_lens).output)


# ------------------------------------------------------------------ tiled attention with an online softmax


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("block_size", [1, 3, 8, 64])
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_equals_attention(dtype, block_size, causal) -> None:
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 10, 8, generator=gen, dtype=dtype)
    k = torch.randn(2, 3, 13, 8, generator=gen, dtype=dtype)
    v = torch.randn(2, 3, 13, 5, generator=gen, dtype=dtype)
    expected, _ = scaled_dot_product_attention(q, k, v, causal=causal)
    got = tiled_attention(q, k, v, block_size=block_size, causal=causal)
    torch.testing.assert_close(got, expected, **TOL[dtype])


def test_tiled_attention_with_a_mask_fully_masked_rows_and_large_scores() -> None:
    gen = torch.Generator().manual_seed(0)
    q = 30 * torch.randn(2, 7, 4, generator=gen, dtype=torch.float64)  # large scores: exp would overflow unshifted
    k = 30 * torch.randn(2, 9, 4, generator=gen, dtype=torch.float64)
    v = torch.randn(2, 9, 3, generator=gen, dtype=torch.float64)
    mask = torch.rand(2, 7, 9, generator=gen) > 0.5
    mask[0, 2] = False  # a query with no key
    mask[1, 4, :4] = False  # a query whose only keys come in the later blocks
    expected, _ = scaled_dot_product_attention(q, k, v, attn_mask=mask)
    q.requires_grad_(True)
    got = tiled_attention(q, k, v, block_size=2, attn_mask=mask)
    torch.testing.assert_close(got, expected)
    assert torch.equal(got[0, 2], torch.zeros(3, dtype=torch.float64))
    got.sum().backward()
    assert torch.isfinite(q.grad).all()


def test_tiled_attention_gradients_match() -> None:
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 6, 4, generator=gen, dtype=torch.float64, requires_grad=True) for _ in range(3))
    tiled = torch.autograd.grad(tiled_attention(q, k, v, block_size=4, causal=True).sum(), (q, k, v))
    plain = torch.autograd.grad(scaled_dot_product_attention(q, k, v, causal=True)[0].sum(), (q, k, v))
    for a, b in zip(tiled, plain):
        torch.testing.assert_close(a, b)


def test_tiled_attention_names_bad_arguments() -> None:
    q = torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match="block_size"):
        tiled_attention(q, q, q, block_size=0)
    with pytest.raises(ValueError, match="k must be"):
        tiled_attention(q, torch.randn(2, 4, 5), q)
    with pytest.raises(TypeError, match="q must be"):
        tiled_attention(torch.ones(2, 4, 8, dtype=torch.long), q, q)


# ------------------------------------------------------------------ the fused path stays lean


class _Calls(torch.overrides.TorchFunctionMode):
    """Every torch function the layer calls, with the shapes of the tensors it returns."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, list[tuple[int, ...]]]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        self.calls.append((getattr(func, "__name__", str(func)),
                           [tuple(t.shape) for t in outs if isinstance(t, torch.Tensor)]))
        return out


@pytest.mark.parametrize("lens", [None, "batch"], ids=["causal only", "(B,) lengths"])
def test_the_fused_path_is_one_sdpa_call_and_builds_no_table(lens) -> None:
    causal = lens is None
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 16, None, 0.0, 4, causal=causal).eval()
    x = torch.randn(2, 7, 16)
    valid_lens = None if lens is None else torch.tensor([7, 3])
    with torch.no_grad(), _Calls() as mode:
        mha(x, valid_lens=valid_lens)
    names = [name for name, _ in mode.calls]
    assert names.count("scaled_dot_product_attention") == 1, names
    built = [(name, shape) for name, shapes in mode.calls for shape in shapes if shape[-2:] == (7, 7)]
    assert not built, f"a (T, T) tensor was built on the fused path: {built}"
