"""Notebook 04's checks: the library passes; a mask in the wrong polarity, a triu mask, masking without the
dead-row fix or with one length per sequence fails at its case."""

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


def _library_mask(valid_lens, num_queries, num_keys, causal=False):
    mask = mha_lib.valid_lens_mask(valid_lens, num_queries, num_keys)
    return mask & mha_lib.causal_mask(num_queries, num_keys) if causal else mask


def _mask_blocked_polarity(valid_lens, num_queries, num_keys, causal=False):  # masked_fill's True = blocked
    return ~_library_mask(valid_lens, num_queries, num_keys, causal)


def _mask_as_ints(valid_lens, num_queries, num_keys, causal=False):
    return _library_mask(valid_lens, num_queries, num_keys, causal).long()


def _mask_square(valid_lens, num_queries, num_keys, causal=False):  # forgets that T_q may differ from T_k
    return _library_mask(valid_lens, num_keys, num_keys, causal)


def _mask_triu(valid_lens, num_queries, num_keys, causal=False):  # the future instead of the past
    mask = mha_lib.valid_lens_mask(valid_lens, num_queries, num_keys)
    return mask & torch.ones(num_queries, num_keys, dtype=torch.bool).triu() if causal else mask


def _mask_or(valid_lens, num_queries, num_keys, causal=False):  # combines with | instead of &
    mask = mha_lib.valid_lens_mask(valid_lens, num_queries, num_keys)
    return mask | mha_lib.causal_mask(num_queries, num_keys) if causal else mask


def _mask_one_length_per_sequence(valid_lens, num_queries, num_keys, causal=False):
    keys = torch.arange(num_keys)
    mask = (keys < valid_lens.reshape(valid_lens.shape[0], -1)[:, :1, None]).expand(-1, num_queries, -1)
    return mask & mha_lib.causal_mask(num_queries, num_keys) if causal else mask


def _mask_clamped(valid_lens, num_queries, num_keys, causal=False):  # "fixes" empty rows by reading one key
    return _library_mask(valid_lens.clamp(min=1), num_queries, num_keys, causal)


def _mask_bottom_right(valid_lens, num_queries, num_keys, causal=False):  # causal aligned to the last key
    mask = mha_lib.valid_lens_mask(valid_lens, num_queries, num_keys)
    tri = torch.ones(num_queries, num_keys, dtype=torch.bool).tril(num_keys - num_queries)
    return mask & tri if causal else mask


ROWS = [
    (checks.attention_mask, _library_mask,
     [(_mask_blocked_polarity, 1), (_mask_as_ints, 1), (_mask_square, 2), (_mask_triu, 3), (_mask_or, 3),
      (_mask_one_length_per_sequence, 5), (_mask_clamped, 6), (_mask_bottom_right, 7)]),
    (checks.masked_softmax, mha_lib.masked_softmax,
     [(_softmax_no_dead_rows, 5), (_softmax_one_length_per_sequence, 4), (lambda s, v: torch.softmax(s, -1), 2)]),
]
