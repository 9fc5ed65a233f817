"""Fixtures for the unit tests: the devices present (the CPU always, CUDA when there is a GPU).

A test that takes ``device`` runs once per device; ``half`` runs once per half-precision dtype, on CUDA only.
Cases that cannot run here skip with their reason, so a CPU-only run says what it left out.
"""

from __future__ import annotations

import pytest
import torch

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
