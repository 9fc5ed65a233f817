"""Tiny attention models trained on a CPU in seconds, head detectors and head importance: one module per job.

* ``toy.tasks``: task generators (seeded, no downloads): ``reverse_task`` (purely positional), ``induction_task``
  (a BOS token, then random tokens repeating with a random period), ``sort_task``.
* ``toy.model``: ``TinyTransformer``: embeddings, learned or sinusoidal positions, ``num_layers`` blocks of
  ``mha_lib.MultiHeadAttention`` (optionally with an MLP), a gate per head (1 = unchanged, 0 = removed).
  ``model.trace(tokens)`` gives one ``BlockTrace`` per layer (the residual stream in and out, the attention
  trace); ``model.patch_head((layer, head), fn)`` replaces one head's output, e.g. to ablate it.
* ``toy.training``: ``train`` (AdamW, deterministic for a given seed, on the model's device; returns the loss
  history), ``task_loss``, ``accuracy``.
* ``toy.adamw``: ``AdamW``, the optimizer ``train`` steps with (``torch.optim.AdamW``'s update written out).
* ``toy.detectors``: head detectors (previous-token, induction, mirror, BOS share) and a table of them: ``head_scores``.
* ``toy.importance``: zero-ablation, the gradient score ``|dL/d gate|`` (Michel et al., 2019) per sequence (one
  backward pass each, or all in one pass: ``sequence_gate_gradients``), greedy pruning.

Every name is also here, ``from mha_lib import toy; toy.train(...)``. Heads are named by ``(layer, head)`` tuples:
tables are indexed by a ``("layer", "head")`` MultiIndex and ``(L, h)`` tensors are indexed by the same tuple
(``scores[layer, head]``); ``head_label`` is for printing. Batches follow the model: every function moves a task
batch to the model's device. Token ids outside the model's vocabulary, a non-finite hidden state and a device
mismatch raise a ``ValueError`` that says so.
"""

from mha_lib.toy.adamw import AdamW
from mha_lib.toy.detectors import (
    bos_share,
    head_labels,
    head_scores,
    head_table,
    induction_score,
    induction_targets,
    mirror_score,
    previous_token_score,
)
from mha_lib.toy.importance import (
    ablation_scores,
    gate_gradients,
    gradient_scores,
    prune_heads,
    sequence_gate_gradients,
)
from mha_lib.toy.model import Block, BlockTrace, TinyTransformer
from mha_lib.toy.tasks import BOS, TaskBatch, TaskFn, induction_task, reverse_task, sort_task
from mha_lib.toy.training import accuracy, task_loss, train, uniform_loss

__all__ = [
    "BOS",
    "AdamW",
    "Block",
    "BlockTrace",
    "TaskBatch",
    "TaskFn",
    "TinyTransformer",
    "ablation_scores",
    "accuracy",
    "bos_share",
    "gate_gradients",
    "gradient_scores",
    "head_labels",
    "head_scores",
    "head_table",
    "induction_score",
    "induction_targets",
    "induction_task",
    "mirror_score",
    "previous_token_score",
    "prune_heads",
    "reverse_task",
    "sequence_gate_gradients",
    "sort_task",
    "task_loss",
    "train",
    "uniform_loss",
]
