"""Notebook 04's check: the library passes; masking without the dead-row fix or with one length per sequence fails."""

from __future__ import annotations

import torch

import mha_lib
from mha_lib import checks


def _softmax_no_dead_rows(scores, valid_lens):
    keys = torch.arange(scores.shape[-1])
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(scores.shape[:2])
    return torch.softmax(scores.masked_fill(keys >= lens[..., None], float("-inf")), dim=-1)


def _softmax_one_length_per_sequence(scores, valid_lens):
    keys = torch.arange(scores.shape[-1])
    masked = scores.masked_fill(keys >= valid_lens[:, None, None], float("-inf"))
    return torch.softmax(masked, dim=-1).nan_to_num(0.0)


ROWS = [
    (checks.masked_softmax, mha_lib.masked_softmax,
     [(_softmax_no_dead_rows, 5), (_softmax_one_length_per_sequence, 4), (lambda s, v: torch.softmax(s, -1), 2)]),
]
