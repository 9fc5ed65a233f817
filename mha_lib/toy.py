"""Tiny attention models trained on a CPU in seconds, head detectors and head importance.

* Task generators (seeded, no downloads): ``reverse_task`` (purely positional), ``induction_task``
  (a BOS token, then random tokens repeating with a random period), ``sort_task``.
* ``TinyTransformer``: embeddings, learned or sinusoidal positions, ``num_layers`` blocks of
  ``mha_lib.MultiHeadAttention`` (optionally with an MLP), a gate per head (1 = unchanged, 0 = removed).
* ``train``: Adam, a tqdm bar, deterministic for a given seed; returns the loss history.
* Head detectors (previous-token, induction, mirror, BOS share) and a table of them: ``head_scores``.
* Importance: zero-ablation, the gradient score ``|dL/d gate|`` (Michel et al., 2019), greedy pruning.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm import tqdm

from mha_lib._validate import _shape, check_int
from mha_lib.mha import AttentionTrace, MultiHeadAttention
from mha_lib.positional import LearnedPositionalEmbedding, PositionalEncoding

BOS = 0  # the id of the beginning-of-sequence token in ``induction_task``


# --------------------------------------------------------------------------------------------- tasks


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
    seed: int | None = None,
) -> TaskBatch:
    """Random tokens ``(B, T)``; position ``i`` must output token ``T - 1 - i`` (needs non-causal attention)."""
    inputs = _random_tokens(batch_size, length, vocab_size, generator, seed)
    return TaskBatch(inputs, inputs.flip(1), torch.ones(batch_size, length, dtype=torch.bool))


def induction_task(
    batch_size: int, length: int, vocab_size: int, *, min_period: int = 4, max_period: int = 10,
    generator: torch.Generator | None = None, seed: int | None = None,
) -> TaskBatch:
    """``BOS`` then a pattern of ``p`` distinct random tokens repeated, ``p`` drawn per sequence.

    Next-token prediction: ``targets[:, t] = inputs[:, t + 1]``. ``scored`` marks the positions whose
    current token already appeared (``t >= p + 1``): there, an induction head can copy the token that
    followed the earlier occurrence. Token ids are ``1 .. vocab_size - 1``; ``0`` is ``BOS``.
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
    return TaskBatch(seq[:, :-1], seq[:, 1:], positions >= periods[:, None] + 1, periods)


def sort_task(
    batch_size: int, length: int, vocab_size: int, *, generator: torch.Generator | None = None,
    seed: int | None = None,
) -> TaskBatch:
    """Random tokens ``(B, T)``; position ``i`` must output the ``i``-th smallest (needs non-causal attention)."""
    inputs = _random_tokens(batch_size, length, vocab_size, generator, seed)
    return TaskBatch(inputs, inputs.sort(dim=1).values, torch.ones(batch_size, length, dtype=torch.bool))


# --------------------------------------------------------------------------------------------- model


class Block(nn.Module):
    """``x + attn(ln(x))`` (then ``x + mlp(ln(x))`` unless attention-only): a pre-LayerNorm block."""

    def __init__(
        self, d_model: int, num_heads: int, context_length: int, *, causal: bool, mlp: bool, layer_norm: bool
    ) -> None:
        super().__init__()
        self.ln_attn = nn.LayerNorm(d_model) if layer_norm else nn.Identity()
        self.attn = MultiHeadAttention(d_model, d_model, context_length, 0.0, num_heads, causal=causal)
        self.mlp: nn.Module | None = None
        if mlp:
            self.ln_mlp = nn.LayerNorm(d_model) if layer_norm else nn.Identity()
            self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: Tensor, gates: Tensor, *, record: bool = False) -> tuple[Tensor, AttentionTrace | None]:
        """``(B, T, d_model)`` -> ``(B, T, d_model)``, and the attention trace if ``record``."""
        h = self.ln_attn(x)
        trace = self.attn.trace(h, head_gates=gates) if record else None
        x = x + (trace.output if trace is not None else self.attn(h, head_gates=gates))
        if self.mlp is not None:
            x = x + self.mlp(self.ln_mlp(x))
        return x, trace


class TinyTransformer(nn.Module):
    """A small decoder (``causal=True``) or encoder over token ids, built from ``MultiHeadAttention``.

    ``positions``: ``"learned"`` (a trained vector per position) or ``"sinusoidal"`` (the fixed table).
    ``mlp=False`` gives an attention-only model. ``seed`` initialises the weights without touching the
    global random state. ``head_gates`` ``(num_layers, num_heads)`` multiplies each head's output; all
    ones by default, a 0 removes that head exactly.
    """

    head_gates: Tensor

    def __init__(
        self,
        vocab_size: int,
        context_length: int,
        *,
        d_model: int = 64,
        num_heads: int = 2,
        num_layers: int = 2,
        positions: Literal["learned", "sinusoidal"] = "learned",
        causal: bool = True,
        mlp: bool = False,
        layer_norm: bool = True,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("context_length", context_length), ("d_model", d_model),
                            ("num_heads", num_heads), ("num_layers", num_layers)):
            check_int(name, value)
        if positions not in ("learned", "sinusoidal"):
            raise ValueError(f"positions must be 'learned' or 'sinusoidal', got {positions!r}")
        self.vocab_size, self.context_length, self.d_model = vocab_size, context_length, d_model
        self.num_heads, self.num_layers, self.positions, self.causal = num_heads, num_layers, positions, causal
        with torch.random.fork_rng(devices=[]):
            if seed is not None:
                torch.manual_seed(seed)
            self.embed = nn.Embedding(vocab_size, d_model)
            self.pos: nn.Module = (
                LearnedPositionalEmbedding(context_length, d_model) if positions == "learned"
                else PositionalEncoding(d_model, 0.0, max_len=context_length)
            )
            self.blocks = nn.ModuleList(
                Block(d_model, num_heads, context_length, causal=causal, mlp=mlp, layer_norm=layer_norm)
                for _ in range(num_layers)
            )
            self.ln_final = nn.LayerNorm(d_model) if layer_norm else nn.Identity()
            self.unembed = nn.Linear(d_model, vocab_size)
        self.register_buffer("head_gates", torch.ones(num_layers, num_heads))

    def extra_repr(self) -> str:
        return f"positions={self.positions!r}, causal={self.causal}"

    def num_parameters(self) -> int:
        """The number of trained parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def _check(self, tokens: Tensor, head_gates: Tensor | None) -> Tensor:
        if not isinstance(tokens, Tensor) or tokens.dim() != 2 or tokens.is_floating_point():
            got = _shape(tokens) + f" {tokens.dtype}" if isinstance(tokens, Tensor) else type(tokens).__name__
            raise ValueError(f"tokens must be an integer tensor of shape (batch, tokens), got {got}")
        gates = self.head_gates if head_gates is None else head_gates
        if gates.shape != (self.num_layers, self.num_heads):
            raise ValueError(
                f"head_gates must have shape ({self.num_layers}, {self.num_heads}) (layers, heads),"
                f" got {_shape(gates)}"
            )
        return gates

    def _run(self, tokens: Tensor, head_gates: Tensor | None, record: bool) -> tuple[Tensor, list[AttentionTrace]]:
        gates = self._check(tokens, head_gates)
        x = self.pos(self.embed(tokens))  # (B, T, d_model)
        traces = []
        for block, g in zip(self.blocks, gates):
            x, trace = block(x, g, record=record)
            if trace is not None:
                traces.append(trace)
        return self.unembed(self.ln_final(x)), traces

    def forward(self, tokens: Tensor, *, head_gates: Tensor | None = None) -> Tensor:
        """``(B, T)`` token ids -> ``(B, T, vocab_size)`` logits; ``head_gates`` overrides ``self.head_gates``."""
        return self._run(tokens, head_gates, record=False)[0]

    def trace(self, tokens: Tensor, *, head_gates: Tensor | None = None) -> list[AttentionTrace]:
        """One ``AttentionTrace`` per layer (``trace.weights``: ``(B, h, T, T)``)."""
        return self._run(tokens, head_gates, record=True)[1]

    @torch.no_grad()
    def attention(self, tokens: Tensor, *, head_gates: Tensor | None = None) -> Tensor:
        """``(num_layers, B, h, T, T)``: every head's attention weights."""
        return torch.stack([t.weights for t in self.trace(tokens, head_gates=head_gates)])


# ----------------------------------------------------------------------------------------- training


def task_loss(
    model: TinyTransformer, batch: TaskBatch, *, scored: bool = False, head_gates: Tensor | None = None
) -> Tensor:
    """Mean cross-entropy (nats) over every position, or over ``batch.scored`` ones only; differentiable."""
    logits = model(batch.inputs, head_gates=head_gates)  # (B, T, V)
    losses = F.cross_entropy(logits.transpose(1, 2), batch.targets, reduction="none")  # (B, T)
    return losses[batch.scored].mean() if scored else losses.mean()


@torch.no_grad()
def accuracy(model: TinyTransformer, batch: TaskBatch, *, scored: bool = True,
             head_gates: Tensor | None = None) -> float:
    """Share of positions (``batch.scored`` ones by default) where the top logit is the target."""
    correct = model(batch.inputs, head_gates=head_gates).argmax(-1) == batch.targets  # (B, T)
    return float(correct[batch.scored].float().mean() if scored else correct.float().mean())


TaskFn = Callable[..., TaskBatch]


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
    progress: bool = True,
    desc: str = "training",
) -> pd.DataFrame:
    """Train ``model`` with Adam on fresh batches ``task(batch_size, generator=g)``; returns the loss history.

    The history has one row per step: ``loss`` (the training objective, every position) and
    ``scored loss`` (on ``batch.scored`` positions, e.g. repeated tokens). The same seed, model
    initialisation and ``threads`` give the same history; ``threads`` is restored afterwards.
    """
    check_int("steps", steps)
    check_int("batch_size", batch_size)
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(check_int("threads", threads))
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            g = torch.Generator().manual_seed(seed)
            optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
            history = []
            model.train()
            bar = tqdm(range(steps), desc=desc, disable=not progress, mininterval=0.5, leave=False)
            for step in bar:
                batch = task(batch_size, generator=g)
                logits = model(batch.inputs)  # (B, T, V)
                losses = F.cross_entropy(logits.transpose(1, 2), batch.targets, reduction="none")  # (B, T)
                loss = losses.mean()
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                history.append((loss.item(), losses.detach()[batch.scored].mean().item()))
                if step % 50 == 0:
                    bar.set_postfix(loss=f"{history[-1][0]:.3f}")
            bar.close()
            model.eval()
    finally:
        torch.set_num_threads(previous_threads)
    return pd.DataFrame(history, columns=["loss", "scored loss"], index=pd.RangeIndex(steps, name="step"))


# ---------------------------------------------------------------------------------------- detectors


def _weights(weights: Tensor) -> Tensor:
    if not isinstance(weights, Tensor) or weights.dim() not in (3, 4) or weights.shape[-1] != weights.shape[-2]:
        got = _shape(weights) if isinstance(weights, Tensor) else type(weights).__name__
        raise ValueError(f"weights must have shape (batch, heads, T, T) or (heads, T, T), got {got}")
    return (weights if weights.dim() == 4 else weights[None]).detach().double()


def _mean_over(values: Tensor, where: Tensor) -> Tensor:
    """``values`` ``(B, h, T)`` averaged over the ``(B, T)`` positions where ``where`` is True -> ``(h,)``."""
    where = where[:, None, :].expand_as(values).double()
    return (values * where).sum((0, 2)) / where.sum((0, 2)).clamp_min(1.0)


def previous_token_score(weights: Tensor) -> Tensor:
    """``(h,)``: mean weight from query ``i`` on key ``i - 1`` (queries ``i >= 1``); 1 for a perfect head."""
    w = _weights(weights)  # (B, h, T, T)
    return torch.diagonal(w, offset=-1, dim1=-2, dim2=-1).mean((0, 2))


def mirror_score(weights: Tensor) -> Tensor:
    """``(h,)``: mean weight from query ``i`` on key ``T - 1 - i`` (the anti-diagonal); 1 for a perfect head."""
    w = _weights(weights)
    return torch.diagonal(w.flip(-1), dim1=-2, dim2=-1).mean((0, 2))


def induction_targets(tokens: Tensor) -> Tensor:
    """``(B, T, T)`` bool: key ``j`` follows an earlier occurrence of query ``i``'s token (``j <= i``)."""
    if not isinstance(tokens, Tensor) or tokens.dim() != 2:
        raise ValueError(f"tokens must have shape (batch, tokens), got {type(tokens).__name__}")
    t = tokens.shape[1]
    before = torch.cat([torch.full_like(tokens[:, :1], -1), tokens[:, :-1]], dim=1)  # token before each key
    match = tokens[:, :, None] == before[:, None, :]  # (B, Tq, Tk)
    key_le_query = torch.ones(t, t, dtype=torch.bool).tril()
    return match & key_le_query & (before[:, None, :] >= 0)


def induction_score(weights: Tensor, tokens: Tensor) -> Tensor:
    """``(h,)``: weight a repeated token puts on the token after its earlier occurrence(s); 1 when perfect.

    Averaged over the queries whose token appeared earlier; ``tokens`` ``(B, T)``.
    """
    w = _weights(weights)
    target = induction_targets(tokens).double()  # (B, T, T)
    if target.shape != (w.shape[0], *w.shape[2:]):
        raise ValueError(f"tokens must have shape ({w.shape[0]}, {w.shape[2]}), got {_shape(tokens)}")
    on_target = (w * target[:, None]).sum(-1)  # (B, h, T)
    return _mean_over(on_target, target.any(-1))


def bos_share(weights: Tensor, query_mask: Tensor | None = None) -> Tensor:
    """``(h,)``: mean weight on key 0 (``BOS``), over queries ``i >= 1`` or those where ``query_mask`` ``(B, T)``."""
    w = _weights(weights)
    b, _, t, _ = w.shape
    where = torch.arange(t)[None, :].expand(b, t) >= 1 if query_mask is None else query_mask.expand(b, t)
    return _mean_over(w[..., 0], where)


def head_labels(num_layers: int, num_heads: int) -> list[str]:
    """``["L0H0", "L0H1", ...]``: the name of every head, layer by layer."""
    return [f"L{layer}H{head}" for layer in range(num_layers) for head in range(num_heads)]


def head_scores(model: TinyTransformer, batch: TaskBatch) -> pd.DataFrame:
    """One row per head (``L0H0`` ...): previous-token, induction and mirror scores, and the BOS share."""
    weights = model.attention(batch.inputs)  # (L, B, h, T, T)
    rows = {
        "previous token": torch.cat([previous_token_score(w) for w in weights]),
        "induction": torch.cat([induction_score(w, batch.inputs) for w in weights]),
        "mirror": torch.cat([mirror_score(w) for w in weights]),
        "BOS": torch.cat([bos_share(w) for w in weights]),
    }
    index = pd.Index(head_labels(model.num_layers, model.num_heads), name="head")
    return pd.DataFrame({k: v.numpy() for k, v in rows.items()}, index=index)


# --------------------------------------------------------------------------------------- importance


def _ones(model: TinyTransformer) -> Tensor:
    return torch.ones(model.num_layers, model.num_heads)


@torch.no_grad()
def ablation_scores(model: TinyTransformer, batch: TaskBatch, *, scored: bool = True) -> Tensor:
    """``(L, h)``: how much the loss rises when one head's gate is set to 0 (zero-ablation)."""
    base = task_loss(model, batch, scored=scored)
    out = torch.zeros(model.num_layers, model.num_heads)
    for layer in range(model.num_layers):
        for head in range(model.num_heads):
            gates = _ones(model)
            gates[layer, head] = 0.0
            out[layer, head] = task_loss(model, batch, scored=scored, head_gates=gates) - base
    return out


def gate_gradients(model: TinyTransformer, batch: TaskBatch, *, scored: bool = True,
                   head_gates: Tensor | None = None) -> Tensor:
    """``(L, h)``: ``dL/d gate`` for the batch's mean loss, at ``head_gates`` (all ones by default)."""
    gates = (_ones(model) if head_gates is None else head_gates.detach().clone()).requires_grad_(True)
    (grad,) = torch.autograd.grad(task_loss(model, batch, scored=scored, head_gates=gates), gates)
    return grad


def gradient_scores(
    model: TinyTransformer, batch: TaskBatch, *, scored: bool = True, head_gates: Tensor | None = None
) -> Tensor:
    """``(L, h)``: Michel et al.'s importance ``E_x |dL(x)/d gate|``, the absolute value taken per sequence.

    Each sequence is weighted by its number of loss positions, as in the batch loss, so the score is never
    below ``|gate_gradients(model, batch)|`` (the absolute value of the mean is at most the mean absolute value).
    """
    counts = batch.scored.sum(1) if scored else torch.full((batch.batch_size,), batch.length)  # (B,)
    if int(counts.sum()) == 0:
        raise ValueError("batch has no scored positions: pass scored=False or a batch with some")
    total = torch.zeros(model.num_layers, model.num_heads)
    for i in range(batch.batch_size):
        if int(counts[i]) == 0:
            continue
        one = TaskBatch(batch.inputs[i : i + 1], batch.targets[i : i + 1], batch.scored[i : i + 1])
        grad = gate_gradients(model, one, scored=scored, head_gates=head_gates)
        total += grad.abs() * (float(counts[i]) / float(counts.sum()))
    return total


@torch.no_grad()
def prune_heads(
    model: TinyTransformer, batch: TaskBatch, *, by: Literal["ablation", "gradient"] = "ablation",
    scored: bool = True,
) -> pd.DataFrame:
    """Greedy pruning: remove the least important remaining head, again and again, and record the loss.

    ``by="ablation"`` removes the head whose removal raises the loss least (recomputed after each removal);
    ``by="gradient"`` the head with the smallest ``gradient_scores`` at the current gates. Row ``k`` has
    ``k`` heads removed, the head removed last (``""`` in row 0) and the loss.
    """
    if by not in ("ablation", "gradient"):
        raise ValueError(f"by must be 'ablation' or 'gradient', got {by!r}")
    labels = head_labels(model.num_layers, model.num_heads)
    gates = _ones(model)
    rows = [(0, "", float(task_loss(model, batch, scored=scored, head_gates=gates)))]
    for k in range(1, gates.numel() + 1):
        alive = [int(i) for i in gates.flatten().nonzero()]
        if by == "ablation":
            losses = []
            for i in alive:
                trial = gates.clone()
                trial.view(-1)[i] = 0.0
                losses.append(float(task_loss(model, batch, scored=scored, head_gates=trial)))
            pick = alive[min(range(len(alive)), key=losses.__getitem__)]
        else:
            with torch.enable_grad():
                score = gradient_scores(model, batch, scored=scored, head_gates=gates).flatten()
            pick = min(alive, key=lambda i: float(score[i]))
        gates.view(-1)[pick] = 0.0
        rows.append((k, labels[pick], float(task_loss(model, batch, scored=scored, head_gates=gates))))
    return pd.DataFrame(rows, columns=["heads removed", "removed head", "loss"]).set_index("heads removed")


def uniform_loss(vocab_size: int) -> float:
    """``ln(vocab_size)``: the cross-entropy of a model that guesses uniformly."""
    return math.log(check_int("vocab_size", vocab_size))
