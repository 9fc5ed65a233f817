"""Checks for the implement-it exercises: each compares a learner's function with ``mha_lib`` on several cases.

``checks.masked_softmax(my_masked_softmax)`` prints ``✓`` when every case matches; otherwise it raises
``CheckFailed``, shown without a traceback: ``…`` while the function is still the stub, or ``✗`` with the first
failing case, what was expected, what came, and a hint. So the check cell fails nbgrader's Validate and autograde
exactly when it shows no ``✓``. ``strict=True`` (the nbgrader hidden tests) prints nothing on success. A function
that calls the library's own answer (``mha_lib.masked_softmax``) fails with "you called ...: write it yourself".
One module per notebook topic (``masks`` for 04, ...); each lists its checks in ``__all__``. A teacher's own case:
``checks.run(title, fn, [checks.Case(...)], reference=...)`` (teaching/README.md, "Your own hidden case").
"""

import sys
import types

from mha_lib.checks._core import Case, CheckFailed, Report, difference, run

# One line per topic module, sorted by module; the comment names its notebook.
from mha_lib.checks.ablation import ablation_scores  # 09
from mha_lib.checks.attention import scaled_dot_product_attention  # 03
from mha_lib.checks.decoding import causal_window_mask  # 11
from mha_lib.checks.detectors import induction_score  # 08
from mha_lib.checks.efficient import online_attention  # 10
from mha_lib.checks.embeddings import embedding_lookup  # 02
from mha_lib.checks.heads import merge_heads, split_heads  # 05
from mha_lib.checks.inspect import previous_token_score  # 06
from mha_lib.checks.masks import attention_mask, masked_softmax  # 04
from mha_lib.checks.notation import attention_shapes  # 00
from mha_lib.checks.positions import sinusoidal_table  # 07
from mha_lib.checks.pretrained import load_attention  # 12
from mha_lib.checks.tokens import pad_batch  # 01
from mha_lib.i18n import _

__all__ = [
    "Case", "CheckFailed", "Report", "difference", "run",
    # the checks, in the order of the notebooks
    "attention_shapes",  # 00
    "pad_batch",  # 01
    "embedding_lookup",  # 02
    "scaled_dot_product_attention",  # 03
    "attention_mask", "masked_softmax",  # 04
    "split_heads", "merge_heads",  # 05
    "previous_token_score",  # 06
    "sinusoidal_table",  # 07
    "induction_score",  # 08
    "ablation_scores",  # 09
    "online_attention",  # 10
    "causal_window_mask",  # 11
    "load_attention",  # 12
]


class _Checks(types.ModuleType):
    """This package, with its checks read-only: a solution cell cannot replace ``checks.masked_softmax``."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in __all__:
            raise AttributeError(_("checks.{name} is part of the grading and cannot be replaced").format(name=name))
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in __all__:
            raise AttributeError(_("checks.{name} is part of the grading and cannot be deleted").format(name=name))
        super().__delattr__(name)


sys.modules[__name__].__class__ = _Checks
