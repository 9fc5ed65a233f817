"""The machinery behind every check: run a learner's function on cases, compare with mha_lib, say what is wrong.

A check prints one verdict and never shows a traceback:

- ``✓ name: all 6 cases match mha_lib.masked_softmax``;
- ``… name: not attempted yet`` when the function still is the stub (its body is ``pass``, so it returns ``None``;
  or it raises ``NotImplementedError``), so a student notebook runs top to bottom;
- ``✗ name: case 3 of 6 (what the case is): expected ..., got ...`` with a hint, for the first case that fails.

``strict=True`` (nbgrader's hidden tests) raises ``CheckFailed`` instead of printing, unless every case passes;
an untouched stub fails it too. IPython shows a ``CheckFailed`` as its message alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor

from mha_lib._validate import _got

Status = Literal["pass", "fail", "not attempted"]


class CheckFailed(AssertionError):
    """A strict check that did not pass; IPython shows its message without a traceback."""

    def _render_traceback_(self) -> list[str]:
        return str(self).splitlines()


@dataclass(frozen=True)
class Case:
    """One input to try: what it is in words, the arguments, what the library returns, and a hint if it fails."""

    name: str
    args: tuple
    expected: object
    kwargs: dict = field(default_factory=dict)
    hint: str = ""


@dataclass(frozen=True)
class Report:
    """The verdict of one check: ``status``, how many cases passed, and the message shown to the learner."""

    title: str
    status: Status
    passed: int
    total: int
    message: str

    def __repr__(self) -> str:
        return self.message


def generator(seed: int) -> torch.Generator:
    """A private random generator: building cases never moves the notebook's own random state."""
    return torch.Generator().manual_seed(seed)


def _index(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    out = []
    for size in reversed(shape):
        out.append(flat % size)
        flat //= size
    return tuple(reversed(out))


def _number(x: float) -> str:
    return "nan" if math.isnan(x) else f"{x:.4g}"


def difference(expected: object, got: object, *, rtol: float = 1e-4, atol: float = 1e-5) -> str | None:
    """What differs between ``expected`` and ``got``, in one or two lines; None when they match."""
    if isinstance(expected, (tuple, list)) and not isinstance(expected, str):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"expected {len(expected)} results (a {type(expected).__name__}), got {_got(got)}"
        for position, (e, g) in enumerate(zip(expected, got)):
            found = difference(e, g, rtol=rtol, atol=atol)
            if found:
                return f"result {position}: {found}"
        return None
    if not isinstance(expected, Tensor):
        return None if got == expected else f"expected {expected!r}, got {_got(got)}"
    if not isinstance(got, Tensor):
        return f"expected a tensor of shape {tuple(expected.shape)}, got {_got(got)}"
    if got.shape != expected.shape:
        return f"expected shape {tuple(expected.shape)}, got {tuple(got.shape)}"
    if expected.dtype == torch.bool or got.dtype == torch.bool:
        if got.dtype != expected.dtype:
            return f"expected dtype {expected.dtype}, got {got.dtype}"
        wrong = (got != expected).flatten().nonzero()
        if len(wrong) == 0:
            return None
        at = _index(int(wrong[0]), expected.shape)
        return (f"{len(wrong)} of {expected.numel()} entries differ, the first at index {at}: "
                f"expected {bool(expected[at])}, got {bool(got[at])}")
    got_f, expected_f = got.detach().double().cpu(), expected.detach().double().cpu()
    nan = torch.isnan(got_f) & ~torch.isnan(expected_f)
    if nan.any():
        at = _index(int(nan.flatten().nonzero()[0]), expected.shape)
        return (f"{int(nan.sum())} NaN where a number was expected, the first at index {at}"
                f" (expected {_number(expected_f[at].item())})")
    close = torch.isclose(got_f, expected_f, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    wrong = (~close).flatten().nonzero()
    at = _index(int(wrong[0]), expected.shape)
    largest = float((got_f - expected_f).abs().nan_to_num(nan=math.inf).max())
    return (f"{len(wrong)} of {expected.numel()} values differ, the first at index {at}: expected "
            f"{_number(expected_f[at].item())}, got {_number(got_f[at].item())}"
            f" (largest difference {_number(largest)})")


def _clone(value: object) -> object:
    if isinstance(value, Tensor):
        return value.clone()
    if isinstance(value, (tuple, list)):
        return type(value)(_clone(v) for v in value)
    return value


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(err).__name__}: {first[:200]}" if first else type(err).__name__


def run(title: str, fn: object, cases: Sequence[Case], *, reference: str, rtol: float = 1e-4,
        atol: float = 1e-5, compare: Callable[[object, object], str | None] | None = None) -> Report:
    """Call ``fn`` on every case (on copies of the inputs) and compare with ``case.expected``; the verdict."""
    if not callable(fn):
        raise TypeError(f"fn must be your function, e.g. checks.{title}(my_{title}), got {_got(fn)}")
    compare = compare or (lambda e, g: difference(e, g, rtol=rtol, atol=atol))
    total = len(cases)
    for number, case in enumerate(cases, start=1):
        try:
            got = fn(*_clone(case.args), **_clone(case.kwargs))
        except NotImplementedError:
            got = None
        except Exception as err:  # noqa: BLE001 - any error of the learner's code is reported, not raised
            return _failed(title, number, total, case, f"your function raised {_one_line(err)}")
        if got is None or got is Ellipsis:
            message = (f"… {title}: not attempted yet (the function returned None). Write its body in place of"
                       " `pass`, `return` the result, then run this cell again.")
            return Report(title, "not attempted", number - 1, total, message)
        found = compare(case.expected, got)
        if found:
            return _failed(title, number, total, case, found)
    return Report(title, "pass", total, total, f"✓ {title}: all {total} cases match {reference}")


def _failed(title: str, number: int, total: int, case: Case, what: str) -> Report:
    lines = [f"✗ {title}: case {number} of {total} fails: {case.name}", f"  {what}"]
    if case.hint:
        lines.append(f"  hint: {case.hint}")
    return Report(title, "fail", number - 1, total, "\n".join(lines))


def verdict(report: Report, *, strict: bool) -> None:
    """Print the verdict; with ``strict``, raise ``CheckFailed`` unless it passed (and print nothing if it did)."""
    if strict:
        if report.status != "pass":
            raise CheckFailed(report.message)
        return
    print(report.message)
