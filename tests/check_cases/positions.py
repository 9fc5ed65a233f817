"""Notebook 07's check: the library passes; sine and cosine swapped, all sines before all cosines, positions from 1,
or the exponent j/d instead of 2j/d fails at its case."""

from __future__ import annotations

import torch

from mha_lib import checks
from mha_lib.positional import sinusoidal_table


def _table(max_len, d_model, *, first=0, sine_first=True, interleave=True, exponent_of_pair=2):
    position = torch.arange(first, first + max_len, dtype=torch.float64)[:, None]
    pairs = torch.arange(d_model // 2, dtype=torch.float64)
    angle = position / 10000 ** (exponent_of_pair * pairs / d_model)  # (max_len, d/2)
    a, b = (torch.sin(angle), torch.cos(angle)) if sine_first else (torch.cos(angle), torch.sin(angle))
    if not interleave:
        return torch.cat([a, b], dim=-1).float()
    return torch.stack([a, b], dim=-1).reshape(max_len, d_model).float()


ROWS = [
    (checks.sinusoidal_table, sinusoidal_table,
     [(lambda n, d: _table(n, d, sine_first=False), 1), (lambda n, d: _table(n, d, first=1), 1),
      (lambda n, d: _table(n, d, interleave=False), 2), (lambda n, d: _table(n, d, exponent_of_pair=1), 3)]),
]
