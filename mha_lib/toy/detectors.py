"""Head detectors: what a head attends to, as one number per head, and a table of them per ``(layer, head)``.

Previous-token, mirror, induction and BOS-share scores read a ``(B, h, T, T)`` weights tensor; ``head_scores``
runs a model on a batch and tabulates all four, indexed by a ``("layer", "head")`` MultiIndex.
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import Tensor

from mha_lib._validate import _got, _shape
from mha_lib.heads import head_index, head_label
from mha_lib.i18n import N_
from mha_lib.toy.model import TinyTransformer, _on_model
from mha_lib.toy.tasks import TaskBatch


def _weights(weights: Tensor) -> Tensor:
    if not isinstance(weights, Tensor):
        raise TypeError(f"weights must be a tensor (batch, heads, T, T) or (heads, T, T), got {_got(weights)}")
    if weights.dim() not in (3, 4) or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must have shape (batch, heads, T, T) or (heads, T, T), got {_shape(weights)}")
    # Scores are small (h,) tables: computed on the CPU in float64, the same on any device.
    return (weights if weights.dim() == 4 else weights[None]).detach().to("cpu", torch.float64)


def _mean_over(values: Tensor, where: Tensor) -> Tensor:
    """``values`` ``(B, h, T)`` averaged over the ``(B, T)`` positions where ``where`` is True -> ``(h,)``."""
    where = where[:, None, :].expand_as(values).double()
    return (values * where).sum((0, 2)) / where.sum((0, 2)).clamp_min(1.0)


def previous_token_score(weights: Tensor) -> Tensor:
    """``(h,)``: mean weight from query ``i`` on key ``i - 1`` (queries ``i >= 1``); 1 for a perfect head."""
    w = _weights(weights)  # (B, h, T, T)
    return torch.diagonal(w, offset=-1, dim1=-2, dim2=-1).mean((0, 2))


def mirror_score(weights: Tensor) -> Tensor:
    """``(h,)``: mean weight from query ``i`` on key ``T - 1 - i`` (the anti-diagonal); 1 for a perfect head."""
    w = _weights(weights)
    return torch.diagonal(w.flip(-1), dim1=-2, dim2=-1).mean((0, 2))


def induction_targets(tokens: Tensor) -> Tensor:
    """``(B, T, T)`` bool: key ``j`` follows an earlier occurrence of query ``i``'s token (``j <= i``)."""
    if not isinstance(tokens, Tensor):
        raise TypeError(f"tokens must be an integer tensor (batch, tokens), got {_got(tokens)}")
    if tokens.dim() != 2:
        raise ValueError(f"tokens must have shape (batch, tokens), got {_shape(tokens)}")
    tokens = tokens.cpu()
    t = tokens.shape[1]
    before = torch.cat([torch.full_like(tokens[:, :1], -1), tokens[:, :-1]], dim=1)  # token before each key
    match = tokens[:, :, None] == before[:, None, :]  # (B, Tq, Tk)
    key_le_query = torch.ones(t, t, dtype=torch.bool).tril()
    return match & key_le_query & (before[:, None, :] >= 0)


def induction_score(weights: Tensor, tokens: Tensor) -> Tensor:
    """``(h,)``: weight a repeated token puts on the token after its earlier occurrence(s); 1 when perfect.

    Averaged over the queries whose token appeared earlier; ``tokens`` ``(B, T)``.
    """
    w = _weights(weights)
    target = induction_targets(tokens).double()  # (B, T, T)
    if target.shape != (w.shape[0], *w.shape[2:]):
        raise ValueError(f"tokens must have shape ({w.shape[0]}, {w.shape[2]}), got {_shape(tokens)}")
    on_target = (w * target[:, None]).sum(-1)  # (B, h, T)
    return _mean_over(on_target, target.any(-1))


def bos_share(weights: Tensor, query_mask: Tensor | None = None) -> Tensor:
    """``(h,)``: mean weight on key 0 (``BOS``), over queries ``i >= 1`` or those where ``query_mask`` ``(B, T)``."""
    w = _weights(weights)
    b, _, t, _ = w.shape
    where = torch.arange(t)[None, :].expand(b, t) >= 1 if query_mask is None else query_mask.cpu().expand(b, t)
    return _mean_over(w[..., 0], where)


def head_labels(num_layers: int, num_heads: int) -> list[str]:
    """``["L0H0", "L0H1", ...]``: every head's display label, layer by layer (for printing; never parse them)."""
    return [head_label(layer, head) for layer, head in head_index(num_layers, num_heads)]


def head_table(scores: dict[str, Tensor]) -> pd.DataFrame:
    """One row per head, indexed by ``(layer, head)``; one column per ``(L, h)`` tensor of ``scores``."""
    columns = {}
    shape = None
    for name, values in scores.items():
        if not isinstance(values, Tensor) or values.dim() != 2:
            raise ValueError(f"scores[{name!r}] must be a (layers, heads) tensor, got {_got(values)}")
        if shape is not None and values.shape != shape:
            raise ValueError(f"scores[{name!r}] has shape {_shape(values)}, the others {tuple(shape)}")
        shape = values.shape
        columns[name] = values.detach().cpu().double().flatten().numpy()
    if shape is None:
        raise ValueError("scores must hold at least one (layers, heads) tensor, got an empty dict")
    return pd.DataFrame(columns, index=head_index(shape[0], shape[1]))


def head_scores(model: TinyTransformer, batch: TaskBatch, *, head_gates: Tensor | None = None) -> pd.DataFrame:
    """One row per head, indexed by ``(layer, head)``: previous-token, induction, mirror and BOS-share scores.

    ``head_gates`` ``(L, h)``: score the heads while some are gated (e.g. a 0 removes a head of layer 0, and the
    scores of layer 1 show what its heads do without it).
    """
    batch = _on_model(model, batch)
    weights = model.attention(batch.inputs, head_gates=head_gates)  # (L, B, h, T, T)
    return head_table({
        N_("previous token"): torch.stack([previous_token_score(w) for w in weights]),
        N_("induction"): torch.stack([induction_score(w, batch.inputs) for w in weights]),
        N_("mirror"): torch.stack([mirror_score(w) for w in weights]),
        "BOS": torch.stack([bos_share(w) for w in weights]),
    })
