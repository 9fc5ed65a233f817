"""The project's set-up files agree with each other, `make lab` serves the series, and d2l loads."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from lab_server import running_lab
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return Requirement(requirement).name.lower().replace("_", "-")


def _lines(path: Path) -> list[Requirement]:
    reqs = [line.split("  #")[0].split(" #")[0].strip() for line in path.read_text().splitlines()]
    return [Requirement(r) for r in reqs if r and not r.startswith("#")]


def _requirements(python: str | None = None, path: str = "requirements.txt") -> dict[str, Requirement]:
    """The pins of a requirements file that apply on ``python`` ("3.11"; None: every line, the last one wins)."""
    reqs = _lines(ROOT / path)
    if python is not None:
        env = {"python_version": python, "python_full_version": f"{python}.0"}
        reqs = [r for r in reqs if r.marker is None or r.marker.evaluate(env)]
    return {_name(str(r)): r for r in reqs}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _pyproject() -> set[str]:
    project = _project()
    names = {_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        names |= {_name(r) for r in extra}
    return names


def _supported_pythons() -> list[str]:
    low = re.fullmatch(r">=3\.(\d+)", _project()["requires-python"])
    assert low, "requires-python is a lower bound, >=3.X"
    return [f"3.{minor}" for minor in range(int(low.group(1)), 14)]


def test_requirements_and_pyproject_list_the_same_packages() -> None:
    assert set(_requirements()) == _pyproject(), "requirements.txt vs pyproject.toml"


def test_requirements_pin_one_version_per_supported_python() -> None:
    for python in _supported_pythons():
        pins = _requirements(python)
        assert set(pins) >= set(_requirements("3.11")) - {"tomli"}, f"a package has no pin for Python {python}"
        for name, req in pins.items():
            assert len(req.specifier) == 1 and next(iter(req.specifier)).operator == "==", f"{name} is not pinned"
    assert str(_requirements("3.11")["torch"].specifier) == "==2.13.0", "the local CPU wheel"
    assert "tomli" in _requirements("3.10") and "tomli" not in _requirements("3.11"), "tomllib is 3.11+"


def test_lowest_requirements_pin_the_declared_lower_bounds() -> None:
    """requirements-lowest.txt (`make test-lowest`) installs exactly the lower bounds pyproject.toml declares."""
    lowest = _requirements(path="requirements-lowest.txt")
    assert set(lowest) - {"setuptools"} == set(_requirements()), "requirements-lowest.txt vs requirements.txt"
    build = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    for dependency in map(Requirement, [*_project()["dependencies"], *build]):
        (spec,) = dependency.specifier
        assert spec.operator == ">=", f"{dependency}: a lower bound, loose above (Colab keeps its own builds)"
        (pinned,) = lowest[dependency.name].specifier
        assert pinned.operator == "==" and Version(pinned.version) == Version(spec.version), (
            f"{dependency.name} is not tested at its lower bound"
        )
    makefile = (ROOT / "Makefile").read_text()
    assert f"LOWEST_PYTHON ?= {_supported_pythons()[0]}" in makefile, "the lowest set runs on the lowest Python"


def test_d2l_is_installed_without_its_pins_everywhere() -> None:
    assert "pip install --no-deps d2l==1.0.3" in (ROOT / "postBuild").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "D2L := d2l==1.0.3" in makefile and "--no-deps $(D2L)" in makefile
    assert "d2l" not in _requirements(), "d2l's own pins would break the tested set"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci
    for target in ("test-seeds", "test-browser", "test-site", "test-colab", "test-kit", "test-install"):
        assert f"make --no-print-directory {target}" in ci, f".ci/run runs make {target}"
    # every translated edition's notebooks, each under one of make test-cpus's kernel sets, go to the other-Python
    # jobs (make test-python3.N, make test-lowest), which run the tests first
    assert "tools/cpu_kernels.py --list --skip-native" in ci
    assert 'RUNS+=("${KERNEL_SETS[$i]:--}:${TRANSLATED[$i]}/notebooks")' in ci
    assert 'make --no-print-directory "$target" "PYTEST_ARGS=-p no:xdist ${select[*]} tests"' in ci
    # the library's tests under every Python and the lowest versions; the tools' under 3.11 (make test), 3.13 and 3.10
    assert "case $target in test-python3.12 | test-lowest) select=(-m \"'not tools'\")" in ci
    assert all(f"SLOTS+=(\"{job}" in ci for job in ("test-python$v", "test-lowest"))
    readme = (ROOT / "README.md").read_text()
    assert readme.index("make lab") < readme.index("## ") and readme.index("make test") < readme.index("## ")


def test_nbval_runs_in_strict_mode() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--nbval " in options["addopts"] + " " and "--nbval-lax" not in options["addopts"]
    assert options["testpaths"] == ["tests", "notebooks"]


def test_make_lab_serves_the_repository_and_opens_the_series() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "--ServerApp.root_dir=." in makefile and "/lab/tree/notebooks/00_start_here.ipynb" in makefile
    overrides = json.loads((ROOT / "tools" / "jupyterlab_overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false", "no news pop-up"
    assert "tools/jupyterlab_overrides.json" in (ROOT / "postBuild").read_text(), "Binder too"


def test_license_is_an_spdx_string() -> None:
    assert _project()["license"] == "MIT", "a table form is deprecated by setuptools"


def test_load_d2l_returns_d2l_torch() -> None:
    from mha_lib.reference import load_d2l

    d2l = load_d2l()
    assert d2l.__name__ == "d2l.torch"
    assert hasattr(d2l, "MultiHeadAttention") and hasattr(d2l, "PositionalEncoding")


def test_load_d2l_stand_in_only_when_torchvision_is_missing() -> None:
    """The stand-in serves d2l.torch alone: afterwards transformers and others still see no torchvision."""
    code = (
        "import sys; from mha_lib.reference import load_d2l, _torchvision_importable\n"
        "real = _torchvision_importable()\n"
        "d2l = load_d2l()\n"
        "stub = 'Stand-in' in (d2l.torchvision.__doc__ or '')\n"
        "assert stub == (not real), (stub, real)\n"
        "if stub:\n"
        "    import importlib.util\n"
        "    assert 'torchvision' not in sys.modules and importlib.util.find_spec('torchvision') is None\n"
        "    try:\n"
        "        d2l.torchvision.datasets\n"
        "    except ImportError as err:\n"
        "        assert 'torchvision.datasets is not available' in str(err)\n"
        "    else:\n"
        "        raise AssertionError('the stand-in must refuse real use')\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_jupyterlab_serves_the_notebooks(tmp_path: Path) -> None:
    """`make lab`, headless on 127.0.0.1: serves the repository root with the series; then it stops."""
    if not (Path(sys.prefix) / ".installed").exists():
        pytest.skip("runs `make lab` only inside the .venv that `make` manages")
    token = "mha-test-token"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"))
    with running_lab(token=token, env=env, timeout=90) as base:
        with urllib.request.urlopen(f"{base}/api/contents/?token={token}", timeout=5) as response:
            listing = json.load(response)
        assert {"notebooks", "images", "mha_lib", "README.md"} <= {item["name"] for item in listing["content"]}
        with urllib.request.urlopen(f"{base}/api/contents/notebooks?token={token}") as response:
            names = {item["name"] for item in json.load(response)["content"]}
        expected = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
        assert expected and expected <= names
        with urllib.request.urlopen(f"{base}/lab?token={token}", timeout=10) as response:
            assert response.status == 200


def test_every_ci_target_is_in_make_help_and_the_readme() -> None:
    makefile = (ROOT / "Makefile").read_text()
    help_text = makefile.split("\nhelp:", 1)[1].split("\n\n", 1)[0]
    readme = (ROOT / "README.md").read_text()
    for target in ("test-cpus", "test-seeds", "test-colab", "test-browser", "test-pythons", "test-lowest"):
        assert f"\n{target}:" in makefile, f"make {target} exists"
        assert f"make {target} " in help_text, f"`make help` names {target}"
        assert f"`make {target}`" in readme, f"README names make {target}"


def test_nothing_in_the_repository_points_outside_it() -> None:
    """A fresh clone has only itself: the Colab package list, say, is a committed copy (tools/colab/)."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    outside = "/".join(["..", "shared"])  # spelled so that this file does not name it
    pointing = []
    for name in tracked.splitlines():
        path = ROOT / name
        if path.suffix in {".py", ".md", ".txt", ".toml", ".yml", ".cfg", ".json", ".ipynb", ""} and path.is_file():
            if outside in path.read_text(errors="ignore"):
                pointing.append(name)
    assert not pointing, f"these point at {outside}, which a clone does not have: {pointing}"


def test_the_readme_names_the_tested_versions() -> None:
    """README's tested platforms: the pins of requirements.txt (3.11, and 3.10's own) and the lowest set."""
    readme = (ROOT / "README.md").read_text()
    platforms = readme.split("## Tested platforms", 1)[1].split("\n## ", 1)[0].replace("\n  ", " ")

    def pin(name: str, python: str | None, path: str = "requirements.txt") -> str:
        return next(iter(_requirements(python, path)[name].specifier)).version

    shown = {"torch": "torch", "numpy": "NumPy", "pandas": "pandas", "matplotlib": "matplotlib", "tqdm": "tqdm"}
    reference = "(" + ", ".join(f"{shown[n]} {pin(n, '3.11')}" for n in ("torch", "numpy", "pandas", "matplotlib"))
    assert f"3.11, 3.12 and 3.13 with the pinned set of `requirements.txt` {reference})" in platforms
    oldest = ", ".join(f"{shown[n]} {pin(n, '3.10')}" for n in ("numpy", "pandas", "matplotlib"))
    assert f"3.10 with the newest releases that support it ({oldest})" in platforms
    lowest = ", ".join(f"{shown[n]} {pin(n, None, 'requirements-lowest.txt')}" for n in shown)
    assert f"the lowest declared versions on {_supported_pythons()[0]} ({lowest})" in platforms


def test_every_package_of_mha_lib_is_in_the_wheel() -> None:
    """A subpackage missing from pyproject's explicit list installs nowhere but here (Colab: ImportError)."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "mha_lib").rglob("__init__.py")}
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"


def test_the_package_ships_its_type_hints() -> None:
    """PEP 561: mha_lib/py.typed travels in the wheel, so a user's type checker reads mha_lib's hints."""
    assert (ROOT / "mha_lib" / "py.typed").is_file()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["mha_lib"]


def test_the_makefile_help_names_every_target_and_phony_only_real_ones() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([A-Za-z][\w%.-]*):(?!=)", makefile, flags=re.MULTILINE))
    phony = set(re.search(r"^\.PHONY:(.*?)(?<!\\)\n", makefile, flags=re.MULTILINE | re.DOTALL).group(1)
                .replace("\\\n", " ").split())
    assert phony <= targets, f".PHONY names targets that do not exist: {sorted(phony - targets)}"
    helped = set(re.findall(r'@echo "make ([\w.-]+)', makefile))
    # a pattern target is listed by its stem's kind: test-python3.N, lab-CODE and test-CODE (an edition's code)
    missing = {t for t in targets - {"help"} if not {t.replace("%", "3.N"), t.replace("%", "CODE")} & helped}
    assert not missing, f"make help does not list: {sorted(missing)}"


# None left: tools/site_build.py moved onto Sphinx's own extensions (issue 38) and tools/translations.py gave the
# teacher's guide and the translation rules their own modules.
LONG_SCRIPTS_PENDING: set[str] = set()


@pytest.mark.parametrize("folder", ["tools", "benchmarks"])
def test_no_script_holds_two_jobs(folder: str) -> None:
    """A script over 400 lines usually does two jobs: split it by job (as mha_lib's modules, tests/test_library_map)."""
    for path in sorted((ROOT / folder).glob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text().splitlines())
        assert lines <= 400 or name in LONG_SCRIPTS_PENDING, f"{name} has {lines} lines: split it by job"


def test_contributing_says_what_each_ci_job_proves() -> None:
    """Issue 42: CONTRIBUTING's table names every job of .ci/run (the run prints the same table with its times)."""
    ci = (ROOT / ".ci" / "run").read_text()
    section = (ROOT / "CONTRIBUTING.md").read_text().split("## CI: what each step proves")[1].split("\n## ")[0]
    jobs = set(re.findall(r'"(test-[a-z0-9.-]+):', ci)) | {f"test-python{v}" for v in ("3.10", "3.12", "3.13")}
    assert {"test-seeds", "test-install-kit", "test-lowest"} <= jobs
    missing = [job for job in sorted(jobs) if f"`make {job}`" not in section and f"`{job}`" not in section]
    assert not missing, f"CONTRIBUTING's CI table misses {missing}"


def test_ci_counts_its_cores_before_phase_two_goes_single_threaded() -> None:
    """GNU nproc reports OMP_NUM_THREADS when it is set: counted after phase 2 exports it, CI ran one job at a time."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert 0 <= ci.index("CORES=$(nproc)") < ci.index("export OMP_NUM_THREADS=1")
    assert ci.count("$(nproc)") == 1


def test_ci_retrains_a_seed_in_every_notebook_run_and_test_seeds_only_the_rest() -> None:
    """Issue 42: each strict run of the other-Python jobs retrains under its own seed; test-seeds takes the others."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'export MHA_TRAINING_SEED=$seed' in ci and 'RUNS[$i]+=":$(( i < SEEDS ? i + 1 : 0 ))"' in ci
    assert "SEEDS_ARGS+=--runs=$LEFT-$SEEDS" in ci and "LEFT=$(( ${#RUNS[@]} + 1 ))" in ci
    seeds = (ROOT / "tools" / "seeds.py").read_text()
    assert 'RUN_VARIABLE = "MHA_TRAINING_SEED"' in seeds, "the variable the runs set is the one seeds.py sets"


def test_every_install_of_the_makefile_goes_through_one_installer() -> None:
    """`make install` runs pip (the README's set-up); CI's test venvs run the same recipe with uv's pip (PIP=)."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("$(STAMP):")[1].split("\ninstall:")[0]
    assert "PIP ?= $(PY) -m pip" in makefile and recipe.count("$(PIP) install") == 5
    assert "-m pip" not in recipe
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'echo "env VIRTUAL_ENV=$PWD/$1 $PWD/.venv-uv/bin/uv pip"' in ci.split("uv_pip() {")[1].split("\n}")[0]
    venv = ci.split("\nvenv() {")[1].split("\n}")[0]
    assert 'pip=$(uv_pip ".venv-$1")' in venv and '${pip:+"PIP=$pip"}' in venv
    assert "step venv make --no-print-directory install\n" in ci, "make's own venv: pip, as the README runs it"
