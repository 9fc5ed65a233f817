"""Checks for notebook 08: the induction score of every head, from attention weights and token ids."""

from __future__ import annotations

import torch
from torch import Tensor

from mha_lib import toy
from mha_lib.checks._core import Case, generator, run, verdict
from mha_lib.i18n import _

__all__ = ["induction_score"]


def _weights(batch: int, heads: int, t: int, g: torch.Generator, *, causal: bool = True) -> Tensor:
    """Random attention rows ``(B, h, T, T)`` that sum to 1 (0 on later keys when ``causal``)."""
    scores = torch.randn(batch, heads, t, t, generator=g) * 2
    if causal:
        scores = scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return scores.softmax(-1)


def _pattern(periods: list[int], t: int, g: torch.Generator) -> Tensor:
    """``BOS`` then distinct random tokens repeating with each sequence's period: ``(B, T)`` ids."""
    rows = []
    for p in periods:
        body = torch.randperm(15, generator=g)[:p] + 1  # (p,) distinct ids 1..15
        rows.append(torch.cat([torch.zeros(1, dtype=torch.long), body.repeat(t // p + 1)[: t - 1]]))
    return torch.stack(rows)


def _perfect(tokens: Tensor) -> Tensor:
    """``(B, 1, T, T)``: a head that puts all its weight on the keys after earlier occurrences (else on BOS)."""
    target = toy.induction_targets(tokens).double()  # (B, T, T)
    rows = target / target.sum(-1, keepdim=True).clamp_min(1.0)
    rows[..., 0] += (target.sum(-1) == 0).double()  # nothing to copy: all on BOS
    return rows[:, None].float()


def _cases() -> list[Case]:
    g = generator(8)
    one = _pattern([5], 10, g)  # (1, 10): each repeated token appeared exactly once before
    counts = _pattern([6, 8, 10], 12, g)  # (3, 12): 5, 3 and 1 repeated tokens
    twice = _pattern([3, 4], 12, g)  # (2, 12): tokens seen twice and three times before
    random = torch.randint(0, 4, (3, 9), generator=g)  # (3, 9): repeats anywhere, equal neighbours too
    distinct = torch.randperm(15, generator=g)[:8][None] + 1  # (1, 8): nothing repeats
    wide = _pattern([4, 7], 16, g)  # (2, 16)
    perfect_and_noise = torch.cat([_perfect(one), _weights(1, 1, 10, g)], dim=1)  # (1, 2, 10, 10)
    specs = [
        (_("a perfect induction head and a random one, one sequence (B=1, h=2, T=10)"), perfect_and_noise, one,
         _("for each query whose token appeared before, add up its weights on the keys right after the earlier"
         " occurrence(s), then average over those queries only")),
        (_("3 sequences with 5, 3 and 1 repeated tokens (B=3, h=2, T=12)"), _weights(3, 2, 12, g), counts,
         _("average over every repeated query of the batch at once, not sequence by sequence: a sequence with 5"
         " repeated tokens counts 5 times as much as one with 1")),
        (_("tokens seen two or three times before (periods 3 and 4)"), _weights(2, 3, 12, g), twice,
         _("a token seen twice before has two keys to copy from: add the weights after every earlier occurrence,"
         " not only the latest one")),
        (_("random tokens, with equal neighbours (vocabulary of 4)"), _weights(3, 2, 9, g), random,
         _("key j follows an earlier occurrence when tokens[j - 1] == tokens[i] and j <= i: if token i - 1 equals"
         " token i, key i itself (the query's own position) is the one to copy from")),
        (_("an encoder's weights, with weight on later keys too"), _weights(2, 2, 12, g, causal=False), counts[:2],
         _("only earlier occurrences count: keep the keys j <= i (the query's own token at i is not an earlier"
         " occurrence of itself)")),
        (_("no token repeats: the score is 0, not NaN"), _weights(1, 3, 8, g), distinct,
         _("with no repeated query there is nothing to average: divide by the number of repeated queries clamped"
         " to at least 1")),
        (_("another shape (B=2, h=4, T=16)"), _weights(2, 4, 16, g), wide,
         _("read B, h and T from the shapes of weights and tokens; return one score per head, shape (h,)")),
    ]
    return [Case(name, (w, tokens), toy.induction_score(w, tokens), hint=hint) for name, w, tokens, hint in specs]


def induction_score(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(weights, tokens)`` (``(B, h, T, T)`` and ``(B, T)`` -> ``(h,)``) against ``toy.induction_score``."""
    verdict(run("induction_score", fn, _cases(), reference="mha_lib.toy.induction_score",
                forbid=[(toy.induction_score, "mha_lib.toy.induction_score")]), strict=strict)
