"""Checks for notebook 09: zero-ablation of every head, one at a time, as a loop over (layer, head) pairs."""

from __future__ import annotations

from mha_lib import toy
from mha_lib.checks._core import Case, run, verdict
from mha_lib.i18n import _

__all__ = ["ablation_scores"]


def _case(name: str, layers: int, heads: int, sequences: int, seed: int, hint: str) -> Case:
    """A small untrained model and an induction batch; the library's zero-ablation of every head."""
    model = toy.TinyTransformer(12, 10, d_model=8 * heads, num_heads=heads, num_layers=layers, seed=seed)
    batch = toy.induction_task(sequences, 10, 12, min_period=3, max_period=6, seed=seed)
    return Case(name, (model, batch), toy.ablation_scores(model, batch), hint=hint)


def _cases() -> list[Case]:
    return [  # built afresh for every check: a learner's function may leave a hook or a gate behind
        _case(_("one layer, one head: the loss rise when the only head is removed"), 1, 1, 8, 0,
              _("the score is L(gates with a 0) - L(every gate 1), both with toy.task_loss(model, batch, scored=True,"
              " head_gates=...): the loss on the repeated tokens, and the rise, not the loss itself")),
        _case(_("one layer, three heads: each removed on its own, the others on, result (1, 3)"), 1, 3, 8, 1,
              _("start every trial from a fresh torch.ones(num_layers, num_heads) (a gate left at 0 from the previous"
              " head removes two heads at once), and store the rise at [layer, head]: shape (num_layers, num_heads)")),
        _case(_("two layers of three heads: both layers, result (2, 3)"), 2, 3, 8, 2,
              _("loop over every layer and every head of it, for layer in range(model.num_layers): a head of layer 1"
              " is removed with gates[1, head] = 0")),
        _case(_("three layers of two heads, 32 sequences"), 3, 2, 32, 3,
              _("read the sizes from model.num_layers and model.num_heads, not from the notebook's model")),
    ]


def ablation_scores(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(model, batch)`` -> ``(L, h)`` loss rises against ``toy.ablation_scores``."""
    verdict(run("ablation_scores", fn, _cases(), reference="mha_lib.toy.ablation_scores",
                forbid=[(toy.ablation_scores, "mha_lib.toy.ablation_scores")]), strict=strict)
