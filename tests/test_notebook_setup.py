"""mha_lib.notebook.setup: the same seed gives the same draws; bad arguments are named."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
import torch

from mha_lib.notebook import setup


@pytest.fixture(autouse=True)
def _restore_print_options():
    yield
    torch.set_printoptions(profile="default")
    np.set_printoptions(precision=8, suppress=False)
    pd.reset_option("display.precision")


def test_the_same_seed_gives_the_same_draws() -> None:
    setup(seed=7)
    first = (random.random(), float(np.random.rand()), torch.rand(3).tolist())  # noqa: NPY002
    setup(seed=7)
    assert (random.random(), float(np.random.rand()), torch.rand(3).tolist()) == first  # noqa: NPY002
    assert pd.get_option("display.precision") == 4


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"seed": 4.2}, TypeError, r"^seed must be an int, got float 4.2$"),
    ({"seed": -1}, ValueError, r"^seed must be >= 0, got -1$"),
    ({"precision": 2.0}, TypeError, r"^precision must be an int, got float 2.0: write precision=2$"),
])
def test_bad_arguments_are_named(kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        setup(**kwargs)
