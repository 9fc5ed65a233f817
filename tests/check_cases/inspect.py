"""Notebook 06's check: the library passes; the usual slips in a previous-token score fail at their case."""

from __future__ import annotations

import torch

from mha_lib import checks, toy


def _diagonal(weights, offset=-1):
    return torch.diagonal(weights, offset=offset, dim1=-2, dim2=-1)  # (B, h, T - |offset|)


def _with_query_zero(weights):
    """Every query counted, query 0 with the weight on the last key (what weights[..., i, i - 1] gives at i = 0)."""
    t = weights.shape[-1]
    return weights[..., torch.arange(t), torch.arange(t) - 1].mean((0, 2))


def _every_earlier_key(weights):
    """The weight on all earlier keys, not only on key i - 1."""
    return weights.tril(-1).sum(-1)[..., 1:].mean((0, 2))


ROWS = [
    (checks.previous_token_score, toy.previous_token_score, [
        (lambda w: _diagonal(w, 0).mean((0, 2)), 1),  # the main diagonal: the token itself
        (_with_query_zero, 1),
        (lambda w: _diagonal(w).mean(2), 1),  # one score per sequence and head, (B, h)
        (lambda w: _diagonal(w).mean(), 1),  # one number for every head together
        (_every_earlier_key, 2),
        (lambda w: _diagonal(w).sum((0, 2)) / w.shape[-1], 1),  # divided by T, not by the T - 1 queries counted
    ]),
]
