"""``TinyTransformer``: embeddings, positions, blocks of ``mha_lib.MultiHeadAttention``, a gate per head.

``model.trace(tokens)`` gives one ``BlockTrace`` per layer (the residual stream in and out, the attention trace);
``model.patch_head((layer, head), fn)`` replaces one head's output, e.g. to ablate it. Token ids outside the
vocabulary and a device mismatch raise a ``ValueError`` that says so; batches follow the model (``_on_model``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from mha_lib._validate import _got, _shape, check_choice, check_device, check_index, check_int, check_same_device
from mha_lib.hooks import on_head
from mha_lib.mha import MultiHeadAttention
from mha_lib.positional import LearnedPositionalEmbedding, PositionalEncoding
from mha_lib.toy.tasks import TaskBatch
from mha_lib.trace import AttentionTrace


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
        attn = self.blocks[layer].attn
        assert isinstance(attn, MultiHeadAttention)  # nn.Module's getattr types it loosely
        return attn.register_head_hook(on_head(index, fn))

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


def _on_model(model: TinyTransformer, batch: TaskBatch) -> TaskBatch:
    """``batch`` on the model's device: batches follow the model."""
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {_got(model)}")
    if not isinstance(batch, TaskBatch):
        raise TypeError(f"batch must be a TaskBatch (from a task such as toy.induction_task), got {_got(batch)}")
    return batch.to(model.device)
