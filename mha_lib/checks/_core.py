"""The machinery behind every check: run a learner's function on cases, compare with mha_lib, say what is wrong.

A check prints one verdict and never shows a traceback:

- ``✓ name: all 6 cases match mha_lib.masked_softmax``;
- ``… name: not attempted yet`` when the function still is the stub (its body is ``pass``, so it returns ``None``;
  or it raises ``NotImplementedError``), so a student notebook runs top to bottom;
- ``✗ name: case 3 of 6 (what the case is): expected ..., got ...`` with a hint, for the first case that fails.

Only ``✓`` is printed. The other two verdicts are raised as ``CheckFailed``, whose message IPython shows alone
(no traceback): the check cell then has an error, so nbgrader's Validate, the visible check and autograde agree
(a stub or a wrong answer fails all three). The student edition tags check cells ``raises-exception``, so "Run
All" in JupyterLab (and nbclient, nbval) carries on past them. ``strict=True`` (nbgrader's hidden tests) is the
same verdict without the ``✓`` line.

A check refuses delegation: while the learner's function runs, the library function the check compares with
(and any other it names, e.g. ``F.scaled_dot_product_attention``) raises, and the verdict says "you called ...:
write it yourself".
"""

from __future__ import annotations

import contextlib
import inspect
import math
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode

from mha_lib._validate import _got
from mha_lib.i18n import _, ngettext

Status = Literal["pass", "fail", "not attempted"]


class CheckFailed(AssertionError):
    """A strict check that did not pass; IPython shows its message without a traceback."""

    def _render_traceback_(self) -> list[str]:
        return str(self).splitlines()


class Delegated(Exception):  # noqa: N818 - named for what happened, like the learner-facing WholeTableBuilt
    """The learner's function called the library function the check compares with."""


def _refuse(*args: object, **kwargs: object) -> None:
    # Runs as the *library's* function (its __code__ is swapped in), with the library module's globals, so it
    # finds this module through the import system; "NAME" is replaced by the function's name.
    raise __import__("mha_lib.checks._core", fromlist=["Delegated"]).Delegated("NAME")


_allowed = False  # True inside `library_allowed()`: tests that pass the library's own function as the learner's


@contextlib.contextmanager
def library_allowed() -> Iterator[None]:
    """Let checks accept the library's own functions (for tests of the checks themselves, not for learners)."""
    global _allowed
    before, _allowed = _allowed, True
    try:
        yield
    finally:
        _allowed = before


class _RefuseTorch(TorchFunctionMode):
    """Raises ``Delegated`` when one of ``functions`` (torch's own, e.g. ``F.scaled_dot_product_attention``) runs."""

    def __init__(self, functions: dict[object, str]) -> None:
        super().__init__()
        self.functions = functions

    def __torch_function__(self, func, types_, args=(), kwargs=None):  # noqa: ANN001, ANN204 - torch's protocol
        if func in self.functions:
            raise Delegated(self.functions[func])
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def refusing(forbidden: Sequence[tuple[object, str]]) -> Iterator[None]:
    """While inside, each ``(function, name)`` of ``forbidden`` raises ``Delegated(name)`` when called.

    A Python function gets ``_refuse``'s code in place of its own (so every name bound to it, ``from mha_lib
    import pad_batch`` included, refuses; a decorated one is unwrapped to the function that has no closure); a
    torch function is caught by a ``TorchFunctionMode``.
    """
    if _allowed or not forbidden:
        yield
        return
    swapped: list[tuple[types.FunctionType, types.CodeType]] = []
    torch_functions: dict[object, str] = {}
    for function, name in forbidden:
        inner = inspect.unwrap(function) if isinstance(function, types.FunctionType) else function
        if isinstance(inner, types.FunctionType) and not inner.__code__.co_freevars:
            code = _refuse.__code__.replace(co_consts=tuple(name if c == "NAME" else c
                                                            for c in _refuse.__code__.co_consts))
            swapped.append((inner, inner.__code__))
            inner.__code__ = code
        else:
            torch_functions[function] = name
    try:
        if torch_functions:
            with _RefuseTorch(torch_functions):
                yield
        else:
            yield
    finally:
        for function, code in swapped:
            function.__code__ = code


@dataclass(frozen=True)
class Case:
    """One input to try: what it is in words, the arguments, what the library returns, and a hint if it fails."""

    name: str
    args: tuple[Any, ...]
    expected: object
    kwargs: dict[str, Any] = field(default_factory=dict)
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


def _what(value: object) -> str:
    """What came, for a verdict, in the library's language: ``a Tensor of shape (2, 3)``, ``float 2.0``."""
    if isinstance(value, Tensor):
        return _("a Tensor of shape {shape}").format(shape=tuple(value.shape))
    return _got(value)


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
            return _("expected {count} results (a {kind}), got {got}").format(
                count=len(expected), kind=type(expected).__name__, got=_what(got))
        for position, (e, g) in enumerate(zip(expected, got)):
            found = difference(e, g, rtol=rtol, atol=atol)
            if found:
                return _("result {position}: {found}").format(position=position, found=found)
        return None
    if not isinstance(expected, Tensor):
        return None if got == expected else _("expected {expected}, got {got}").format(expected=repr(expected),
                                                                                          got=_what(got))
    if not isinstance(got, Tensor):
        return _("expected a tensor of shape {shape}, got {got}").format(shape=tuple(expected.shape), got=_what(got))
    if got.shape != expected.shape:
        return _("expected shape {expected}, got {got}").format(expected=tuple(expected.shape), got=tuple(got.shape))
    if expected.dtype == torch.bool or got.dtype == torch.bool:
        if got.dtype != expected.dtype:
            return _("expected dtype {expected}, got {got}").format(expected=expected.dtype, got=got.dtype)
        wrong = (got != expected).flatten().nonzero()
        if len(wrong) == 0:
            return None
        at = _index(int(wrong[0]), expected.shape)
        return _("{wrong} of {total} entries differ, the first at index {at}: expected {expected}, got {got}").format(
            wrong=len(wrong), total=expected.numel(), at=at, expected=bool(expected[at]), got=bool(got[at]))
    got_f, expected_f = got.detach().double().cpu(), expected.detach().double().cpu()
    nan = torch.isnan(got_f) & ~torch.isnan(expected_f)
    if nan.any():
        at = _index(int(nan.flatten().nonzero()[0]), expected.shape)
        return _("{count} NaN where a number was expected, the first at index {at} (expected {expected})").format(
            count=int(nan.sum()), at=at, expected=_number(expected_f[at].item()))
    close = torch.isclose(got_f, expected_f, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    wrong = (~close).flatten().nonzero()
    at = _index(int(wrong[0]), expected.shape)
    largest = float((got_f - expected_f).abs().nan_to_num(nan=math.inf).max())
    return _("{wrong} of {total} values differ, the first at index {at}: expected {expected}, got {got} (largest "
             "difference {largest})").format(wrong=len(wrong), total=expected.numel(), at=at,
                                             expected=_number(expected_f[at].item()),
                                             got=_number(got_f[at].item()), largest=_number(largest))


def _clone(value: Any) -> Any:
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
        atol: float = 1e-5, compare: Callable[[object, object], str | None] | None = None,
        forbid: Sequence[tuple[object, str]] = ()) -> Report:
    """Call ``fn`` on every case (on copies of the inputs) and compare with ``case.expected``; the verdict.

    ``forbid``: ``(function, "mha_lib.name")`` pairs the learner's function may not call (see ``refusing``);
    a call fails the case with "you called mha_lib.name: write it yourself".
    """
    if not callable(fn):
        raise TypeError(_("fn must be your function, e.g. checks.{title}(my_{title}), got {got}").format(
            title=title, got=_got(fn)))
    compare = compare or (lambda e, g: difference(e, g, rtol=rtol, atol=atol))
    total = len(cases)
    for number, case in enumerate(cases, start=1):
        try:
            with refusing(forbid):
                got = fn(*_clone(case.args), **_clone(case.kwargs))
        except NotImplementedError:
            got = None
        except Delegated as err:
            what = _("you called {name}: write it yourself (the exercise is to build what it does, by hand)").format(
                name=err)
            return Report(title, "fail", number - 1, total, _failed_line(title, number, total, case) + f"\n  {what}")
        except Exception as err:  # noqa: BLE001 - any error of the learner's code is reported, not raised
            return _failed(title, number, total, case,
                           _("your function raised {error}").format(error=_one_line(err)))
        if got is None or got is Ellipsis:
            message = _("… {title}: not attempted yet (the function returned None). Write its body in place of"
                        " `pass`, `return` the result, then run this cell again.").format(title=title)
            return Report(title, "not attempted", number - 1, total, message)
        found = compare(case.expected, got)
        if found:
            return _failed(title, number, total, case, found)
    message = ngettext("✓ {title}: the one case matches {reference}", "✓ {title}: all {total} cases match {reference}",
                       total).format(title=title, total=total, reference=reference)
    return Report(title, "pass", total, total, message)


def _failed_line(title: str, number: int, total: int, case: Case) -> str:
    return _("✗ {title}: case {number} of {total} fails: {case}").format(title=title, number=number, total=total,
                                                                         case=case.name)


def _failed(title: str, number: int, total: int, case: Case, what: str) -> Report:
    lines = [_failed_line(title, number, total, case), f"  {what}"]
    if case.hint:
        lines.append("  " + _("hint: {hint}").format(hint=case.hint))
    return Report(title, "fail", number - 1, total, "\n".join(lines))


def verdict(report: Report, *, strict: bool) -> None:
    """Print ``✓`` when every case passed (nothing with ``strict``); otherwise raise ``CheckFailed`` with the verdict.

    Raising, not printing, is what makes a check cell fail nbgrader's Validate and autograde exactly when its
    visible verdict is not ``✓``.
    """
    if report.status != "pass":
        raise CheckFailed(report.message)
    if not strict:
        print(report.message)
