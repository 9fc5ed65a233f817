"""Checks for notebook 04: a masked softmax that gives exactly 0 to padded keys, and 0 (not NaN) to dead rows."""

from __future__ import annotations

import torch

from mha_lib.attention import masked_softmax as library_masked_softmax
from mha_lib.checks._core import Case, generator, run, verdict

__all__ = ["masked_softmax"]


def _cases() -> list[Case]:
    g = generator(4)
    scores = torch.randn(2, 3, 4, generator=g)  # (B, T_q, T_k)
    wide = torch.randn(3, 5, 7, generator=g)
    specs = [
        ("no padding: every key is valid (valid_lens = [4, 4])", scores, torch.tensor([4, 4]),
         "with every key valid this is a plain softmax over the last axis (dim=-1)"),
        ("padding: sequence 0 keeps 2 keys, sequence 1 keeps 3 (valid_lens = [2, 3])", scores, torch.tensor([2, 3]),
         "key j is valid for sequence b when j < valid_lens[b]; give the others a score of -inf before the softmax"),
        ("one valid key per row: its weight must be exactly 1 (valid_lens = [1, 1])", scores, torch.tensor([1, 1]),
         "after the mask, each row must still sum to 1 over the valid keys"),
        ("one length per query, shape (B, T_q) (valid_lens = [[1, 2, 3], [3, 2, 1]])", scores,
         torch.tensor([[1, 2, 3], [3, 2, 1]]),
         "a (B, T_q) valid_lens gives each query row its own length: compare positions with valid_lens[:, :, None]"),
        ("a sequence with no valid key (valid_lens = [3, 0]): its rows must be 0, not NaN", scores,
         torch.tensor([3, 0]),
         "a row of only -inf makes softmax return NaN; set the rows with no valid key to 0 afterwards"),
        ("large scores (x 100): the softmax must not overflow", scores * 100, torch.tensor([4, 2]),
         "exp(100) overflows float32 to inf: use torch.softmax, which subtracts the row maximum first"),
        ("another shape, (3, 5, 7) with valid_lens = [7, 1, 4]", wide, torch.tensor([7, 1, 4]),
         "do not assume a batch of 2 or a fixed number of keys: read them from scores.shape"),
    ]
    return [Case(name, (s, lens), library_masked_softmax(s, lens), hint=hint) for name, s, lens, hint in specs]


def masked_softmax(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(scores, valid_lens)`` (``(B, T_q, T_k)``; ``(B,)`` or ``(B, T_q)``) against the library."""
    verdict(run("masked_softmax", fn, _cases(), reference="mha_lib.masked_softmax"), strict=strict)
