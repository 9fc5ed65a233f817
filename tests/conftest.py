"""Fixtures for the unit tests: the devices present (the CPU always, CUDA when there is a GPU); the ``tools`` mark.

A test that takes ``device`` runs once per device; ``half`` runs once per half-precision dtype, on CUDA only.
Cases that cannot run here skip with their reason, so a CPU-only run says what it left out.

The tests of the course's tools (tools/: the translations, the student edition and nbgrader's course, the seeds and
kernel-set runners, the site's and the figures' builders) and of the committed files they write are marked
``tools``. CI runs every test under Python 3.11 (``make test``), 3.13 and 3.10 with the pins, the versions the tools
are installed at; the others (``-m "not tools"``), the library's, which is what a learner's Python runs, under 3.12
and the lowest versions (3.10), which no tool runs against (CONTRIBUTING, "CI: what each step proves").
"""

from __future__ import annotations

import pytest
import torch

TOOLS = {"test_assessment_table", "test_classroom_kit", "test_code_strings", "test_colab_sim", "test_cpu_kernels",
         "test_diagrams", "test_editions", "test_execute_notebooks", "test_images", "test_notebook_structure",
         "test_project", "test_references", "test_release", "test_seeds", "test_slide_deck", "test_teaching_quotes",
         "test_translations", "test_zip_collect"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "tools: a test of the course's tools or of the files they write")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.stem in TOOLS:
            item.add_marker(pytest.mark.tools)


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA GPU here (torch.cuda.is_available() is False)")


@pytest.fixture(params=[pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=needs_cuda)])
def device(request: pytest.FixtureRequest) -> torch.device:
    """Each device present, in turn."""
    return torch.device(request.param)


@pytest.fixture(params=[pytest.param(torch.bfloat16, id="bfloat16", marks=needs_cuda),
                        pytest.param(torch.float16, id="float16", marks=needs_cuda)])
def half(request: pytest.FixtureRequest) -> torch.dtype:
    """The half-precision dtypes GPU users run in; CUDA only (on a CPU they are slow and not what learners use)."""
    return request.param
