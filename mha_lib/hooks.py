"""Open heads: a *head hook* is a function ``fn(context) -> context`` on every head's output before the merge.

``context`` is ``(B, h, Tq, d_head)``; a hook returns the replacement (same shape) or None (unchanged).
``gate_heads(gates)`` multiplies each head by a number (0 removes it); ``on_head(i, fn)`` changes head ``i`` only;
``run_head_hooks`` applies a list of hooks in order and refuses a result of the wrong shape, naming the hook.
The layer (``MultiHeadAttention.register_head_hook``, ``head_gates=``, ``head_hook=``) calls them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from torch import Tensor

from mha_lib._validate import _got, _shape, check_index, check_int

HeadHook = Callable[[Tensor], "Tensor | None"]
"""``fn(context)`` with ``context`` ``(B, h, Tq, d_head)``; returns the replacement (same shape) or None (unchanged)."""


def gate_heads(gates: Tensor) -> HeadHook:
    """A head hook multiplying head ``i``'s context by ``gates[i]`` (``(h,)``: 1 = unchanged, 0 = head removed)."""
    return lambda context: context * gates.to(device=context.device, dtype=context.dtype).view(1, -1, 1, 1)


def on_head(head: int, fn: Callable[[Tensor], Tensor]) -> HeadHook:
    """A head hook that replaces head ``head``'s context ``(B, Tq, d_head)`` by ``fn(context)``; others unchanged.

    ``on_head(2, torch.zeros_like)`` removes head 2; ``on_head(2, lambda c: mean.expand_as(c))`` mean-ablates it.
    """
    check_int("head", head, minimum=0)

    def hook(context: Tensor) -> Tensor:
        check_index("head", head, context.shape[1], what=f" ({context.shape[1]} heads)")
        patched = context.clone()
        patched[:, head] = fn(context[:, head])
        return patched

    return hook


def run_head_hooks(context: Tensor, hooks: Iterable[HeadHook]) -> Tensor:
    """Apply ``hooks`` in order to ``context`` ``(B, h, Tq, d_head)``; a hook returning None leaves it unchanged."""
    for fn in hooks:
        result = fn(context)
        if result is None:
            continue
        if not isinstance(result, Tensor) or result.shape != context.shape:
            got = _shape(result) if isinstance(result, Tensor) else _got(result)
            raise ValueError(
                f"a head hook must return a tensor of the shape it received, {_shape(context)}"
                f" (batch, heads, queries, d_head), or None; {getattr(fn, '__name__', fn)!s} returned {got}"
            )
        context = result
    return context
