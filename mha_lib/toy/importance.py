"""How much each head matters: zero-ablation, the gradient score ``|dL/d gate|`` and greedy pruning.

The gradient score is Michel et al.'s (2019), per sequence (one backward pass each, or all in one pass:
``sequence_gate_gradients``). Results are ``(L, h)`` tensors indexed by ``[layer, head]``, or tables.
"""

from __future__ import annotations

from typing import Literal, cast

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor

from mha_lib._validate import _got, check_choice
from mha_lib.heads import head_index
from mha_lib.hooks import HeadHook
from mha_lib.mha import MultiHeadAttention
from mha_lib.toy.model import TinyTransformer, _on_model
from mha_lib.toy.tasks import TaskBatch
from mha_lib.toy.training import task_loss


def _ones(model: TinyTransformer) -> Tensor:
    return torch.ones(model.num_layers, model.num_heads, device=model.device)


@torch.no_grad()
def ablation_scores(model: TinyTransformer, batch: TaskBatch, *, scored: bool = True) -> Tensor:
    """``(L, h)``: how much the loss rises when one head's gate is set to 0 (zero-ablation); index ``[layer, head]``."""
    batch = _on_model(model, batch)
    base = float(task_loss(model, batch, scored=scored))
    out = torch.zeros(model.num_layers, model.num_heads)
    for layer, head in head_index(model.num_layers, model.num_heads):
        gates = _ones(model)
        gates[layer, head] = 0.0
        out[layer, head] = float(task_loss(model, batch, scored=scored, head_gates=gates)) - base
    return out


def gate_gradients(model: TinyTransformer, batch: TaskBatch, *, scored: bool = True,
                   head_gates: Tensor | None = None) -> Tensor:
    """``(L, h)``: ``dL/d gate`` for the batch's mean loss, at ``head_gates`` (all ones by default)."""
    gates = _ones(model) if head_gates is None else head_gates.detach().to(model.device).clone()
    gates.requires_grad_(True)
    (grad,) = torch.autograd.grad(task_loss(model, batch, scored=scored, head_gates=gates), gates)
    return grad.cpu()


def sequence_gate_gradients(
    model: TinyTransformer, batch: TaskBatch, *, scored: bool = True, head_gates: Tensor | None = None
) -> Tensor:
    """``(B, L, h)``: every sequence's own ``dL(x)/d gate``, from one forward and one backward pass of the batch.

    Each sequence gets its own copy of the gates (a head hook multiplies head ``i`` of layer ``l`` in sequence
    ``b`` by ``gates[b, l, i]``). Sequences do not interact, so the gradient of the sum of the per-sequence mean
    losses with respect to copy ``b`` is sequence ``b``'s own gradient. A sequence without loss positions gets 0.
    """
    batch = _on_model(model, batch)
    base = _ones(model) if head_gates is None else model._check(batch.inputs, head_gates).detach()  # (L, h)
    gates = base.expand(batch.batch_size, -1, -1).clone().requires_grad_(True)  # (B, L, h)

    def gate(layer: int) -> HeadHook:  # layer l's heads times their gates
        return lambda context: context * gates[:, layer, :, None, None]

    handles = [cast(MultiHeadAttention, block.attn).register_head_hook(gate(layer))
               for layer, block in enumerate(model.blocks)]
    try:
        logits = model(batch.inputs, head_gates=_ones(model))  # (B, T, V); the copies carry the gate values
        losses = F.cross_entropy(logits.transpose(1, 2), batch.targets, reduction="none")  # (B, T)
        where = batch.scored if scored else torch.ones_like(batch.scored)  # (B, T)
        per_sequence = (losses * where).sum(1) / where.sum(1).clamp_min(1)  # (B,): each sequence's mean loss
        (grad,) = torch.autograd.grad(per_sequence.sum(), gates)
    finally:
        for handle in handles:
            handle.remove()
    return grad.cpu()


def gradient_scores(
    model: TinyTransformer, batch: TaskBatch, *, scored: bool = True, head_gates: Tensor | None = None,
    one_pass: bool = False,
) -> Tensor:
    """``(L, h)``: Michel et al.'s importance ``E_x |dL(x)/d gate|``, the absolute value taken per sequence.

    Each sequence is weighted by its number of loss positions, as in the batch loss, so the score is never
    below ``|gate_gradients(model, batch)|`` (the absolute value of the mean is at most the mean absolute value).
    One backward pass per sequence; ``one_pass=True`` gets every sequence's gradient from a single pass of the
    batch instead (``sequence_gate_gradients``): the same scores up to rounding.
    """
    batch = _on_model(model, batch).to("cpu")  # split per sequence on the CPU; task_loss moves each back
    counts = batch.scored.sum(1) if scored else torch.full((batch.batch_size,), batch.length)  # (B,)
    if int(counts.sum()) == 0:
        raise ValueError("batch has no scored positions: pass scored=False or a batch with some")
    if one_pass:
        grads = sequence_gate_gradients(model, batch, scored=scored, head_gates=head_gates)  # (B, L, h)
        return (grads.abs() * (counts.double() / counts.sum()).float()[:, None, None]).sum(0)
    total = torch.zeros(model.num_layers, model.num_heads)
    for i in range(batch.batch_size):
        if int(counts[i]) == 0:
            continue
        one = TaskBatch(batch.inputs[i : i + 1], batch.targets[i : i + 1], batch.scored[i : i + 1])
        grad = gate_gradients(model, one, scored=scored, head_gates=head_gates)
        total += grad.abs() * (float(counts[i]) / float(counts.sum()))
    return total


@torch.no_grad()
def prune_heads(
    model: TinyTransformer, batch: TaskBatch, *, by: Literal["ablation", "gradient"] = "ablation",
    scored: bool = True, held_out: TaskBatch | None = None, one_pass: bool = False,
) -> pd.DataFrame:
    """Greedy pruning: remove the least important remaining head, again and again, and record the loss.

    ``by="ablation"`` removes the head whose removal raises the loss least (recomputed after each removal);
    ``by="gradient"`` the head with the smallest ``gradient_scores`` at the current gates (``one_pass``: see
    ``gradient_scores``). Row ``k`` has ``k`` heads removed: the ``layer`` and ``head`` removed last (``<NA>`` in
    row 0) and the ``loss`` on ``batch``, where the heads were chosen. With a ``held_out`` batch, a column
    ``held-out loss`` adds the loss on it: a choice made on one batch, measured on another.
    """
    check_choice("by", by, ("ablation", "gradient"))
    if not isinstance(one_pass, bool):
        raise TypeError(f"one_pass must be True or False, got {_got(one_pass)}")
    batch = _on_model(model, batch)
    table = _prune(model, batch, by=by, scored=scored, one_pass=one_pass)
    if held_out is not None:
        held_out = _on_model(model, held_out)
        losses = []
        for k in table.index:
            gates = _ones(model)
            for layer, head in table[["layer", "head"]].iloc[1 : k + 1].itertuples(index=False):
                gates[int(layer), int(head)] = 0.0
            losses.append(float(task_loss(model, held_out, scored=scored, head_gates=gates)))
        table["held-out loss"] = losses
    return table


def _prune(model: TinyTransformer, batch: TaskBatch, *, by: str, scored: bool, one_pass: bool) -> pd.DataFrame:
    """The greedy loop of ``prune_heads``, on ``batch`` only."""
    gates = _ones(model)
    rows = [(0, pd.NA, pd.NA, float(task_loss(model, batch, scored=scored, head_gates=gates)))]
    for k in range(1, gates.numel() + 1):
        alive = [(layer, head) for layer, head in head_index(model.num_layers, model.num_heads) if gates[layer, head]]
        if by == "ablation":
            losses = {}
            for layer, head in alive:
                trial = gates.clone()
                trial[layer, head] = 0.0
                losses[layer, head] = float(task_loss(model, batch, scored=scored, head_gates=trial))
            pick = min(alive, key=losses.__getitem__)
            gates[pick] = 0.0
            loss = losses[pick]  # the trial that removed `pick` ran with exactly these gates
        else:
            with torch.enable_grad():
                score = gradient_scores(model, batch, scored=scored, head_gates=gates, one_pass=one_pass)  # (L, h)
            pick = min(alive, key=lambda lh: float(score[lh]))
            gates[pick] = 0.0
            loss = float(task_loss(model, batch, scored=scored, head_gates=gates))
        rows.append((k, *pick, loss))
    table = pd.DataFrame(rows, columns=["heads removed", "layer", "head", "loss"]).set_index("heads removed")
    return table.astype({"layer": "Int64", "head": "Int64"})
