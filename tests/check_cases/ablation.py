"""Notebook 09's check: the library passes; the usual slips in a zero-ablation loop fail at their case."""

from __future__ import annotations

import torch

from mha_lib import checks, toy


def _ablation(model, batch, *, scored=True, rise=True, fresh=True, transpose=False, layers=None):
    """Zero-ablation of every head, with one switch per slip a learner makes (defaults: the right answer)."""
    num_layers = model.num_layers if layers is None else layers
    with torch.no_grad():
        base = float(toy.task_loss(model, batch, scored=scored))
        out = torch.zeros(model.num_layers, model.num_heads)
        gates = torch.ones(model.num_layers, model.num_heads)
        for layer in range(num_layers):
            for head in range(model.num_heads):
                if fresh:
                    gates = torch.ones(model.num_layers, model.num_heads)
                gates[layer, head] = 0.0
                loss = float(toy.task_loss(model, batch, scored=scored, head_gates=gates))
                out[layer, head] = loss - base if rise else loss
    return out.T if transpose else out


ROWS = [
    (checks.ablation_scores, toy.ablation_scores, [
        (lambda m, b: _ablation(m, b, scored=False), 1),
        (lambda m, b: _ablation(m, b, rise=False), 1),
        (lambda m, b: _ablation(m, b, fresh=False), 2),
        (lambda m, b: _ablation(m, b, transpose=True), 2),
        (lambda m, b: _ablation(m, b, layers=1), 3),
    ]),
]
