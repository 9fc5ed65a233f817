"""Training and scoring a ``TinyTransformer``: the task loss, accuracy, and ``train`` (AdamW, seeded).

``train`` is deterministic for a given seed on a CPU and shows a progress bar only where one renders.
"""

from __future__ import annotations

import math

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor

from mha_lib._validate import _got, check_int
from mha_lib.toy.adamw import AdamW
from mha_lib.toy.model import TinyTransformer, _on_model
from mha_lib.toy.tasks import TaskBatch, TaskFn


def task_loss(
    model: TinyTransformer, batch: TaskBatch, *, scored: bool = False, head_gates: Tensor | None = None
) -> Tensor:
    """Mean cross-entropy (nats) over every position, or over ``batch.scored`` ones only; differentiable."""
    batch = _on_model(model, batch)
    logits = model(batch.inputs, head_gates=head_gates)  # (B, T, V)
    losses = F.cross_entropy(logits.transpose(1, 2), batch.targets, reduction="none")  # (B, T)
    return losses[batch.scored].mean() if scored else losses.mean()


@torch.no_grad()
def accuracy(model: TinyTransformer, batch: TaskBatch, *, scored: bool = True,
             head_gates: Tensor | None = None) -> float:
    """Share of positions (``batch.scored`` ones by default) where the top logit is the target."""
    batch = _on_model(model, batch)
    correct = model(batch.inputs, head_gates=head_gates).argmax(-1) == batch.targets  # (B, T)
    return float(correct[batch.scored].float().mean() if scored else correct.float().mean())


def _progress_bar(steps: int, desc: str, progress: bool | None):  # noqa: ANN202 - a tqdm bar
    """``range(steps)`` behind a bar that leaves nothing behind: a widget in Jupyter, text in a terminal.

    ``progress=None`` shows it only in an interactive terminal (never in a notebook kernel, under pytest or in
    CI); ``True`` always (a widget in Jupyter and Colab), ``False`` never.
    """
    from tqdm.auto import tqdm as auto_tqdm
    from tqdm.std import tqdm as text_tqdm

    if progress is None:
        # disable=None: tqdm shows the text bar only when stderr is a terminal (a kernel's stderr is not)
        return text_tqdm(range(steps), desc=desc, disable=None, mininterval=0.5, leave=False)
    return auto_tqdm(range(steps), desc=desc, disable=not progress, mininterval=0.5, leave=False)


def train(
    model: TinyTransformer,
    task: TaskFn,
    *,
    steps: int,
    batch_size: int = 64,
    lr: float = 3e-3,
    weight_decay: float = 0.0,
    seed: int = 0,
    threads: int | None = 1,
    progress: bool | None = None,
    desc: str = "training",
    stop_below: float | None = None,
    stop_window: int = 10,
    stop_when: str = "mean",
) -> pd.DataFrame:
    """Train ``model`` with AdamW on fresh batches ``task(batch_size, generator=g)``; returns the loss history.

    The optimizer is ``toy.adamw.AdamW``: ``torch.optim.AdamW``'s update, bit for bit, without its import of
    ``torch._dynamo``. The history has one row per step: ``loss`` (the training objective, every position) and
    ``scored loss`` (on ``batch.scored`` positions, e.g. repeated tokens). Batches are drawn on the CPU
    and moved to the model's device. The same seed, model initialisation and ``threads`` give the same
    history on a CPU; ``threads`` is restored afterwards. ``progress``: see ``_progress_bar`` (None: a bar
    only in an interactive terminal; True: a widget in Jupyter).

    Early stop: with ``stop_below``, training ends after the first step at which the last ``stop_window`` scored
    losses are below it: their mean (``stop_when="mean"``) or every one of them (``"every"``, stricter); at most
    ``steps`` steps. The optimizer and the batch stream are those of the full run, so a stopped run is exactly the
    first rows (and the weights) of a run with that many steps.
    """
    check_int("steps", steps)
    check_int("batch_size", batch_size)
    check_int("stop_window", stop_window)
    if stop_below is not None and (isinstance(stop_below, bool) or not isinstance(stop_below, (int, float))):
        raise TypeError(f"stop_below must be a number or None, got {_got(stop_below)}")
    if stop_when not in ("mean", "every"):
        raise ValueError(f"stop_when must be 'mean' or 'every', got {stop_when!r}")
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {_got(model)}")
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(check_int("threads", threads))
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            g = torch.Generator().manual_seed(seed)
            optimizer = AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)  # torch.optim.AdamW's steps
            history = []
            model.train()
            bar = _progress_bar(steps, desc, progress)
            for step in bar:
                batch = _on_model(model, task(batch_size, generator=g))
                logits = model(batch.inputs)  # (B, T, V)
                losses = F.cross_entropy(logits.transpose(1, 2), batch.targets, reduction="none")  # (B, T)
                loss = losses.mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                history.append((loss.item(), losses.detach()[batch.scored].mean().item()))
                if step % 50 == 0:
                    bar.set_postfix(loss=f"{history[-1][0]:.3f}")
                recent = [scored for _, scored in history[-stop_window:]]
                if stop_below is not None and len(recent) == stop_window and (
                        sum(recent) / stop_window < stop_below if stop_when == "mean"
                        else all(scored < stop_below for scored in recent)):
                    break
            bar.close()
            model.eval()
    finally:
        torch.set_num_threads(previous_threads)
    return pd.DataFrame(history, columns=["loss", "scored loss"], index=pd.RangeIndex(len(history), name="step"))


def uniform_loss(vocab_size: int) -> float:
    """``ln(vocab_size)``: the cross-entropy of a model that guesses uniformly."""
    return math.log(check_int("vocab_size", vocab_size))
