"""The project's set-up files agree with each other, `make lab` serves the series, and d2l loads."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONDA_TO_PIP = {"pytorch": "torch"}  # conda-forge names that differ from PyPI's
NOT_PACKAGES = {"python", "pip"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;@]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _requirements() -> dict[str, str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    reqs = [line.split("#")[0].strip() for line in lines]
    return {_name(r): r for r in reqs if r}


def _pyproject() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        names |= {_name(r) for r in extra}
    return names


def _environment_yml() -> set[str]:
    names: set[str] = set()
    text = (ROOT / "environment.yml").read_text()
    for line in text.split("dependencies:", 1)[1].splitlines():
        match = re.match(r"^\s+-\s+([A-Za-z0-9_.\-]+)", line)
        if match and not line.strip().endswith(":"):
            name = _name(match.group(1))
            names.add(CONDA_TO_PIP.get(name, name))
    return names - NOT_PACKAGES


def test_requirements_pyproject_and_environment_list_the_same_packages() -> None:
    pinned = set(_requirements())
    assert pinned == _pyproject(), "requirements.txt vs pyproject.toml"
    assert pinned == _environment_yml(), "requirements.txt vs environment.yml"


def test_requirements_are_pinned_and_torch_is_the_cpu_wheel() -> None:
    for name, req in _requirements().items():
        assert "==" in req, f"{name} is not pinned in requirements.txt"
    assert _requirements()["torch"] == "torch==2.13.0"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch_req = next(r for r in project["dependencies"] if _name(r) == "torch")
    assert "==" not in torch_req, "pyproject.toml leaves torch loose so Colab keeps its own build"


def test_d2l_is_installed_without_its_pins_everywhere() -> None:
    assert "pip install --no-deps d2l==1.0.3" in (ROOT / "postBuild").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "D2L := d2l==1.0.3" in makefile and "--no-deps $(D2L)" in makefile
    assert "d2l" not in _requirements(), "d2l's own pins would break the tested set"


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert readme.index("make lab") < readme.index("## ") and readme.index("make test") < readme.index("## ")


def test_nbval_runs_in_strict_mode() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--nbval " in options["addopts"] + " " and "--nbval-lax" not in options["addopts"]
    assert options["testpaths"] == ["tests", "notebooks"]


def test_load_d2l_returns_d2l_torch() -> None:
    from mha_lib.reference import load_d2l

    d2l = load_d2l()
    assert d2l.__name__ == "d2l.torch"
    assert hasattr(d2l, "MultiHeadAttention") and hasattr(d2l, "PositionalEncoding")


def test_load_d2l_stand_in_only_when_torchvision_is_missing() -> None:
    code = (
        "import sys; from mha_lib.reference import load_d2l, _torchvision_importable\n"
        "real = _torchvision_importable()\n"
        "d2l = load_d2l()\n"
        "stub = 'Stand-in' in (sys.modules['torchvision'].__doc__ or '')\n"
        "assert stub == (not real), (stub, real)\n"
        "if stub:\n"
        "    try:\n"
        "        sys.modules['torchvision'].datasets\n"
        "    except ImportError as err:\n"
        "        assert 'torchvision.datasets is not available' in str(err)\n"
        "    else:\n"
        "        raise AssertionError('the stand-in must refuse real use')\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_jupyterlab_serves_the_notebooks(tmp_path: Path) -> None:
    """`make lab`, headless on 127.0.0.1: its REST API lists the series and the Lab page loads; then it stops."""
    if not (Path(sys.prefix) / ".installed").exists():
        pytest.skip("runs `make lab` only inside the .venv that `make` manages")
    port, token = _free_port(), "mha-test-token"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"))
    lab_args = (
        f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 --IdentityProvider.token={token}"
    )
    server = subprocess.Popen(
        ["make", "--no-print-directory", "lab", f"LAB_ARGS={lab_args}", f"VENV={Path(sys.prefix)}"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        listing = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and server.poll() is None:
            try:
                url = f"http://127.0.0.1:{port}/api/contents/?token={token}"
                with urllib.request.urlopen(url, timeout=5) as response:
                    listing = json.load(response)
                break
            except OSError:
                time.sleep(0.5)
        assert listing is not None, f"JupyterLab did not answer: {server.stderr.read() if server.poll() else ''}"
        names = {item["name"] for item in listing["content"]}
        expected = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
        assert expected and expected <= names
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}", timeout=10) as response:
            assert response.status == 200
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # make and the JupyterLab it started
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
