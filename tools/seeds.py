"""Retrain every model of the training notebooks with other seeds and run all their asserts (``make test-seeds``).

Usage: ``python tools/seeds.py [--runs 1-5] [--sets default,avx2] [--pairing all|rotate] [--jobs N]
[notebooks/NN_*.ipynb ...]``.

A training notebook takes every training seed from ``mha_lib.notebook.training_seed(committed)``; with
``MHA_TRAINING_SEED=s`` each becomes ``1000 s + committed``. This runs each such notebook (a code cell calls
``training_seed(``; none named: every one in ``notebooks/``) top to bottom for each run ``s`` and each kernel set
(``tools/cpu_kernels.py``, one thread), in memory, ``--jobs`` runs side by side. Every cell runs, as under nbval,
so one run reports every failing cell: an error (an assert) or stderr, named by index, id and heading, with the
line that raised and the error. The claims, asserts with margins, must hold for every seed.

A checked output (a cell without ``# NBVAL_IGNORE_OUTPUT``) must also print what the committed run printed, as
under strict nbval: one that changes with the seed depends on training or on a model's random start, and another
CPU's kernels change both. They can draw the start differently (CI's CPU printed other numbers for notebook 06's
untrained model), and kernel sets that draw the very same start still train apart, rounding differently at every
step: trained numbers can move as far as with another seed. That is why each seed runs under each kernel set
(``--pairing all``, the default). ``--pairing rotate`` (CI) runs each seed once, the kernel sets taking turns
(run 1 under the first set, run 2 under the second...): every seed and every kernel set is still tried, and a
claim that fails for some seed or set still fails, at a third of the cost on a CPU with three sets; the
committed seed runs under every set in ``make test-cpus``. The
text outputs are compared (stdout, ``text/plain``, ``text/html``), after the suite's nbval sanitising; figures are not.
"""

from __future__ import annotations

import argparse
import configparser
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from traitlets.config import Config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cell_report import problems, where  # noqa: E402
from cpu_kernels import KERNEL_SETS, ONE_THREAD, ORDER, cores, offered, verify  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CALL = re.compile(r"\btraining_seed\s*\(")
RUN_VARIABLE = "MHA_TRAINING_SEED"  # mha_lib.notebook.TRAINING_SEED_VARIABLE (not imported: the driver needs no torch)


def calls_training_seed(path: Path) -> bool:
    """True if a code cell of the notebook calls ``training_seed(...)`` (not in a comment, not in markdown)."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            code = "\n".join(line.split("#", 1)[0] for line in cell.source.splitlines())
            if CALL.search(code):
                return True
    return False


def training_notebooks(folder: Path = ROOT / "notebooks") -> list[Path]:
    """The notebooks of the series (``NN_*.ipynb``) that call ``training_seed(...)``, in order."""
    return [p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb")) if calls_training_seed(p)]


def parse_runs(text: str) -> list[int]:
    """``"1-5"`` -> [1, 2, 3, 4, 5]; ``"2,4"``, ``"1-3,5"`` too. A run is a whole number >= 1."""
    runs: list[int] = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            low, high = int(first), int(last if dash else first)
        except ValueError:
            raise argparse.ArgumentTypeError(f"runs are whole numbers or ranges such as 1-5, got {text!r}") from None
        if low < 1 or high < low:
            raise argparse.ArgumentTypeError(f"runs start at 1 and ranges go up (1-5), got {part.strip()!r}")
        runs += [r for r in range(low, high + 1) if r not in runs]
    return runs


SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"
TEXT = ("text/plain", "text/html")
IGNORED = re.compile(r"^\s*#+\s*NBVAL_IGNORE_OUTPUT\s*$", re.MULTILINE)  # nbval's marker: alone on its line


def sanitizers() -> list[tuple[re.Pattern[str], str]]:
    """The suite's nbval sanitising rules (``tests/nbval_sanitize.cfg``): addresses, figure sizes, Styler ids."""
    config = configparser.ConfigParser()
    config.read(SANITIZE)
    return [(re.compile(config[name]["regex"]), config[name]["replace"]) for name in config.sections()]


def checked_text(cell: dict, rules: list[tuple[re.Pattern[str], str]]) -> list[str]:
    """What nbval compares of a code cell, as text: its stdout and each output's text data, sanitised."""
    stdout, texts = "", []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            stdout += "".join(output.get("text", ""))  # one stream however the kernel split it, as nbval does
        elif output.get("output_type") in ("execute_result", "display_data"):
            texts += ["".join(output["data"][kind]) for kind in TEXT if kind in output.get("data", {})]
    texts = [stdout, *texts]
    for pattern, replace in rules:
        texts = [pattern.sub(replace, t) for t in texts]
    return texts


def changed_outputs(committed: list, ran: list) -> list[str]:
    """Each checked code cell whose text output differs from the committed one, with its first differing line."""
    rules = sanitizers()
    found = []
    for index, (old, new) in enumerate(zip(committed, ran)):
        if old.get("cell_type") != "code" or IGNORED.search(old.get("source", "")):
            continue
        before, after = checked_text(old, rules), checked_text(new, rules)
        if before != after:
            lines = [(a, b) for a, b in zip("".join(before).splitlines(), "".join(after).splitlines()) if a != b]
            detail = f"{lines[0][0].strip()[:80]!r} became {lines[0][1].strip()[:80]!r}" if lines else "other outputs"
            found.append(f"{where(ran, index)}: a checked output changes with the seed: {detail}")
    return found


def pairs(runs: list[int], sets: list[str], pairing: str) -> list[tuple[int, str]]:
    """The (run, kernel set) pairs to try: every combination (``all``) or each run once, sets in turn (``rotate``)."""
    if pairing not in ("all", "rotate"):
        raise ValueError(f"pairing must be 'all' or 'rotate', got {pairing!r}")
    if pairing == "all":
        return [(run, s) for run in runs for s in sets]
    return [(run, sets[i % len(sets)]) for i, run in enumerate(runs)]


def run_environment(run: int, kernels: str) -> dict[str, str]:
    """What one run's kernel sees on top of this process's environment."""
    return {**KERNEL_SETS[kernels], **ONE_THREAD, RUN_VARIABLE: str(run)}


@dataclass
class Result:
    """One notebook, one training run, one kernel set: its problems (empty: every cell passed)."""

    notebook: str
    run: int
    kernels: str
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.notebook} run {self.run} {self.kernels}"


def check(path: Path, run: int, kernels: str, timeout: int = 300) -> Result:
    """Run one notebook with training run ``run`` under kernel set ``kernels``, every cell, in memory."""
    os.environ.update(run_environment(run, kernels))  # a worker process of its own: the kernel inherits it
    nb = nbformat.read(path, as_version=4)
    committed = [dict(cell) for cell in nbformat.read(path, as_version=4).cells]
    result = Result(path.stem, run, kernels)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="seeds-") as sockets:  # local sockets: no TCP, no TCP warning
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(path.parent)}},
                                config=Config({"KernelManager": {"transport": "ipc", "ip": f"{sockets}/kernel"}}))
        try:
            client.execute()
        except Exception as err:  # a timeout or a dead kernel stops the run; what ran so far is still reported
            first = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
            result.problems.append(f"the run stopped: {type(err).__name__}: {first}")
    result.problems[:0] = problems(nb.cells) + changed_outputs(committed, nb.cells)
    result.seconds = time.perf_counter() - start
    return result


def summary(results: list[Result]) -> list[str]:
    """A table: one row per notebook and kernel set, one column per run (ok / the number of failing cells)."""
    runs = sorted({r.run for r in results})
    rows = [f"{'notebook':<28} {'kernels':<8} " + " ".join(f"run {r:<3}" for r in runs)]
    keys = sorted({(r.notebook, r.kernels) for r in results}, key=lambda k: (k[0], ORDER.index(k[1])))
    cells = {(r.notebook, r.kernels, r.run): r for r in results}
    for notebook, kernels in keys:
        marks = []
        for run in runs:
            r = cells.get((notebook, kernels, run))
            marks.append("-" if r is None else "ok" if not r.problems else f"{len(r.problems)} bad")
        rows.append(f"{notebook:<28} {kernels:<8} " + " ".join(f"{m:<7}" for m in marks))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--runs", type=parse_runs, default=parse_runs("1-5"), help="training runs (default 1-5)")
    parser.add_argument("--sets", help="kernel sets (default: every one this CPU offers)")
    parser.add_argument("--pairing", choices=("all", "rotate"), default="all",
                        help="every run under every set (all, the default) or each run once, sets in turn (rotate)")
    parser.add_argument("--jobs", type=int, default=cores(), help="runs side by side (default: cores)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell (default 300)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or training_notebooks()
    if not paths:
        print("no notebook calls training_seed(...): nothing to retrain")
        return 0
    available = offered()
    sets = args.sets.split(",") if args.sets else available
    unknown = [s for s in sets if s not in KERNEL_SETS]
    if unknown:
        parser.error(f"--sets: unknown {unknown}; choose from {', '.join(KERNEL_SETS)}")
    for name in [s for s in sets if s not in available]:
        print(f"SKIPPED kernel set {name}: this CPU runs {', '.join(available)}")
    sets = [s for s in sets if s in available]
    for name in sets:
        wrong = verify(name)
        if wrong:
            print(f"FAILED kernel set {name} is not that set here: {'; '.join(wrong)}")
            return 1
    chosen = pairs(args.runs, sets, args.pairing)
    jobs = [(p, run, s) for p in paths for run, s in chosen]
    print(f"{len(jobs)} runs, {args.jobs} at a time: {', '.join(p.stem for p in paths)} x "
          + ("runs " + ",".join(map(str, args.runs)) + " x kernel sets " + ", ".join(sets) if args.pairing == "all"
             else "runs " + ", ".join(f"{run} ({s})" for run, s in chosen)), flush=True)
    start = time.perf_counter()
    results = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(check, p, run, s, args.timeout) for p, run, s in jobs]
        for future in as_completed(futures):
            result = future.result()
            results.append(result)
            status = "ok" if not result.problems else f"FAILED, {len(result.problems)} failing cell(s)"
            print(f"[{len(results)}/{len(jobs)}] {result.label} ({result.seconds:.0f} s): {status}", flush=True)
            for problem in result.problems:
                print(f"    - {problem}", flush=True)
    print()
    print("\n".join(summary(results)))
    failed = [r for r in results if r.problems]
    if failed:
        print("\nfailing cells:")
        for r in sorted(failed, key=lambda r: (r.notebook, r.run, ORDER.index(r.kernels))):
            for problem in r.problems:
                print(f"  {r.label}: {problem}")
    elapsed = time.perf_counter() - start
    print(f"{len(failed)} of {len(results)} runs failed ({elapsed:.0f} s)" if failed
          else f"all {len(results)} runs passed ({elapsed:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
