"""Tiny attention models trained on a CPU in seconds, head detectors and head importance.

* Task generators (seeded, no downloads): ``reverse_task`` (purely positional), ``induction_task``
  (a BOS token, then random tokens repeating with a random period), ``sort_task``.
* ``TinyTransformer``: embeddings, learned or sinusoidal positions, ``num_layers`` blocks of
  ``mha_lib.MultiHeadAttention`` (optionally with an MLP), a gate per head (1 = unchanged, 0 = removed).
  ``model.trace(tokens)`` gives one ``BlockTrace`` per layer (the residual stream in and out, the attention
  trace); ``model.patch_head((layer, head), fn)`` replaces one head's output, e.g. to ablate it.
* ``train``: AdamW, deterministic for a given seed, on the model's device; returns the loss history.
* Head detectors (previous-token, induction, mirror, BOS share) and a table of them: ``head_scores``.
* Importance: zero-ablation, the gradient score ``|dL/d gate|`` (Michel et al., 2019) per sequence (one backward
  pass each, or all in one pass: ``sequence_gate_gradients``), greedy pruning.

Heads are named by ``(layer, head)`` tuples: tables are indexed by a ``("layer", "head")`` MultiIndex and
``(L, h)`` tensors are indexed by the same tuple (``scores[layer, head]``); ``head_label`` is for printing.
Batches follow the model: every function moves a task batch to the model's device. Token ids outside the
model's vocabulary, a non-finite hidden state and a device mismatch raise a ``ValueError`` that says so.
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
from torch.utils.hooks import RemovableHandle

from mha_lib._validate import _got, _shape, check_choice, check_device, check_index, check_int, check_same_device
from mha_lib.heads import head_index, head_label
from mha_lib.mha import AttentionTrace, MultiHeadAttention, on_head
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


# --------------------------------------------------------------------------------------------- model


@dataclass(frozen=True)
class BlockTrace:
    """One block of a ``TinyTransformer`` call: the residual stream in and out, and the attention inside."""

    resid_pre: Tensor  # (B, T, d_model), the residual stream entering the block
    attn_in: Tensor  # (B, T, d_model), ln_attn(resid_pre): what the attention layer reads
    attn: AttentionTrace  # the attention layer's intermediates; attn.output is added to the stream
    resid_mid: Tensor  # (B, T, d_model), resid_pre + attn.output
    resid_post: Tensor  # (B, T, d_model), resid_mid + mlp(ln_mlp(resid_mid)); = resid_mid without an MLP


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

    def forward(self, x: Tensor, gates: Tensor, recorder: list[BlockTrace] | None = None) -> Tensor:
        """``(B, T, d_model)`` -> ``(B, T, d_model)``; appends a ``BlockTrace`` to ``recorder`` if one is given."""
        attn_in = self.ln_attn(x)  # (B, T, d_model)
        trace = self.attn.trace(attn_in, head_gates=gates) if recorder is not None else None
        resid_mid = x + (trace.output if trace is not None else self.attn(attn_in, head_gates=gates))
        resid_post = resid_mid if self.mlp is None else resid_mid + self.mlp(self.ln_mlp(resid_mid))
        if recorder is not None and trace is not None:
            recorder.append(BlockTrace(x, attn_in, trace, resid_mid, resid_post))
        return resid_post


class TinyTransformer(nn.Module):
    """A small decoder (``causal=True``) or encoder over token ids, built from ``MultiHeadAttention``.

    ``positions``: ``"learned"`` (a trained vector per position) or ``"sinusoidal"`` (the fixed table).
    ``mlp=False`` gives an attention-only model. ``seed`` initialises the weights without touching the
    global random state (the same weights on any device). ``head_gates`` ``(num_layers, num_heads)``
    multiplies each head's output; all ones by default, a 0 removes that head exactly.
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
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("context_length", context_length), ("d_model", d_model),
                            ("num_heads", num_heads), ("num_layers", num_layers)):
            check_int(name, value)
        check_choice("positions", positions, ("learned", "sinusoidal"))
        device = check_device("device", device)
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
        if device is not None:
            self.to(device)

    def extra_repr(self) -> str:
        return f"positions={self.positions!r}, causal={self.causal}"

    @property
    def device(self) -> torch.device:
        """Where the weights are: inputs must be there too (task batches are moved there for you)."""
        return self.unembed.weight.device

    def num_parameters(self) -> int:
        """The number of trained parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def forward(
        self, tokens: Tensor, *, head_gates: Tensor | None = None, recorder: list[BlockTrace] | None = None
    ) -> Tensor:
        """``(B, T)`` token ids -> ``(B, T, vocab_size)`` logits; ``head_gates`` overrides ``self.head_gates``.

        ``recorder``: a list that receives one ``BlockTrace`` per layer (use ``trace`` instead).
        """
        gates = self._check(tokens, head_gates)  # (L, h)
        x = self.pos(self.embed(tokens))  # (B, T, d_model): the residual stream
        for block, layer_gates in zip(self.blocks, gates):
            x = block(x, layer_gates, recorder)  # (B, T, d_model)
        return self.unembed(self.ln_final(x))  # (B, T, vocab_size)

    def trace(self, tokens: Tensor, *, head_gates: Tensor | None = None) -> list[BlockTrace]:
        """One ``BlockTrace`` per layer: ``trace[l].attn.weights`` ``(B, h, T, T)``, ``trace[l].resid_pre`` ..."""
        recorder: list[BlockTrace] = []
        self.forward(tokens, head_gates=head_gates, recorder=recorder)  # not self(...), as in MultiHeadAttention.trace
        return recorder

    @torch.no_grad()
    def attention(self, tokens: Tensor, *, head_gates: Tensor | None = None) -> Tensor:
        """``(num_layers, B, h, T, T)``: every head's attention weights."""
        return torch.stack([t.attn.weights for t in self.trace(tokens, head_gates=head_gates)])

    def patch_head(self, head: tuple[int, int], fn: Callable[[Tensor], Tensor]) -> RemovableHandle:
        """Replace the output of head ``(layer, head)`` by ``fn(context)`` on every call, until removed.

        ``context`` is that head's ``(B, T, d_head)`` output before the merge. ``torch.zeros_like`` ablates
        the head (as a gate of 0); ``lambda c: mean.expand_as(c)`` mean-ablates it. Returns a handle:
        ``with model.patch_head((0, 1), torch.zeros_like): ...`` patches for one block of code only.
        """
        layer, index = self._head(head)
        if not callable(fn):
            raise TypeError(f"fn must be a function of the head's output (B, T, d_head), got {_got(fn)}")
        return self.blocks[layer].attn.register_head_hook(on_head(index, fn))

    # ------------------------------------------------------------------------------------------ helpers

    def _head(self, head: object) -> tuple[int, int]:
        """Check a ``(layer, head)`` tuple against the model's size."""
        if isinstance(head, str):
            raise TypeError(f"head must be a (layer, head) tuple such as (0, 1), got {_got(head)}: labels like"
                            " 'L0H1' are for printing only")
        if not isinstance(head, (tuple, list)) or len(head) != 2:
            raise TypeError(f"head must be a (layer, head) tuple such as (0, 1), got {_got(head)}")
        layer = check_index("layer", head[0], self.num_layers, what=f" ({self.num_layers} layers)")
        return layer, check_index("head", head[1], self.num_heads, what=f" ({self.num_heads} heads)")

    def _check(self, tokens: object, head_gates: Tensor | None) -> Tensor:
        """Check the token ids (integers on the model's device, inside the vocabulary) and return the gates."""
        if not isinstance(tokens, Tensor):
            raise TypeError(f"tokens must be an integer tensor of shape (batch, tokens), got {_got(tokens)}")
        if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
            raise TypeError(f"tokens must hold integer token ids, got dtype {tokens.dtype}: pass ids, not embeddings")
        if tokens.dim() != 2:
            hint = ": add the batch axis, tokens[None]" if tokens.dim() == 1 else ""
            raise ValueError(f"tokens must have shape (batch, tokens), got {_shape(tokens)}{hint}")
        if tokens.shape[1] == 0:
            raise ValueError(f"tokens must hold at least one token per sequence, got shape {_shape(tokens)}")
        if tokens.shape[1] > self.context_length:
            raise ValueError(
                f"tokens has {tokens.shape[1]} positions, more than the model's context_length={self.context_length}"
            )
        check_same_device("tokens", tokens, self.device)
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size):
            raise ValueError(
                f"tokens must be ids in [0, {self.vocab_size}) (the model's vocab_size), got ids from"
                f" {int(tokens.min())} to {int(tokens.max())}: build the model with a vocab_size at least as"
                " large as the task's"
            )
        gates = self.head_gates if head_gates is None else head_gates
        if not isinstance(gates, Tensor):
            raise TypeError(f"head_gates must be a tensor of shape ({self.num_layers}, {self.num_heads})"
                            f" (layers, heads), got {_got(gates)}")
        if gates.shape != (self.num_layers, self.num_heads):
            raise ValueError(
                f"head_gates must have shape ({self.num_layers}, {self.num_heads}) (layers, heads),"
                f" got {_shape(gates)}"
            )
        return gates.to(self.device)


# ----------------------------------------------------------------------------------------- training


def _on_model(model: TinyTransformer, batch: TaskBatch) -> TaskBatch:
    """``batch`` on the model's device: batches follow the model."""
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {_got(model)}")
    if not isinstance(batch, TaskBatch):
        raise TypeError(f"batch must be a TaskBatch (from a task such as toy.induction_task), got {_got(batch)}")
    return batch.to(model.device)


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


TaskFn = Callable[..., TaskBatch]


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
) -> pd.DataFrame:
    """Train ``model`` with AdamW on fresh batches ``task(batch_size, generator=g)``; returns the loss history.

    The history has one row per step: ``loss`` (the training objective, every position) and
    ``scored loss`` (on ``batch.scored`` positions, e.g. repeated tokens). Batches are drawn on the CPU
    and moved to the model's device. The same seed, model initialisation and ``threads`` give the same
    history on a CPU; ``threads`` is restored afterwards. ``progress``: see ``_progress_bar`` (None: a bar
    only in an interactive terminal; True: a widget in Jupyter).
    """
    check_int("steps", steps)
    check_int("batch_size", batch_size)
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {_got(model)}")
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
            bar = _progress_bar(steps, desc, progress)
            for step in bar:
                batch = _on_model(model, task(batch_size, generator=g))
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
    if not isinstance(weights, Tensor):
        raise TypeError(f"weights must be a tensor (batch, heads, T, T) or (heads, T, T), got {_got(weights)}")
    if weights.dim() not in (3, 4) or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must have shape (batch, heads, T, T) or (heads, T, T), got {_shape(weights)}")
    # Scores are small (h,) tables: computed on the CPU in float64, the same on any device.
    return (weights if weights.dim() == 4 else weights[None]).detach().to("cpu", torch.float64)


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
    if not isinstance(tokens, Tensor):
        raise TypeError(f"tokens must be an integer tensor (batch, tokens), got {_got(tokens)}")
    if tokens.dim() != 2:
        raise ValueError(f"tokens must have shape (batch, tokens), got {_shape(tokens)}")
    tokens = tokens.cpu()
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
    where = torch.arange(t)[None, :].expand(b, t) >= 1 if query_mask is None else query_mask.cpu().expand(b, t)
    return _mean_over(w[..., 0], where)


def head_labels(num_layers: int, num_heads: int) -> list[str]:
    """``["L0H0", "L0H1", ...]``: every head's display label, layer by layer (for printing; never parse them)."""
    return [head_label(layer, head) for layer, head in head_index(num_layers, num_heads)]


def head_table(scores: dict[str, Tensor]) -> pd.DataFrame:
    """One row per head, indexed by ``(layer, head)``; one column per ``(L, h)`` tensor of ``scores``."""
    columns = {}
    shape = None
    for name, values in scores.items():
        if not isinstance(values, Tensor) or values.dim() != 2:
            raise ValueError(f"scores[{name!r}] must be a (layers, heads) tensor, got {_got(values)}")
        if shape is not None and values.shape != shape:
            raise ValueError(f"scores[{name!r}] has shape {_shape(values)}, the others {tuple(shape)}")
        shape = values.shape
        columns[name] = values.detach().cpu().double().flatten().numpy()
    if shape is None:
        raise ValueError("scores must hold at least one (layers, heads) tensor, got an empty dict")
    return pd.DataFrame(columns, index=head_index(shape[0], shape[1]))


def head_scores(model: TinyTransformer, batch: TaskBatch, *, head_gates: Tensor | None = None) -> pd.DataFrame:
    """One row per head, indexed by ``(layer, head)``: previous-token, induction, mirror and BOS-share scores.

    ``head_gates`` ``(L, h)``: score the heads while some are gated (e.g. a 0 removes a head of layer 0, and the
    scores of layer 1 show what its heads do without it).
    """
    batch = _on_model(model, batch)
    weights = model.attention(batch.inputs, head_gates=head_gates)  # (L, B, h, T, T)
    return head_table({
        "previous token": torch.stack([previous_token_score(w) for w in weights]),
        "induction": torch.stack([induction_score(w, batch.inputs) for w in weights]),
        "mirror": torch.stack([mirror_score(w) for w in weights]),
        "BOS": torch.stack([bos_share(w) for w in weights]),
    })


# --------------------------------------------------------------------------------------- importance


def _ones(model: TinyTransformer) -> Tensor:
    return torch.ones(model.num_layers, model.num_heads, device=model.device)


@torch.no_grad()
def ablation_scores(model: TinyTransformer, batch: TaskBatch, *, scored: bool = True) -> Tensor:
    """``(L, h)``: how much the loss rises when one head's gate is set to 0 (zero-ablation); index ``[layer, head]``."""
    batch = _on_model(model, batch)
    base = float(task_loss(model, batch, scored=scored))
    out = torch.zeros(model.num_layers, model.num_heads)
    for layer, head in head_index(model.num_layers, model.num_heads):
        gates = _ones(model)
        gates[layer, head] = 0.0
        out[layer, head] = float(task_loss(model, batch, scored=scored, head_gates=gates)) - base
    return out


def gate_gradients(model: TinyTransformer, batch: TaskBatch, *, scored: bool = True,
                   head_gates: Tensor | None = None) -> Tensor:
    """``(L, h)``: ``dL/d gate`` for the batch's mean loss, at ``head_gates`` (all ones by default)."""
    gates = _ones(model) if head_gates is None else head_gates.detach().to(model.device).clone()
    gates.requires_grad_(True)
    (grad,) = torch.autograd.grad(task_loss(model, batch, scored=scored, head_gates=gates), gates)
    return grad.cpu()


def sequence_gate_gradients(
    model: TinyTransformer, batch: TaskBatch, *, scored: bool = True, head_gates: Tensor | None = None
) -> Tensor:
    """``(B, L, h)``: every sequence's own ``dL(x)/d gate``, from one forward and one backward pass of the batch.

    Each sequence gets its own copy of the gates (a head hook multiplies head ``i`` of layer ``l`` in sequence
    ``b`` by ``gates[b, l, i]``). Sequences do not interact, so the gradient of the sum of the per-sequence mean
    losses with respect to copy ``b`` is sequence ``b``'s own gradient. A sequence without loss positions gets 0.
    """
    batch = _on_model(model, batch)
    base = _ones(model) if head_gates is None else model._check(batch.inputs, head_gates).detach()  # (L, h)
    gates = base.expand(batch.batch_size, -1, -1).clone().requires_grad_(True)  # (B, L, h)
    handles = [
        block.attn.register_head_hook(lambda context, layer=layer: context * gates[:, layer, :, None, None])
        for layer, block in enumerate(model.blocks)
    ]
    try:
        logits = model(batch.inputs, head_gates=_ones(model))  # (B, T, V); the copies carry the gate values
        losses = F.cross_entropy(logits.transpose(1, 2), batch.targets, reduction="none")  # (B, T)
        where = batch.scored if scored else torch.ones_like(batch.scored)  # (B, T)
        per_sequence = (losses * where).sum(1) / where.sum(1).clamp_min(1)  # (B,): each sequence's mean loss
        (grad,) = torch.autograd.grad(per_sequence.sum(), gates)
    finally:
        for handle in handles:
            handle.remove()
    return grad.cpu()


def gradient_scores(
    model: TinyTransformer, batch: TaskBatch, *, scored: bool = True, head_gates: Tensor | None = None,
    one_pass: bool = False,
) -> Tensor:
    """``(L, h)``: Michel et al.'s importance ``E_x |dL(x)/d gate|``, the absolute value taken per sequence.

    Each sequence is weighted by its number of loss positions, as in the batch loss, so the score is never
    below ``|gate_gradients(model, batch)|`` (the absolute value of the mean is at most the mean absolute value).
    One backward pass per sequence; ``one_pass=True`` gets every sequence's gradient from a single pass of the
    batch instead (``sequence_gate_gradients``): the same scores up to rounding.
    """
    batch = _on_model(model, batch).to("cpu")  # split per sequence on the CPU; task_loss moves each back
    counts = batch.scored.sum(1) if scored else torch.full((batch.batch_size,), batch.length)  # (B,)
    if int(counts.sum()) == 0:
        raise ValueError("batch has no scored positions: pass scored=False or a batch with some")
    if one_pass:
        grads = sequence_gate_gradients(model, batch, scored=scored, head_gates=head_gates)  # (B, L, h)
        return (grads.abs() * (counts.double() / counts.sum()).float()[:, None, None]).sum(0)
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
    scored: bool = True, held_out: TaskBatch | None = None, one_pass: bool = False,
) -> pd.DataFrame:
    """Greedy pruning: remove the least important remaining head, again and again, and record the loss.

    ``by="ablation"`` removes the head whose removal raises the loss least (recomputed after each removal);
    ``by="gradient"`` the head with the smallest ``gradient_scores`` at the current gates (``one_pass``: see
    ``gradient_scores``). Row ``k`` has ``k`` heads removed: the ``layer`` and ``head`` removed last (``<NA>`` in
    row 0) and the ``loss`` on ``batch``, where the heads were chosen. With a ``held_out`` batch, a column
    ``held-out loss`` adds the loss on it: a choice made on one batch, measured on another.
    """
    check_choice("by", by, ("ablation", "gradient"))
    if not isinstance(one_pass, bool):
        raise TypeError(f"one_pass must be True or False, got {_got(one_pass)}")
    batch = _on_model(model, batch)
    table = _prune(model, batch, by=by, scored=scored, one_pass=one_pass)
    if held_out is not None:
        held_out = _on_model(model, held_out)
        losses = []
        for k in table.index:
            gates = _ones(model)
            for layer, head in table[["layer", "head"]].iloc[1 : k + 1].itertuples(index=False):
                gates[int(layer), int(head)] = 0.0
            losses.append(float(task_loss(model, held_out, scored=scored, head_gates=gates)))
        table["held-out loss"] = losses
    return table


def _prune(model: TinyTransformer, batch: TaskBatch, *, by: str, scored: bool, one_pass: bool) -> pd.DataFrame:
    """The greedy loop of ``prune_heads``, on ``batch`` only."""
    gates = _ones(model)
    rows = [(0, pd.NA, pd.NA, float(task_loss(model, batch, scored=scored, head_gates=gates)))]
    for k in range(1, gates.numel() + 1):
        alive = [(layer, head) for layer, head in head_index(model.num_layers, model.num_heads) if gates[layer, head]]
        if by == "ablation":
            losses = {}
            for layer, head in alive:
                trial = gates.clone()
                trial[layer, head] = 0.0
                losses[layer, head] = float(task_loss(model, batch, scored=scored, head_gates=trial))
            pick = min(alive, key=losses.__getitem__)
        else:
            with torch.enable_grad():
                score = gradient_scores(model, batch, scored=scored, head_gates=gates, one_pass=one_pass)  # (L, h)
            pick = min(alive, key=lambda lh: float(score[lh]))
        gates[pick] = 0.0
        rows.append((k, *pick, float(task_loss(model, batch, scored=scored, head_gates=gates))))
    table = pd.DataFrame(rows, columns=["heads removed", "layer", "head", "loss"]).set_index("heads removed")
    return table.astype({"layer": "Int64", "head": "Int64"})


def uniform_loss(vocab_size: int) -> float:
    """``ln(vocab_size)``: the cross-entropy of a model that guesses uniformly."""
    return math.log(check_int("vocab_size", vocab_size))
