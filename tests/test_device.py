"""The library on whatever device the model and inputs are on: the CPU always, CUDA when there is a GPU.

Equivalence with ``nn.MultiheadAttention``, trace == forward, the all-masked row, backward and toy training
run per device (the ``device`` fixture); half precision runs on CUDA only (``half``). Masks follow the inputs,
batches follow the model, and a device mismatch is a ``ValueError`` naming both devices (checked on the CPU
with PyTorch's ``meta`` device, which holds no data).
"""

from __future__ import annotations

import functools

import pytest
import torch

from mha_lib import MultiHeadAttention, scaled_dot_product_attention, toy
from mha_lib import mha as mha_module
from mha_lib._validate import check_device
from mha_lib.attention import build_mask, causal_mask
from mha_lib.reference import to_torch_mha, torch_mha_masks

TOL = {
    torch.float32: {"atol": 2e-5, "rtol": 2e-5},
    torch.bfloat16: {"atol": 2e-2, "rtol": 2e-2},
    torch.float16: {"atol": 3e-3, "rtol": 3e-3},
}

# (name, causal, cross-attention, valid_lens kind)
CASES = [
    ("causal", True, False, None),
    ("padding (B,)", False, False, "batch"),
    ("causal + padding (B, Tq)", True, False, "query"),
    ("cross + padding (B,)", False, True, "batch"),
]


def _case(case, device, dtype=torch.float32, seed=0):
    _, causal, cross, lens = case
    batch, tq, d, heads = 3, 6, 16, 4
    tk = 5 if cross else tq
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mha = MultiHeadAttention(d, d, None, 0.0, heads, qkv_bias=True, causal=causal, kv_dim=12 if cross else None)
    mha = mha.to(device=device, dtype=dtype).eval()
    x = torch.randn(batch, tq, d, generator=gen).to(device, dtype)
    y = torch.randn(batch, tk, 12, generator=gen).to(device, dtype) if cross else None
    valid_lens = None
    if lens is not None:
        valid_lens = torch.randint(1, tk + 1, (batch,) if lens == "batch" else (batch, tq), generator=gen).to(device)
    return mha, x, y, valid_lens


def _against_torch(case, device, dtype) -> None:
    mha, x, y, valid_lens = _case(case, device, dtype)
    kv = x if y is None else y
    padding, attn_mask = torch_mha_masks(x.shape[0], x.shape[1], kv.shape[1], mha.num_heads,
                                         valid_lens=valid_lens, causal=mha.causal, device=x.device)
    with torch.no_grad():
        expected, expected_weights = to_torch_mha(mha)(
            x, kv, kv, key_padding_mask=padding, attn_mask=attn_mask, average_attn_weights=False
        )
        out = mha(x, y, y, valid_lens)
        trace = mha.trace(x, y, y, valid_lens)
    assert out.device == x.device and out.dtype == dtype
    torch.testing.assert_close(out, expected, **TOL[dtype])
    torch.testing.assert_close(trace.output, expected, **TOL[dtype])
    torch.testing.assert_close(trace.weights, expected_weights.to(dtype), **TOL[dtype])


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_equals_torch_multihead_attention_on_each_device(case, device) -> None:
    _against_torch(case, device, torch.float32)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_equals_torch_multihead_attention_in_half_precision(case, half) -> None:
    _against_torch(case, torch.device("cuda"), half)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_trace_equals_forward_and_gradients_agree_on_each_device(case, device) -> None:
    mha, x, y, valid_lens = _case(case, device)
    grads = {}
    for route in ("fused", "trace"):
        mha.zero_grad(set_to_none=True)
        xg = x.clone().requires_grad_(True)
        out = mha(xg, y, y, valid_lens) if route == "fused" else mha.trace(xg, y, y, valid_lens).output
        out.pow(2).sum().backward()
        grads[route] = [xg.grad] + [p.grad for p in mha.parameters()]
        assert all(g is not None and torch.isfinite(g).all() for g in grads[route])
    for fused, explicit in zip(grads["fused"], grads["trace"]):
        torch.testing.assert_close(explicit, fused, atol=1e-4, rtol=1e-4)


def test_trace_equals_forward_in_half_precision(half) -> None:
    mha, x, _, valid_lens = _case(CASES[2], torch.device("cuda"), half)
    with torch.no_grad():
        torch.testing.assert_close(mha.trace(x, valid_lens=valid_lens).output, mha(x, valid_lens=valid_lens),
                                   **TOL[half])


@pytest.mark.parametrize("dtype", [torch.float32, "half"])
def test_an_all_masked_row_gives_zero_and_finite_gradients_on_each_device(device, dtype, request) -> None:
    if dtype == "half":
        if device.type != "cuda":
            pytest.skip("half precision runs on CUDA only")
        dtype = torch.bfloat16
    mha, x, _, _ = _case(CASES[1], device, dtype)
    valid_lens = torch.tensor([0, 3, 6], device=device)  # sequence 0 has no key
    x = x.clone().requires_grad_(True)
    trace = mha.trace(x, valid_lens=valid_lens)
    assert torch.equal(trace.weights[0], torch.zeros_like(trace.weights[0]))
    out = mha(x, valid_lens=valid_lens)
    torch.testing.assert_close(out[0], mha.out_proj.bias.expand_as(out[0]).detach(), **TOL[dtype])
    out.sum().backward()
    assert torch.isfinite(x.grad).all() and torch.equal(x.grad[0], torch.zeros_like(x.grad[0]))


def test_backward_with_dropout_on_each_device(device) -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 16, None, 0.5, 4).to(device).train()
    x = torch.randn(2, 7, 16, device=device, requires_grad=True)
    for out in (mha(x), mha.trace(x).output):
        out.sum().backward()
        assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
        x.grad = None


def test_toy_training_on_each_device(device) -> None:
    task = functools.partial(toy.induction_task, length=10, vocab_size=12, max_period=5)
    runs = {}
    for where in ("cpu", device):
        model = toy.TinyTransformer(12, 10, d_model=16, num_heads=2, num_layers=2, seed=0, device=where)
        runs[str(where)] = toy.train(model, task, steps=5, batch_size=8, seed=3)
        assert model.device.type == torch.device(where).type  # cuda:0 on a GPU
        batch = task(8, seed=0)  # on the CPU: every toy function moves it to the model's device
        assert toy.accuracy(model, batch) >= 0.0 and torch.isfinite(toy.task_loss(model, batch))
        assert toy.head_scores(model, batch).shape == (4, 4) and toy.ablation_scores(model, batch).shape == (2, 2)
        assert toy.gradient_scores(model, batch).device.type == "cpu"
    # The same seed gives the same training on every device (up to the kernels' rounding).
    on_device, on_cpu = (torch.tensor(runs[key].to_numpy()) for key in (str(device), "cpu"))
    torch.testing.assert_close(on_device, on_cpu, atol=1e-3, rtol=1e-3)


# ------------------------------------------------------------------ masks follow the inputs, batches the model


def test_masks_are_built_on_the_requested_device() -> None:
    lens = torch.tensor([2, 3])  # on the CPU
    allowed = torch.ones(2, 4, 4, dtype=torch.bool)  # on the CPU
    for kwargs in ({"valid_lens": lens}, {"valid_lens": lens, "causal": True}, {"attn_mask": allowed},
                   {"valid_lens": lens.expand(4, 2).T.contiguous(), "attn_mask": allowed}, {"causal": True}):
        mask = build_mask(batch=2, num_queries=4, num_keys=4, ndim=4, device="meta", **kwargs)
        assert mask is not None and mask.device.type == "meta", kwargs
    assert causal_mask(3, 3, device="meta").device.type == "meta"
    for kwargs in ({"causal": True}, {"causal": False, "valid_lens": lens}, {"causal": True, "valid_lens": lens}):
        masks = torch_mha_masks(2, 4, 4, 2, device="meta", **kwargs)
        assert all(m.device.type == "meta" for m in masks if m is not None), kwargs


def test_the_layer_asks_for_its_masks_on_the_inputs_device(monkeypatch) -> None:
    asked = []

    def spy(**kwargs):
        asked.append(kwargs["device"])
        return build_mask(**kwargs)

    monkeypatch.setattr(mha_module, "build_mask", spy)
    mha, x, _, valid_lens = _case(CASES[2], torch.device("cpu"))
    mha(x, valid_lens=valid_lens)
    mha.trace(x, valid_lens=valid_lens)
    assert asked == [x.device, x.device]


def test_task_batches_move_to_a_device() -> None:
    batch = toy.induction_task(2, 8, 12, max_period=5, seed=0)
    assert batch.to(None) is batch and batch.to("cpu") is batch
    moved = toy.induction_task(2, 8, 12, max_period=5, seed=0, device="meta")
    assert {t.device.type for t in (moved.inputs, moved.targets, moved.scored, moved.periods)} == {"meta"}
    assert toy.reverse_task(2, 5, 7, seed=0, device="meta").inputs.device.type == "meta"
    assert toy.sort_task(2, 5, 7, seed=0, device="meta").inputs.device.type == "meta"


def test_scaled_dot_product_attention_takes_cpu_lengths_for_inputs_on_the_device(device) -> None:
    q = torch.randn(2, 4, 8, device=device)
    out, weights = scaled_dot_product_attention(q, q, q, valid_lens=torch.tensor([1, 3]), causal=True)
    assert out.device == q.device and weights.device == q.device
    assert torch.equal(weights[0, :, 1:], torch.zeros_like(weights[0, :, 1:]))


# ------------------------------------------------------------------------------- mismatches are named


def test_inputs_on_another_device_than_the_layer_are_refused_naming_both() -> None:
    mha = MultiHeadAttention(8, 8, None, 0.0, 2, device="meta")
    with pytest.raises(ValueError, match=r"queries is on device cpu but the layer's weights are on meta.*to\('meta'\)"):
        mha(torch.randn(1, 3, 8))
    cpu = MultiHeadAttention(8, 8, None, 0.0, 2, kv_dim=4)
    with pytest.raises(ValueError, match="keys is on device meta but the layer's weights are on cpu"):
        cpu(torch.randn(1, 3, 8), torch.randn(1, 2, 4, device="meta"), torch.randn(1, 2, 4))


def test_tokens_on_another_device_than_the_model_are_refused_naming_both() -> None:
    model = toy.TinyTransformer(12, 10, d_model=8, seed=0, device="meta")
    assert model.device.type == "meta"
    with pytest.raises(ValueError, match=r"tokens is on device cpu but the model's weights are on meta"):
        model(torch.zeros(1, 4, dtype=torch.long))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without a GPU")
def test_asking_for_cuda_without_a_gpu_is_a_clear_error() -> None:
    for make in (lambda: MultiHeadAttention(8, 8, None, 0.0, 2, device="cuda"),
                 lambda: toy.TinyTransformer(12, 10, device="cuda"),
                 lambda: toy.induction_task(2, 8, 12, max_period=5, seed=0, device="cuda"),
                 lambda: torch_mha_masks(1, 2, 2, 1, causal=True, device="cuda")):
        with pytest.raises(ValueError, match=r"device='cuda' but this machine has no CUDA GPU"):
            make()


def test_check_device_names_the_argument() -> None:
    assert check_device("device", None) is None
    assert check_device("device", "cpu") == torch.device("cpu")
    with pytest.raises(TypeError, match="device must be a str such as 'cpu'"):
        check_device("device", 1.5)
    with pytest.raises(ValueError, match="device must name a device"):
        check_device("device", "gpu")


def test_functions_refuse_q_k_v_on_different_devices_naming_them() -> None:
    from mha_lib import AdditiveAttention, tiled_attention

    q, k = torch.randn(1, 3, 4), torch.randn(1, 3, 4, device="meta")
    for attention in (scaled_dot_product_attention, tiled_attention):
        with pytest.raises(ValueError, match=r"k is on device meta but q is on cpu: move them to one device"):
            attention(q, k, q)
    with pytest.raises(ValueError, match="keys is on device meta but the layer's weights are on cpu"):
        AdditiveAttention(4, 4, 3)(q, k, q)
