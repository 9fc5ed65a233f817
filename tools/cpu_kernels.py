"""Run strict nbval under each CPU kernel set this machine offers, single-threaded: the same outputs on any CPU.

Usage: ``python tools/cpu_kernels.py [--sets default,avx2] [pytest args, e.g. notebooks/08_*.ipynb]``
(``make test-cpus``; with no pytest args, every notebook).

PyTorch picks its CPU kernels by instruction set (``ATEN_CPU_CAPABILITY``), and so do MKL's BLAS
(``MKL_ENABLE_INSTRUCTIONS``) and oneDNN (``ONEDNN_MAX_CPU_ISA``): a set limits all three together, or the run
is not the CPU it claims to be. ``default`` is PyTorch's portable code (the nearest stand-in for an ARM laptop),
``avx2`` most AMD and older Intel CPUs, ``avx512`` recent Intel servers. A set above what this CPU runs natively is
skipped (PyTorch would accept the variable and then fail with an illegal instruction). Each run is checked to use
the kernels it names before its notebooks run. No setting reproduces every CPU bit for bit (MKL also picks code
by CPU vendor, and ARM has kernels of its own): the notebooks print what is stable, rounded, and keep the rest in
ignored cells beside asserts with margins.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
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
CAPABILITY = "import torch; print(torch.backends.cpu.get_cpu_capability())"


def _capability(env: dict[str, str] | None = None) -> str:
    """The kernel set PyTorch reports under ``env`` (``DEFAULT``, ``AVX2``, ``AVX512``, or an ARM name)."""
    out = subprocess.run([sys.executable, "-c", CAPABILITY], env=env, check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def offered() -> list[str]:
    """The kernel sets this CPU runs: ``default`` always, then each x86 set up to PyTorch's own choice."""
    clean = {k: v for k, v in os.environ.items() if k not in KERNEL_SETS["default"]}
    native = _capability(clean).lower()
    if native not in ORDER:  # an ARM CPU (e.g. SVE256) or one PyTorch gives no x86 set: the portable kernels only
        return ["default"]
    return ORDER[: ORDER.index(native) + 1]


def environment(name: str) -> dict[str, str]:
    """This process's environment with kernel set ``name`` and one intra-op thread."""
    return {**os.environ, **KERNEL_SETS[name], **ONE_THREAD}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", help="comma-separated kernel sets (default: every one this CPU offers)")
    args, pytest_args = parser.parse_known_args(argv)
    available = offered()
    wanted = args.sets.split(",") if args.sets else available
    unknown = [s for s in wanted if s not in KERNEL_SETS]
    if unknown:
        parser.error(f"--sets: unknown {unknown}; choose from {', '.join(KERNEL_SETS)}")
    failed = []
    for name in wanted:
        if name not in available:
            print(f"SKIPPED kernel set {name}: this CPU runs {', '.join(available)}", flush=True)
            continue
        env = environment(name)
        reported = _capability(env)
        if reported.lower() != name:
            print(f"FAILED kernel set {name}: PyTorch reports {reported}", flush=True)
            failed.append(name)
            continue
        command = [sys.executable, "-m", "pytest", *(pytest_args or ["notebooks"])]
        print(f"=== kernel set {name} ({reported}), one thread: {' '.join(command[2:])}", flush=True)
        if subprocess.run(command, env=env, cwd=ROOT).returncode:
            failed.append(name)
    print(f"kernel sets failed: {', '.join(failed)}" if failed else f"every kernel set passed: {', '.join(wanted)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
