"""Measuring attention: one timer, what autograd keeps for the backward pass, table bytes, FLOPs, slopes, peak memory.

Used by ``benchmarks/mha_benchmark.py`` and the notebooks, so that every number in the series is measured one way.
Conventions: times in milliseconds, sizes in bytes, a multiply-add counts as 2 FLOPs.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pandas as pd
import torch
from torch import Tensor, nn

from mha_lib._validate import check_int

if TYPE_CHECKING:  # Python 3.11+ has importlib.resources.abc; only the annotation needs it
    from importlib.resources.abc import Traversable

__all__ = [
    "FlopCount",
    "SavedTensor",
    "attention_flops",
    "loglog_slope",
    "peak_memory_bytes",
    "recorded_results",
    "saved_bytes",
    "saved_for_backward_bytes",
    "saved_tensors",
    "sdpa_kernel_name",
    "summarize_times",
    "synchronize",
    "table_bytes",
    "time_calls",
    "time_rounds",
]


# ---------------------------------------------------------------- timing


def synchronize(device: str | torch.device | None = None) -> None:
    """Wait for queued GPU work (CUDA calls return before the work is done); nothing to do on a CPU."""
    kind = torch.device(device).type if device is not None else ("cuda" if torch.cuda.is_available() else "cpu")
    if kind == "cuda":
        torch.cuda.synchronize()


def time_rounds(
    candidates: Mapping[Hashable, Callable[[], object]], *, rounds: int = 5, warmup: int = 1,
    device: str | torch.device | None = None,
) -> dict[Hashable, list[float]]:
    """Wall-clock ms of each call, ``rounds`` rounds after ``warmup``; each round runs every candidate once, in turn.

    Interleaving makes a busy spell on a shared machine slow every candidate alike. ``device`` picks whether to
    synchronise CUDA around each call (default: whenever CUDA is available).
    """
    if not isinstance(candidates, Mapping):
        raise TypeError(f"candidates must be a dict of name -> function, got {type(candidates).__name__}")
    if not candidates:
        raise ValueError("candidates must name at least one function, got an empty dict")
    for name, fn in candidates.items():
        if not callable(fn):
            raise TypeError(f"candidates[{name!r}] must be a function taking no argument, got {type(fn).__name__}")
    rounds = check_int("rounds", rounds)
    warmup = check_int("warmup", warmup, minimum=0)
    times: dict[Hashable, list[float]] = {name: [] for name in candidates}
    for round_ in range(warmup + rounds):
        for name, fn in candidates.items():
            synchronize(device)
            start = time.perf_counter()
            fn()
            synchronize(device)
            if round_ >= warmup:
                times[name].append(1000 * (time.perf_counter() - start))
    return times


def summarize_times(times: Mapping[Hashable, Sequence[float]], baseline: Hashable | None = None) -> pd.DataFrame:
    """One row per candidate: best, median and max ms; with ``baseline``, the median of the per-round ratios and
    the ratio of the best times.

    The best (minimum) time is the most repeatable number on a busy machine: other work only adds time.
    """
    if baseline is not None and baseline not in times:
        raise ValueError(f"baseline must be one of the candidates {list(times)}, got {baseline!r}")
    rows = {}
    for name, ts in times.items():
        row = {"best ms": min(ts), "median ms": statistics.median(ts), "max ms": max(ts)}
        if baseline is not None:
            base = times[baseline]
            row["ratio"] = statistics.median(t / b for t, b in zip(ts, base))
            row["best ratio"] = min(ts) / min(base)
        rows[name] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    if table.index.nlevels == 1:  # tuple keys give a MultiIndex, named by the caller
        table.index.name = "candidate"
    return table


def time_calls(
    candidates: Mapping[Hashable, Callable[[], object]], *, rounds: int = 5, warmup: int = 1,
    baseline: Hashable | None = None, device: str | torch.device | None = None,
) -> pd.DataFrame:
    """Time functions of no argument side by side: ``summarize_times(time_rounds(...))``, one row per candidate."""
    return summarize_times(time_rounds(candidates, rounds=rounds, warmup=warmup, device=device), baseline)


# ---------------------------------------------------------------- what autograd keeps for the backward pass


@dataclass(frozen=True)
class SavedTensor:
    """One tensor autograd saved during a forward pass, as seen by ``torch.autograd.graph.saved_tensors_hooks``."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    nbytes: int  # numel * element size of this (possibly view) tensor
    storage: tuple[str, int, int]  # (device, address, bytes) of the memory behind it: equal for views of one buffer
    excluded: bool  # a parameter or input named in ``exclude``: memory that exists anyway
    tensor: Tensor | None = field(default=None, repr=False, compare=False)  # the tensor itself, with ``keep=True``


def _storage_key(t: Tensor) -> tuple[str, int, int]:
    storage = t.untyped_storage()
    return (str(t.device), storage.data_ptr(), storage.nbytes())


def saved_tensors(fn: Callable[[], object], exclude: Iterable[Tensor] = (), *, keep: bool = False) -> list[SavedTensor]:
    """Every tensor autograd saves for backward while ``fn()`` runs, in the order saved (inputs must require grad).

    ``keep=True`` also keeps each tensor (``SavedTensor.tensor``) to look at its values.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function taking no argument, got {type(fn).__name__}")
    skip = {_storage_key(t)[:2] for t in exclude}
    saved: list[SavedTensor] = []

    def pack(t: Tensor) -> Tensor:
        key = _storage_key(t)
        nbytes = t.numel() * t.element_size()
        saved.append(SavedTensor(tuple(t.shape), t.dtype, nbytes, key, key[:2] in skip, t.detach() if keep else None))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()  # kept alive until every tensor is recorded, so no address is reused
    del out
    return saved


def saved_bytes(saved: Sequence[SavedTensor], *, distinct: bool = True) -> int:
    """Bytes held for backward: each memory buffer once (``distinct``), or the sum of every saved tensor's bytes.

    Excluded tensors (parameters, the input) are not counted.
    """
    kept = [s for s in saved if not s.excluded]
    if not distinct:
        return sum(s.nbytes for s in kept)
    return sum({s.storage: s.storage[2] for s in kept}.values())


def saved_for_backward_bytes(module: nn.Module, x: Tensor) -> int:
    """Bytes of the distinct buffers autograd keeps between ``module(x)`` and its backward pass, ``x`` ``(B, T, d)``.

    Parameters and the input are not counted: this is the memory a training step must hold per layer.
    """
    x = x.detach().requires_grad_(True)
    return saved_bytes(saved_tensors(lambda: module(x), exclude=[x, *module.parameters()]))


_KERNELS = (  # substrings of the autograd node's name -> kernel; checked in order
    ("FlashAttentionForCpu", "flash (CPU)"),
    ("FlashAttention", "flash"),
    ("EfficientAttention", "memory-efficient"),
    ("CudnnAttention", "cuDNN"),
)


def sdpa_kernel_name(q: Tensor, k: Tensor, v: Tensor, **kwargs: Any) -> str:
    """Which kernel ``F.scaled_dot_product_attention(q, k, v, **kwargs)`` picks when gradients are needed.

    Read off the autograd node of its output: ``flash (CPU)``, ``flash``, ``memory-efficient``, ``cuDNN``, or
    ``math`` (the composite of ordinary operations). ``q`` ``(B, h, T_q, d_head)``, ``k``, ``v`` ``(B, h, T_k, .)``.
    """
    q, k, v = (t.detach().requires_grad_(True) for t in (q, k, v))
    node = torch.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs).grad_fn
    name = type(node).__name__ if node is not None else ""
    return next((kernel for key, kernel in _KERNELS if key in name), "math")


# ---------------------------------------------------------------- counting


def table_bytes(batch: int, heads: int, queries: int, keys: int | None = None,
                dtype: torch.dtype = torch.float32) -> int:
    """Bytes of one ``(B, h, T_q, T_k)`` table of scores or weights in ``dtype`` (``keys`` defaults to ``queries``)."""
    sizes = [check_int(n, v) for n, v in (("batch", batch), ("heads", heads), ("queries", queries))]
    sizes.append(check_int("keys", queries if keys is None else keys))
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype such as torch.float32, got {type(dtype).__name__} {dtype!r}")
    return math.prod(sizes) * torch.empty((), dtype=dtype).element_size()


class FlopCount(NamedTuple):
    """Forward FLOPs of one self-attention layer (a multiply-add = 2 FLOPs; softmax, scale and mask not counted)."""

    projections: int  # Q, K, V and output projections: 4 matmuls (B T, d) x (d, d) = 8 B T d^2
    attention: int  # Q K^T and A V over all heads: 4 d FLOPs per (query, key) pair

    @property
    def total(self) -> int:
        """Projections plus attention."""
        return self.projections + self.attention


def attention_flops(tokens: int, d_model: int, *, batch: int = 1, causal: bool = False) -> FlopCount:
    """FLOPs of one forward pass of a self-attention layer: ``8 B T d^2`` for the projections, ``4 B P d`` for
    attention, where ``P`` is the number of (query, key) pairs computed: ``T^2``, or ``T (T + 1) / 2`` with
    ``causal=True`` (a kernel that skips every masked pair). The number of heads cancels: ``h d_head = d``.
    """
    tokens, d_model, batch = check_int("tokens", tokens), check_int("d_model", d_model), check_int("batch", batch)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {type(causal).__name__} {causal!r}")
    pairs = tokens * (tokens + 1) // 2 if causal else tokens * tokens
    return FlopCount(projections=8 * batch * tokens * d_model**2, attention=4 * batch * pairs * d_model)


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The exponent ``p`` of a fit ``y = c x^p``: the least-squares slope of ``log y`` against ``log x``."""
    xs, ys = [float(v) for v in xs], [float(v) for v in ys]
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"xs and ys must have the same length, at least 2; got {len(xs)} and {len(ys)}")
    if min(xs + ys) <= 0 or not all(math.isfinite(v) for v in xs + ys):
        raise ValueError("xs and ys must be positive and finite to take their logarithm")
    lx, ly = [math.log(v) for v in xs], [math.log(v) for v in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    spread = sum((a - mx) ** 2 for a in lx)
    if spread == 0:
        raise ValueError("xs must not all be equal: no slope through one x")
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / spread


# ---------------------------------------------------------------- peak memory


def _status_kib(field: str) -> int | None:
    """A ``VmHWM``/``VmRSS`` line of ``/proc/self/status`` in KiB (None where there is no /proc)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def peak_memory_bytes(fn: Callable[[], object], device: str | torch.device = "cpu") -> int | None:
    """How far memory rose above its level before ``fn()`` at its peak during the call, in bytes.

    CUDA: ``torch.cuda.max_memory_allocated`` (tensors only). CPU: the rise of the peak resident set size
    (``VmHWM`` in ``/proc/self/status``, reset through ``/proc/self/clear_refs``; Linux only, None elsewhere).
    On a CPU, memory freed earlier in the same process may be reused without raising the peak: measure in a fresh
    process (as ``benchmarks/mha_benchmark.py`` does) for a number that does not depend on what ran before.
    """
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - start
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux: reset the peak mark (VmHWM) to the current RSS
    except OSError:
        return None
    before = _status_kib("VmRSS")
    fn()
    after = _status_kib("VmHWM")
    if before is None or after is None:
        return None
    return max(after - before, 0) * 1024


# ---------------------------------------------------------------- the recorded benchmark


def recorded_results() -> Traversable | None:
    """The folder of recorded benchmark results (``reference_cpu.csv``, ...), or None where it is not installed.

    An installed package ships it as ``mha_lib.results``; in a checkout (editable install) it is
    ``benchmarks/results`` next to ``mha_lib``.
    """
    try:
        return files("mha_lib.results")
    except ModuleNotFoundError:
        path = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
        return path if path.is_dir() else None
