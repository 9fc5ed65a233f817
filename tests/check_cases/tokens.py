"""Notebook 01's check: the library passes; float ids, padding with zeros, ignoring max_len, T from the first
sentence, a float row for an empty sentence and lists instead of tensors fail at their case."""

from __future__ import annotations

import torch

from mha_lib import checks
from mha_lib.tokenize import pad_batch


def _library(sequences, pad_id, max_len=None):
    return pad_batch(sequences, pad_id=pad_id, max_len=max_len)


def _float_ids(sequences, pad_id, max_len=None):  # a float buffer (torch.zeros without dtype, or .float())
    T = max_len or max(len(s) for s in sequences)
    ids = torch.full((len(sequences), T), pad_id)
    ids = ids.float()
    for b, s in enumerate(sequences):
        ids[b, : len(s)] = torch.tensor(s, dtype=torch.float)
    return ids, torch.tensor([len(s) for s in sequences])


def _zeros(sequences, pad_id, max_len=None):  # pads with 0 whatever pad_id is
    return pad_batch(sequences, pad_id=0, max_len=max_len)


def _ignores_max_len(sequences, pad_id, max_len=None):
    return pad_batch(sequences, pad_id=pad_id)


def _first_length(sequences, pad_id, max_len=None):  # T from the first sentence, the longer ones cut
    T = max_len or len(sequences[0])
    ids = torch.full((len(sequences), T), pad_id, dtype=torch.long)
    for b, s in enumerate(sequences):
        ids[b, : min(len(s), T)] = torch.tensor(s[:T], dtype=torch.long)
    return ids, torch.tensor([len(s) for s in sequences])


def _list_comprehension(sequences, pad_id, max_len=None):  # torch.tensor of padded lists; [] rows break it
    T = max_len or max(len(s) for s in sequences)
    rows = [torch.tensor(s) for s in sequences]
    ids = torch.stack([torch.cat([r, torch.full((T - len(r),), pad_id)]) for r in rows])
    return ids, torch.tensor([len(s) for s in sequences])


def _lens_as_list(sequences, pad_id, max_len=None):
    ids, lens = pad_batch(sequences, pad_id=pad_id, max_len=max_len)
    return ids, lens.tolist()


ROWS = [
    (checks.pad_batch, _library,
     [(_float_ids, 1), (_zeros, 2), (_ignores_max_len, 4), (_first_length, 1), (_list_comprehension, 6),
      (_lens_as_list, 1)]),
]
