"""Run every notebook as Colab would: alone in an empty folder, on a Colab-like runtime, through its setup cell.

Usage: ``python tools/colab_sim.py [notebooks/NN_*.ipynb ...]`` (``make test-colab``). Exits non-zero on a failure.

A venv ``colab-sim/venv`` (Python 3.11) gets only what Colab ships (requirements-colab.txt: ipywidgets 7.7.1,
ipykernel 6, notebook 6.5, ...), and a fake ``google.colab`` module that its kernel imports at start-up, so the
setup cell's Colab branch runs. Each notebook is copied alone into an empty folder, its install line pointed at a
wheel built from this checkout instead of GitHub, and executed top to bottom; mha_lib and d2l are uninstalled
between notebooks, so each setup cell really installs them. A notebook passes if no cell raises, no cell but the
setup cell writes stderr, every code cell that shows a figure in the committed notebook shows one here
(image/png), no markdown figure is an attachment or a file beside the notebook, and every explorer redraws
when its controls change.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from find_python import find  # noqa: E402
from setup_cell import REPOSITORY  # noqa: E402

SIM = ROOT / "colab-sim"
VENV = SIM / "venv"
KERNEL = "colab-sim"
# A markdown image: Colab shows https:// ones only (no attachments, no file beside the notebook).
MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)")
FAKE_COLAB = '"""Stand-in for Colab\'s module: its presence is how the setup cell knows it runs on Colab."""\n'
# Drives every explorer the notebook left in its namespace, as a learner clicking would (ipywidgets 7 and 8).
EXPLORER_CHECK = """
from mha_lib.explorer import AttentionExplorer
_explorers = [v for v in list(globals().values()) + list(Out.values()) if isinstance(v, AttentionExplorer)]
assert _explorers, "no AttentionExplorer in the notebook's namespace"
_e = _explorers[-1]
def _shown():
    return repr(_e.output.outputs)
_before = _shown()
_e.text.value = " ".join(reversed(_e.text.value.split()))
assert _shown() != _before, "no redraw after a new sentence"; _before = _shown()
_e.head.value = next(v for _, v in _e.head.options if v != _e.head.value) if isinstance(_e.head.options[0], tuple) \\
    else next(v for v in _e.head.options if v != _e.head.value)
assert _shown() != _before, "no redraw after another head"; _before = _shown()
_e.causal.value = not _e.causal.value
assert _shown() != _before, "no redraw after toggling causal"
print("explorer redraws on sentence, head and causal")
"""


def run(cmd: list[str], **kwargs) -> None:
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def build_runtime() -> Path:
    """The Colab-like venv (rebuilt when requirements-colab.txt changes), its kernelspec and the mha_lib wheel."""
    stamp = VENV / ".installed"
    wanted = (ROOT / "requirements-colab.txt").read_text()
    if not stamp.exists() or stamp.read_text() != wanted:
        python = find("3.11")
        if python is None:
            raise SystemExit("Colab simulation: Python 3.11 (Colab's) is not installed")
        shutil.rmtree(VENV, ignore_errors=True)
        run([python, "-m", "venv", str(VENV)])
        run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(ROOT / "requirements-colab.txt")])
        stamp.write_text(wanted)
    site = Path(subprocess.check_output(
        [str(VENV / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
    ).strip())
    (site / "google" / "colab").mkdir(parents=True, exist_ok=True)
    (site / "google" / "colab" / "__init__.py").write_text(FAKE_COLAB)
    startup = SIM / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-colab.py").write_text("import google.colab  # noqa: F401  (Colab imports it at start-up)\n")
    spec = SIM / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(VENV / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab simulation", "language": "python",
        "env": {"IPYTHONDIR": str(SIM / "ipython"), "PIP_ROOT_USER_ACTION": "ignore",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    }))
    wheels = SIM / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)])
    return next(wheels.glob("mha_lib-*.whl"))


def figures(cell: nbformat.NotebookNode) -> int:
    return sum("image/png" in out.get("data", {}) for out in cell.get("outputs", []))


def check(path: Path, wheel: Path, timeout: int) -> list[str]:
    """Run one notebook alone; the problems found (empty: it passed)."""
    reference = nbformat.read(path, as_version=4)
    nb = nbformat.read(path, as_version=4)
    problems = []
    setup = next(c for c in nb.cells if c.cell_type == "code")
    if f"git+{REPOSITORY}" not in setup.source:
        problems.append(f"the setup cell does not install git+{REPOSITORY}")
    setup.source = setup.source.replace(f"git+{REPOSITORY}", wheel.as_uri())
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            local = [t for t in MARKDOWN_IMAGE.findall(cell.source) if not t.startswith("https://")]
            problems += [f"cell {index}: a markdown image Colab cannot show: {t}" for t in local]
    explorer = any("explorer" in c.source for c in nb.cells if c.cell_type == "code" and "import" in c.source)
    if explorer:
        nb.cells.append(nbformat.v4.new_code_cell(EXPLORER_CHECK))
    with tempfile.TemporaryDirectory(prefix="colab-") as folder:
        alone = Path(folder) / path.name
        nbformat.write(nb, alone)
        client = NotebookClient(nb, timeout=timeout, kernel_name=KERNEL, resources={"metadata": {"path": folder}})
        try:
            client.execute()
        except CellExecutionError as err:
            problems.append(f"a cell raised: {str(err).strip().splitlines()[-1][:300]}")
        leftovers = sorted(p.name for p in Path(folder).iterdir() if p.name != path.name)
    subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y", "mha_lib", "d2l"],
                   check=False, capture_output=True)
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    for n, (index, cell) in enumerate(code):
        stderr = "".join(o.get("text", "") for o in cell.get("outputs", [])
                         if o.get("output_type") == "stream" and o.get("name") == "stderr").strip()
        if stderr and n > 0:
            problems.append(f"cell {index} wrote stderr: {stderr.splitlines()[0][:200]}")
    for (index, cell), ref in zip(code, (c for c in reference.cells if c.cell_type == "code")):
        if figures(ref) and figures(cell) < figures(ref):
            problems.append(f"cell {index}: {figures(ref)} figure(s) committed, {figures(cell)} here")
    if explorer and not any("explorer redraws" in o.get("text", "") for o in nb.cells[-1].get("outputs", [])):
        problems.append("the explorer check did not pass")
    if leftovers:
        print(f"  (left in its folder: {leftovers})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    parser.add_argument("--build-only", action="store_true", help="only build the Colab-like venv (CI does it early)")
    args = parser.parse_args(argv)
    wheel = build_runtime()
    if args.build_only:
        return 0
    os.environ["JUPYTER_PATH"] = str(SIM / "jupyter")
    failed = 0
    for path in args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        start = time.perf_counter()
        problems = check(path.resolve(), wheel, args.timeout)
        status = "ok" if not problems else "FAILED"
        print(f"{path.name}: {status} ({time.perf_counter() - start:.0f} s)", flush=True)
        for problem in problems:
            print(f"  - {problem}", flush=True)
        failed += bool(problems)
    print(f"Colab simulation: {failed} notebook(s) failed" if failed else "Colab simulation: every notebook passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
