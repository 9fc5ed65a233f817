"""The report: the machine that produced the numbers, fixed-width tables, CSV and JSON."""

from __future__ import annotations

import csv
import datetime
import json
import os
import platform
from dataclasses import asdict
from pathlib import Path

import torch
from bench_decoding import DecodeConfig
from bench_implementations import Config
from bench_timing import Row


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


def format_decode(rows: list[dict]) -> str:
    """A fixed-width text table of the decoding benchmark: per (T, variant), the speed-up over the uncached path and
    the time relative to the hand-written cached decoder (``x hand``: 1.00 for that row, the baseline), by the wall
    clock and by the thread's CPU time (``cpu``: what other processes on a shared machine cannot add to)."""
    lines = [f"{'T':>6}{'variant':>9}{'kv_heads':>10}{'path':>14}{'median ms':>11}{'tokens/s':>10}{'best tok/s':>12}"
             f"{'x uncached':>12}{'x hand':>8}{'cpu ms':>9}{'x hand (cpu)':>14}{'cache KiB/token':>17}"]
    uncached = {(r["tokens"], r["variant"]): r["median_ms"] for r in rows if r["path"] == "uncached"}
    by_hand = {(r["tokens"], r["variant"]): r for r in rows if r["path"] == "hand-written"}
    for r in rows:
        speedup = uncached[(r["tokens"], r["variant"])] / r["median_ms"]
        hand = by_hand[(r["tokens"], r["variant"])]
        cost, cpu_cost = r["median_ms"] / hand["median_ms"], r["cpu_median_ms"] / hand["cpu_median_ms"]
        lines.append(f"{r['tokens']:>6}{r['variant']:>9}{r['kv_heads']:>10}{r['path']:>14}{r['median_ms']:>11.1f}"
                     f"{r['tokens_per_s']:>10.1f}{r['best_tokens_per_s']:>12.1f}{speedup:>12.2f}{cost:>8.2f}"
                     f"{r['cpu_median_ms']:>9.1f}{cpu_cost:>14.2f}{r['cache_kib_per_token']:>17.3f}")
    return "\n".join(lines)


def format_one_token(rows: list[dict]) -> str:
    """A fixed-width text table of ``one_token_cost``: us per call, the layer's ratio to the hand-written step."""
    cpu = "cpu_ratio" in rows[0]
    lines = [f"{'cached T':>9}{'layer us':>10}{'by hand us':>12}{'x hand':>8}{'best x hand':>13}"
             + (f"{'layer cpu us':>14}{'by hand cpu us':>16}{'x hand (cpu)':>14}{'best (cpu)':>12}" if cpu else "")]
    for r in rows:
        lines.append(f"{r['cached_tokens']:>9}{r['layer_median_us']:>10.1f}{r['by_hand_median_us']:>12.1f}"
                     f"{r['ratio']:>8.2f}{r['best_ratio']:>13.2f}"
                     + (f"{r['cpu_layer_median_us']:>14.1f}{r['cpu_by_hand_median_us']:>16.1f}{r['cpu_ratio']:>14.2f}"
                        f"{r['cpu_best_ratio']:>12.2f}" if cpu else ""))
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
