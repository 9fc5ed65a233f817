"""Notebook 05's checks: the library passes; a reshape instead of a transpose, the head count and width swapped, or
view() after a transpose fails at its case."""

from __future__ import annotations

import mha_lib
from mha_lib import checks


def _split_without_transpose(x, num_heads):  # (B, T, h, d_head): the heads are not on axis 1
    B, T, d = x.shape
    return x.view(B, T, num_heads, d // num_heads)


def _split_by_reshape(x, num_heads):  # the right shape, tokens and heads mixed
    B, T, d = x.shape
    return x.reshape(B, num_heads, T, d // num_heads)


def _split_width_for_count(x, num_heads):  # num_heads read as the width of a head
    B, T, d = x.shape
    return x.view(B, T, d // num_heads, num_heads).transpose(1, 2)


def _merge_with_view(x):  # view() after a transpose raises
    B, h, T, d_head = x.shape
    return x.transpose(1, 2).view(B, T, h * d_head)


def _merge_by_reshape(x):  # forgets to bring the tokens back first
    B, h, T, d_head = x.shape
    return x.reshape(B, T, h * d_head)


def _merge_fixed_width(x):  # assumes heads of width 2
    B, h, T, _ = x.shape
    return x.transpose(1, 2).reshape(B, T, h * 2)


ROWS = [
    (checks.split_heads, mha_lib.split_heads,
     [(_split_without_transpose, 1), (_split_by_reshape, 1), (_split_width_for_count, 2)]),
    (checks.merge_heads, mha_lib.merge_heads,
     [(_merge_with_view, 1), (_merge_by_reshape, 1), (_merge_fixed_width, 2)]),
]
