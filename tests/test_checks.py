"""mha_lib.checks: each check passes a right answer, calls a stub "not attempted", names a bug's case, refuses the
library's own function.

A new check adds a row to ``ROWS`` in its topic's module in ``tests/check_cases/``: the check, a correct function,
and buggy ones with the case each must fail. The rows use the library's functions as the right answer, so every
test but the delegation tests runs inside ``library_allowed()`` (a learner's call of them fails the check).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

import mha_lib
from mha_lib import checks, toy
from mha_lib.checks import Case, CheckFailed, difference, run
from mha_lib.checks._core import library_allowed


def _stub(*args, **kwargs):  # what nbgrader leaves in a student's copy: the body is `pass`
    pass


def _raises_stub(*args, **kwargs):
    raise NotImplementedError


# Every row of every module in tests/check_cases/: (check, a correct function, [(bug, first failing case), ...])
CHECKS = [row for module in sorted((Path(__file__).parent / "check_cases").glob("[a-z]*.py"))
          for row in importlib.import_module(f"check_cases.{module.stem}").ROWS]
IDS = [check.__name__ for check, _, _ in CHECKS]


@pytest.fixture(autouse=True)
def _the_library_counts_as_a_learners_answer(request: pytest.FixtureRequest):
    if "delegat" in request.node.name:
        yield
        return
    with library_allowed():
        yield


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
def test_a_stub_is_not_attempted_yet_and_fails(check, correct, bugs, stub, capsys) -> None:
    # Raised, so nbgrader's Validate fails the untouched cell; the student copy's check cells are tagged
    # raises-exception, so Run All carries on past them.
    with pytest.raises(CheckFailed, match="not attempted yet") as caught:
        check(stub)
    assert caught.value._render_traceback_()[0].startswith(f"… {check.__name__}: not attempted yet")
    with pytest.raises(CheckFailed, match="not attempted yet"):
        check(stub, strict=True)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("check", "correct", "bugs"), CHECKS, ids=IDS)
def test_each_bug_fails_at_its_case_with_a_hint(check, correct, bugs, capsys) -> None:
    for bug, case in bugs:
        with pytest.raises(CheckFailed) as caught:
            check(bug)
        assert capsys.readouterr().out == "", "a failure is raised, not printed beside a tick"
        lines = caught.value._render_traceback_()
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


# ----- delegation: the library's own answer is refused (these tests run without library_allowed) -----

def _shapes_by_tracing(B, T_q, T_k, d_model, h):
    layer = mha_lib.MultiHeadAttention(d_model, d_model, None, 0.0, h, causal=False)
    trace = layer.trace(torch.zeros(B, T_q, d_model), torch.zeros(B, T_k, d_model), torch.zeros(B, T_k, d_model))
    return {name: tuple(getattr(trace, name).shape) for name in checks.notation.NAMES}


def _sdpa_by_torch(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v), torch.softmax(q @ k.transpose(-2, -1), -1)


DELEGATIONS = [  # (check, a function that hands the work to the library, the name the verdict gives)
    (checks.attention_shapes, _shapes_by_tracing, "MultiHeadAttention.trace"),
    (checks.pad_batch, lambda s, p, max_len=None: mha_lib.tokenize.pad_batch(s, pad_id=p, max_len=max_len),
     "mha_lib.pad_batch"),
    (checks.scaled_dot_product_attention, mha_lib.scaled_dot_product_attention,
     "mha_lib.scaled_dot_product_attention"),
    (checks.scaled_dot_product_attention, _sdpa_by_torch, "F.scaled_dot_product_attention"),
    (checks.attention_mask, lambda lens, tq, tk, causal=False: mha_lib.attention.valid_lens_mask(lens, tq, tk),
     "mha_lib.valid_lens_mask"),
    (checks.masked_softmax, mha_lib.masked_softmax, "mha_lib.masked_softmax"),
    (checks.split_heads, mha_lib.split_heads, "mha_lib.split_heads"),
    (checks.merge_heads, mha_lib.merge_heads, "mha_lib.merge_heads"),
    (checks.previous_token_score, toy.previous_token_score, "mha_lib.toy.previous_token_score"),
    (checks.sinusoidal_table, mha_lib.positional.sinusoidal_table, "mha_lib.sinusoidal_table"),
    (checks.induction_score, toy.induction_score, "mha_lib.toy.induction_score"),
    (checks.ablation_scores, toy.ablation_scores, "mha_lib.toy.ablation_scores"),
    (checks.online_attention, lambda q, k, v, b, causal=False: mha_lib.attention.tiled_attention(
        q, k, v, block_size=b, causal=causal), "mha_lib.attention.tiled_attention"),
    (checks.causal_window_mask, mha_lib.cache.causal_window_mask, "mha_lib.causal_window_mask"),
    (checks.load_attention, mha_lib.pretrained.load_attention_layer, "mha_lib.pretrained.load_attention_layer"),
]


@pytest.mark.parametrize(("check", "delegate", "name"), DELEGATIONS, ids=[n for _, _, n in DELEGATIONS])
def test_delegation_to_the_library_fails_and_says_so(check, delegate, name) -> None:
    with pytest.raises(CheckFailed, match=f"case 1 of .*\n  you called {name}: write it yourself"):
        check(delegate)


def test_delegation_refusal_ends_with_the_check() -> None:
    with pytest.raises(CheckFailed):
        checks.masked_softmax(mha_lib.masked_softmax)
    weights = mha_lib.masked_softmax(torch.zeros(1, 1, 2), torch.tensor([1]))
    assert weights.tolist() == [[[1.0, 0.0]]]


def test_a_solution_cell_cannot_replace_a_check() -> None:
    with pytest.raises(AttributeError, match="part of the grading"):
        checks.masked_softmax = lambda fn, strict=False: print("✓")  # type: ignore[assignment]
    with pytest.raises(AttributeError, match="part of the grading"):
        del checks.pad_batch
    assert checks.masked_softmax.__module__ == "mha_lib.checks.masks"


# ----- M6: the slips of 12's loader and 04's masked softmax are named -----

@pytest.mark.parametrize(("switch", "says"), [
    ({"transpose": True}, "transposed"), ({"causal": True}, "causal=False"), ({"swap_query_key": True}, "swapped"),
])
def test_load_attention_names_each_slip(switch: dict, says: str) -> None:
    from check_cases.pretrained import _load

    with pytest.raises(CheckFailed, match=says):
        checks.load_attention(lambda s, lay, h: _load(s, lay, h, **switch))


def test_masked_softmax_names_a_large_negative_fill() -> None:
    def d2l_style(scores, valid_lens):  # d2l's masked_softmax: -1e6 in place of -inf, dead rows uniform
        keys = torch.arange(scores.shape[-1])
        lens = valid_lens[:, None, None] if valid_lens.dim() == 1 else valid_lens[..., None]
        return torch.softmax(scores.masked_fill(keys >= lens, -1e6), dim=-1)

    with pytest.raises(CheckFailed, match=r"case 5 of (.|\n)*-1e6") as caught:
        checks.masked_softmax(d2l_style)
    assert "uniform" in str(caught.value)
