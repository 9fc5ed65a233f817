"""What the layer's Python costs: ``MultiHeadAttention`` against its own work written out in plain PyTorch.

Three pairs, each timed run by run in turn (``bench_decoding._alternate``), by the wall clock and, on a CPU, by the
thread's CPU time (``time.thread_time``), which other processes on a busy machine cannot add to:

- **one token, no cache**: ``layer(x)`` on ``(1, 1, d_model)`` against its four projections and SDPA;
- **one token, cached**: ``layer(x, kv_cache=cache)`` on a cache of ``T`` tokens against the projections, the cache
  append and SDPA (``bench_decoding._one_token_step``);
- **fused forward**: the benchmark's ``mha_lib fused`` against its ``minimal SDPA`` module at ``(B, T, d_model)``.

Usage: ``python benchmarks/bench_overhead.py [--device cuda] [--dtype bfloat16] [--threads 1]``; the ratios are the
median of the per-round ratios (and of the best times). The goals (issue 38): at most 1.2x for one token, with or
without a cache, and 1.05x for the fused forward.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decoding import _alternate, _one_token_step  # noqa: E402
from bench_implementations import TOLERANCE, MinimalSDPA  # noqa: E402

from mha_lib import MultiHeadAttention  # noqa: E402

GOALS = {"one token": 1.2, "one token, cached": 1.2, "fused forward": 1.05}


def _one_token_no_cache(layer: MultiHeadAttention, place: dict) -> tuple[Callable[[], Tensor], Callable[[], Tensor]]:
    h, d, width = layer.num_heads, layer.head_dim, layer.d_out
    x = torch.randn(1, 1, layer.d_in, **place)

    def library() -> Tensor:
        return layer(x)

    def by_hand() -> Tensor:
        q = layer.W_query(x).view(1, 1, h, d).transpose(1, 2)  # (1, h, 1, d_head)
        k = layer.W_key(x).view(1, 1, h, d).transpose(1, 2)
        v = layer.W_value(x).view(1, 1, h, d).transpose(1, 2)
        context = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (1, h, 1, d_head)
        return layer.out_proj(context.transpose(1, 2).reshape(1, 1, width))

    return library, by_hand


def _fused_forward(layer: MultiHeadAttention, batch: int, tokens: int,
                   place: dict) -> tuple[Callable[[], Tensor], Callable[[], Tensor]]:
    minimal, fused = MinimalSDPA(layer, tokens), copy.deepcopy(layer)
    x = torch.randn(batch, tokens, layer.d_in, **place)
    return (lambda: fused(x)), (lambda: minimal(x))


def overhead(*, d_model: int = 512, heads: int = 8, cached_tokens: int = 128, batch: int = 8, tokens: int = 512,
             calls: int = 200, fused_calls: int = 3, rounds: int = 15, warmup: int = 3, device: str = "cpu",
             dtype: str = "float32", seed: int = 7) -> list[dict]:
    """One row per pair: microseconds per call of the layer and of the baseline, and their ratio."""
    place = {"device": device, "dtype": getattr(torch, dtype)}
    torch.manual_seed(seed)
    layer = MultiHeadAttention(d_model, d_model, None, 0.0, heads, **place).eval()
    pairs = {
        "one token": (_one_token_no_cache(layer, place), calls),
        "one token, cached": (_one_token_step(layer, cached_tokens, place), calls),
        "fused forward": (_fused_forward(layer, batch, tokens, place), fused_calls),
    }
    rows = []
    for what, ((library, baseline), n) in pairs.items():
        steps = {"layer": library, "baseline": baseline}
        with torch.no_grad():
            tol = TOLERANCE[dtype]
            torch.testing.assert_close(library(), baseline(), atol=tol, rtol=tol)
            wall, cpu = _alternate(steps, n, rounds, warmup, device)
        times = cpu if device == "cpu" else wall  # one thread's CPU time on a CPU; the wall clock (synchronised) else
        ratios = [a / b for a, b in zip(times["layer"], times["baseline"])]
        rows.append({
            "what": what, "clock": "thread CPU" if device == "cpu" else "wall", "layer_us": statistics.median(
                times["layer"]), "baseline_us": statistics.median(times["baseline"]),
            "ratio": statistics.median(ratios), "best_ratio": min(times["layer"]) / min(times["baseline"]),
            "goal": GOALS[what],
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=sorted(TOLERANCE))
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (1: what the thread CPU time measures)")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"# torch {torch.__version__}, {args.device}, {args.dtype}, {torch.get_num_threads()} thread(s),"
          f" {args.rounds} interleaved rounds")
    print(f"{'what':<20} {'clock':<11} {'layer us':>10} {'baseline us':>12} {'ratio':>7} {'best':>7} {'goal':>6}")
    for r in overhead(device=args.device, dtype=args.dtype, rounds=args.rounds):
        print(f"{r['what']:<20} {r['clock']:<11} {r['layer_us']:>10.1f} {r['baseline_us']:>12.1f} {r['ratio']:>7.3f}"
              f" {r['best_ratio']:>7.3f} {r['goal']:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
