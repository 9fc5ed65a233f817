"""Timing and memory: interleaved rounds of every implementation, peak memory in a fresh process, the sweep over T.

Every measurement comes from ``mha_lib.measure``, as in the notebooks (``time_rounds``, ``summarize_times``,
``saved_for_backward_bytes``, ``table_bytes``, ``peak_memory_bytes``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from bench_implementations import BASELINE, PASSES, Config, _forward_backward, _runner, build
from torch import Tensor, nn

from mha_lib import MultiHeadAttention
from mha_lib.measure import peak_memory_bytes, saved_for_backward_bytes, summarize_times, table_bytes, time_rounds

CLI = Path(__file__).with_name("mha_benchmark.py")  # a fresh process for peak memory runs the command line


@dataclass
class Row:
    """The timings (and optionally the peak memory) of one implementation in one pass."""

    implementation: str
    pass_: str
    median_ms: float
    min_ms: float
    max_ms: float
    ratio_to_sdpa: float
    best_ratio_to_sdpa: float = float("nan")
    peak_mib: float | None = None
    times_ms: list[float] = field(repr=False, default_factory=list)


def time_passes(modules: dict[str, nn.Module], x: Tensor, config: Config, passes: tuple[str, ...] = PASSES,
                *, memory: bool = False) -> list[Row]:
    """Warm up, then time ``repeats`` interleaved rounds of every implementation; one ``Row`` per pair.

    With ``memory``, also the peak memory of one call of each (``peak_extra_bytes``).
    """
    rows = []
    for pass_ in passes:
        runs = {name: _runner(module, x, pass_) for name, module in modules.items()}
        times = time_rounds(runs, rounds=config.repeats, warmup=config.warmup, device=config.device)
        table = summarize_times(times, BASELINE)
        for name, ts in times.items():
            r = table.loc[name]
            peak = round(peak_extra_bytes("impl", name, pass_, config) / 2**20, 1) if memory else None
            rows.append(Row(name, pass_, float(r["median ms"]), float(r["best ms"]), float(r["max ms"]),
                            float(r["ratio"]), float(r["best ratio"]), peak, list(ts)))
    return rows


# ---------------------------------------------------------------- peak memory, in a fresh process on a CPU


def _sweep_model(kind: str, config: Config) -> tuple[nn.Module, Tensor]:
    """``mha_lib.MultiHeadAttention`` on its explicit (``kind="explicit"``) or fused path, and an input."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(config.d_model, config.d_model, config.tokens, 0.0, config.heads, causal=True)
    mha = mha.to(device=config.device, dtype=config.torch_dtype)
    mha.fused = kind == "fused"
    x = torch.randn(config.batch, config.tokens, config.d_model, device=config.device, dtype=config.torch_dtype)
    return mha, x


def _one_module(what: str, name: str, config: Config) -> tuple[nn.Module, Tensor]:
    """One sweep path (``what="sweep"``, ``name`` explicit/fused) or one benchmark implementation (``"impl"``)."""
    if what == "sweep":
        return _sweep_model(name, config)
    modules, x = build(config)
    return modules[name], x


def peak_extra_bytes(what: str, name: str, pass_: str, config: Config) -> int:
    """Peak memory of one call above what the model and input already use (``mha_lib.measure.peak_memory_bytes``).

    CUDA: measured here. CPU: in a fresh Python process, after a warm-up call on 8 tokens, so that memory kept from
    earlier runs does not hide it (the peak resident set size, ``VmHWM``, Linux only; -1 where it cannot be read).
    """
    if config.device.startswith("cuda"):
        module, x = _one_module(what, name, config)
        _runner(module, x[:, :8], pass_)()
        return peak_memory_bytes(_runner(module, x, pass_), config.device)
    job = json.dumps({"what": what, "name": name, "pass": pass_, "config": asdict(config)})
    out = subprocess.run([sys.executable, str(CLI), "--peak-child", job], check=True, capture_output=True, text=True)
    return int(out.stdout.strip().splitlines()[-1])


def _peak_child(job: str) -> None:
    spec = json.loads(job)
    config = Config(**spec["config"])
    module, x = _one_module(spec["what"], spec["name"], config)
    _runner(module, x[:, :8], spec["pass"])()  # load the kernels and allocate the gradients first
    peak = peak_memory_bytes(_runner(module, x, spec["pass"]), config.device)
    print(-1 if peak is None else peak)


# ---------------------------------------------------------------- the sweep over sequence length


def sweep(config: Config, tokens: tuple[int, ...], *, rss: bool = True) -> list[dict]:
    """Time (forward+backward) and memory of the explicit and fused paths of ``mha_lib`` against ``T``."""
    rows = []
    for t in tokens:
        at_t = Config(**{**asdict(config), "tokens": t})
        models = {kind: _sweep_model(kind, at_t) for kind in ("explicit", "fused")}
        runs = {kind: _forward_backward(module, x) for kind, (module, x) in models.items()}
        times = time_rounds(runs, rounds=config.repeats, warmup=config.warmup, device=config.device)
        medians = summarize_times(times)["median ms"]
        for kind, (module, x) in models.items():
            row = {
                "tokens": t, "path": kind, "median_ms": round(float(medians[kind]), 2),
                "saved_for_backward_mib": round(saved_for_backward_bytes(module, x) / 2**20, 3),
                "attention_table_mib": round(table_bytes(config.batch, config.heads, t,
                                                         dtype=config.torch_dtype) / 2**20, 3),
            }
            if rss:
                row["peak_extra_mib"] = round(peak_extra_bytes("sweep", kind, "forward+backward", at_t) / 2**20, 1)
            rows.append(row)
        del models, runs
    return rows
