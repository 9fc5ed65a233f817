"""Checks for notebook 10: attention over blocks of keys with an online softmax, never the whole table of scores."""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode

from mha_lib.attention import tiled_attention
from mha_lib.checks._core import Case, generator, run, verdict
from mha_lib.i18n import _

__all__ = ["online_attention"]


class WholeTableBuilt(RuntimeError):
    """The learner's function built a ``(..., T_q, T_k)`` tensor: the table the exercise must avoid."""


class _TableWatch(TorchFunctionMode):
    """Raises ``WholeTableBuilt`` when a torch call returns a float tensor whose last two axes are ``(T_q, T_k)``.

    A boolean ``(T, T)`` causal mask is allowed: it is the table of scores that the online softmax avoids. A call
    of ``F.scaled_dot_product_attention`` raises too: the exercise is to write the loop.
    """

    def __init__(self, queries: int, keys: int) -> None:
        super().__init__()
        self.queries, self.keys = queries, keys

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 - torch's protocol
        if func is torch.nn.functional.scaled_dot_product_attention:
            raise WholeTableBuilt(_("it called F.scaled_dot_product_attention: write the loop over blocks yourself"))
        result = func(*args, **(kwargs or {}))
        for out in result if isinstance(result, (tuple, list)) else (result,):
            if (isinstance(out, Tensor) and out.is_floating_point() and out.dim() >= 2
                    and tuple(out.shape[-2:]) == (self.queries, self.keys)):
                raise WholeTableBuilt(
                    _("it built a {shape} tensor of numbers, a whole (..., T_q, T_k) table of scores or weights;"
                      " compute one (..., T_q, block_size) slice of scores at a time").format(shape=tuple(out.shape))
                )
        return result


def _watched(fn: object) -> object:
    """``fn`` run under ``_TableWatch`` whenever the keys span more than one block (else the table is one block)."""
    if not callable(fn):
        return fn

    @functools.wraps(fn)
    def call(q: Tensor, k: Tensor, v: Tensor, block_size: int, **kwargs: object) -> object:
        if k.shape[-2] <= block_size:
            return fn(q, k, v, block_size, **kwargs)
        with _TableWatch(q.shape[-2], k.shape[-2]):
            return fn(q, k, v, block_size, **kwargs)

    return call


def _qkv(shape: tuple[int, ...], keys: int, d_v: int, g: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """q ``(..., T_q, d)``, k ``(..., T_k, d)``, v ``(..., T_k, d_v)``, random."""
    *lead, queries, d = shape
    q = torch.randn(*lead, queries, d, generator=g)
    k = torch.randn(*lead, keys, d, generator=g)
    v = torch.randn(*lead, keys, d_v, generator=g)
    return q, k, v


def _cases() -> list[Case]:
    g = generator(10)
    q, k, v = _qkv((2, 3, 12, 8), 12, 5, g)  # (B, h, T, d), values 5 wide
    cross = _qkv((2, 3, 7, 4), 10, 6, g)  # 7 queries, 10 keys
    flat = _qkv((3, 9, 4), 9, 5, g)  # (B, T, d): no head axis
    specs: list[tuple[str, tuple, dict, str]] = [
        (_("one block holding every key (T=12, block_size=12): an ordinary softmax"), (q, k, v, 12), {},
         _("scale the scores by 1 / sqrt(d), d = q.shape[-1], as scaled dot-product attention does")),
        (_("3 blocks of 4 keys (T=12, block_size=4)"), (q, k, v, 4), {},
         _("compute one (..., T_q, block_size) slice of scores per block; when it raises the running maximum from m"
         " to m', multiply both the running sum l and the running output o by exp(m - m') before adding the"
         " block's terms; divide o by l once, after the last block")),
        (_("block_size=5 with 12 keys: the last block has only 2"), (q, k, v, 5), {},
         _("loop with range(0, T_k, block_size) and slice k[..., start:start + block_size, :]: the last slice is"
         " shorter, and no key may be left out")),
        (_("causal=True, 3 blocks of 4 keys"), (q, k, v, 4), {"causal": True},
         _("with causal=True query i may see keys j <= i: give the scores of later keys -inf before exp, so"
         " exp(s - m) = 0 there (key 0 is in the first block, so every running maximum is finite)")),
        (_("block_size=1: one key at a time"), (q, k, v, 1), {},
         _("the updates must work for blocks of any size, one key included")),
        (_("cross-attention: 7 queries, 10 keys, values 6 wide (block_size=3)"), (*cross, 3), {},
         _("T_q, T_k and the width of v can all differ: the output is (..., T_q, v.shape[-1])")),
        (_("large scores (q x 40): exp must not overflow"), (q * 40, k, v, 4), {},
         _("exp(100) overflows float32: subtract the running maximum before exp, exp(s - m'), never exp(s)")),
        (_("3-D inputs (B, T, d) without a head axis"), (*flat, 4), {},
         _("index from the end (q.shape[-2], k[..., a:b, :]) so that any leading axes work")),
    ]
    return [Case(name, args, tiled_attention(*args[:3], block_size=args[3], **kwargs), kwargs=kwargs, hint=hint)
            for name, args, kwargs, hint in specs]


def online_attention(fn: Callable[..., Tensor] | object, *, strict: bool = False) -> None:
    """Check ``fn(q, k, v, block_size, causal=False)`` -> ``(..., T_q, d_v)`` against ``tiled_attention``.

    Besides the values, it fails a function that builds the whole ``(..., T_q, T_k)`` table of scores.
    """
    report = run("online_attention", _watched(fn), _cases(), reference="mha_lib.attention.tiled_attention",
                 forbid=[(tiled_attention, "mha_lib.attention.tiled_attention")])
    verdict(report, strict=strict)
