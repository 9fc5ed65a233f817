"""Run every notebook as Colab would: alone in an empty folder, on Colab's runtime as published, through its setup cell.

Usage: ``python tools/colab_sim.py [notebooks/NN_*.ipynb ...]`` (``make test-colab``); ``--build-only`` builds the
runtime (CI, early); ``--write-requirements`` writes requirements-colab.txt from the list. Exit 1: a failure.

**The runtime.** Google publishes the packages of Colab's CPU runtime (``pip-freeze.txt`` in googlecolab/backend-info);
``tools/colab/pip-freeze-cpu-2026-08.txt`` is a copy of it at commit a724079 (2026-08-19): Python 3.13, torch 2.11,
NumPy 2.1.3, pandas 2.2.3, matplotlib 3.10.0, IPython 7.34.0, ipykernel 6.17.1, ipywidgets 7.7.1, notebook 6.5.7.
A venv ``colab-sim/venv`` on Python 3.13 (the newest 3.13 found; Colab runs 3.13.15) gets Colab's pip, then the
packages below, and everything they pull in, each at the version of that list (the whole list is pip's constraints
file), and what Colab does not have is uninstalled (jedi: IPython 7.34 declares it, Colab ships none).
``requirements-colab.txt`` names them with their pins; it is written from the list by
``--write-requirements`` (``tests/test_colab_sim.py`` checks that they agree). The packages, and why:

- what the series imports: torch, NumPy, pandas, matplotlib, tqdm (``mha_lib``'s dependencies: the setup cell must
  find them satisfied and install none), SciPy, requests and matplotlib-inline (``d2l.torch`` imports them; it is
  installed without its pins), ipywidgets (the explorer), and safetensors, tokenizers and transformers (notebook 12);
- Colab's kernel and widget stack, which a setup cell must not touch: ipykernel, IPython, jupyter-client,
  jupyter-core, traitlets, pyzmq, tornado, notebook, widgetsnbextension, jupyterlab-widgets, and setuptools.

The other 500 packages of Colab (TensorFlow, JAX, spaCy, ...) are left out: no notebook imports them, and they
cost minutes to install. Should a setup cell install one of them (a notebook's extra install needing it), the run
fails and names it, so it joins the list above. Two differences cannot be avoided:

- torch: Colab's is the CPU build, 2.11.0+cpu, from PyTorch's own package index, which is not reachable here (PyPI
  only). PyPI's torch 2.11.0 is the same release built with CUDA; it runs on the CPU (about 4.7 GB with its CUDA
  libraries).
- the CUDA libraries of that build (``nvidia-*``, ``cuda-*``, ``triton``) are not held to Colab's list:
  Colab's list has nvidia-nccl-cu13 2.31.2 (xgboost 3.4.1 requires it), and PyPI's torch 2.11.0 pins
  nvidia-nccl-cu13==2.28.9, so both cannot be installed together. Colab's CPU torch uses no NCCL.

**Each notebook** is copied alone into an empty folder, its install line pointed at a wheel of this checkout (built
by Colab's pip) instead of GitHub, and executed top to bottom by a kernel of that venv with a stand-in
``google.colab`` module imported at start-up, so the setup cell's Colab branch runs. After the setup cell, every
package of the runtime must keep its version; ipykernel, IPython, ipywidgets, notebook, jupyter-client, torch, NumPy,
pandas and matplotlib must have Colab's. Before each setup cell that no earlier notebook ran (the first's, 12's,
which installs its weights too) the runtime is put back as published, so that it really installs what it names; the
others are that same cell (`make notebooks` writes it) and find it installed (10 s of pip saved). A notebook passes
if, besides, no cell raises, no cell but the setup cell writes stderr, every code cell that shows a figure in the
committed notebook shows one here (image/png), no markdown figure is an attachment or a file beside the notebook, and
every explorer redraws when its controls change. With ``--student`` (the student edition), the only errors allowed
are the check cells' ``CheckFailed`` ("not attempted yet"), and only in cells tagged ``raises-exception``, which
nbclient runs past as JupyterLab's Run All does (Colab's Run All stops there; the student runs the cells below with
"Run after")."""

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
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import cell_report  # noqa: E402
from find_python import find  # noqa: E402
from setup_cell import REPOSITORY  # noqa: E402
from source_copy import copy_tracked  # noqa: E402

FREEZE = ROOT / "tools" / "colab" / "pip-freeze-cpu-2026-08.txt"
REQUIREMENTS = ROOT / "requirements-colab.txt"
SIM = ROOT / "colab-sim"
VENV = SIM / "venv"
KERNEL = "colab-sim"
# What requirements-colab.txt installs (the docstring says why), in the order written.
SERIES = [
    "torch", "numpy", "pandas", "matplotlib", "tqdm", "scipy", "requests", "matplotlib-inline", "ipywidgets",
    "safetensors", "tokenizers", "transformers",
    "ipykernel", "ipython", "jupyter-client", "jupyter-core", "traitlets", "pyzmq", "tornado", "notebook",
    "widgetsnbextension", "jupyterlab-widgets", "setuptools",
]
# Must have Colab's version after every setup cell (the issue names them).
KEEP = ["ipykernel", "ipython", "ipywidgets", "notebook", "jupyter-client", "torch", "numpy", "pandas", "matplotlib"]
# PyPI's torch is a CUDA build: its CUDA libraries are its own, not Colab's (see the docstring).
CUDA_BUILD = re.compile(r"^(nvidia-.*|cuda-.*|triton)$")
# A markdown image: Colab shows https:// ones only (no attachments, no file beside the notebook).
MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)")
FAKE_COLAB = '"""Stand-in for Colab\'s module: its presence is how the setup cell knows it runs on Colab."""\n'
SNAPSHOT = ("import importlib.metadata as m, json; "
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions() if d.metadata['Name']}))")
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


# ------------------------------------------------------------------------------------- the published list


def normalize(name: str) -> str:
    """A package name as pip compares them (``jupyter_client`` -> ``jupyter-client``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def colab_pins(text: str) -> dict[str, str]:
    """Each package of a ``pip freeze`` list and its version; ``name @ URL`` of a wheel gives the wheel's version
    (``torch @ .../torch-2.11.0%2Bcpu-cp313-...whl`` -> ``2.11.0+cpu``); other URLs (git, sdists) are left out."""
    pins = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        if sep:
            pins[normalize(name)] = version.strip()
            continue
        name, sep, url = line.partition(" @ ")
        wheel = unquote(url.rsplit("/", 1)[-1].split("#")[0])
        if sep and wheel.endswith(".whl"):
            pins[normalize(name)] = wheel.split("-")[1]
    return pins


def colab_python(text: str) -> str:
    """Colab's Python, major.minor, from the list's first line (``... Python 3.13.15`` -> ``3.13``)."""
    match = re.search(r"Python (3\.\d+)(\.\d+)?", text.splitlines()[0])
    if not match:
        raise ValueError(f"{FREEZE.name}: its first line names no Python version")
    return match.group(1)


def public(version: str) -> str:
    """A version without its local label (``2.11.0+cpu`` -> ``2.11.0``): PyPI carries no local versions."""
    return version.split("+", 1)[0]


def requirements_text(freeze: str) -> str:
    """requirements-colab.txt as ``--write-requirements`` writes it from the published list."""
    pins = colab_pins(freeze)
    header = freeze.splitlines()[0].lstrip("# ").strip()
    lines = [
        f"# What `make test-colab` installs on Python {colab_python(freeze)}, each at the version of Colab's CPU",
        "# runtime, and all they pull in too (tools/colab_sim.py says why these). Do not edit: written by",
        "# `python tools/colab_sim.py --write-requirements` from tools/colab/pip-freeze-cpu-2026-08.txt:",
        f"# {header}.",
        f"# torch: Colab has {pins['torch']} from PyTorch's own index; PyPI has the same release as a CUDA build.",
    ]
    for name in SERIES:
        lines.append(f"{name}=={public(pins[name])}")
    return "\n".join(lines) + "\n"


def constraints_text(freeze: str) -> str:
    """pip's constraints: every package of the list at its version, but the CUDA libraries of PyPI's torch."""
    pins = colab_pins(freeze)
    return "".join(f"{name}=={public(version)}\n" for name, version in sorted(pins.items())
                   if not CUDA_BUILD.match(name))


# ------------------------------------------------------------------------------------------- the runtime


def run(cmd: list[str], **kwargs) -> None:
    """Run a command of the simulation; from colab-sim/, so the checkout's mha_lib.egg-info is not on its path."""
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run(cmd, check=True, cwd=SIM, **kwargs)


def venv_python() -> str:
    return str(VENV / "bin" / "python")


def installed() -> dict[str, str]:
    """Every package of the simulated runtime and its version."""
    out = subprocess.run([venv_python(), "-I", "-c", SNAPSHOT], check=True, capture_output=True, text=True)
    return {normalize(name): version for name, version in json.loads(out.stdout).items()}


def differences(before: dict[str, str], after: dict[str, str]) -> tuple[list[str], list[str]]:
    """What changed between two snapshots: (changed or removed, added), as ``name old -> new``."""
    changed = [f"{n} {v} -> {after.get(n, 'removed')}" for n, v in sorted(before.items()) if after.get(n) != v]
    added = [f"{n} {v}" for n, v in sorted(after.items()) if n not in before]
    return changed, added


def not_colab(versions: dict[str, str], pins: dict[str, str], names: list[str]) -> list[str]:
    """Which of ``names`` do not have Colab's version (the local label aside)."""
    return [f"{name} {versions.get(name, 'missing')} (Colab: {pins[name]})" for name in names
            if public(versions.get(name, "")) != public(pins[name])]


def build_runtime() -> Path:
    """The Colab venv (rebuilt when its pins change), its kernelspec, and a wheel of mha_lib built by Colab's pip."""
    freeze = FREEZE.read_text()
    pins = colab_pins(freeze)
    if REQUIREMENTS.read_text() != requirements_text(freeze):
        raise SystemExit(f"{REQUIREMENTS.name} is not the one {FREEZE.name} gives: "
                         "run `python tools/colab_sim.py --write-requirements`")
    python = find(colab_python(freeze))
    if python is None:
        raise SystemExit(f"Colab simulation: Python {colab_python(freeze)} (Colab's) is not installed")
    constraints = constraints_text(freeze)
    SIM.mkdir(exist_ok=True)
    stamp = VENV / ".installed"
    wanted = f"{python}\n{REQUIREMENTS.read_text()}{constraints}"
    if not stamp.exists() or stamp.read_text() != wanted:
        shutil.rmtree(VENV, ignore_errors=True)
        run([python, "-m", "venv", str(VENV)])
        (SIM / "constraints.txt").write_text(constraints)
        run([venv_python(), "-m", "pip", "install", "-q", f"pip=={pins['pip']}"])
        run([venv_python(), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS), "-c", str(SIM / "constraints.txt")])
        # Colab ships IPython 7.34 without jedi, which IPython declares: what Colab does not have goes.
        versions = installed()
        extra = sorted(n for n in versions if n not in pins and not CUDA_BUILD.match(n))
        if extra:
            print(f"not in Colab's runtime, uninstalled: {', '.join(f'{n} {versions[n]}' for n in extra)}")
            run([venv_python(), "-m", "pip", "uninstall", "-q", "-y", *extra])
        stamp.write_text(wanted)
    versions = installed()
    extra = sorted(n for n in versions if n not in pins and not CUDA_BUILD.match(n))
    if extra:
        raise SystemExit(f"Colab simulation: not in Colab's runtime: {', '.join(extra)}")
    wrong = not_colab(versions, pins, [n for n in versions if n in pins and not CUDA_BUILD.match(n)])
    if wrong:
        raise SystemExit(f"Colab simulation: not Colab's versions: {', '.join(wrong)}")
    own = sorted(f"{n} {v}" for n, v in versions.items() if n not in pins or CUDA_BUILD.match(n))
    print(f"Colab runtime: {len(versions)} packages at Colab's versions, but PyPI torch's CUDA build: {', '.join(own)}")
    site = Path(subprocess.check_output(
        [venv_python(), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
    ).strip())
    (site / "google" / "colab").mkdir(parents=True, exist_ok=True)
    (site / "google" / "colab" / "__init__.py").write_text(FAKE_COLAB)
    startup = SIM / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-colab.py").write_text("import google.colab  # noqa: F401  (Colab imports it at start-up)\n")
    spec = SIM / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [venv_python(), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab simulation", "language": "python",
        "env": {"IPYTHONDIR": str(SIM / "ipython"), "PIP_ROOT_USER_ACTION": "ignore",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"},
    }))
    wheels, source = SIM / "wheels", SIM / "source"  # a copy, as Colab's pip clones: another build may run here
    shutil.rmtree(wheels, ignore_errors=True), shutil.rmtree(source, ignore_errors=True)
    run([venv_python(), "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(copy_tracked(source))])
    return next(wheels.glob("mha_lib-*.whl"))


def restore(baseline: dict[str, str]) -> None:
    """Put the runtime back as it was: uninstall what was added, reinstall what changed (without dependencies)."""
    now = installed()
    added = [n for n in now if n not in baseline]
    if added:
        subprocess.run([venv_python(), "-m", "pip", "uninstall", "-q", "-y", *added], check=False, capture_output=True,
                       cwd=SIM)
    changed = [f"{n}=={v}" for n, v in baseline.items() if now.get(n) != v]
    if changed:
        run([venv_python(), "-m", "pip", "install", "-q", "--no-deps", *changed])


# ------------------------------------------------------------------------------------------ the notebooks


def figures(cell) -> int:
    return sum("image/png" in out.get("data", {}) for out in cell.get("outputs", []))


def check(path: Path, wheel: Path, timeout: int, baseline: dict[str, str], pins: dict[str, str],
          fresh: bool = True) -> list[str]:
    """Run one notebook alone; the problems found (empty: it passed). ``fresh``: the runtime is Colab's as published
    (else an earlier notebook's identical setup cell installed what this one's installs)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    student = path.parent.name == "student"  # a student copy has no outputs: its figures are the teacher's edition's
    reference = nbformat.read(ROOT / "notebooks" / path.name if student else path, as_version=4)
    nb = nbformat.read(path, as_version=4)
    problems = []
    setup_index = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    setup = nb.cells[setup_index]
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

    def after_setup(cell, cell_index, execute_reply) -> None:
        if cell_index != setup_index:
            return
        now = installed()
        changed, added = differences(baseline, now)
        if changed:
            problems.append(f"the setup cell changed Colab's packages: {', '.join(changed)}")
        problems.extend(f"after the setup cell, {w}" for w in not_colab(now, pins, KEEP))
        colab_has = [a for a in added if a.split()[0] in pins]
        if colab_has:
            problems.append(f"the setup cell installed what Colab already has, at another version maybe: "
                            f"{', '.join(colab_has)} (add it to SERIES in tools/colab_sim.py)")
        if "mha-lib" not in now:
            problems.append("the setup cell did not install mha_lib (did its Colab branch run?)")
        said = "installed" if fresh else "found installed (the same setup cell ran first on a fresh runtime)"
        print(f"  setup cell {said}: {', '.join(added) or 'nothing'}", flush=True)

    with tempfile.TemporaryDirectory(prefix="colab-") as folder:
        alone = Path(folder) / path.name
        nbformat.write(nb, alone)
        client = NotebookClient(nb, timeout=timeout, kernel_name=KERNEL, on_cell_executed=after_setup,
                                resources={"metadata": {"path": folder}})
        try:
            client.execute()
        except CellExecutionError:  # raised only for a cell not tagged raises-exception
            failing = next(i for i, c in enumerate(nb.cells) if cell_report.error_output(c) is not None)
            problems.append("stopped at the first error, as Run All on Colab: "
                            + cell_report.describe_error(nb.cells, failing))
        except Exception as err:  # a timeout or a dead kernel
            problems.append(f"the run stopped: {type(err).__name__}: {str(err).strip()[:200]}")
        leftovers = sorted(p.name for p in Path(folder).iterdir() if p.name != path.name)
    problems += [p for p in cell_report.problems(nb.cells, allow_stderr_in=[setup_index]) if "wrote stderr" in p]
    if student:  # a check cell not passed yet raises CheckFailed; tagged raises-exception, the run goes on
        for index, cell in enumerate(nb.cells):
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            tagged = "raises-exception" in cell.metadata.get("tags", [])
            problems += [f"cell {index}: {e.ename} ({'tagged' if tagged else 'not tagged'} raises-exception):"
                         f" {e.evalue[:160]}" for e in errors if not (tagged and e.ename == "CheckFailed")]
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    for (index, cell), ref in zip(code, (c for c in reference.cells if c.cell_type == "code")):
        if student and ref.metadata.get("nbgrader", {}).get("solution"):
            continue  # an exercise's stub draws nothing until the learner answers it
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
    parser.add_argument("--build-only", action="store_true", help="only build the Colab venv (CI does it early)")
    parser.add_argument("--student", action="store_true",
                        help="run the student edition, student/ (by hand; make test-kit runs it under nbgrader)")
    parser.add_argument("--write-requirements", action="store_true",
                        help=f"write {REQUIREMENTS.name} from {FREEZE.relative_to(ROOT)}, and stop")
    args = parser.parse_args(argv)
    if args.write_requirements:
        REQUIREMENTS.write_text(requirements_text(FREEZE.read_text()))
        print(f"wrote {REQUIREMENTS.name}")
        return 0
    wheel = build_runtime()
    if args.build_only:
        return 0
    pins = colab_pins(FREEZE.read_text())
    baseline = installed()
    os.environ["JUPYTER_PATH"] = str(SIM / "jupyter")
    failed = 0
    folder = ROOT / ("student" if args.student else "notebooks")
    import nbformat

    ran: set[str] = set()  # the setup cells already run on a fresh runtime
    for path in args.notebooks or sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        start = time.perf_counter()
        setup = next(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        fresh = setup not in ran
        if fresh:  # a new setup cell: Colab's runtime as it was, so that it really installs
            restore(baseline)
            ran.add(setup)
        problems = check(path.resolve(), wheel, args.timeout, baseline, pins, fresh)
        status = "ok" if not problems else "FAILED"
        print(f"{path.name}: {status} ({time.perf_counter() - start:.0f} s)", flush=True)
        for problem in problems:
            print(f"  - {problem}", flush=True)
        failed += bool(problems)
    restore(baseline)
    print(f"Colab simulation: {failed} notebook(s) failed" if failed else "Colab simulation: every notebook passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
