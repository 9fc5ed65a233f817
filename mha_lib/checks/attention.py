"""Checks for notebook 03: scaled dot-product attention by hand, ``softmax(Q K^T / sqrt(d_k)) V`` and its weights."""

from __future__ import annotations

from typing import Any

import torch

from mha_lib.attention import scaled_dot_product_attention as library_attention
from mha_lib.checks._core import Case, difference, generator, run, verdict
from mha_lib.i18n import _

__all__ = ["scaled_dot_product_attention"]

FORBID = [(library_attention, "mha_lib.scaled_dot_product_attention"),
          (torch.nn.functional.scaled_dot_product_attention, "F.scaled_dot_product_attention")]


def _compare(expected: Any, got: object) -> str | None:
    """The weights first (a wrong softmax shows there), then the output; each named."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return difference(expected, got)
    for name, position in ((_("the weights"), 1), (_("the output"), 0)):
        found = difference(expected[position], got[position])
        if found:
            return _("{part}: {found}").format(part=name, found=found)
    return None


def _cases() -> list[Case]:
    g = generator(3)

    def qkv(*batch: int, t_q: int, t_k: int, d_k: int, d_v: int, scale: float = 1.0) -> tuple:
        return (scale * torch.randn(*batch, t_q, d_k, generator=g), scale * torch.randn(*batch, t_k, d_k, generator=g),
                torch.randn(*batch, t_k, d_v, generator=g))

    specs = [
        (_("one sequence: Q, K, V all (1, 5, 4)"), qkv(1, t_q=5, t_k=5, d_k=4, d_v=4),
         _("scores = Q @ K^T / sqrt(d_k), weights = softmax over the keys (dim=-1), output = weights @ V; "
         "return the pair (output, weights)")),
        (_("values of another width: d_k = 8, d_v = 3"), qkv(2, t_q=4, t_k=4, d_k=8, d_v=3),
         _("divide by sqrt(d_k), the width of queries and keys (Q.shape[-1]), not by the width of the values")),
        (_("more keys than queries: T_q = 3, T_k = 6"), qkv(2, t_q=3, t_k=6, d_k=4, d_v=5),
         _("the weights are (B, T_q, T_k): one row per query, softmax along the last axis (the keys), so each row "
         "sums to 1; softmax over dim=1 would make each column sum to 1 instead")),
        (_("several heads: (B, h, T, d) = (2, 3, 4, 8)"), qkv(2, 3, t_q=4, t_k=4, d_k=8, d_v=8),
         _("transpose only the last two axes of K: K.transpose(-2, -1). K.transpose(1, 2) swaps heads and tokens "
         "in a 4-axis tensor, and K.T reverses every axis")),
        (_("large scores (Q and K x 30): no overflow"), qkv(1, t_q=4, t_k=5, d_k=16, d_v=2, scale=30.0),
         _("exp of a score of several hundred is inf in float32, and inf / inf is NaN: use torch.softmax, which "
         "subtracts each row's maximum first (notebook 03, exercise 1)")),
        (_("a single key: every weight is 1"), qkv(3, t_q=2, t_k=1, d_k=4, d_v=2),
         _("with one key the softmax is exactly 1 and each output is that key's value: check the axis of the softmax")),
    ]
    return [Case(name, args, library_attention(*args), hint=hint) for name, args, hint in specs]


def scaled_dot_product_attention(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(Q, K, V)`` -> ``(output (..., T_q, d_v), weights (..., T_q, T_k))`` for 3- and 4-axis inputs."""
    verdict(run("scaled_dot_product_attention", fn, _cases(), reference="mha_lib.scaled_dot_product_attention",
                compare=_compare, forbid=FORBID),
            strict=strict)
