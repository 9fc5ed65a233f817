"""mha_lib.measure: every number is checked by hand; no timing is asserted (a CI machine is busy)."""

from __future__ import annotations

import sys

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from mha_lib import MultiHeadAttention
from mha_lib import measure as M

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]


def test_attention_flops_by_hand() -> None:
    # T=3, d=2: projections 4 matmuls (3, 2) x (2, 2) = 4 * 3*2*2 multiply-adds = 48 -> 96 FLOPs.
    # Attention: Q K^T has 3*3 pairs of 2 multiply-adds, A V the same: 2 * 9 * 2 = 36 multiply-adds -> 72 FLOPs.
    assert M.attention_flops(3, 2) == (96, 72)
    assert M.attention_flops(3, 2).total == 168
    assert M.attention_flops(3, 2, causal=True).attention == 4 * 6 * 2  # 6 = 3 * 4 / 2 pairs below the diagonal
    assert M.attention_flops(3, 2, batch=5) == (5 * 96, 5 * 72)


def test_attention_overtakes_the_projections_at_twice_the_width() -> None:
    d = 768
    assert M.attention_flops(2 * d, d).attention == M.attention_flops(2 * d, d).projections
    assert M.attention_flops(2 * d + 1, d).attention > M.attention_flops(2 * d + 1, d).projections


def test_table_bytes() -> None:
    assert M.table_bytes(8, 12, 1024) == 8 * 12 * 1024 * 1024 * 4 == 402_653_184
    assert M.table_bytes(8, 12, 1024, dtype=torch.bfloat16) == 402_653_184 // 2
    assert M.table_bytes(2, 3, 5, 7, dtype=torch.float64) == 2 * 3 * 5 * 7 * 8


@pytest.mark.parametrize(("bad", "error"), [(1.5, TypeError), (0, ValueError)])
def test_counts_refuse_bad_sizes(bad: object, error: type) -> None:
    with pytest.raises(error, match="tokens"):
        M.attention_flops(bad, 8)
    with pytest.raises(error, match="batch"):
        M.table_bytes(bad, 2, 3)
    with pytest.raises(TypeError, match="dtype"):
        M.table_bytes(1, 2, 3, dtype="float32")


def test_loglog_slope_of_exact_power_laws() -> None:
    xs = [1, 2, 4, 8, 16]
    assert M.loglog_slope(xs, [3 * x**2 for x in xs]) == pytest.approx(2.0)
    assert M.loglog_slope(xs, [0.5 * x for x in xs]) == pytest.approx(1.0)
    assert M.loglog_slope(xs, [7.0] * 5) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="positive"):
        M.loglog_slope([1, 2], [0, 1])
    with pytest.raises(ValueError, match="same length"):
        M.loglog_slope([1, 2, 3], [1, 2])


def test_timer_returns_one_row_per_candidate_and_paired_ratios() -> None:
    calls = {"a": 0, "b": 0}

    def bump(name: str) -> None:
        calls[name] += 1

    table = M.time_calls({"a": lambda: bump("a"), "b": lambda: bump("b")}, rounds=4, warmup=2, baseline="a")
    assert isinstance(table, pd.DataFrame) and list(table.index) == ["a", "b"]
    assert list(table.columns) == ["best ms", "median ms", "max ms", "ratio", "best ratio"]
    assert calls == {"a": 6, "b": 6}, "warm-up rounds run too, every candidate once per round"
    assert (table["best ms"] <= table["median ms"]).all() and (table["median ms"] <= table["max ms"]).all()
    assert table.loc["a", "ratio"] == 1.0 and table.loc["a", "best ratio"] == 1.0


def test_summary_arithmetic() -> None:
    table = M.summarize_times({"base": [2.0, 4.0, 8.0], "x": [1.0, 4.0, 2.0]}, baseline="base")
    assert table.loc["x", "best ms"] == 1.0 and table.loc["x", "median ms"] == 2.0 and table.loc["x", "max ms"] == 4.0
    assert table.loc["x", "ratio"] == pytest.approx(0.5)  # median of 0.5, 1.0, 0.25
    assert table.loc["x", "best ratio"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="baseline"):
        M.summarize_times({"a": [1.0]}, baseline="b")


def test_timer_refuses_what_it_cannot_call() -> None:
    with pytest.raises(TypeError, match="candidates"):
        M.time_calls([lambda: None])
    with pytest.raises(TypeError, match="no argument"):
        M.time_calls({"a": 3})
    with pytest.raises(ValueError, match="at least one"):
        M.time_calls({})


def test_saved_bytes_are_the_sum_of_shapes_times_itemsize() -> None:
    a = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    saved = M.saved_tensors(lambda: (a.exp() @ b.exp().float()).sum())
    shapes = [s.shape for s in saved]
    assert (3, 4) in shapes and (4, 5) in shapes
    assert M.saved_bytes(saved, distinct=False) == sum(
        torch.Size(s.shape).numel() * torch.empty((), dtype=s.dtype).element_size() for s in saved
    )
    assert all(not s.excluded for s in saved)


def test_views_of_one_buffer_count_once_and_excluded_tensors_not_at_all() -> None:
    x = torch.randn(2, 6, requires_grad=True)
    y = x * 2  # (2, 6): its own buffer of 48 bytes
    saved = M.saved_tensors(lambda: (y[:, :3] * y[:, 3:]).sum())
    assert [s.shape for s in saved] == [(2, 3), (2, 3)] and saved[0].storage == saved[1].storage
    assert M.saved_bytes(saved) == 2 * 6 * 4 and M.saved_bytes(saved, distinct=False) == 2 * 2 * 3 * 4
    excluded = M.saved_tensors(lambda: (x * x).sum(), exclude=[x])
    assert excluded and all(s.excluded for s in excluded) and M.saved_bytes(excluded) == 0


def test_explicit_attention_keeps_the_table_and_fused_does_not() -> None:
    torch.manual_seed(0)
    layer = MultiHeadAttention(16, 16, None, 0.0, 2)
    x = torch.randn(2, 64, 16)
    table = M.table_bytes(2, 2, 64)
    layer.fused = False
    assert M.saved_for_backward_bytes(layer, x) >= table
    layer.fused = True
    assert M.saved_for_backward_bytes(layer, x) < table


@pytest.mark.parametrize("device", DEVICES)
def test_no_kernel_keeps_a_table_with_is_causal(device: str) -> None:
    q, k, v = (torch.randn(2, 4, 64, 8, device=device, requires_grad=True) for _ in range(3))
    saved = M.saved_tensors(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), exclude=[q, k, v])
    assert not any(len(s.shape) >= 2 and s.shape[-2:] == (64, 64) for s in saved)
    assert M.sdpa_kernel_name(q, k, v, is_causal=True) in {"flash (CPU)", "flash", "memory-efficient", "cuDNN", "math"}


def test_kernel_name_on_the_cpu_and_when_forced_to_math() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    assert M.sdpa_kernel_name(q, k, v, is_causal=True) == "flash (CPU)"
    with sdpa_kernel(SDPBackend.MATH):
        assert M.sdpa_kernel_name(q, k, v, is_causal=True) == "math"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM is read from /proc (Linux)")
def test_peak_memory_on_the_cpu_sees_a_large_allocation() -> None:
    peak = M.peak_memory_bytes(lambda: torch.ones(64, 2**20, dtype=torch.uint8).sum())  # 64 MiB
    if peak is None:
        pytest.skip("/proc/self/clear_refs cannot be written here (some containers)")
    assert peak >= 32 * 2**20


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA")
def test_peak_memory_on_cuda_counts_the_allocation() -> None:
    peak = M.peak_memory_bytes(lambda: torch.ones(2**20, device="cuda").sum(), "cuda")
    assert peak is not None and peak >= 4 * 2**20


def test_keep_returns_the_saved_values() -> None:
    x = torch.randn(2, 3, requires_grad=True)
    saved = M.saved_tensors(lambda: torch.softmax(x, dim=-1).sum(), keep=True)
    torch.testing.assert_close(saved[0].tensor, torch.softmax(x, dim=-1).detach())  # softmax keeps its output
    assert M.saved_tensors(lambda: torch.softmax(x, dim=-1).sum())[0].tensor is None


def test_tuple_keys_index_the_timer_table() -> None:
    table = M.time_calls({("fused", 64): lambda: None, ("explicit", 64): lambda: None}, rounds=1, warmup=0)
    assert table.loc[("fused", 64), "best ms"] >= 0 and len(table) == 2


def test_recorded_results_are_found_in_a_checkout() -> None:
    results = M.recorded_results()
    assert results is not None and (results / "reference_cpu.csv").is_file()
    with (results / "reference_cpu.json").open() as f:
        assert '"tokens": 1024' in f.read()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mask_shape", [(2, 1, 64, 64), (2, 1, 1, 64)])
def test_a_mask_tensor_may_be_kept_but_never_the_weights(device: str, mask_shape: tuple[int, ...]) -> None:
    q, k, v = (torch.randn(2, 4, 64, 8, device=device, requires_grad=True) for _ in range(3))
    mask = torch.rand(mask_shape, device=device) > 0.3
    mask[..., 0] = True  # every query sees at least one key
    saved = M.saved_tensors(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), exclude=[q, k, v],
                            keep=True)
    for s in saved:
        if len(s.shape) >= 2 and s.shape[-2:] == (64, 64):  # e.g. the mask expanded per head on CUDA float32
            t = s.tensor
            assert t.dtype == torch.bool or bool(((t == 0) | (t == float("-inf"))).all()), "a mask, not weights"
