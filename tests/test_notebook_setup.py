"""mha_lib.notebook.setup: the same seed gives the same draws; bad arguments are named."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
import torch

from mha_lib.notebook import TRAINING_SEED_VARIABLE, setup, training_seed


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


def test_training_seed_is_the_committed_one_unless_a_run_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRAINING_SEED_VARIABLE, raising=False)
    assert training_seed(2) == 2
    monkeypatch.setenv(TRAINING_SEED_VARIABLE, "3")
    assert [training_seed(2), training_seed(5)] == [3002, 3005], "each model keeps its own seed in run 3"
    monkeypatch.setenv(TRAINING_SEED_VARIABLE, "")
    assert training_seed(2) == 2


@pytest.mark.parametrize(("run", "match"), [("two", "got 'two'"), ("0", "got '0'"), ("-1", "got '-1'")])
def test_training_seed_refuses_a_run_that_is_not_a_positive_whole_number(
    monkeypatch: pytest.MonkeyPatch, run: str, match: str
) -> None:
    monkeypatch.setenv(TRAINING_SEED_VARIABLE, run)
    with pytest.raises(ValueError, match=f"MHA_TRAINING_SEED must be a whole number >= 1 \\(a run\\), {match}"):
        training_seed(2)


@pytest.mark.parametrize(("committed", "error"), [(1000, ValueError), (-1, ValueError), (2.0, TypeError)])
def test_training_seed_refuses_a_bad_committed_seed(committed: object, error: type) -> None:
    with pytest.raises(error, match="committed must be"):
        training_seed(committed)
