"""Checks for notebook 07: the sinusoidal table of positional codes (Vaswani et al., 2017)."""

from __future__ import annotations

from mha_lib.checks._core import Case, run, verdict
from mha_lib.i18n import _
from mha_lib.positional import sinusoidal_table as library_sinusoidal_table

__all__ = ["sinusoidal_table"]


def _cases() -> list[Case]:
    specs = [
        (_("one pair, d_model = 2, positions 0-5: P[p] = (sin p, cos p)"), 6, 2,
         _("P[p, 0] = sin(p) and P[p, 1] = cos(p): the sine comes first, the first pair turns 1 radian per position "
         "(omega_0 = 1), and positions start at 0 (the first row is (0, 1))")),
        (_("position 0 only, d_model = 8: every pair is (sin 0, cos 0) = (0, 1)"), 1, 8,
         _("columns alternate: P[p, 2j] = sin, P[p, 2j + 1] = cos, pair after pair (0, 1, 0, 1, ...), not all the "
         "sines first and then all the cosines")),
        (_("four pairs, d_model = 8, positions 0-9"), 10, 8,
         _("omega_j = 1 / 10000^(2j / d_model), where j counts the pairs (0 .. d_model/2 - 1): the exponent is 2j/d, "
         "the column number of the sine over d, not j/d")),
        (_("d2l's size: 60 positions, d_model = 32"), 60, 32,
         _("read max_len and d_model from the arguments: the table is (max_len, d_model)")),
        (_("d_model = 6 (not a power of 2), 50 positions"), 50, 6,
         _("any even d_model works: d_model/2 pairs, one frequency each")),
    ]
    return [Case(name, (n, d), library_sinusoidal_table(n, d), hint=hint) for name, n, d, hint in specs]


def sinusoidal_table(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(max_len, d_model)`` -> ``(max_len, d_model)`` sines and cosines against the library's table."""
    # atol 1e-4: a table computed in float64, or with the angle formed in another order, differs in the 6th digit
    verdict(run("sinusoidal_table", fn, _cases(), reference="mha_lib.positional.sinusoidal_table", atol=1e-4,
                forbid=[(library_sinusoidal_table, "mha_lib.sinusoidal_table")]),
            strict=strict)
