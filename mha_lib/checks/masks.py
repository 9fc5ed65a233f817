"""Checks for notebook 04: a padding and causal mask in mha_lib's polarity, and a masked softmax that gives exactly
0 to masked keys and 0 (not NaN) to rows with nothing to read."""

from __future__ import annotations

import torch

from mha_lib.attention import causal_mask, valid_lens_mask
from mha_lib.attention import masked_softmax as library_masked_softmax
from mha_lib.checks._core import Case, difference, generator, run, verdict
from mha_lib.i18n import _

__all__ = ["attention_mask", "masked_softmax"]


def _library_mask(valid_lens: torch.Tensor, num_queries: int, num_keys: int, causal: bool) -> torch.Tensor:
    """``(B, T_q, T_k)`` bool, True = may attend: the padding mask of ``valid_lens``, and the causal mask if asked."""
    mask = valid_lens_mask(valid_lens, num_queries, num_keys)
    return mask & causal_mask(num_queries, num_keys) if causal else mask


def _mask_cases() -> list[Case]:
    specs = [
        (_("padding: valid_lens = [3, 5], 5 queries, 5 keys"), torch.tensor([3, 5]), 5, 5, False,
         _("True means *may attend* (mha_lib's and F.scaled_dot_product_attention's polarity, the opposite of "
         "masked_fill's): key j of sequence b is True when j < valid_lens[b]; return a bool tensor (B, T_q, T_k)")),
        (_("cross-attention: 2 queries read 5 keys, valid_lens = [3, 5]"), torch.tensor([3, 5]), 2, 5, False,
         _("queries and keys may differ in number: the mask is (B, num_queries, num_keys), the same row for every "
         "query of a sequence (compare torch.arange(num_keys) with valid_lens[:, None, None], then expand)")),
        (_("causal, no padding: valid_lens = [5, 5]"), torch.tensor([5, 5]), 5, 5, True,
         _("causal: query i may attend key j only when j <= i, the lower triangle (torch.tril, not triu), and "
         "it combines with the padding mask by & (and), never |")),
        (_("causal and padding: valid_lens = [3, 5]"), torch.tensor([3, 5]), 5, 5, True,
         _("combine the two masks with & (and): a key is readable only when every mask allows it")),
        (_("one length per query, shape (B, T_q): [[1, 2, 3, 3, 3], [5, 4, 3, 2, 1]]"),
         torch.tensor([[1, 2, 3, 3, 3], [5, 4, 3, 2, 1]]), 5, 5, False,
         _("a (B, T_q) valid_lens gives each query row its own length: compare with valid_lens[:, :, None]")),
        (_("a sequence of length 0: valid_lens = [0, 2]"), torch.tensor([0, 2]), 3, 3, False,
         _("length 0 leaves rows with no True at all (section 6's row with nothing to read): do not clamp it to 1")),
        (_("another shape: 3 sequences, 4 queries, 7 keys, causal, valid_lens = [7, 2, 5]"), torch.tensor([7, 2, 5]),
         4, 7, True,
         _("read B, num_queries and num_keys from the arguments; with 4 queries and 7 keys the causal mask keeps "
         "key j <= query i (torch.ones(4, 7).tril(), aligned top-left as in F.scaled_dot_product_attention)")),
    ]
    return [Case(name, (lens, tq, tk), _library_mask(lens, tq, tk, causal), kwargs={"causal": causal}, hint=hint)
            for name, lens, tq, tk, causal, hint in specs]


def attention_mask(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(valid_lens, num_queries, num_keys, causal=...)`` -> ``(B, T_q, T_k)`` bool, True = may attend."""
    verdict(run("attention_mask", fn, _mask_cases(), reference=_("mha_lib's valid_lens_mask & causal_mask"),
                forbid=[(valid_lens_mask, "mha_lib.valid_lens_mask"), (causal_mask, "mha_lib.causal_mask")]),
            strict=strict)


def _cases() -> list[Case]:
    g = generator(4)
    scores = torch.randn(2, 3, 4, generator=g)  # (B, T_q, T_k)
    wide = torch.randn(3, 5, 7, generator=g)
    specs = [
        (_("no padding: every key is valid (valid_lens = [4, 4])"), scores, torch.tensor([4, 4]),
         _("with every key valid this is a plain softmax over the last axis (dim=-1)")),
        (_("padding: sequence 0 keeps 2 keys, sequence 1 keeps 3 (valid_lens = [2, 3])"), scores, torch.tensor([2, 3]),
         _("key j is valid for sequence b when j < valid_lens[b]; give the others a score of -inf before the softmax")),
        (_("one valid key per row: its weight must be exactly 1 (valid_lens = [1, 1])"), scores, torch.tensor([1, 1]),
         _("after the mask, each row must still sum to 1 over the valid keys")),
        (_("one length per query, shape (B, T_q) (valid_lens = [[1, 2, 3], [3, 2, 1]])"), scores,
         torch.tensor([[1, 2, 3], [3, 2, 1]]),
         _("a (B, T_q) valid_lens gives each query row its own length: compare positions with valid_lens[:, :, None]")),
        (_("a sequence with no valid key (valid_lens = [3, 0]): its rows must be 0, not NaN"), scores,
         torch.tensor([3, 0]),
         _("a row of only -inf makes softmax return NaN; set the rows with no valid key to 0 afterwards")),
        (_("large scores (x 100): the softmax must not overflow"), scores * 100, torch.tensor([4, 2]),
         _("exp(100) overflows float32 to inf: use torch.softmax, which subtracts the row maximum first")),
        (_("another shape, (3, 5, 7) with valid_lens = [7, 1, 4]"), wide, torch.tensor([7, 1, 4]),
         _("do not assume a batch of 2 or a fixed number of keys: read them from scores.shape")),
    ]
    return [Case(name, (s, lens), library_masked_softmax(s, lens), hint=hint) for name, s, lens, hint in specs]


def _compare_softmax(expected: object, got: object) -> str | None:
    """``difference``, naming one slip: rows with no valid key that come out uniform (a large negative fill)."""
    found = difference(expected, got)
    if found and isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor) and got.shape == expected.shape:
        dead = expected.eq(0).all(dim=-1)  # rows with no valid key: the library gives them 0
        uniform = torch.full_like(got, 1.0 / got.shape[-1])
        if dead.any() and torch.allclose(got[dead].double(), uniform[dead].double(), atol=1e-4):
            found += _("; the rows with no valid key came out uniform (every weight 1/{keys}): a large negative fill"
                       " such as -1e6 (d2l's masked_softmax) spreads those rows evenly over the padding keys. Give"
                       " masked keys -inf, then set the rows with no valid key to 0").format(keys=got.shape[-1])
    return found


def masked_softmax(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(scores, valid_lens)`` (``(B, T_q, T_k)``; ``(B,)`` or ``(B, T_q)``) against the library."""
    verdict(run("masked_softmax", fn, _cases(), reference="mha_lib.masked_softmax", compare=_compare_softmax,
                forbid=[(library_masked_softmax, "mha_lib.masked_softmax")]), strict=strict)
