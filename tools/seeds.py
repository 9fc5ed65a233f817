"""Retrain every model of the training notebooks with other seeds and run all their asserts (``make test-seeds``).

Usage: ``python tools/seeds.py [--runs 1-5] [--sets default,avx2] [notebooks/NN_*.ipynb ...]``.

A training notebook takes every training seed from ``mha_lib.notebook.training_seed(committed)``; with
``MHA_TRAINING_SEED=s`` each becomes ``1000 s + committed``. This runs each such notebook top to bottom for each
run ``s`` and each kernel set (``tools/cpu_kernels.py``), in memory, and fails if any cell raises or writes stderr.
Outputs are not compared: only the committed seed's outputs are (``make test``); the claims, asserts with
margins, must hold for every seed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_kernels import KERNEL_SETS, ONE_THREAD, offered  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def training_notebooks() -> list[Path]:
    """The notebooks that call ``training_seed(...)``."""
    return [p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) if "training_seed(" in p.read_text()]


def _runs(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def check(path: Path, run: int, kernels: str, timeout: int = 600) -> tuple[str, list[str]]:
    """Run one notebook with training run ``run`` under kernel set ``kernels``; its label and its problems."""
    os.environ.update({**KERNEL_SETS[kernels], **ONE_THREAD, "MHA_TRAINING_SEED": str(run)})
    nb = nbformat.read(path, as_version=4)
    label = f"{path.stem} run {run} {kernels}"
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    problems = []
    try:
        client.execute()
    except CellExecutionError as err:
        lines = [line for line in str(err).strip().splitlines() if line.strip()]
        problems.append(f"a cell raised: {lines[-1][:300]}")
        source = next((c.source for c in nb.cells if c.cell_type == "code" and any(
            o.get("output_type") == "error" for o in c.get("outputs", []))), "")
        problems.append(f"  in: {source.strip().splitlines()[0][:120] if source.strip() else '?'}")
    for index, cell in enumerate(nb.cells):
        text = "".join(o.get("text", "") for o in cell.get("outputs", [])
                       if o.get("output_type") == "stream" and o.get("name") == "stderr")
        if text.strip() and not cell.source.startswith("# NBVAL_IGNORE_OUTPUT\n# Setup"):
            problems.append(f"cell {index} wrote stderr: {text.strip().splitlines()[0][:200]}")
    return f"{label} ({time.perf_counter() - start:.0f} s)", problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--runs", default="1-5", help="training runs, e.g. 1-5 or 3 (default 1-5)")
    parser.add_argument("--sets", help="kernel sets (default: every one this CPU offers)")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks run side by side (default 2)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or training_notebooks()
    sets = args.sets.split(",") if args.sets else offered()
    jobs = [(p, run, s) for p in paths for run in _runs(args.runs) for s in sets]
    print(f"{len(jobs)} runs: {[p.stem for p in paths]} x runs {args.runs} x kernel sets {sets}", flush=True)
    failed = 0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for label, problems in pool.map(check, *zip(*jobs)):
            print(f"{label}: {'ok' if not problems else 'FAILED'}", flush=True)
            for problem in problems:
                print(f"  - {problem}", flush=True)
            failed += bool(problems)
    print(f"{failed} of {len(jobs)} runs failed" if failed else f"all {len(jobs)} runs passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
