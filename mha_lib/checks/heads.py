"""Checks for notebook 05: splitting a wide projection into heads, and merging the heads back (their inverse)."""

from __future__ import annotations

import torch

from mha_lib.checks._core import Case, generator, run, verdict
from mha_lib.heads import merge_heads as library_merge_heads
from mha_lib.heads import split_heads as library_split_heads
from mha_lib.i18n import _

__all__ = ["merge_heads", "split_heads"]


def _layout() -> str:
    """The hint of the first split case: the layout, and why a plain reshape is wrong."""
    return _("view the last axis as (h, d_head), then transpose(1, 2) to bring the heads next to the batch: "
             "(B, T, d) -> (B, T, h, d_head) -> (B, h, T, d_head). A reshape straight to (B, h, T, d_head) has the "
             "right shape but mixes tokens and heads (transpose moves data between axes, reshape only regroups it)")


def _split_cases() -> list[Case]:
    g = generator(5)
    specs = [
        (_("(B, T, d) = (2, 3, 4) into 2 heads of width 2"), torch.randn(2, 3, 4, generator=g), 2, _layout()),
        (_("(B, T, d) = (1, 5, 6) into 2 heads of width 3"), torch.randn(1, 5, 6, generator=g), 2,
         _("num_heads counts the heads; each has width d_head = d // num_heads: view(B, T, num_heads, d_head), in "
         "that order (head i owns columns i * d_head to (i + 1) * d_head - 1)")),
        (_("one head: (2, 4, 6) into 1 head of width 6"), torch.randn(2, 4, 6, generator=g), 1,
         _("with one head the result is x with a head axis of size 1: shape (B, 1, T, d)")),
        (_("every feature its own head: (1, 3, 8) into 8 heads of width 1"), torch.randn(1, 3, 8, generator=g), 8,
         _("d_head can be 1: read d from x.shape[-1] and divide by num_heads")),
        (_("a single token: (3, 1, 6) into 3 heads"), torch.randn(3, 1, 6, generator=g), 3,
         _("do not assume a batch of 1 or several tokens: read B, T and d from x.shape")),
        (_("a bigger layer: (2, 7, 64) into 8 heads of width 8"), torch.randn(2, 7, 64, generator=g), 8,
         _("the same view and transpose work for any (B, T, d) with d divisible by num_heads")),
    ]
    return [Case(name, (x, h), library_split_heads(x, h), hint=hint) for name, x, h, hint in specs]


def _merge_cases() -> list[Case]:
    g = generator(6)
    specs = [
        (_("(B, h, T, d_head) = (2, 3, 4, 2) -> (2, 4, 6)"), torch.randn(2, 3, 4, 2, generator=g),
         _("bring the tokens back next to the batch first, transpose(1, 2) -> (B, T, h, d_head), then glue each "
         "token's heads side by side with reshape(B, T, h * d_head). After a transpose the memory is no longer in "
         "row order, so view() refuses it: use reshape (it copies when it must) or .contiguous().view(...)")),
        (_("two heads of width 3: (1, 2, 5, 3) -> (1, 5, 6)"), torch.randn(1, 2, 5, 3, generator=g),
         _("the merged width is h * d_head (here 2 * 3 = 6): read h and d_head from x.shape")),
        (_("one head: (2, 1, 4, 6) -> (2, 4, 6)"), torch.randn(2, 1, 4, 6, generator=g),
         _("with one head, merging only drops the head axis")),
        (_("a single token: (3, 4, 1, 2) -> (3, 1, 8)"), torch.randn(3, 4, 1, 2, generator=g),
         _("do not assume several tokens: read B, h, T and d_head from x.shape")),
        (_("a bigger layer: (2, 8, 7, 8) -> (2, 7, 64)"), torch.randn(2, 8, 7, 8, generator=g),
         _("the same transpose and reshape work for any (B, h, T, d_head)")),
    ]
    return [Case(name, (x,), library_merge_heads(x), hint=hint) for name, x, hint in specs]


def split_heads(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(x, num_heads)``: ``(B, T, d)`` -> ``(B, h, T, d/h)``, head ``i`` with features ``i*d/h:(i+1)*d/h``."""
    verdict(run("split_heads", fn, _split_cases(), reference="mha_lib.split_heads",
                forbid=[(library_split_heads, "mha_lib.split_heads")]), strict=strict)


def merge_heads(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(x)``: ``(B, h, T, d/h)`` -> ``(B, T, d)``, the inverse of ``split_heads``."""
    verdict(run("merge_heads", fn, _merge_cases(), reference="mha_lib.merge_heads",
                forbid=[(library_merge_heads, "mha_lib.merge_heads")]), strict=strict)
