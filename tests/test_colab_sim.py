"""tools/colab_sim.py (`make test-colab`): the runtime is Colab's published CPU package list, requirements-colab.txt
is derived from it, and what a setup cell may change is read exactly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import colab_sim  # noqa: E402
from colab_sim import (  # noqa: E402
    FREEZE,
    KEEP,
    REQUIREMENTS,
    SERIES,
    colab_pins,
    colab_python,
    constraints_text,
    differences,
    normalize,
    not_colab,
    public,
    requirements_text,
)

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = FREEZE.read_text()


def test_the_published_list_is_in_the_repository_with_its_source_and_date() -> None:
    first = PUBLISHED.splitlines()[0]
    assert "googlecolab/backend-info" in first and "2026-08-19" in first and "Python 3.13" in first
    assert FREEZE.parent == ROOT / "tools" / "colab"
    assert len(colab_pins(PUBLISHED)) > 600, "the whole list, not a subset"


def test_colab_runs_python_3_13_with_the_versions_the_issue_names() -> None:
    pins = colab_pins(PUBLISHED)
    assert colab_python(PUBLISHED) == "3.13"
    assert {name: pins[name] for name in ("torch", "numpy", "pandas", "matplotlib", "ipykernel", "ipython",
                                          "ipywidgets", "notebook", "tqdm", "safetensors", "tokenizers",
                                          "transformers")} == {
        "torch": "2.11.0+cpu", "numpy": "2.1.3", "pandas": "2.2.3", "matplotlib": "3.10.0", "ipykernel": "6.17.1",
        "ipython": "7.34.0", "ipywidgets": "7.7.1", "notebook": "6.5.7", "tqdm": "4.67.3", "safetensors": "0.8.0",
        "tokenizers": "0.22.2", "transformers": "5.15.0"}


def test_a_freeze_list_is_read_by_normalized_name_wheel_urls_included() -> None:
    text = "\n".join([
        "# a comment", "",
        "jupyter_client==7.4.9",
        "Jinja2==3.1.6",
        "torch @ https://download.pytorch.org/whl/cpu/torch-2.11.0%2Bcpu-cp313-cp313-manylinux_2_28_x86_64.whl",
        "google-colab @ file:///colabtools/dist/google_colab-1.0.0.tar.gz",
        "jupyter_kernel_gateway @ git+https://github.com/googlecolab/kernel_gateway@b134e99",
        "en_core_web_sm @ https://github.com/x/en_core_web_sm-3.8.0-py3-none-any.whl#sha256=1932",
    ])
    assert colab_pins(text) == {"jupyter-client": "7.4.9", "jinja2": "3.1.6", "torch": "2.11.0+cpu",
                                "en-core-web-sm": "3.8.0"}
    assert normalize("zope.interface") == "zope-interface" and normalize("Foo__Bar") == "foo-bar"
    assert public("2.11.0+cpu") == "2.11.0" and public("2.1.3") == "2.1.3"


def test_requirements_colab_is_derived_from_the_published_list() -> None:
    """requirements-colab.txt == what `python tools/colab_sim.py --write-requirements` writes."""
    assert REQUIREMENTS.read_text() == requirements_text(PUBLISHED), (
        "run `python tools/colab_sim.py --write-requirements`")


def test_each_requirement_is_colab_s_version_and_names_what_the_series_needs() -> None:
    pins = colab_pins(PUBLISHED)
    reqs = [Requirement(line) for line in REQUIREMENTS.read_text().splitlines() if line and not line[0] == "#"]
    assert [normalize(r.name) for r in reqs] == SERIES
    for req in reqs:
        (spec,) = req.specifier
        assert spec.operator == "==" and spec.version == public(pins[normalize(req.name)]), req
    project = (ROOT / "pyproject.toml").read_text()
    for dependency in ("torch", "numpy", "pandas", "matplotlib", "tqdm", "ipywidgets", "scipy", "requests"):
        assert f'"{dependency}>=' in project and dependency in SERIES, dependency


def test_the_packages_a_setup_cell_must_not_touch_are_installed_and_kept() -> None:
    assert set(KEEP) == {"ipykernel", "ipython", "ipywidgets", "notebook", "jupyter-client", "torch", "numpy",
                         "pandas", "matplotlib"}
    assert set(KEEP) <= set(SERIES)


def test_constraints_hold_every_package_but_the_cuda_build_s_own() -> None:
    """The whole list constrains what the series pulls in; PyPI torch's CUDA libraries are its own (Colab's list
    has nvidia-nccl-cu13 2.31.2 for xgboost; PyPI's torch 2.11.0 pins 2.28.9)."""
    lines = constraints_text(PUBLISHED).splitlines()
    pins = colab_pins(PUBLISHED)
    assert "torch==2.11.0" in lines and "numpy==2.1.3" in lines and "ipywidgets==7.7.1" in lines
    assert not [line for line in lines if line.startswith(("nvidia-", "cuda-", "triton"))]
    assert "nvidia-nccl-cu13" in pins, "the one CUDA library in Colab's CPU list"
    assert len(lines) == len([n for n in pins if not colab_sim.CUDA_BUILD.match(n)])
    assert all("@" not in line and "+" not in line for line in lines), "pip constraints are name==version only"


def test_a_setup_cell_s_changes_are_read_exactly() -> None:
    before = {"ipywidgets": "7.7.1", "torch": "2.11.0", "numpy": "2.1.3"}
    after = {"ipywidgets": "8.1.9", "torch": "2.11.0", "mha-lib": "0.1.0", "d2l": "1.0.3"}
    changed, added = differences(before, after)
    assert changed == ["ipywidgets 7.7.1 -> 8.1.9", "numpy 2.1.3 -> removed"]
    assert added == ["d2l 1.0.3", "mha-lib 0.1.0"]
    assert differences(before, dict(before)) == ([], [])


def test_colab_s_versions_are_compared_without_the_local_label() -> None:
    pins = {"torch": "2.11.0+cpu", "ipywidgets": "7.7.1", "numpy": "2.1.3"}
    assert not_colab({"torch": "2.11.0", "ipywidgets": "7.7.1", "numpy": "2.1.3"}, pins, list(pins)) == []
    assert not_colab({"torch": "2.13.0", "ipywidgets": "8.1.9"}, pins, list(pins)) == [
        "torch 2.13.0 (Colab: 2.11.0+cpu)", "ipywidgets 8.1.9 (Colab: 7.7.1)", "numpy missing (Colab: 2.1.3)"]


@pytest.mark.parametrize("name", ["colab_sim.py", "cpu_kernels.py", "seeds.py", "cell_report.py"])
def test_the_tools_say_what_they_do(name: str) -> None:
    text = (ROOT / "tools" / name).read_text()
    assert text.startswith('"""')


def test_the_readme_names_the_colab_runtime_it_tests() -> None:
    readme = (ROOT / "README.md").read_text()
    platforms = readme.split("## Tested platforms", 1)[1].split("\n## ", 1)[0]
    pins = colab_pins(PUBLISHED)
    date = PUBLISHED.splitlines()[0].split("(")[-1].split(")")[0]
    assert date in platforms and f"Python {colab_python(PUBLISHED)}" in platforms
    for name, shown in [("torch", "torch"), ("numpy", "NumPy"), ("pandas", "pandas"), ("matplotlib", "matplotlib"),
                        ("ipython", "IPython"), ("ipykernel", "ipykernel"), ("ipywidgets", "ipywidgets"),
                        ("notebook", "notebook")]:
        assert f"{shown} {public(pins[name])}" in platforms.replace("\n  ", " "), name
