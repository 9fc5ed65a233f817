"""benchmarks/mha_benchmark.py: every implementation computes the same function; --quick writes its tables.

Speed ratios of a quick run are not asserted: under `pytest -n 2` another worker shares the cores. The
speed targets are asserted on the recorded full-size run in benchmarks/results. CUDA cases skip without a GPU.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import statistics
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from mha_lib import measure

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("mha_benchmark", ROOT / "benchmarks" / "mha_benchmark.py")
mb = importlib.util.module_from_spec(_spec)
sys.modules["mha_benchmark"] = mb
_spec.loader.exec_module(mb)

NAMES = list(mb.IMPLEMENTATIONS)
NO_CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
DEVICES = ["cpu", pytest.param("cuda", marks=NO_CUDA)]


def test_the_eight_implementations_are_there() -> None:
    assert NAMES == [
        "per-head loop", "textbook batched", "combined QKV", "einsum", "minimal SDPA",
        "nn.MultiheadAttention", "mha_lib fused", "mha_lib trace",
    ]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", mb.DTYPES)
def test_all_implementations_agree_or_say_why_not(dtype: str, device: str) -> None:
    config = mb.Config(**mb.QUICK, dtype=dtype, device=device)
    modules, x = mb.build(config)
    failed = mb.unsupported(modules, x)  # e.g. float16 kernels missing from some CPU builds
    assert all(isinstance(why, str) and why for why in failed.values())
    assert mb.BASELINE not in failed or dtype in ("float16", "bfloat16")
    worst = mb.check_agreement({n: m for n, m in modules.items() if n not in failed}, x)
    assert worst < 10 * mb.TOLERANCE[dtype]  # outputs are of order 1: atol + rtol * |output|


def test_an_implementation_that_cannot_run_is_skipped_with_its_reason() -> None:
    class NoHalf(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise RuntimeError('"addmm_impl_cpu_" not implemented for \'Half\'')

    modules, x = mb.build(mb.Config(**mb.QUICK))
    modules["einsum"] = NoHalf()
    failed = mb.unsupported(modules, x)
    assert list(failed) == ["einsum"] and "not implemented for 'Half'" in failed["einsum"]


def test_cuda_on_a_machine_without_it_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(SystemExit) as exit_:
        mb.main(["--quick", "--device", "cuda"])
    assert exit_.value.code == 2 and "CUDA is not available" in capsys.readouterr().err


def test_the_harness_measures_with_mha_lib_measure() -> None:
    assert mb.time_rounds is measure.time_rounds and mb.saved_for_backward_bytes is measure.saved_for_backward_bytes
    assert mb.table_bytes is measure.table_bytes and mb.loglog_slope is measure.loglog_slope


def test_all_implementations_have_the_same_gradients() -> None:
    config = mb.Config(**mb.QUICK, dtype="float64")
    modules, x = mb.build(config)
    grads = {}
    for name, module in modules.items():
        xg = x.clone().requires_grad_(True)
        module.train()(xg).pow(2).sum().backward()
        grads[name] = xg.grad
    for name, grad in grads.items():
        torch.testing.assert_close(grad, grads[mb.BASELINE], msg=name)


def test_agreement_check_catches_a_wrong_implementation() -> None:
    modules, x = mb.build(mb.Config(**mb.QUICK))
    with torch.no_grad():
        modules["einsum"].b_o.add_(1e-2)
    with pytest.raises(AssertionError, match="einsum differs"):
        mb.check_agreement(modules, x)


def test_quick_run_prints_and_writes_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv_path, json_path = tmp_path / "quick.csv", tmp_path / "quick.json"
    args = ["--quick", "--device", "cpu", "--repeats", "3", "--csv", str(csv_path), "--json", str(json_path)]
    assert mb.main(args) == 0
    printed = capsys.readouterr().out
    assert "torch " + torch.__version__ in printed
    for name in NAMES:
        assert name in printed
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * len(NAMES)
    assert {r["pass"] for r in rows} == {"forward", "forward+backward"}
    assert all(float(r["min_ms"]) <= float(r["median_ms"]) <= float(r["max_ms"]) for r in rows)
    assert all(r["peak_mib"] == "" for r in rows), "peak memory is measured on a CPU only with --memory"
    data = json.loads(json_path.read_text())
    assert data["config"]["tokens"] == mb.QUICK["tokens"] and data["config"]["repeats"] == 3
    assert {"cpu", "cpu_cores", "torch", "date"} <= data["machine"].keys()
    assert all(len(r["times_ms"]) == 3 for r in data["rows"])
    by_name = {(r["implementation"], r["pass_"]): r for r in data["rows"]}
    # No speed claim here: under `pytest -n 2` another worker shares the cores, so timings of a quick run
    # only test the harness. The speed targets are checked on the recorded full-size run (test below).
    for pass_ in ("forward", "forward+backward"):
        sdpa = by_name[(mb.BASELINE, pass_)]
        assert sdpa["ratio_to_sdpa"] == 1.0
        for (name, row_pass), row in by_name.items():
            if row_pass == pass_:
                paired = statistics.median(t / b for t, b in zip(row["times_ms"], sdpa["times_ms"]))
                assert row["ratio_to_sdpa"] == pytest.approx(paired), name  # median of the per-round ratios
                assert row["best_ratio_to_sdpa"] == pytest.approx(row["min_ms"] / sdpa["min_ms"]), name


def test_recorded_full_size_run_meets_the_targets() -> None:
    data = json.loads((ROOT / "benchmarks" / "results" / "reference_cpu.json").read_text())
    assert data["config"]["tokens"] == 1024 and data["config"]["heads"] == 12
    ratio = {(r["implementation"], r["pass_"]): r["ratio_to_sdpa"] for r in data["rows"]}
    for pass_ in ("forward", "forward+backward"):
        assert ratio[("mha_lib fused", pass_)] <= 1.05, pass_
        assert ratio[("mha_lib fused", pass_)] < ratio[("nn.MultiheadAttention", pass_)], pass_
        assert ratio[("mha_lib trace", pass_)] <= ratio[("textbook batched", pass_)], pass_


def test_sweep_shows_the_quadratic_table_only_on_the_explicit_path() -> None:
    config = mb.Config(batch=2, tokens=64, d_model=16, heads=2, repeats=1)
    rows = mb.sweep(config, (64, 128, 256), rss=False)
    assert [(r["tokens"], r["path"]) for r in rows] == [(t, p) for t in (64, 128, 256) for p in ("explicit", "fused")]
    explicit = [r for r in rows if r["path"] == "explicit"]
    fused = [r for r in rows if r["path"] == "fused"]
    for r in explicit:
        assert r["saved_for_backward_mib"] >= r["attention_table_mib"], "the explicit path keeps the weights table"
    for r in fused:
        assert r["saved_for_backward_mib"] < r["attention_table_mib"] / 2 or r["tokens"] < 128
    tokens = [r["tokens"] for r in explicit]
    assert mb.loglog_slope(tokens, [r["saved_for_backward_mib"] for r in explicit]) > 1.5
    assert mb.loglog_slope(tokens, [r["saved_for_backward_mib"] for r in fused]) < 1.2
    assert mb.format_sweep(rows).count("\n") == len(rows)


def test_quick_run_in_bfloat16(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--quick", "--device", "cpu", "--repeats", "1", "--dtype", "bfloat16", "--batch", "1", "--tokens", "16"]
    assert mb.main(args) == 0
    printed = capsys.readouterr().out
    assert "bfloat16 cpu" in printed and mb.BASELINE in printed


@pytest.mark.parametrize(("what", "name", "pass_"), [("sweep", "explicit", "forward+backward"),
                                                      ("impl", "mha_lib fused", "forward")])
def test_peak_memory_is_measured_in_a_fresh_process(what: str, name: str, pass_: str) -> None:
    config = mb.Config(batch=2, tokens=256, d_model=32, heads=2)
    peak = mb.peak_extra_bytes(what, name, pass_, config)
    table = measure.table_bytes(2, 2, 256)
    assert isinstance(peak, int) and peak >= -1  # -1: no /proc to read the peak from
    assert peak < 50 * table, "a sane number of bytes"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_overhead_pairs_compute_the_same_and_report_a_ratio(device: str, dtype: str) -> None:
    """benchmarks/bench_overhead.py: the layer and its baseline agree in each pair, and every row has its ratio."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_overhead

    rows = bench_overhead.overhead(d_model=32, heads=4, cached_tokens=8, batch=2, tokens=16, calls=2, fused_calls=1,
                                   rounds=2, warmup=1, device=device, dtype=dtype)
    assert [r["what"] for r in rows] == ["one token", "one token, cached", "fused forward"]
    assert all(r["ratio"] > 0 and r["layer_us"] > 0 for r in rows)
    assert {r["clock"] for r in rows} == {"thread CPU" if device == "cpu" else "wall"}
