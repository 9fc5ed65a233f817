"""mha_lib.checks: each check passes the library's own answer, calls a stub "not attempted", names a bug's case.

A new check adds a row to ``ROWS`` in its topic's module in ``tests/check_cases/``: the check, a correct function,
and buggy ones with the case each must fail.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

from mha_lib import checks
from mha_lib.checks import Case, CheckFailed, difference, run


def _stub(*args, **kwargs):  # what nbgrader leaves in a student's copy: the body is `pass`
    pass


def _raises_stub(*args, **kwargs):
    raise NotImplementedError


# Every row of every module in tests/check_cases/: (check, a correct function, [(bug, first failing case), ...])
CHECKS = [row for module in sorted((Path(__file__).parent / "check_cases").glob("[a-z]*.py"))
          for row in importlib.import_module(f"check_cases.{module.stem}").ROWS]
IDS = [check.__name__ for check, _, _ in CHECKS]


@pytest.mark.parametrize(("check", "correct", "bugs"), CHECKS, ids=IDS)
def test_the_library_passes_silently_in_strict_mode(check, correct, bugs, capsys) -> None:
    check(correct, strict=True)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("check", "correct", "bugs"), CHECKS, ids=IDS)
def test_a_correct_function_gets_one_tick(check, correct, bugs, capsys) -> None:
    check(correct)
    out = capsys.readouterr().out
    assert out.startswith(f"✓ {check.__name__}: all ") and out.count("\n") == 1


@pytest.mark.parametrize("stub", [_stub, _raises_stub], ids=["body is pass", "raises NotImplementedError"])
@pytest.mark.parametrize(("check", "correct", "bugs"), CHECKS, ids=IDS)
def test_a_stub_is_not_attempted_yet_and_fails_strict(check, correct, bugs, stub, capsys) -> None:
    check(stub)  # never raises: a student's notebook runs top to bottom
    assert "not attempted yet" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="not attempted yet"):
        check(stub, strict=True)


@pytest.mark.parametrize(("check", "correct", "bugs"), CHECKS, ids=IDS)
def test_each_bug_fails_at_its_case_with_a_hint(check, correct, bugs, capsys) -> None:
    for bug, case in bugs:
        check(bug)
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].startswith(f"✗ {check.__name__}: case {case} of "), lines
        assert any(line.startswith("  hint: ") for line in lines), lines
        assert not any("Traceback" in line for line in lines)


@pytest.mark.parametrize(("check", "correct", "bugs"), CHECKS, ids=IDS)
def test_a_check_leaves_the_global_random_state_alone(check, correct, bugs) -> None:
    torch.manual_seed(0)
    state = torch.get_rng_state()
    check(correct, strict=True)
    assert torch.equal(torch.get_rng_state(), state)


def test_a_failed_strict_check_shows_its_message_without_a_traceback() -> None:
    with pytest.raises(CheckFailed) as caught:
        checks.masked_softmax(lambda s, v: torch.softmax(s, -1).nan_to_num(0.0), strict=True)
    assert caught.value._render_traceback_()[0].startswith("✗ masked_softmax: case 2 of ")
    assert isinstance(caught.value, AssertionError), "nbgrader counts any error as a failed test"


def test_the_learners_function_gets_copies_of_the_inputs() -> None:
    seen = []

    def in_place(x):
        seen.append(x)
        x.zero_()
        return x

    x = torch.ones(2)
    report = run("identity", in_place, [Case("twice", (x,), torch.ones(2)), Case("again", (x,), torch.ones(2))],
                 reference="torch")
    assert report.status == "fail" and x.eq(1).all() and seen[0] is not x


@pytest.mark.parametrize(("expected", "got", "says"), [
    (torch.zeros(2, 3), torch.zeros(3, 2), "expected shape (2, 3), got (3, 2)"),
    (torch.zeros(2), [0.0, 0.0], "expected a tensor of shape (2,), got list [0.0, 0.0]"),
    (torch.tensor([0.0, 1.0]), torch.tensor([0.0, float("nan")]), "1 NaN where a number was expected, the first at "
     "index (1,) (expected 1)"),
    (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]), "1 of 2 values differ, the first at index (1,): expected 2,"
     " got 2.5 (largest difference 0.5)"),
    (torch.tensor([True, False]), torch.tensor([1.0, 0.0]), "expected dtype torch.bool, got torch.float32"),
    (torch.tensor([True, False]), torch.tensor([True, True]), "1 of 2 entries differ, the first at index (1,):"
     " expected False, got True"),
    ((torch.zeros(1), torch.ones(1)), (torch.zeros(1), torch.zeros(1)), "result 1: 1 of 1 values differ"),
    ((torch.zeros(1), torch.ones(1)), torch.zeros(1), "expected 2 results (a tuple), got a Tensor of shape (1,)"),
    (3, 4, "expected 3, got int 4"),
])
def test_difference_says_what_differs(expected, got, says: str) -> None:
    assert says in difference(expected, got)


def test_difference_is_none_for_equal_values() -> None:
    assert difference(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7])) is None
    assert difference((torch.ones(2), 3), (torch.ones(2), 3)) is None


def test_a_check_refuses_what_is_not_a_function() -> None:
    with pytest.raises(TypeError, match=r"fn must be your function, e.g. checks.masked_softmax\(my_masked_softmax\)"):
        checks.masked_softmax(torch.zeros(2))
