"""The toy tasks: seeded batches of token ids, no downloads, the same for a seed on any machine.

``reverse_task`` (purely positional), ``induction_task`` (a ``BOS`` token, then random tokens repeating with a
random period) and ``sort_task``; each returns a ``TaskBatch`` (inputs, targets, the positions that are scored).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from mha_lib._validate import check_device, check_int

#: The id of the beginning-of-sequence token in ``induction_task``.
BOS = 0


@dataclass(frozen=True)
class TaskBatch:
    """One batch of a toy task: what the model reads, what it must predict, and where the task is scored."""

    inputs: Tensor  # (B, T) int64 token ids
    targets: Tensor  # (B, T) int64, the token each position must output
    scored: Tensor  # (B, T) bool, the positions the task's headline metric is measured on
    periods: Tensor | None = None  # (B,) int64, the repetition period of each sequence (induction only)

    @property
    def batch_size(self) -> int:
        """The number of sequences ``B``."""
        return self.inputs.shape[0]

    @property
    def length(self) -> int:
        """The number of tokens ``T``."""
        return self.inputs.shape[1]

    def to(self, device: torch.device | str | None) -> TaskBatch:
        """The same batch on ``device`` (itself if it is there already)."""
        device = check_device("device", device)
        if device is None or self.inputs.device == device:
            return self
        periods = None if self.periods is None else self.periods.to(device)
        return TaskBatch(self.inputs.to(device), self.targets.to(device), self.scored.to(device), periods)


def _generator(generator: torch.Generator | None, seed: int | None) -> torch.Generator | None:
    if generator is not None and seed is not None:
        raise ValueError("pass either generator or seed, not both")
    return torch.Generator().manual_seed(seed) if seed is not None else generator


def _random_tokens(
    batch_size: int, length: int, vocab_size: int, generator: torch.Generator | None, seed: int | None
) -> Tensor:
    """Uniform random token ids ``(B, T)`` in ``[0, vocab_size)``, after checking the sizes."""
    check_int("batch_size", batch_size)
    check_int("length", length)
    check_int("vocab_size", vocab_size, minimum=2)
    return torch.randint(0, vocab_size, (batch_size, length), generator=_generator(generator, seed))


def reverse_task(
    batch_size: int, length: int, vocab_size: int, *, generator: torch.Generator | None = None,
    seed: int | None = None, device: torch.device | str | None = None,
) -> TaskBatch:
    """Random tokens ``(B, T)``; position ``i`` must output token ``T - 1 - i`` (needs non-causal attention)."""
    inputs = _random_tokens(batch_size, length, vocab_size, generator, seed)
    return TaskBatch(inputs, inputs.flip(1), torch.ones(batch_size, length, dtype=torch.bool)).to(device)


def induction_task(
    batch_size: int, length: int, vocab_size: int, *, min_period: int = 4, max_period: int = 10,
    generator: torch.Generator | None = None, seed: int | None = None, device: torch.device | str | None = None,
) -> TaskBatch:
    """``BOS`` then a pattern of ``p`` distinct random tokens repeated, ``p`` drawn per sequence.

    Next-token prediction: ``targets[:, t] = inputs[:, t + 1]``. ``scored`` marks the positions whose
    current token already appeared (``t >= p + 1``): there, an induction head can copy the token that
    followed the earlier occurrence. Token ids are ``1 .. vocab_size - 1``; ``0`` is ``BOS``. The tokens are
    drawn on the CPU (the same for a seed on any machine), then moved to ``device``.
    """
    check_int("batch_size", batch_size)
    check_int("length", length, minimum=2)
    check_int("min_period", min_period)
    check_int("max_period", max_period)
    if min_period > max_period:
        raise ValueError(f"min_period must be <= max_period, got {min_period} and {max_period}")
    if max_period > vocab_size - 1:
        raise ValueError(
            f"vocab_size - 1 (the non-BOS tokens) must be >= max_period so a pattern has distinct tokens,"
            f" got vocab_size={vocab_size} and max_period={max_period}"
        )
    g = _generator(generator, seed)
    periods = torch.randint(min_period, max_period + 1, (batch_size,), generator=g)  # (B,)
    # A random permutation of the tokens per sequence; its first p entries are the pattern.
    patterns = torch.rand(batch_size, vocab_size - 1, generator=g).argsort(dim=1) + 1  # (B, V-1)
    t = torch.arange(length)  # positions 1 .. length of the body (length + 1 tokens with BOS)
    body = patterns.gather(1, t[None, :] % periods[:, None])  # (B, length)
    seq = torch.cat([torch.full((batch_size, 1), BOS), body], dim=1)  # (B, length + 1)
    positions = torch.arange(length)[None, :]  # (1, T)
    return TaskBatch(seq[:, :-1], seq[:, 1:], positions >= periods[:, None] + 1, periods).to(device)


def sort_task(
    batch_size: int, length: int, vocab_size: int, *, generator: torch.Generator | None = None,
    seed: int | None = None, device: torch.device | str | None = None,
) -> TaskBatch:
    """Random tokens ``(B, T)``; position ``i`` must output the ``i``-th smallest (needs non-causal attention)."""
    inputs = _random_tokens(batch_size, length, vocab_size, generator, seed)
    return TaskBatch(inputs, inputs.sort(dim=1).values, torch.ones(batch_size, length, dtype=torch.bool)).to(device)


TaskFn = Callable[..., TaskBatch]
"""A task as ``train`` calls it: ``task(batch_size, generator=g) -> TaskBatch``."""
