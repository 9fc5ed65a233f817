"""Checks for notebook 01: padding a batch of id lists into ``ids`` ``(B, T)`` and ``valid_lens`` ``(B,)``."""

from __future__ import annotations

import torch
from torch import Tensor

from mha_lib.checks._core import Case, difference, run, verdict
from mha_lib.i18n import _
from mha_lib.tokenize import pad_batch as library_pad_batch

__all__ = ["pad_batch"]


def _return() -> str:
    """The hint that says what to return (several cases share it)."""
    return _("return the pair (ids, valid_lens): ids a (B, T) torch.long tensor with each sentence's ids first and "
             "pad_id after them, valid_lens a (B,) torch.long tensor of the true lengths")


def _compare(expected: object, got: object) -> str | None:
    """Like ``difference``, but integer ids must stay integers: an embedding cannot look up a float id."""
    if isinstance(got, (tuple, list)) and len(got) == 2:
        for name, part in zip(("ids", "valid_lens"), got):
            if isinstance(part, Tensor) and part.dtype != torch.long:
                return _("{name}: expected dtype torch.int64 (torch.long), got {dtype} (torch.zeros and"
                         " torch.tensor([]) make floats, torch.full takes the fill value's dtype: pass"
                         " dtype=torch.long)").format(name=name, dtype=part.dtype)
    found = difference(expected, got)
    if found:
        for position, name in enumerate(("ids", "valid_lens")):  # _core's "result 0: ..." in this language
            found = found.replace(_("result {position}: {found}").format(position=position, found=""), f"{name}: ")
    return found


def _cases() -> list[Case]:
    specs = [
        (_("notebook 01's batch: lengths 5, 3, 6 and pad_id=0"), [[2, 3, 4, 5, 6], [7, 8, 9], [7, 10, 11, 12, 7, 13]],
         0, None, _return()),
        (_("pad_id is not 0: pad_id=7, lengths 2, 4"), [[1, 2], [3, 4, 5, 6]], 7, None,
         _("fill the empty places with pad_id, whatever its value: torch.full((B, T), pad_id), not torch.zeros")),
        (_("every sentence has the same length: nothing to pad"), [[1, 2, 3], [4, 5, 6]], 0, None,
         _("T is the length of the longest sentence; when all are equally long, ids is just the id lists stacked")),
        (_("max_len=8, longer than the longest sentence (6)"), [[2, 3, 4, 5, 6], [7, 8, 9], [7, 10, 11, 12, 7, 13]],
         0, 8, _("with max_len given, T = max_len (pad every row to it); valid_lens stays the true lengths")),
        (_("the longest sentence first, then shorter ones"), [[5, 6, 7, 8], [9], [10, 11]], 1, None,
         _("T is max(len(s) for s in sequences), not the length of the first or the last sentence")),
        (_("an empty sentence: lengths 0 and 2"), [[], [4, 5]], 0, None,
         _("an empty sentence is a row of pad_id with valid_len 0 (torch.tensor([]) is a float tensor: build each "
         "row with dtype=torch.long)")),
        (_("a batch of one sentence"), [[3, 1, 4, 1, 5]], 0, None,
         _("B can be 1: ids still has shape (1, T) and valid_lens shape (1,)")),
    ]
    cases = []
    for name, sequences, pad_id, max_len, hint in specs:
        kwargs = {} if max_len is None else {"max_len": max_len}
        expected = library_pad_batch(sequences, pad_id=pad_id, **kwargs)
        cases.append(Case(name, (sequences, pad_id), expected, kwargs=kwargs, hint=hint))
    return cases


def pad_batch(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(sequences, pad_id, max_len=None)`` -> ``(ids (B, T) long, valid_lens (B,) long)``."""
    verdict(run("pad_batch", fn, _cases(), reference="mha_lib.tokenize.pad_batch", compare=_compare,
                forbid=[(library_pad_batch, "mha_lib.pad_batch")]), strict=strict)
