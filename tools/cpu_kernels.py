"""Run strict nbval under each CPU kernel set this machine offers, single-threaded: the same outputs on any CPU.

Usage: ``python tools/cpu_kernels.py [--sets default,avx2] [--jobs N] [pytest args, e.g. notebooks/08_*.ipynb]``
(``make test-cpus``; with no pytest args, every notebook).

PyTorch picks its CPU kernels by instruction set (``ATEN_CPU_CAPABILITY``), and so do MKL's BLAS
(``MKL_ENABLE_INSTRUCTIONS``) and oneDNN (``ONEDNN_MAX_CPU_ISA``): a set limits all three together, or the run
is not the CPU it claims to be. ``default`` is PyTorch's portable code (the nearest stand-in for an ARM laptop),
``avx2`` most AMD and older Intel CPUs, ``avx512`` recent Intel servers. A set above what this CPU runs natively is
skipped (PyTorch accepts the variable and reports the set, but this CPU cannot run its code). Before its notebooks
run, each set is probed in a fresh interpreter: PyTorch must report the set, and oneDNN (and MKL, where its
verbose line names an instruction set: on Intel CPUs) must stay within it. No setting reproduces every CPU bit for
bit (MKL also picks code by CPU vendor, and ARM has kernels of its own): the notebooks print what is stable,
rounded, and keep the rest in ignored cells beside asserts with margins.

``--list`` prints the sets a run would take (after ``--sets`` and ``--skip-native``) and runs none: CI hands them
out to its other-Python jobs, one set's notebooks to each (``.ci/run``).

``--skip-native`` (CI) leaves out the set that is exactly what this CPU runs by itself (``avx2`` on an AVX2-only
CPU): ``make test`` has just run every notebook strictly with those kernels. On a CPU with AMX no set is.

Every run has one intra-op thread (``OMP_NUM_THREADS=1``, ``MKL_NUM_THREADS=1``), so the sets run side by side,
``--jobs`` at a time (default: the cores this process may use). A set that has more cores than it needs to itself
(one set on two cores) spreads its notebooks over them with ``pytest -n K --dist loadfile``, unless the pytest
args choose (``-n``, ``-p no:xdist``, ``--dist``). Each set's output goes to a log; a failed set's log is printed
whole, then a summary: each set's counts and its failing cells.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["default", "avx2", "avx512"]  # from the portable kernels up
KERNEL_SETS = {
    "default": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "avx512": {"ATEN_CPU_CAPABILITY": "avx512", "MKL_ENABLE_INSTRUCTIONS": "AVX512",
               "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
}
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# x86 instruction sets from the oldest up, as oneDNN's and MKL's verbose lines name them, and each set's ceiling.
# The first name found in a verbose line counts, so the highest come first.
ISA_RANKS = [("AMX", 5), ("AVX-512", 4), ("AVX512", 4), ("AVX2", 3), ("AVX", 2), ("SSE4.2", 1), ("SSE4.1", 1)]
CEILING = {"default": 1, "avx2": 3, "avx512": 4}
# One fresh interpreter: PyTorch's kernel set, then one oneDNN convolution and one MKL matrix product, verbose.
PROBE = """
import torch
print("capability:", torch.backends.cpu.get_cpu_capability(), flush=True)
with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
    torch.nn.functional.conv2d(torch.ones(8, 16, 32, 32), torch.ones(16, 16, 3, 3))  # large enough for oneDNN
a = torch.ones(64, 64)
a @ a
"""


def _probe_output(env: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-c", PROBE], env={**env, "MKL_VERBOSE": "1"}, check=True,
                         capture_output=True, text=True, timeout=300)
    return out.stdout


def parse_probe(text: str) -> dict[str, str]:
    """What a probe's output says: ``capability`` (PyTorch), ``onednn`` and ``mkl`` (the ISA named, or '')."""
    found = {"capability": "", "onednn": "", "mkl": ""}
    for line in text.splitlines():
        if line.startswith("capability:"):
            found["capability"] = line.split(":", 1)[1].strip()
        elif "onednn_verbose" in line and ",isa:" in line:
            found["onednn"] = found["onednn"] or line.split(",isa:", 1)[1].strip()
        elif line.startswith("MKL_VERBOSE") and " architecture " in line:
            # "... for Intel(R) 64 architecture Intel(R) Advanced Vector Extensions 2 (Intel(R) AVX2) enabled
            # processors, Lnx ..." on Intel; "... architecture Intel(R) Architecture processors, ..." elsewhere
            found["mkl"] = found["mkl"] or line.split(" architecture ", 1)[1].split(",")[0].strip()
    return found


def isa_rank(name: str) -> int | None:
    """How high an instruction set is (1 SSE4, 2 AVX, 3 AVX2, 4 AVX-512, 5 AMX); None if it is not an x86 one."""
    for key, rank in ISA_RANKS:
        if key in name.upper().replace("INTEL(R) ", ""):
            return rank
    return None


def set_name(capability: str) -> str:
    """PyTorch's name of its kernel set as ours: ``DEFAULT`` (``NO AVX`` in older releases, 2.5 too) is ``default``."""
    name = capability.strip().lower()
    return "default" if name == "no avx" else name


def problems_of(name: str, probe: dict[str, str]) -> list[str]:
    """Why a probe under kernel set ``name`` is not that set (empty: it is)."""
    problems = []
    if set_name(probe["capability"]) != name:
        problems.append(f"PyTorch reports {probe['capability'] or 'nothing'}")
    for library in ("onednn", "mkl"):
        rank = isa_rank(probe[library]) if probe[library] else None
        if rank is not None and rank > CEILING[name]:
            problems.append(f"{'oneDNN' if library == 'onednn' else 'MKL'} runs {probe[library]}")
    return problems


def native_probe() -> dict[str, str]:
    """What PyTorch, oneDNN and MKL pick here by themselves (a probe with no kernel-set variable)."""
    clean = {k: v for k, v in os.environ.items() if k not in KERNEL_SETS["default"]}
    return parse_probe(_probe_output(clean))


def native_capability() -> str:
    """The kernel set PyTorch picks here by itself (``DEFAULT``, ``AVX2``, ``AVX512``, or an ARM name)."""
    return native_probe()["capability"]


def same_as_native(probe: dict[str, str]) -> str | None:
    """The kernel set that is exactly what this CPU runs by itself, or None.

    On an AVX2-only CPU the ``avx2`` set is the native run (PyTorch, oneDNN and MKL all stay within AVX2), so
    ``make test``, which runs every notebook natively, has already run it. On a CPU with AMX, oneDNN's own
    choice (AMX) is above every set's ceiling, so no set is the native run.
    """
    name = set_name(probe["capability"])
    if name not in ORDER or problems_of(name, probe):
        return None
    return name


def offered(native: str | None = None) -> list[str]:
    """The kernel sets a CPU runs: ``default`` always, then each x86 set up to PyTorch's own choice (``native``)."""
    native = set_name(native if native is not None else native_capability())
    if native not in ORDER:  # an ARM CPU (e.g. SVE256) or one PyTorch gives no x86 set: the portable kernels only
        return ["default"]
    return ORDER[: ORDER.index(native) + 1]


def environment(name: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment) with kernel set ``name`` and one intra-op thread."""
    return {**(os.environ if base is None else base), **KERNEL_SETS[name], **ONE_THREAD}


def verify(name: str) -> list[str]:
    """Probe kernel set ``name`` in a fresh interpreter; why it is not that set (empty: it is)."""
    return problems_of(name, parse_probe(_probe_output(environment(name))))


def paths_in(pytest_args: list[str], root: Path = ROOT) -> list[Path]:
    """The files and folders the pytest args name (``path::test`` counts as its path)."""
    found = []
    for arg in pytest_args:
        if not arg.startswith("-"):
            path = root / arg.split("::")[0]
            if path.exists():
                found.append(path)
    return found


def notebook_count(paths: list[Path]) -> int:
    """How many notebooks these files and folders hold."""
    return sum(len(list(p.rglob("*.ipynb"))) if p.is_dir() else p.suffix == ".ipynb" for p in paths)


def command(pytest_args: list[str], workers: int, root: Path = ROOT) -> list[str]:
    """The pytest command of one set: the args (no path named: ``notebooks``), over ``workers`` where it helps.

    The notebooks are spread with ``-n K --dist loadfile`` (each notebook's cells stay in one kernel) when there
    are ``workers > 1`` and at least two notebooks; otherwise xdist is left out (``-p no:xdist``), as it is when
    the args choose themselves (``-n``, ``--dist``, ``-p no:xdist``).
    """
    paths = paths_in(pytest_args, root)
    args = list(pytest_args) if paths else [*pytest_args, "notebooks"]
    chooses = any(a.startswith(("-n", "--numprocesses", "--dist", "-pno:xdist")) or a == "no:xdist"
                  for a in pytest_args)
    if chooses:
        return [sys.executable, "-m", "pytest", *args]
    workers = min(workers, notebook_count(paths or [root / "notebooks"]))
    spread = ["-n", str(workers), "--dist", "loadfile"] if workers > 1 else ["-p", "no:xdist"]
    return [sys.executable, "-m", "pytest", *spread, *args]


@dataclass
class Outcome:
    """One set's run: its pytest summary line, the failing items, and the log."""

    name: str
    returncode: int
    seconds: float
    summary: str = ""
    failed: list[str] = field(default_factory=list)
    log: str = ""


SUMMARY = re.compile(r"^=+ (.*\b(passed|failed|error|errors|skipped|no tests ran)\b.*) =+$")


def parse_pytest(text: str) -> tuple[str, list[str]]:
    """pytest's closing summary (``"1 failed, 279 passed in 96.1s"``) and its ``FAILED``/``ERROR`` items."""
    summary = ""
    failed = []
    for line in text.splitlines():
        clean = re.sub(r"\x1b\[[0-9;]*m", "", line)
        match = SUMMARY.match(clean.strip())
        if match:
            summary = match.group(1)
        if clean.startswith(("FAILED ", "ERROR ")):
            failed.append(clean.split(" - ", 1)[0])
    return summary, failed


def run_set(name: str, cmd: list[str], log_dir: Path, echo: bool) -> Outcome:
    """Run one set's pytest; its output into ``log_dir/NAME.log`` (and to stdout as it comes, if ``echo``)."""
    start = time.perf_counter()
    log_path = log_dir / f"{name}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(cmd, env=environment(name), cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, bufsize=1)
        assert process.stdout is not None
        for line in process.stdout:
            log.write(line)
            if echo:
                print(line, end="", flush=True)
        process.wait()
    text = log_path.read_text()
    summary, failed = parse_pytest(text)
    return Outcome(name, process.returncode, time.perf_counter() - start, summary, failed, text)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", help="comma-separated kernel sets (default: every one this CPU offers)")
    parser.add_argument("--jobs", type=int, default=cores(), help="single-threaded runs at a time (default: cores)")
    parser.add_argument("--logs", type=Path, help="folder for each set's log (default: a temporary one)")
    parser.add_argument("--skip-native", action="store_true",
                        help="skip the set that is exactly this CPU's own run (CI: `make test` ran it)")
    parser.add_argument("--list", action="store_true",
                        help="print the sets that would run, space-separated, and run none (CI hands them out)")
    args, pytest_args = parser.parse_known_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    native = native_probe()
    available = offered(native["capability"])
    if args.list:
        skipped = same_as_native(native) if args.skip_native else None
        chosen = args.sets.split(",") if args.sets else available
        print(" ".join(s for s in chosen if s in available and s != skipped))
        return 0
    wanted = args.sets.split(",") if args.sets else available
    unknown = [s for s in wanted if s not in KERNEL_SETS]
    if unknown:
        parser.error(f"--sets: unknown {unknown}; choose from {', '.join(KERNEL_SETS)}")
    outcomes: list[Outcome] = []
    runnable = []
    for name in wanted:
        if name not in available:
            print(f"SKIPPED kernel set {name}: this CPU runs {', '.join(available)}", flush=True)
            continue
        if args.skip_native and name == same_as_native(native):
            print(f"SKIPPED kernel set {name}: it is this CPU's own run, which `make test` ran", flush=True)
            continue
        problems = verify(name)
        if problems:
            print(f"FAILED kernel set {name}: {'; '.join(problems)}", flush=True)
            outcomes.append(Outcome(name, 1, 0.0, "not that kernel set: " + "; ".join(problems)))
            continue
        runnable.append(name)
    parallel = min(args.jobs, len(runnable)) or 1
    workers = max(1, args.jobs // parallel)
    lock = threading.Lock()

    def one(name: str, log_dir: Path) -> Outcome:
        cmd = command(pytest_args, workers)
        where = f" (log: {log_dir / name}.log)" if args.logs else ""
        with lock:
            print(f"=== kernel set {name}, one thread per process: {' '.join(cmd[2:])}{where}", flush=True)
        outcome = run_set(name, cmd, log_dir, echo=parallel == 1)
        with lock:
            if outcome.returncode and parallel > 1:
                print(f"----- kernel set {name} failed: its whole log -----\n{outcome.log}", flush=True)
            print(f"=== kernel set {name}: exit {outcome.returncode} after {outcome.seconds:.0f} s: "
                  f"{outcome.summary or 'no pytest summary'}", flush=True)
        return outcome

    with tempfile.TemporaryDirectory(prefix="cpu-kernels-") as scratch:
        log_dir = args.logs or Path(scratch)
        log_dir.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            outcomes += list(pool.map(one, runnable, [log_dir] * len(runnable)))
    print("\nkernel set  exit  seconds  result")
    for o in sorted(outcomes, key=lambda o: ORDER.index(o.name)):
        print(f"{o.name:<10}  {o.returncode:>4}  {o.seconds:>7.0f}  {o.summary or 'no pytest summary'}")
        for item in o.failed:
            print(f"{'':<10}  {item}")
    failed = [o.name for o in outcomes if o.returncode]
    print(f"kernel sets failed: {', '.join(failed)}" if failed
          else f"every kernel set passed: {', '.join(o.name for o in outcomes)}")
    if not outcomes:
        print("no kernel set ran")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
