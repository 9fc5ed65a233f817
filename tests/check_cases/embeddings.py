"""Notebook 02's check: the library passes; a one-hot without num_classes, a float one-hot on a float64 table, a
detached table, a lookup that ignores the batch axis and a transposed table fail at their case."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mha_lib import checks


def _library(ids, weight):
    return F.embedding(ids, weight)


def _one_hot(ids, weight):
    return F.one_hot(ids, num_classes=weight.shape[0]).to(weight.dtype) @ weight


def _no_num_classes(ids, weight):  # only max(ids) + 1 columns
    return F.one_hot(ids).to(weight.dtype) @ weight


def _float_one_hot(ids, weight):  # float32 one-hot against a float64 table
    return F.one_hot(ids, num_classes=weight.shape[0]).float() @ weight


def _detached(ids, weight):  # the right rows, but no gradient reaches the table
    return F.one_hot(ids, num_classes=weight.shape[0]).to(weight.dtype) @ weight.detach()


def _as_new_tensor(ids, weight):  # rebuilt from Python numbers: no gradient either
    return torch.tensor(weight[ids].tolist(), dtype=weight.dtype)


def _flat_ids(ids, weight):  # forgets the shape of the ids
    return F.one_hot(ids.flatten(), num_classes=weight.shape[0]).to(weight.dtype) @ weight


def _fixed_vocab(ids, weight):  # assumes the running example's 5 tokens
    return F.one_hot(ids, num_classes=5).to(weight.dtype) @ weight[:5]


ROWS = [
    (checks.embedding_lookup, _library,
     [(_no_num_classes, 3), (_float_one_hot, 5), (_detached, 1), (_as_new_tensor, 1), (_flat_ids, 4),
      (_fixed_vocab, 6)]),
    (checks.embedding_lookup, _one_hot, []),
]
