"""Checks for notebook 11: the causal mask by position, with a sliding window and attention sinks, as a decoder with a
KV cache builds it (True = may attend)."""

from __future__ import annotations

import torch

from mha_lib.cache import causal_window_mask as library_causal_window_mask
from mha_lib.checks._core import Case, run, verdict
from mha_lib.i18n import _

__all__ = ["causal_window_mask"]


def _cases() -> list[Case]:
    t = torch.arange
    specs = [
        (_("causal, no window: 5 queries and 5 keys at positions 0-4"), t(5), t(5), None, 0,
         _("True means *may attend*: the key at position j is True for the query at position i when j <= i, the lower "
         "triangle; return a bool tensor (T_q, T_k)")),
        (_("a window of 3 on 6 tokens: query i sees keys i-2, i-1, i"), t(6), t(6), 3, 0,
         _("apply the window, and count the query itself: keep i - j < window (window = 3 keeps the"
           " query and the 2 keys "
         "before it; i - j <= window would keep 4)")),
        (_("a window of 1: each query sees only itself"), t(5), t(5), 1, 0,
         _("with window = 1 only j = i remains: i - j < 1")),
        (_("a window of 3 and sink = 2 on 8 tokens: keys 0 and 1 stay visible"), t(8), t(8), 3, 2,
         _("a sink key (j < sink) stays visible however far back it is: (i - j < window) | (j < sink), and causal")),
        (_("sink = 3 and a window of 1 on 4 tokens: query 0 still must not see keys 1 and 2"), t(4), t(4), 1, 3,
         _("a sink does not break causality: combine ((i - j < window) | (j < sink)) with & (j <= i)")),
        (_("one cached step: the query at position 9; the cache kept keys at positions [0, 1, 6, 7, 8, 9]"),
         torch.tensor([9]), torch.tensor([0, 1, 6, 7, 8, 9]), 4, 2,
         _("use the positions you are given, not torch.arange(T_q) and torch.arange(T_k): a windowed cache skipped "
         "positions 2-5, and the single query sits at position 9, not 0")),
        (_("a chunk after 5 cached tokens: queries at positions 5-7, keys at 0-7, a window of 3"), t(5, 8), t(8), 3, 0,
         _("compare query_positions[:, None] with key_positions[None, :]: query 5 sees keys 3-5 (the mask is aligned "
         "bottom-right when T_q < T_k, not top-left like torch.ones(T_q, T_k).tril())")),
        (_("a window longer than the sequence (10 on 4 tokens): plain causal"), t(4), t(4), 10, 0,
         _("a window that reaches past the first token hides nothing more than the causal mask")),
    ]
    return [Case(name, (qp, kp), library_causal_window_mask(qp, kp, window=w, sink=s), kwargs={"window": w, "sink": s},
                 hint=hint) for name, qp, kp, w, s, hint in specs]


def causal_window_mask(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(query_positions, key_positions, window=..., sink=...)`` -> ``(T_q, T_k)`` bool, True = may attend."""
    verdict(run("causal_window_mask", fn, _cases(), reference="mha_lib.causal_window_mask",
                forbid=[(library_causal_window_mask, "mha_lib.causal_window_mask")]), strict=strict)
