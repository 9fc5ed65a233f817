"""Multi-head attention side by side: a loop over heads, batched matmuls, einsum, one fused kernel.

The reference setting is the bonus benchmark of *LLMs from Scratch*, chapter 3: batch 8, 1024 tokens,
d_model 768, 12 heads, causal, float32, dropout 0, timed forward and forward+backward.

    python benchmarks/mha_benchmark.py                  # the reference size (minutes on 2 CPU cores)
    python benchmarks/mha_benchmark.py --quick          # small shapes, seconds (what the tests run)
    python benchmarks/mha_benchmark.py --csv r.csv --json r.json
    python benchmarks/mha_benchmark.py --sweep-only --sweep-csv sweep.csv   # time and memory against T
    python benchmarks/mha_benchmark.py --device cuda --dtype bfloat16        # a GPU; also float16, float64
    python benchmarks/mha_benchmark.py --decode-only --decode-csv d.csv      # only the decoding section (below)
    python benchmarks/mha_benchmark.py --threads 1 ...                       # one thread: stable on a busy machine

Every implementation below is a few lines of our own code, built from the weights of one
``mha_lib.MultiHeadAttention``, so all of them compute the same function; ``check_agreement`` asserts
it on one input before anything is timed. Timings are interleaved (one run of each implementation per
round) and each ratio to the minimal SDPA module is the median of the per-round ratios, so that a
machine busy with other work slows every implementation alike; the ratio of the best (minimum) times
is given beside it, since other work can only make a run slower. Every measurement (timer, saved-for-backward
bytes, table bytes, slopes, peak memory) comes from ``mha_lib.measure``, as in the notebooks.

A second section (notebook 11), run after the first unless ``--no-decode``: greedy decoding of a small decoder
built from ``mha_lib.MultiHeadAttention`` with and without a ``KVCache``, as tokens per second at T = 128, 512 and
2048, for multi-head (MHA), grouped-query (GQA) and multi-query (MQA) attention, with the cache's bytes per token
measured on the tensors and compared with the formula ``2 x layers x kv_heads x head_dim x bytes``.
"""

from __future__ import annotations

import argparse
import copy
import csv
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mha_lib import KVCache, MultiHeadAttention, kv_cache_bytes_per_token
from mha_lib.measure import (
    loglog_slope,
    peak_memory_bytes,
    saved_for_backward_bytes,
    summarize_times,
    synchronize,
    table_bytes,
    time_rounds,
)
from mha_lib.reference import to_torch_mha

REFERENCE = {"batch": 8, "tokens": 1024, "d_model": 768, "heads": 12}
QUICK = {"batch": 2, "tokens": 64, "d_model": 64, "heads": 4}
SWEEP_TOKENS = (128, 256, 512, 1024, 2048)
QUICK_SWEEP_TOKENS = (32, 64, 128)
BASELINE = "minimal SDPA"
DTYPES = ("float32", "float64", "bfloat16", "float16")
TOLERANCE = {"float64": 1e-9, "float32": 1e-4, "float16": 5e-3, "bfloat16": 3e-2}  # atol = rtol, vs minimal SDPA
PASSES = ("forward", "forward+backward")


def _linear(weight: Tensor, bias: Tensor | None = None) -> nn.Linear:
    """An ``nn.Linear`` holding a copy of ``weight`` ``(out, in)`` (and ``bias``)."""
    layer = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        layer.weight.copy_(weight)
        if bias is not None:
            layer.bias.copy_(bias)
    return layer


def _blocked(tokens: int, device: torch.device) -> Tensor:
    """``(T, T)`` bool, True above the diagonal: the future keys a causal query must NOT see."""
    return torch.ones(tokens, tokens, dtype=torch.bool, device=device).triu(1)


class OneHead(nn.Module):
    """Causal attention for one head, as in a first course: its own three projections, explicit softmax."""

    def __init__(self, w_query: Tensor, w_key: Tensor, w_value: Tensor, context_length: int) -> None:
        super().__init__()
        self.W_query, self.W_key, self.W_value = _linear(w_query), _linear(w_key), _linear(w_value)
        self.register_buffer("blocked", _blocked(context_length, w_query.device), persistent=False)

    def forward(self, x: Tensor) -> Tensor:  # (B, T, d_in) -> (B, T, head_dim)
        tokens = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)  # (B, T, head_dim)
        scores = q @ k.transpose(1, 2)  # (B, T, T)
        scores.masked_fill_(self.blocked[:tokens, :tokens], float("-inf"))
        weights = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
        return weights @ v


class PerHeadLoop(nn.Module):
    """A Python loop over ``h`` single-head modules, outputs concatenated, then the output projection."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        rows = [slice(i * ref.head_dim, (i + 1) * ref.head_dim) for i in range(ref.num_heads)]
        weights = (ref.W_query.weight, ref.W_key.weight, ref.W_value.weight)
        self.heads = nn.ModuleList(OneHead(*(w[r] for w in weights), context_length) for r in rows)
        self.out_proj = copy.deepcopy(ref.out_proj)

    def forward(self, x: Tensor) -> Tensor:
        return self.out_proj(torch.cat([head(x) for head in self.heads], dim=-1))


class Textbook(nn.Module):
    """All heads at once with batched matmuls; explicit mask, scale and softmax on the ``(T, T)`` scores."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        self.h, self.dh = ref.num_heads, ref.head_dim
        self.W_query, self.W_key, self.W_value = (_linear(m.weight) for m in (ref.W_query, ref.W_key, ref.W_value))
        self.out_proj = copy.deepcopy(ref.out_proj)
        self.register_buffer("blocked", _blocked(context_length, ref.out_proj.weight.device), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, self.h, self.dh).transpose(1, 2)  # (B, h, T, dh)
        k = self.W_key(x).view(b, t, self.h, self.dh).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.h, self.dh).transpose(1, 2)
        scores = q @ k.transpose(2, 3)  # (B, h, T, T)
        scores.masked_fill_(self.blocked[:t, :t], float("-inf"))
        weights = torch.softmax(scores / self.dh**0.5, dim=-1)
        context = (weights @ v).transpose(1, 2).contiguous().view(b, t, self.h * self.dh)
        return self.out_proj(context)


class CombinedQKV(nn.Module):
    """One ``(d_in, 3 d_out)`` projection for queries, keys and values; explicit softmax."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        self.h, self.dh = ref.num_heads, ref.head_dim
        self.qkv = _linear(torch.cat([ref.W_query.weight, ref.W_key.weight, ref.W_value.weight]))
        self.out_proj = copy.deepcopy(ref.out_proj)
        self.register_buffer("blocked", _blocked(context_length, ref.out_proj.weight.device), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)  # 3 x (B, h, T, dh)
        scores = (q @ k.transpose(2, 3)).masked_fill_(self.blocked[:t, :t], float("-inf"))  # (B, h, T, T)
        weights = torch.softmax(scores / self.dh**0.5, dim=-1)
        return self.out_proj((weights @ v).transpose(1, 2).reshape(b, t, self.h * self.dh))


class Einsum(nn.Module):
    """Every product written as ``torch.einsum``, heads kept as an index; the head merge folds into ``out_proj``."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        h, dh = ref.num_heads, ref.head_dim
        split = [m.weight.detach().view(h, dh, -1).clone() for m in (ref.W_query, ref.W_key, ref.W_value)]
        self.w_q, self.w_k, self.w_v = (nn.Parameter(w) for w in split)  # (h, dh, d_in)
        self.w_o = nn.Parameter(ref.out_proj.weight.detach().view(-1, h, dh).clone())  # (d_out, h, dh)
        self.b_o = nn.Parameter(ref.out_proj.bias.detach().clone())
        self.register_buffer("blocked", _blocked(context_length, self.b_o.device), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        t = x.shape[1]
        q = torch.einsum("btd,hed->bhte", x, self.w_q)  # (B, h, T, dh)
        k = torch.einsum("btd,hed->bhte", x, self.w_k)
        v = torch.einsum("btd,hed->bhte", x, self.w_v)
        scores = torch.einsum("bhqe,bhke->bhqk", q, k) / q.shape[-1] ** 0.5  # (B, h, T, T)
        weights = torch.softmax(scores.masked_fill(self.blocked[:t, :t], float("-inf")), dim=-1)
        context = torch.einsum("bhqk,bhke->bhqe", weights, v)  # (B, h, T, dh)
        return torch.einsum("bhqe,ohe->bqo", context, self.w_o) + self.b_o


class MinimalSDPA(nn.Module):
    """The shortest fast version: one QKV projection and ``F.scaled_dot_product_attention(is_causal=True)``."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        self.h, self.dh = ref.num_heads, ref.head_dim
        self.qkv = _linear(torch.cat([ref.W_query.weight, ref.W_key.weight, ref.W_value.weight]))
        self.out_proj = copy.deepcopy(ref.out_proj)

    def forward(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)  # 3 x (B, h, T, dh)
        context = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, h, T, dh)
        return self.out_proj(context.transpose(1, 2).reshape(b, t, self.h * self.dh))


class TorchMultiheadAttention(nn.Module):
    """``nn.MultiheadAttention`` with a boolean causal ``attn_mask`` (True = blocked) and ``need_weights=False``."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        self.mha = to_torch_mha(ref)
        self.register_buffer("blocked", _blocked(context_length, ref.out_proj.weight.device), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        t = x.shape[1]
        return self.mha(x, x, x, attn_mask=self.blocked[:t, :t], need_weights=False)[0]


class LibFused(nn.Module):
    """``mha_lib.MultiHeadAttention.forward``: the fused path."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        self.mha = copy.deepcopy(ref)

    def forward(self, x: Tensor) -> Tensor:
        return self.mha(x)


class LibTrace(LibFused):
    """``mha_lib.MultiHeadAttention.trace(x).output``: the explicit path that keeps every intermediate."""

    def forward(self, x: Tensor) -> Tensor:
        return self.mha.trace(x).output


IMPLEMENTATIONS: dict[str, type[nn.Module]] = {
    "per-head loop": PerHeadLoop,
    "textbook batched": Textbook,
    "combined QKV": CombinedQKV,
    "einsum": Einsum,
    BASELINE: MinimalSDPA,
    "nn.MultiheadAttention": TorchMultiheadAttention,
    "mha_lib fused": LibFused,
    "mha_lib trace": LibTrace,
}


@dataclass
class Config:
    """One benchmark setting."""

    batch: int
    tokens: int
    d_model: int
    heads: int
    dtype: str = "float32"
    device: str = "cpu"
    warmup: int = 1
    repeats: int = 5
    seed: int = 123

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)


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


def build(config: Config) -> tuple[dict[str, nn.Module], Tensor]:
    """Every implementation, sharing one set of weights, and an input ``(B, T, d_model)``."""
    torch.manual_seed(config.seed)
    ref = MultiHeadAttention(config.d_model, config.d_model, config.tokens, 0.0, config.heads, causal=True)
    ref = ref.to(device=config.device, dtype=config.torch_dtype)
    modules = {name: cls(ref, config.tokens) for name, cls in IMPLEMENTATIONS.items()}
    x = torch.randn(config.batch, config.tokens, config.d_model, device=config.device, dtype=config.torch_dtype)
    return modules, x


def unsupported(modules: dict[str, nn.Module], x: Tensor) -> dict[str, str]:
    """The implementations that cannot run this dtype on this device (e.g. float16 on some CPU builds), and why.

    Each one runs forward and forward+backward once on the first 8 tokens; a ``RuntimeError`` marks it.
    """
    short = x[:, : min(8, x.shape[1])]
    failed = {}
    for name, module in modules.items():
        try:
            with torch.no_grad():
                module.eval()(short)
            _forward_backward(module.train(), short)()
        except RuntimeError as error:
            failed[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"
        finally:
            module.zero_grad(set_to_none=True)
    return failed


def check_agreement(modules: dict[str, nn.Module], x: Tensor) -> float:
    """Assert that every implementation gives the same output; return the largest absolute difference."""
    with torch.no_grad():
        outputs = {name: module.eval()(x) for name, module in modules.items()}
    expected = outputs[BASELINE]
    tol = TOLERANCE[str(x.dtype).removeprefix("torch.")]
    worst = 0.0
    for name, out in outputs.items():
        torch.testing.assert_close(out, expected, atol=tol, rtol=tol, msg=lambda m, name=name: f"{name} differs: {m}")
        worst = max(worst, (out - expected).abs().max().item())
    return worst


def _forward(module: nn.Module, x: Tensor) -> Callable[[], None]:
    def run() -> None:
        with torch.no_grad():
            module(x)

    return run


def _forward_backward(module: nn.Module, x: Tensor) -> Callable[[], None]:
    x = x.detach().requires_grad_(True)

    def run() -> None:
        x.grad = None
        module.zero_grad(set_to_none=True)
        module(x).sum().backward()

    return run


def _runner(module: nn.Module, x: Tensor, pass_: str) -> Callable[[], None]:
    """A function of no argument running one pass: ``forward`` (eval, no grad) or ``forward+backward`` (train)."""
    training = pass_ == "forward+backward"
    return (_forward_backward if training else _forward)(module.train(training), x)


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


def machine(device: str = "cpu") -> dict[str, str]:
    """What produced the numbers: CPU model and cores, the GPU when one is used, and the software versions."""
    info = {"torch": torch.__version__, "python": platform.python_version(), "threads": str(torch.get_num_threads())}
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info["cpu"] = cpu
    info["cpu_cores"] = str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
        info["cuda"] = str(torch.version.cuda)
    info["device"] = device
    info["date"] = datetime.date.today().isoformat()
    return info


def format_table(rows: list[Row]) -> str:
    """A fixed-width text table: one line per implementation and pass (peak MiB when measured)."""
    memory = any(r.peak_mib is not None for r in rows)
    lines = [f"{'implementation':<24}{'pass':<18}{'median ms':>11}{'min ms':>10}{'max ms':>10}{'x SDPA':>9}"
             f"{'best x SDPA':>13}" + (f"{'peak MiB':>10}" if memory else "")]
    for r in rows:
        lines.append(
            f"{r.implementation:<24}{r.pass_:<18}{r.median_ms:>11.1f}{r.min_ms:>10.1f}{r.max_ms:>10.1f}"
            f"{r.ratio_to_sdpa:>9.2f}{r.best_ratio_to_sdpa:>13.2f}" + (f"{r.peak_mib!s:>10}" if memory else "")
        )
    return "\n".join(lines)


def write_csv(rows: list[Row], path: Path) -> None:
    """One line per implementation and pass: times in ms, the ratios to minimal SDPA, peak MiB (empty if not run)."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["implementation", "pass", "median_ms", "min_ms", "max_ms", "ratio_to_sdpa",
                         "best_ratio_to_sdpa", "peak_mib"])
        for r in rows:
            writer.writerow([r.implementation, r.pass_, f"{r.median_ms:.2f}", f"{r.min_ms:.2f}", f"{r.max_ms:.2f}",
                             f"{r.ratio_to_sdpa:.3f}", f"{r.best_ratio_to_sdpa:.3f}",
                             "" if r.peak_mib is None else f"{r.peak_mib:.1f}"])


def write_json(rows: list[Row], config: Config, path: Path, extra: dict | None = None) -> None:
    """The rows with every single time, the configuration and the machine."""
    data = {"config": asdict(config), "machine": machine(config.device), "rows": [asdict(r) for r in rows]}
    data.update(extra or {})
    path.write_text(json.dumps(data, indent=2) + "\n")


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
    out = subprocess.run([sys.executable, __file__, "--peak-child", job], check=True, capture_output=True, text=True)
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


def format_sweep(rows: list[dict]) -> str:
    """A fixed-width text table of the sweep."""
    keys = list(rows[0])
    lines = ["".join(f"{k:>24}" for k in keys)]
    lines += ["".join(f"{r[k]!s:>24}" for k in keys) for r in rows]
    return "\n".join(lines)


def write_sweep_csv(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


# ---------------------------------------------------------------- greedy decoding with and without a KV cache


@dataclass
class DecodeConfig:
    """The decoding benchmark: a small decoder of ``layers`` RoPE attention layers, ``heads`` query heads of
    ``d_model // heads``, one K/V-head count per variant; ``new_tokens`` generated so that the last step sees T."""

    tokens: tuple[int, ...] = (128, 512, 2048)
    d_model: int = 512
    heads: int = 8
    layers: int = 4
    vocab: int = 256
    new_tokens: int = 16
    variants: tuple[tuple[str, int], ...] = (("MHA", 8), ("GQA", 2), ("MQA", 1))
    dtype: str = "float32"
    device: str = "cpu"
    warmup: int = 1
    repeats: int = 3
    seed: int = 7

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


QUICK_DECODE = {"tokens": (16, 32), "d_model": 64, "heads": 4, "layers": 2, "vocab": 32, "new_tokens": 4,
                "variants": (("MHA", 4), ("GQA", 2), ("MQA", 1))}
DECODE_PATHS = ("uncached", "cached")


class Decoder(nn.Module):
    """Token ids ``(B, T)`` -> next-token logits ``(B, T, vocab)``: embedding, pre-norm residual attention layers
    (``mha_lib.MultiHeadAttention`` with RoPE and ``num_kv_heads``), final norm, unembedding. No MLP: the benchmark
    is about attention and its cache."""

    def __init__(self, config: DecodeConfig, num_kv_heads: int) -> None:
        super().__init__()
        d, place = config.d_model, {"device": config.device, "dtype": getattr(torch, config.dtype)}
        self.embed = nn.Embedding(config.vocab, d, **place)
        self.norms = nn.ModuleList(nn.LayerNorm(d, **place) for _ in range(config.layers))
        self.blocks = nn.ModuleList(
            MultiHeadAttention(d, d, None, 0.0, config.heads, num_kv_heads=num_kv_heads, rope_base=10000.0, **place)
            for _ in range(config.layers))
        self.norm, self.unembed = nn.LayerNorm(d, **place), nn.Linear(d, config.vocab, **place)

    def forward(self, ids: Tensor, caches: list[KVCache] | None = None) -> Tensor:
        z = self.embed(ids)  # (B, T, d)
        for i, (norm, block) in enumerate(zip(self.norms, self.blocks)):
            z = z + block(norm(z), kv_cache=None if caches is None else caches[i])
        return self.unembed(self.norm(z))  # (B, T, vocab)


def decode_ms(model: Decoder, prompt: Tensor, new_tokens: int, cached: bool,
              device: str = "cpu") -> tuple[float, list[KVCache] | None]:
    """Greedy decoding of ``new_tokens`` after ``prompt`` ``(B, P)``: the ms of the new tokens only, and the caches.

    Without a cache every step runs the model on the whole sequence; with caches the prompt goes in once (the
    prefill, not timed: it is the same work as the uncached path's first step) and each step feeds one token.
    """
    caches = [KVCache() for _ in model.blocks] if cached else None
    with torch.no_grad():
        logits = model(prompt, caches)  # (B, P, vocab)
        ids = prompt
        synchronize(device)
        start = time.perf_counter()
        for _ in range(new_tokens):
            next_id = logits[:, -1:].argmax(-1)  # (B, 1): greedy
            ids = torch.cat([ids, next_id], dim=1)
            logits = model(next_id if cached else ids, caches)
        synchronize(device)
    return (time.perf_counter() - start) * 1000, caches


def check_decoding(model: Decoder, config: DecodeConfig, tokens: int) -> float:
    """Assert that decoding with caches gives the logits of one full pass; return the largest difference."""
    ids = torch.randint(0, config.vocab, (1, tokens), generator=torch.Generator().manual_seed(config.seed))
    ids = ids.to(config.device)
    prompt = tokens - config.new_tokens
    with torch.no_grad():
        caches = [KVCache() for _ in model.blocks]
        stepwise = [model(ids[:, :prompt], caches)] + [model(ids[:, t : t + 1], caches) for t in range(prompt, tokens)]
        full = model(ids)
    tol = TOLERANCE[config.dtype] * 10
    torch.testing.assert_close(torch.cat(stepwise, dim=1), full, atol=tol, rtol=tol)
    return float((torch.cat(stepwise, dim=1) - full).abs().max())


def decode_benchmark(config: DecodeConfig) -> list[dict]:
    """Tokens per second of greedy decoding with and without a KV cache, and the cache's bytes per token.

    One row per (T, variant, path). Rounds are interleaved over the variants and paths of one T, so that a busy
    spell slows them alike; ``tokens_per_s`` uses the median time, ``best_tokens_per_s`` the best.
    """
    models = {}
    for name, kv_heads in config.variants:
        torch.manual_seed(config.seed)
        models[name] = Decoder(config, kv_heads).eval()
        check_decoding(models[name], config, config.tokens[0])
    bytes_per_element = torch.empty((), dtype=getattr(torch, config.dtype)).element_size()
    rows = []
    for tokens in config.tokens:
        prompt = torch.randint(0, config.vocab, (1, tokens - config.new_tokens),
                               generator=torch.Generator().manual_seed(tokens)).to(config.device)
        times: dict[tuple[str, str], list[float]] = {(v, p): [] for v, _ in config.variants for p in DECODE_PATHS}
        kept: dict[str, int] = {}
        for round_ in range(config.warmup + config.repeats):
            for (variant, path), ts in times.items():
                ms, caches = decode_ms(models[variant], prompt, config.new_tokens, path == "cached", config.device)
                if round_ >= config.warmup:
                    ts.append(ms)
                if caches is not None:
                    kept[variant] = sum(c.nbytes for c in caches)
        for variant, kv_heads in config.variants:
            formula = kv_cache_bytes_per_token(config.layers, kv_heads, config.head_dim,
                                               bytes_per_element=bytes_per_element)
            measured = kept[variant] / tokens  # the caches hold every one of the T tokens
            if measured != formula:
                raise AssertionError(f"{variant}: the caches hold {measured} bytes per token, the formula {formula}")
            for path in DECODE_PATHS:
                ts = times[(variant, path)]
                rows.append({
                    "tokens": tokens, "variant": variant, "kv_heads": kv_heads, "path": path,
                    "median_ms": round(statistics.median(ts), 2), "best_ms": round(min(ts), 2),
                    "tokens_per_s": round(config.new_tokens / (statistics.median(ts) / 1000), 1),
                    "best_tokens_per_s": round(config.new_tokens / (min(ts) / 1000), 1),
                    "cache_kib_per_token": round(measured / 1024, 3), "formula_kib_per_token": round(formula / 1024, 3),
                })
    return rows


def format_decode(rows: list[dict]) -> str:
    """A fixed-width text table of the decoding benchmark, with the cached/uncached speed-up per (T, variant)."""
    lines = [f"{'T':>6}{'variant':>9}{'kv_heads':>10}{'path':>10}{'median ms':>11}{'tokens/s':>10}{'best tok/s':>12}"
             f"{'x uncached':>12}{'cache KiB/token':>17}"]
    uncached = {(r["tokens"], r["variant"]): r["median_ms"] for r in rows if r["path"] == "uncached"}
    for r in rows:
        speedup = uncached[(r["tokens"], r["variant"])] / r["median_ms"]
        lines.append(f"{r['tokens']:>6}{r['variant']:>9}{r['kv_heads']:>10}{r['path']:>10}{r['median_ms']:>11.1f}"
                     f"{r['tokens_per_s']:>10.1f}{r['best_tokens_per_s']:>12.1f}{speedup:>12.2f}"
                     f"{r['cache_kib_per_token']:>17.3f}")
    return "\n".join(lines)


def write_decode(rows: list[dict], config: DecodeConfig, csv_path: Path | None, json_path: Path | None,
                 extra: dict | None = None) -> None:
    """The decoding rows as CSV and/or JSON (with the configuration and the machine)."""
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    if json_path:
        data = {"config": asdict(config), "machine": machine(config.device), "rows": rows, **(extra or {})}
        json_path.write_text(json.dumps(data, indent=2) + "\n")


def run_decode(args: argparse.Namespace, config: Config) -> None:
    """The decoding section of the command line."""
    shape = dict(QUICK_DECODE) if args.quick else {}
    decode_config = DecodeConfig(**shape, dtype=config.dtype, device=config.device, warmup=config.warmup,
                                 repeats=min(config.repeats, 3))
    print(f"# greedy decoding: {decode_config.layers} layers, d_model={decode_config.d_model}, "
          f"h={decode_config.heads} (head_dim {decode_config.head_dim}), RoPE, {decode_config.dtype} "
          f"{decode_config.device}, threads={torch.get_num_threads()}; {decode_config.new_tokens} new tokens ending"
          f" at T; median of {decode_config.repeats} rounds after {decode_config.warmup} warm-up")
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = decode_benchmark(decode_config)
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(format_decode(rows))
    print(f"# 1-minute load average: {load_before:.1f} before, {load_after:.1f} after")
    write_decode(rows, decode_config, args.decode_csv, args.decode_json,
                 {"load_average_1m": [round(load_before, 2), round(load_after, 2)]})


# ---------------------------------------------------------------- command line


def run(config: Config, passes: tuple[str, ...] = PASSES, *, memory: bool = False) -> list[Row]:
    """Build, drop what this dtype/device cannot run (with a message), check agreement, time."""
    modules, x = build(config)
    failed = unsupported(modules, x)
    for name, why in failed.items():
        print(f"# skipped: {name} does not run in {config.dtype} on {config.device} ({why})")
    if BASELINE in failed:
        raise SystemExit(f"the baseline ({BASELINE}) does not run in {config.dtype} on {config.device}: "
                         "try --dtype float32, or a GPU for float16/bfloat16")
    modules = {name: module for name, module in modules.items() if name not in failed}
    check_agreement(modules, x)
    return time_passes(modules, x, config, passes, memory=memory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes, seconds: what the tests run")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--tokens", type=int)
    parser.add_argument("--d-model", type=int)
    parser.add_argument("--heads", type=int)
    parser.add_argument("--dtype", default="float32", choices=DTYPES)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                        help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, help="timed rounds (default: 5, or 20 with --quick)")
    parser.add_argument("--memory", action=argparse.BooleanOptionalAction, default=None,
                        help="peak memory of every implementation and pass (default: on for cuda; on a CPU one "
                             "fresh process per measurement)")
    parser.add_argument("--csv", type=Path, help="write the table as CSV")
    parser.add_argument("--json", type=Path, help="write the table, every time, the config and the machine as JSON")
    parser.add_argument("--sweep", action="store_true", help="also sweep T for the explicit and fused paths")
    parser.add_argument("--sweep-only", action="store_true", help="only the sweep")
    parser.add_argument("--sweep-csv", type=Path, help="write the sweep as CSV")
    parser.add_argument("--no-rss", action="store_true", help="sweep without the per-point peak-memory measurement")
    parser.add_argument("--no-decode", action="store_true", help="skip the decoding section (KV cache, MHA/GQA/MQA)")
    parser.add_argument("--decode-only", action="store_true", help="only the decoding section")
    parser.add_argument("--decode-csv", type=Path, help="write the decoding table as CSV")
    parser.add_argument("--decode-json", type=Path, help="write the decoding table, config and machine as JSON")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads for the whole run (default: torch's own;"
                        " 1 keeps timings stable on a machine that other processes share)")
    parser.add_argument("--peak-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peak_child:
        _peak_child(args.peak_child)
        return 0
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    device = args.device.split(":")[0]
    if device not in ("cpu", "cuda"):
        parser.error(f"--device must be cpu or cuda, got {args.device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: CUDA is not available here (torch {torch.__version__}); use cpu")
    shape = dict(QUICK if args.quick else REFERENCE)
    for key in shape:
        value = getattr(args, key.replace("-", "_"))
        if value is not None:
            shape[key] = value
    repeats = args.repeats if args.repeats is not None else (20 if args.quick else 5)
    config = Config(**shape, dtype=args.dtype, device=args.device, warmup=args.warmup, repeats=repeats)
    memory = args.memory if args.memory is not None else device == "cuda"
    info = machine(config.device)
    print(f"# {info['cpu']} ({info['cpu_cores']} cores){' | ' + info['gpu'] if 'gpu' in info else ''}"
          f" | torch {info['torch']} | {info['date']}")
    if args.decode_only:
        run_decode(args, config)
        return 0
    print(f"# B={config.batch} T={config.tokens} d_model={config.d_model} h={config.heads} {config.dtype}"
          f" {config.device}, causal, dropout 0; median of {config.repeats} rounds after {config.warmup} warm-up")
    if not args.sweep_only:
        load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        rows = run(config, memory=memory)
        load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(format_table(rows))
        # Load above the core count means other processes competed for the CPU during the run.
        print(f"# 1-minute load average: {load_before:.1f} before, {load_after:.1f} after")
        if args.csv:
            write_csv(rows, args.csv)
        if args.json:
            write_json(rows, config, args.json, {"load_average_1m": [round(load_before, 2), round(load_after, 2)]})
    if args.sweep or args.sweep_only:
        tokens = QUICK_SWEEP_TOKENS if args.quick else SWEEP_TOKENS
        sweep_config = Config(**{**asdict(config), "repeats": min(config.repeats, 3)})
        rows_s = sweep(sweep_config, tokens, rss=not args.no_rss)
        print(format_sweep(rows_s))
        for kind in ("explicit", "fused"):
            pts = [r for r in rows_s if r["path"] == kind]
            slope = loglog_slope([r["tokens"] for r in pts], [r["median_ms"] for r in pts])
            span = f"T = {pts[0]['tokens']}-{pts[-1]['tokens']}" if pts else "no T"
            print(f"# {kind}: time grows as T^{slope:.2f} (log-log fit over {span})")
        if args.sweep_csv:
            write_sweep_csv(rows_s, args.sweep_csv)
    if not (args.no_decode or args.sweep_only):
        run_decode(args, config)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
