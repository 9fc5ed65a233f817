"""Multi-head attention side by side: a loop over heads, batched matmuls, einsum, one fused kernel.

The reference setting is the bonus benchmark of *LLMs from Scratch*, chapter 3: batch 8, 1024 tokens,
d_model 768, 12 heads, causal, float32, dropout 0, timed forward and forward+backward.

    python benchmarks/mha_benchmark.py                  # the reference size (minutes on 2 CPU cores)
    python benchmarks/mha_benchmark.py --quick          # small shapes, seconds (what the tests run)
    python benchmarks/mha_benchmark.py --csv r.csv --json r.json
    python benchmarks/mha_benchmark.py --sweep-only --sweep-csv sweep.csv   # time and memory against T

Every implementation below is a few lines of our own code, built from the weights of one
``mha_lib.MultiHeadAttention``, so all of them compute the same function; ``check_agreement`` asserts
it on one input before anything is timed. Timings are interleaved (one run of each implementation per
round) and each ratio to the minimal SDPA module is the median of the per-round ratios, so that a
machine busy with other work slows every implementation alike; the ratio of the best (minimum) times
is given beside it, since other work can only make a run slower.
"""

from __future__ import annotations

import argparse
import copy
import csv
import datetime
import json
import math
import os
import platform
import resource
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

from mha_lib import MultiHeadAttention
from mha_lib.reference import to_torch_mha

REFERENCE = {"batch": 8, "tokens": 1024, "d_model": 768, "heads": 12}
QUICK = {"batch": 2, "tokens": 64, "d_model": 64, "heads": 4}
SWEEP_TOKENS = (128, 256, 512, 1024, 2048)
QUICK_SWEEP_TOKENS = (32, 64, 128)
BASELINE = "minimal SDPA"


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
    """The timings of one implementation in one pass (``forward`` or ``forward+backward``)."""

    implementation: str
    pass_: str
    median_ms: float
    min_ms: float
    max_ms: float
    ratio_to_sdpa: float
    best_ratio_to_sdpa: float = float("nan")
    times_ms: list[float] = field(repr=False, default_factory=list)


def build(config: Config) -> tuple[dict[str, nn.Module], Tensor]:
    """Every implementation, sharing one set of weights, and an input ``(B, T, d_model)``."""
    torch.manual_seed(config.seed)
    ref = MultiHeadAttention(config.d_model, config.d_model, config.tokens, 0.0, config.heads, causal=True)
    ref = ref.to(device=config.device, dtype=config.torch_dtype)
    modules = {name: cls(ref, config.tokens) for name, cls in IMPLEMENTATIONS.items()}
    x = torch.randn(config.batch, config.tokens, config.d_model, device=config.device, dtype=config.torch_dtype)
    return modules, x


def check_agreement(modules: dict[str, nn.Module], x: Tensor) -> float:
    """Assert that every implementation gives the same output; return the largest absolute difference."""
    with torch.no_grad():
        outputs = {name: module.eval()(x) for name, module in modules.items()}
    expected = outputs[BASELINE]
    tol = {"atol": 1e-4, "rtol": 1e-4} if x.dtype == torch.float32 else {"atol": 1e-9, "rtol": 1e-9}
    worst = 0.0
    for name, out in outputs.items():
        torch.testing.assert_close(out, expected, **tol, msg=lambda m, name=name: f"{name} differs: {m}")
        worst = max(worst, (out - expected).abs().max().item())
    return worst


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


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


def time_passes(modules: dict[str, nn.Module], x: Tensor, config: Config, passes: tuple[str, ...]) -> list[Row]:
    """Warm up, then time ``repeats`` interleaved rounds of every implementation; one ``Row`` per pair."""
    rows = []
    for pass_ in passes:
        training = pass_ == "forward+backward"
        make = _forward_backward if training else _forward
        runs = {name: make(module.train(training), x) for name, module in modules.items()}
        times: dict[str, list[float]] = {name: [] for name in runs}
        for round_ in range(config.warmup + config.repeats):
            for name, run in runs.items():
                _sync(config.device)
                start = time.perf_counter()
                run()
                _sync(config.device)
                if round_ >= config.warmup:
                    times[name].append(time.perf_counter() - start)
        base = times[BASELINE]
        for name, ts in times.items():
            ratio = statistics.median(t / b for t, b in zip(ts, base))
            ms = [1000 * t for t in ts]
            rows.append(Row(name, pass_, statistics.median(ms), min(ms), max(ms), ratio, min(ts) / min(base), ms))
    return rows


def machine() -> dict[str, str]:
    """What produced the numbers: CPU model and cores, or the GPU, and the software versions."""
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
    info["date"] = datetime.date.today().isoformat()
    return info


def format_table(rows: list[Row]) -> str:
    """A fixed-width text table: one line per implementation and pass."""
    lines = [f"{'implementation':<24}{'pass':<18}{'median ms':>11}{'min ms':>10}{'max ms':>10}{'x SDPA':>9}"
             f"{'best x SDPA':>13}"]
    for r in rows:
        lines.append(
            f"{r.implementation:<24}{r.pass_:<18}{r.median_ms:>11.1f}{r.min_ms:>10.1f}{r.max_ms:>10.1f}"
            f"{r.ratio_to_sdpa:>9.2f}{r.best_ratio_to_sdpa:>13.2f}"
        )
    return "\n".join(lines)


def write_csv(rows: list[Row], path: Path) -> None:
    """One line per implementation and pass: times in ms and the ratios to minimal SDPA."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["implementation", "pass", "median_ms", "min_ms", "max_ms", "ratio_to_sdpa",
                         "best_ratio_to_sdpa"])
        for r in rows:
            writer.writerow([r.implementation, r.pass_, f"{r.median_ms:.2f}", f"{r.min_ms:.2f}", f"{r.max_ms:.2f}",
                             f"{r.ratio_to_sdpa:.3f}", f"{r.best_ratio_to_sdpa:.3f}"])


def write_json(rows: list[Row], config: Config, path: Path, extra: dict | None = None) -> None:
    """The rows with every single time, the configuration and the machine."""
    data = {"config": asdict(config), "machine": machine(), "rows": [asdict(r) for r in rows]}
    data.update(extra or {})
    path.write_text(json.dumps(data, indent=2) + "\n")


# ---------------------------------------------------------------- the sweep over sequence length


def attention_table_bytes(batch: int, heads: int, tokens: int, element_size: int = 4) -> int:
    """Bytes of one ``(B, h, T, T)`` attention table: the quantity that grows as ``T^2``."""
    return batch * heads * tokens * tokens * element_size


def saved_for_backward_bytes(module: nn.Module, x: Tensor) -> int:
    """Bytes of the distinct tensors autograd keeps from the forward pass for the backward pass.

    Measured with ``torch.autograd.graph.saved_tensors_hooks``: the memory a training step must hold
    between forward and backward. Parameters and the input itself are not counted.
    """
    seen: dict[tuple[int, int], int] = {}
    skip = {p.untyped_storage().data_ptr() for p in module.parameters()} | {x.untyped_storage().data_ptr()}

    def pack(t: Tensor) -> Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in skip:
            seen[(storage.data_ptr(), storage.nbytes())] = storage.nbytes()
        return t

    x = x.detach().requires_grad_(True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = module(x)
    del out
    return sum(seen.values())


def peak_memory_bytes(kind: str, batch: int, tokens: int, d_model: int, heads: int, device: str) -> int:
    """Peak memory of one forward+backward above what the model and input already use.

    CUDA: ``torch.cuda.max_memory_allocated``. CPU: the rise of the peak resident set size (``VmHWM``
    in ``/proc/self/status``, reset first through ``/proc/self/clear_refs``), in a fresh Python process
    so that memory kept from earlier runs does not hide it. (``ru_maxrss`` is not used where /proc exists:
    a child started by ``subprocess`` inherits its parent's peak in it.)
    """
    if device.startswith("cuda"):
        module, x = _sweep_model(kind, batch, tokens, d_model, heads, device)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        _forward_backward(module, x)()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - start
    cmd = [sys.executable, __file__, "--rss-child", kind, str(batch), str(tokens), str(d_model), str(heads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return int(out.strip().splitlines()[-1])


def _sweep_model(kind: str, batch: int, tokens: int, d_model: int, heads: int, device: str) -> tuple[nn.Module, Tensor]:
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model, d_model, tokens, 0.0, heads, causal=True).to(device)
    mha.fused = kind == "fused"
    return mha, torch.randn(batch, tokens, d_model, device=device)


def _status_kib(field_name: str) -> int | None:
    """A ``VmHWM``/``VmRSS`` line of ``/proc/self/status`` in KiB (None where there is no /proc)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _rss_child(kind: str, batch: int, tokens: int, d_model: int, heads: int) -> None:
    module, x = _sweep_model(kind, batch, tokens, d_model, heads, "cpu")
    _forward_backward(module, x[:, :8])()  # load the kernels and allocate the gradients first
    try:  # Linux: reset the peak-RSS mark (VmHWM) to the current RSS
        Path("/proc/self/clear_refs").write_text("5")
        before = _status_kib("VmRSS")
    except OSError:
        before = _status_kib("VmHWM")
    _forward_backward(module, x)()
    after = _status_kib("VmHWM")
    if before is None or after is None:  # no /proc: ru_maxrss (KiB on Linux; can include the parent's peak)
        before, after = 0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print((after - before) * 1024)


def sweep(config: Config, tokens: tuple[int, ...], *, rss: bool = True) -> list[dict]:
    """Time (forward+backward) and memory of the explicit and fused paths of ``mha_lib`` against ``T``."""
    rows = []
    for t in tokens:
        for kind in ("explicit", "fused"):
            module, x = _sweep_model(kind, config.batch, t, config.d_model, config.heads, config.device)
            run = _forward_backward(module, x)
            for _ in range(config.warmup):
                run()
            times = []
            for _ in range(config.repeats):
                _sync(config.device)
                start = time.perf_counter()
                run()
                _sync(config.device)
                times.append(1000 * (time.perf_counter() - start))
            row = {
                "tokens": t, "path": kind, "median_ms": round(statistics.median(times), 2),
                "saved_for_backward_mib": round(saved_for_backward_bytes(module, x) / 2**20, 3),
                "attention_table_mib": round(attention_table_bytes(config.batch, config.heads, t) / 2**20, 3),
            }
            if rss:
                peak = peak_memory_bytes(kind, config.batch, t, config.d_model, config.heads, config.device)
                row["peak_extra_mib"] = round(peak / 2**20, 1)
            rows.append(row)
            del module, x, run
    return rows


def format_sweep(rows: list[dict]) -> str:
    """A fixed-width text table of the sweep."""
    keys = list(rows[0])
    lines = ["".join(f"{k:>24}" for k in keys)]
    lines += ["".join(f"{r[k]!s:>24}" for k in keys) for r in rows]
    return "\n".join(lines)


def loglog_slope(xs: list[float], ys: list[float]) -> float:
    """The least-squares slope of ``log y`` against ``log x``: 2 for quadratic growth, 1 for linear."""
    lx, ly = [math.log(v) for v in xs], [math.log(v) for v in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def write_sweep_csv(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


# ---------------------------------------------------------------- command line


def run(config: Config, passes: tuple[str, ...] = ("forward", "forward+backward")) -> list[Row]:
    """Build, check agreement, time: the whole benchmark for one configuration."""
    modules, x = build(config)
    check_agreement(modules, x)
    return time_passes(modules, x, config, passes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes, seconds: what the tests run")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--tokens", type=int)
    parser.add_argument("--d-model", type=int)
    parser.add_argument("--heads", type=int)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, help="timed rounds (default: 5, or 20 with --quick)")
    parser.add_argument("--csv", type=Path, help="write the table as CSV")
    parser.add_argument("--json", type=Path, help="write the table, every time, the config and the machine as JSON")
    parser.add_argument("--sweep", action="store_true", help="also sweep T for the explicit and fused paths")
    parser.add_argument("--sweep-only", action="store_true", help="only the sweep")
    parser.add_argument("--sweep-csv", type=Path, help="write the sweep as CSV")
    parser.add_argument("--no-rss", action="store_true", help="sweep without the per-point peak-memory subprocess")
    parser.add_argument("--rss-child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child:
        kind, *sizes = args.rss_child
        _rss_child(kind, *map(int, sizes))
        return 0
    shape = dict(QUICK if args.quick else REFERENCE)
    for key in shape:
        value = getattr(args, key.replace("-", "_"))
        if value is not None:
            shape[key] = value
    repeats = args.repeats if args.repeats is not None else (20 if args.quick else 5)
    config = Config(**shape, dtype=args.dtype, device=args.device, warmup=args.warmup, repeats=repeats)
    info = machine()
    print(f"# {info['cpu']} ({info['cpu_cores']} cores){' | ' + info['gpu'] if 'gpu' in info else ''}"
          f" | torch {info['torch']} | {info['date']}")
    print(f"# B={config.batch} T={config.tokens} d_model={config.d_model} h={config.heads} {config.dtype}"
          f" {config.device}, causal, dropout 0; median of {config.repeats} rounds after {config.warmup} warm-up")
    if not args.sweep_only:
        load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        rows = run(config)
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
            print(f"# {kind}: time grows as T^{slope:.2f}")
        if args.sweep_csv:
            write_sweep_csv(rows_s, args.sweep_csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
