"""Notebook 03's check: the library and PyTorch pass; no scaling, scaling by d_v, softmax over the queries, K.T on
4 axes, a naive exp and returning the output alone fail at their case."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from mha_lib import checks, scaled_dot_product_attention


def _by_hand(q, k, v):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return weights @ v, weights


def _unscaled(q, k, v):
    weights = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
    return weights @ v, weights


def _scaled_by_d_v(q, k, v):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1]), dim=-1)
    return weights @ v, weights


def _softmax_over_queries(q, k, v):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=1)
    return weights @ v, weights


def _transpose_1_2(q, k, v):  # right for (B, T, d), wrong for (B, h, T, d)
    weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), dim=-1)
    return weights @ v, weights


def _naive_exp(q, k, v):
    e = torch.exp(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]))
    weights = e / e.sum(dim=-1, keepdim=True)
    return weights @ v, weights


def _output_only(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


ROWS = [
    (checks.scaled_dot_product_attention, scaled_dot_product_attention,
     [(_unscaled, 1), (_scaled_by_d_v, 2), (_softmax_over_queries, 1), (_transpose_1_2, 4), (_naive_exp, 5),
      (_output_only, 1)]),
    (checks.scaled_dot_product_attention, _by_hand, []),
]
