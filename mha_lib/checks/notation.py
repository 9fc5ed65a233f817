"""Checks for notebook 00: the series' notation, as the shapes of every tensor a multi-head attention layer makes."""

from __future__ import annotations

import torch

from mha_lib.checks._core import Case, generator, run, verdict
from mha_lib.i18n import _
from mha_lib.mha import MultiHeadAttention

__all__ = ["attention_shapes"]

# The tensors of ``MultiHeadAttention.trace`` the exercise asks for, in the order the layer makes them.
NAMES = ("queries", "keys", "values", "weights", "head_context", "output")


def _traced_shapes(B: int, T_q: int, T_k: int, d_model: int, h: int) -> dict[str, tuple[int, ...]]:
    """The shapes the library's layer really makes: cross-attention of ``T_q`` queries over ``T_k`` keys."""
    with torch.random.fork_rng(devices=[]):  # the layer's initialisation leaves the learner's random state alone
        layer = MultiHeadAttention(d_model, d_model, None, 0.0, h, causal=False)
    g = generator(B * 1000 + T_q * 100 + T_k)
    queries, keys = torch.randn(B, T_q, d_model, generator=g), torch.randn(B, T_k, d_model, generator=g)
    with torch.no_grad():
        trace = layer.trace(queries, keys, keys)
    return {name: tuple(getattr(trace, name).shape) for name in NAMES}


def _cases() -> list[Case]:
    specs = [  # (what, (B, T_q, T_k, d_model, h), hint)
        (_("self-attention: B=2, T_q=T_k=5, d_model=4, h=2"), (2, 5, 5, 4, 2),
         _("queries, keys and values are split into heads: (B, h, T, d_head) with d_head = d_model // h; the weights "
         "are one row per query and one column per key, per head: (B, h, T_q, T_k); the output is (B, T_q, d_model)")),
        (_("cross-attention: B=1, T_q=3 queries over T_k=7 keys, d_model=6, h=3"), (1, 3, 7, 6, 3),
         _("keys and values have T_k tokens, queries and the output T_q: the weights are (B, h,"
           " T_q, T_k), not square")),
        (_("one head: B=2, T_q=4, T_k=4, d_model=8, h=1"), (2, 4, 4, 8, 1),
         _("with one head the head axis is still there, of size 1, and d_head = d_model")),
        (_("one token: B=3, T_q=1, T_k=1, d_model=6, h=2"), (3, 1, 1, 6, 2),
         _("read every size from the arguments: nothing is fixed at 2 or 5")),
        (_("a wider layer: B=4, T_q=10, T_k=12, d_model=64, h=8"), (4, 10, 12, 64, 8),
         _("head_context is each head's weighted sum of values, (B, h, T_q, d_head), before the heads are merged")),
    ]
    return [Case(name, sizes, _traced_shapes(*sizes), hint=hint) for name, sizes, hint in specs]


def _compare(expected: object, got: object) -> str | None:
    if not isinstance(got, dict):
        return _("expected a dict from name to shape, e.g. {example}, got {kind}").format(
            example="{'queries': (2, 2, 5, 2), ...}", kind=type(got).__name__)
    missing = [name for name in NAMES if name not in got]
    if missing:
        return _("the dict has no entry for {missing} (keys: {keys})").format(
            missing=", ".join(repr(m) for m in missing), keys=", ".join(NAMES))
    assert isinstance(expected, dict)
    for name in NAMES:
        shape = got[name]
        shape = tuple(shape) if isinstance(shape, (tuple, list, torch.Size)) else shape
        if shape != expected[name]:
            return _("{name}: expected {expected}, got {got}").format(name=name, expected=expected[name],
                                                                      got=repr(shape))
    return None


def attention_shapes(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(B, T_q, T_k, d_model, h)``: a dict from each name in ``NAMES`` to its shape in ``layer.trace``."""
    verdict(run("attention_shapes", fn, _cases(), reference=_("the shapes of MultiHeadAttention.trace"),
                compare=_compare, forbid=[(MultiHeadAttention.trace, "MultiHeadAttention.trace")]), strict=strict)
