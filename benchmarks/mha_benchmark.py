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
measured on the tensors and compared with the formula ``2 x layers x kv_heads x head_dim x bytes``, beside a
minimal hand-written cached decoder in plain PyTorch (the baseline row), and one layer's one-token step against its
own projections and SDPA written out by hand (``bench_decoding.one_token_cost``).

This file is the command line; the work is in the modules beside it: ``bench_implementations`` (the eight
implementations, the configuration, the agreement check), ``bench_timing`` (interleaved timing, peak memory, the
sweep), ``bench_decoding`` (the decoders, the hand-written baseline, the one-token cost) and ``bench_report``
(the machine, tables, CSV and JSON).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:  # the bench_* modules beside this file, however this file is loaded (tests load it by path)
    sys.path.insert(0, HERE)

import torch  # noqa: E402
from bench_decoding import (  # noqa: E402, F401  (re-exported: the tests and notebooks reach them here)
    DECODE_PATHS,
    QUICK_DECODE,
    DecodeConfig,
    Decoder,
    PlainDecoder,
    check_decoding,
    decode_benchmark,
    decode_ms,
    one_token_cost,
)
from bench_implementations import (  # noqa: E402, F401
    BASELINE,
    DTYPES,
    IMPLEMENTATIONS,
    PASSES,
    TOLERANCE,
    Config,
    build,
    check_agreement,
    unsupported,
)
from bench_report import (  # noqa: E402, F401
    format_decode,
    format_one_token,
    format_sweep,
    format_table,
    machine,
    write_csv,
    write_decode,
    write_json,
    write_sweep_csv,
)
from bench_timing import Row, _peak_child, peak_extra_bytes, sweep, time_passes  # noqa: E402, F401

from mha_lib import KVCache  # noqa: E402, F401
from mha_lib.measure import loglog_slope, saved_for_backward_bytes, table_bytes, time_rounds  # noqa: E402, F401

REFERENCE = {"batch": 8, "tokens": 1024, "d_model": 768, "heads": 12}
QUICK = {"batch": 2, "tokens": 64, "d_model": 64, "heads": 4}
SWEEP_TOKENS = (128, 256, 512, 1024, 2048)
QUICK_SWEEP_TOKENS = (32, 64, 128)


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
    calls, rounds = (5, 3) if args.quick else (20, 30)
    print(f"# one token through one layer (d_model={decode_config.d_model}, h={decode_config.heads}, no RoPE) with a"
          f" KV cache of T tokens, against its four projections + cache append + F.scaled_dot_product_attention by"
          f" hand; us per call, {rounds} interleaved rounds of {calls} calls, threads={torch.get_num_threads()}")
    one_token = one_token_cost(decode_config.tokens, d_model=decode_config.d_model, heads=decode_config.heads,
                               calls=calls, rounds=rounds, device=decode_config.device, dtype=decode_config.dtype)
    print(format_one_token(one_token))
    write_decode(rows, decode_config, args.decode_csv, args.decode_json,
                 {"load_average_1m": [round(load_before, 2), round(load_after, 2)], "one_token": one_token})


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
