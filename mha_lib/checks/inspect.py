"""Checks for notebook 06: the previous-token score, the detector that names a previous-token head."""

from __future__ import annotations

import torch
from torch import Tensor

from mha_lib import toy
from mha_lib.checks._core import Case, generator, run, verdict
from mha_lib.i18n import _

__all__ = ["previous_token_score"]


def _weights(batch: int, heads: int, t: int, g: torch.Generator, *, causal: bool = True) -> Tensor:
    """Random attention rows ``(B, h, T, T)`` that sum to 1 (0 on later keys when ``causal``)."""
    scores = torch.randn(batch, heads, t, t, generator=g) * 2
    if causal:
        scores = scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return scores.softmax(-1)


def _previous_token_head(t: int) -> Tensor:
    """``(1, 1, T, T)``: each query on the key before it; query 0, which has none, on itself."""
    rows = torch.zeros(t, t)
    rows[0, 0] = 1.0
    rows[torch.arange(1, t), torch.arange(t - 1)] = 1.0
    return rows[None, None]


def _cases() -> list[Case]:
    g = generator(6)
    specs = [
        (_("a perfect previous-token head (B=1, h=1, T=6): its score is 1"), _previous_token_head(6),
         _("for each query i >= 1 take the weight on key i - 1, the diagonal just below the main one (torch.diagonal"
         " with offset=-1 over the last two axes); query 0 has no previous token and does not count")),
        (_("random causal heads, 3 sequences (B=3, h=2, T=8)"), _weights(3, 2, 8, g),
         _("only key i - 1 counts, not every earlier key; average over every sequence and every query i >= 1 at once,"
         " one score per head: shape (h,)")),
        (_("an encoder's heads, with weight on later keys too (B=2, h=3, T=7)"), _weights(2, 3, 7, g, causal=False),
         _("the weight on key i - 1 is all that counts, wherever the rest of the row goes")),
        (_("the shortest sequence with a previous token (T=2)"), _weights(4, 2, 2, g),
         _("with T = 2 only query 1 has a previous token: the score is the mean of weights[:, :, 1,"
           " 0] over the batch")),
        (_("another shape (B=2, h=4, T=16)"), _weights(2, 4, 16, g),
         _("read B, h and T from weights.shape; return one score per head, shape (h,)")),
    ]
    return [Case(name, (w,), toy.previous_token_score(w), hint=hint) for name, w, hint in specs]


def previous_token_score(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(weights)`` (``(B, h, T, T)`` -> ``(h,)``) against ``toy.previous_token_score``."""
    verdict(run("previous_token_score", fn, _cases(), reference="mha_lib.toy.previous_token_score",
                forbid=[(toy.previous_token_score, "mha_lib.toy.previous_token_score")]), strict=strict)
