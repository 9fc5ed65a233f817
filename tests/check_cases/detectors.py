"""Notebook 08's check: the library passes; the usual slips in an induction score fail at their case."""

from __future__ import annotations

import torch

from mha_lib import checks, toy


def _score(weights, tokens, *, latest_only=False, per_sequence=False, strict_before=False, causal_keys=True,
           zero_when_empty=True):
    """An induction score with one switch per slip a learner makes (all off: the right answer)."""
    t = tokens.shape[1]
    before = torch.cat([torch.full_like(tokens[:, :1], -1), tokens[:, :-1]], dim=1)  # (B, T): token before key j
    match = tokens[:, :, None] == before[:, None, :]  # (B, T, T)
    earlier = torch.ones(t, t, dtype=torch.bool).tril(-1 if strict_before else 0)
    target = match & earlier
    repeated = target.any(-1)  # (B, T)
    if latest_only:  # keep only the last matching key of each query
        last = torch.where(target, torch.arange(t), -1).amax(-1, keepdim=True)  # (B, T, 1)
        target = target & (torch.arange(t) == last)
    if not causal_keys:  # weights on any matching key, later ones included
        target = match
    on_target = (weights * target[:, None]).sum(-1)  # (B, h, T)
    if per_sequence:
        per = (on_target * repeated[:, None]).sum(-1) / repeated.sum(-1, keepdim=True).clamp_min(1)  # (B, h)
        return per.mean(0)
    count = repeated.sum()
    return (on_target * repeated[:, None]).sum((0, 2)) / (count.clamp_min(1) if zero_when_empty else count)


ROWS = [
    (checks.induction_score, toy.induction_score, [
        (lambda w, x: _score(w, x, per_sequence=True), 2),
        (lambda w, x: _score(w, x, latest_only=True), 3),
        (lambda w, x: _score(w, x, strict_before=True), 4),
        (lambda w, x: _score(w, x, causal_keys=False), 5),
        (lambda w, x: _score(w, x, zero_when_empty=False), 6),
        (lambda w, x: _score(w, x)[None], 1),  # a (1, h) result instead of (h,)
    ]),
]
