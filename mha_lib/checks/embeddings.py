"""Checks for notebook 02: an embedding lookup written as one-hot vectors times the table, gradient included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from mha_lib.checks._core import Case, difference, generator, run, verdict
from mha_lib.i18n import _

__all__ = ["embedding_lookup"]

_NO_GRADIENT = "no gradient reached the table"  # a marker between the wrapper and _compare, never shown


def _with_gradient(fn: Callable) -> Callable:
    """Call the learner's ``fn(ids, weight)`` on a table that records gradients; return (rows, d sum / d table)."""

    def wrapped(ids: Tensor, weight: Tensor) -> object:
        table = weight.clone().requires_grad_(True)
        rows = fn(ids, table)
        if not isinstance(rows, Tensor):
            return rows  # None or ... (a stub), or something else that the comparison names
        if not rows.requires_grad:
            return rows, _NO_GRADIENT
        rows.sum().backward()
        return rows, table.grad

    return wrapped


def _compare(expected: Any, got: object) -> str | None:
    rows, grad = expected
    if not isinstance(got, tuple):
        return difference(rows, got)
    found = difference(rows, got[0])
    if found:
        return _("the rows: {found}").format(found=found)
    if isinstance(got[1], str):
        return _("the rows are right, but no gradient reached the table: your output does not depend on weight "
                 "through torch operations, so training could never change the table")
    found = difference(grad, got[1])
    if not found:
        return None
    return _("the gradient of the table (backpropagating the sum of your output): {found}").format(found=found)


def _expected(ids: Tensor, weight: Tensor) -> tuple[Tensor, Tensor]:
    """The library's lookup, ``weight[ids]``, and the gradient of its sum: row i gets (times id i is used) x ones."""
    counts = torch.bincount(ids.flatten(), minlength=weight.shape[0]).to(weight.dtype)  # (n_vocab,)
    return weight[ids], counts[:, None].expand_as(weight).clone()


def _cases() -> list[Case]:
    g = generator(2)
    table = torch.randn(5, 3, generator=g)  # (n_vocab, d_model)
    wide = torch.randn(13, 8, generator=g)
    specs = [
        (_("the running example: ids [0, 1, 2, 3, 4], a (5, 3) table"), torch.arange(5), table,
         _("make a (T, n_vocab) one-hot matrix with F.one_hot(ids, num_classes=...), turn it into floats, and "
         "multiply it by the table: (T, n_vocab) @ (n_vocab, d_model) -> (T, d_model)")),
        (_("repeated ids, out of order: [1, 2, 1, 4]"), torch.tensor([1, 2, 1, 4]), table,
         _("position t gets row ids[t]; a row used twice appears twice, and gets twice the gradient")),
        (_("ids that never use the last rows: [0, 1] with a (5, 3) table"), torch.tensor([0, 1]), table,
         _("F.one_hot(ids) alone makes only max(ids) + 1 columns: pass num_classes=weight.shape[0],"
           " the vocabulary size")),
        (_("a batch of ids, (B, T) = (2, 3) -> (2, 3, d_model)"), torch.tensor([[0, 4, 4], [2, 1, 0]]), table,
         _("ids may have any shape: the one-hot of (B, T) ids is (B, T, n_vocab), and @ weight appends d_model")),
        (_("a float64 table"), torch.tensor([3, 0, 2]), table.double(),
         _("the one-hot matrix must have the table's dtype: .to(weight.dtype), not .float()")),
        (_("a bigger table: 13 tokens, d_model = 8, ids (2, 4)"), torch.tensor([[12, 0, 5, 5], [7, 12, 1, 3]]), wide,
         _("read n_vocab and d_model from weight.shape; do not assume 5 tokens or 3 dimensions")),
    ]
    return [Case(name, (ids, weight), _expected(ids, weight), hint=hint) for name, ids, weight, hint in specs]


def embedding_lookup(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(ids, weight)`` -> ``weight[ids]`` (ids of any shape, weight ``(n_vocab, d_model)``), gradient too."""
    wrapped = _with_gradient(fn) if callable(fn) else fn  # run() names a value that is not a function
    verdict(run("embedding_lookup", wrapped, _cases(), reference=_("weight[ids], gradient included"),
                compare=_compare), strict=strict)
