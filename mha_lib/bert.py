"""A BERT encoder written to be read, built from ``mha_lib.MultiHeadAttention``: the model of notebook 12.

BERT (Devlin et al., 2019) is an **encoder**: every token sees the whole sentence (no causal mask). A sentence of
token ids ``(B, T)`` becomes vectors ``(B, T, d_model)`` in three steps:

1. ``BertEmbeddings``: a learned vector per token id, plus one per position (``max_positions`` of them), plus one
   per segment ("token type"; a single sentence is segment 0), then a LayerNorm.
2. ``num_layers`` ``BertBlock``\\ s, each **post-LayerNorm** (as in the original Transformer, unlike the pre-LayerNorm
   blocks of notebook 08): ``x = LN(x + attn(x))``, then ``x = LN(x + mlp(x))``, the MLP being
   ``Linear(d_model, d_mlp) -> GELU -> Linear(d_mlp, d_model)``.
3. Nothing else: the token states are the output. ``mean_pool`` and ``sentence_embeddings`` turn them into one
   vector per sentence, as sentence-transformers does.

Padding: a batch holds sentences of different lengths, padded at the end; ``valid_lens`` ``(B,)`` says how many
tokens of each are real. Every query sees only the real keys of its sentence (``MultiHeadAttention``'s
``valid_lens``), so a sentence's real tokens get the same states alone or padded in a batch. The rows of the
padding positions are computed but mean nothing: pooling and the head detectors below skip them.

Open heads, as in ``mha_lib.toy``: heads are named by ``(layer, head)`` tuples; ``head_gates`` ``(L, h)`` multiplies
each head's output (0 removes it); ``patch_head`` keeps a head hook on one head; ``trace`` returns one
``BertBlockTrace`` per layer. ``head_scores`` measures what each head attends to, over the real tokens only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from mha_lib import toy
from mha_lib._validate import _got, _shape, check_int, check_tensor
from mha_lib.heads import head_index
from mha_lib.i18n import N_
from mha_lib.mha import AttentionTrace, MultiHeadAttention, on_head


@dataclass(frozen=True)
class BertConfig:
    """The sizes of a BERT encoder; the defaults are all-MiniLM-L6-v2's (6 layers of 12 heads, d_model 384)."""

    vocab_size: int = 30522
    max_positions: int = 512
    type_vocab_size: int = 2
    d_model: int = 384
    num_heads: int = 12
    num_layers: int = 6
    d_mlp: int = 1536
    layer_norm_eps: float = 1e-12

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_positions", "type_vocab_size", "d_model", "num_heads", "num_layers", "d_mlp"):
            check_int(name, getattr(self, name))
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model must be divisible by num_heads, got {self.d_model} and {self.num_heads}")


class BertEmbeddings(nn.Module):
    """Token ids ``(B, T)`` -> ``LN(word + position + segment 0)`` ``(B, T, d_model)``."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.word = nn.Embedding(config.vocab_size, config.d_model)  # (n_vocab, d_model)
        self.position = nn.Embedding(config.max_positions, config.d_model)  # (max_positions, d_model)
        self.segment = nn.Embedding(config.type_vocab_size, config.d_model)  # (2, d_model): sentence A or B
        self.ln = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)

    def forward(self, ids: Tensor) -> Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)  # (T,)
        x = self.word(ids) + self.position(positions) + self.segment.weight[0]  # (B, T, d_model): one sentence
        return self.ln(x)


@dataclass(frozen=True)
class BertBlockTrace:
    """One block of a ``BertEncoder`` call: the states in, the attention inside, the states after each half."""

    hidden_in: Tensor  # (B, T, d_model), what the block reads
    attn: AttentionTrace  # the attention layer's intermediates; attn.output is added to hidden_in
    hidden_mid: Tensor  # (B, T, d_model), ln_attn(hidden_in + attn.output)
    hidden_out: Tensor  # (B, T, d_model), ln_mlp(hidden_mid + mlp(hidden_mid)): what the next block reads


class BertBlock(nn.Module):
    """``x = LN(x + attn(x))``, then ``x = LN(x + mlp(x))``: a post-LayerNorm encoder block."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        d = config.d_model
        self.attn = MultiHeadAttention(d, d, None, 0.0, config.num_heads, qkv_bias=True, causal=False)
        self.ln_attn = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.mlp = nn.Sequential(nn.Linear(d, config.d_mlp), nn.GELU(), nn.Linear(config.d_mlp, d))
        self.ln_mlp = nn.LayerNorm(d, eps=config.layer_norm_eps)

    def forward(self, x: Tensor, valid_lens: Tensor | None = None, gates: Tensor | None = None,
                recorder: list[BertBlockTrace] | None = None) -> Tensor:
        """``(B, T, d_model)`` -> ``(B, T, d_model)``; appends a ``BertBlockTrace`` to ``recorder`` if one is given."""
        trace = self.attn.trace(x, valid_lens=valid_lens, head_gates=gates) if recorder is not None else None
        attended = trace.output if trace is not None else self.attn(x, valid_lens=valid_lens, head_gates=gates)
        mid = self.ln_attn(x + attended)  # (B, T, d_model): add, then normalise (post-LayerNorm)
        out = self.ln_mlp(mid + self.mlp(mid))  # (B, T, d_model): the same for the MLP, one position at a time
        if recorder is not None and trace is not None:
            recorder.append(BertBlockTrace(x, trace, mid, out))
        return out


class BertEncoder(nn.Module):
    """Token ids ``(B, T)`` and ``valid_lens`` ``(B,)`` -> token states ``(B, T, d_model)``.

    ``head_gates`` ``(num_layers, num_heads)`` multiplies each head's output: all ones by default, a 0 removes
    that head exactly. Load real weights with ``mha_lib.pretrained`` (``load_minilm``, ``load_bert_weights``).
    """

    head_gates: Tensor

    def __init__(self, config: BertConfig | None = None) -> None:
        super().__init__()
        self.config = BertConfig() if config is None else config
        if not isinstance(self.config, BertConfig):
            raise TypeError(f"config must be a mha_lib.bert.BertConfig, got {_got(config)}")
        self.embeddings = BertEmbeddings(self.config)
        self.blocks = nn.ModuleList(BertBlock(self.config) for _ in range(self.config.num_layers))
        self.register_buffer("head_gates", torch.ones(self.config.num_layers, self.config.num_heads))

    @property
    def num_layers(self) -> int:
        """The number of blocks ``L``."""
        return self.config.num_layers

    @property
    def num_heads(self) -> int:
        """The number of heads per block ``h``."""
        return self.config.num_heads

    @property
    def device(self) -> torch.device:
        """Where the weights are: token ids must be there too."""
        return self.embeddings.word.weight.device

    def num_parameters(self) -> int:
        """The number of weights (the head gates are not counted: they are a switch, not a weight)."""
        return sum(p.numel() for p in self.parameters())

    def forward(self, ids: Tensor, valid_lens: Tensor | None = None, *, head_gates: Tensor | None = None,
                recorder: list[BertBlockTrace] | None = None) -> Tensor:
        """``(B, T)`` ids -> ``(B, T, d_model)`` states; ``head_gates`` ``(L, h)`` overrides ``self.head_gates``.

        ``valid_lens``: ``(B,)`` real tokens per sentence (None: no padding). ``recorder``: a list that receives
        one ``BertBlockTrace`` per layer (use ``trace`` instead).
        """
        gates = self._check(ids, valid_lens, head_gates)  # (L, h)
        x = self.embeddings(ids)  # (B, T, d_model)
        for block, layer_gates in zip(self.blocks, gates):
            x = block(x, valid_lens, layer_gates, recorder)  # (B, T, d_model)
        return x

    def trace(self, ids: Tensor, valid_lens: Tensor | None = None, *,
              head_gates: Tensor | None = None) -> list[BertBlockTrace]:
        """One ``BertBlockTrace`` per layer: ``trace[l].attn.weights`` ``(B, h, T, T)``, ``trace[l].hidden_out`` ..."""
        recorder: list[BertBlockTrace] = []
        self.forward(ids, valid_lens, head_gates=head_gates, recorder=recorder)
        return recorder

    @torch.no_grad()
    def attention(self, ids: Tensor, valid_lens: Tensor | None = None, *,
                  head_gates: Tensor | None = None) -> Tensor:
        """``(num_layers, B, h, T, T)``: every head's attention weights (0 on padding keys)."""
        return torch.stack([t.attn.weights for t in self.trace(ids, valid_lens, head_gates=head_gates)])

    def patch_head(self, head: tuple[int, int], fn: Callable[[Tensor], Tensor]) -> RemovableHandle:
        """Replace the output of head ``(layer, head)`` ``(B, T, d_head)`` by ``fn(context)`` until removed.

        ``with encoder.patch_head((0, 2), torch.zeros_like): ...`` removes head 2 of layer 0 for one block of code.
        """
        layer, index = self._head(head)
        if not callable(fn):
            raise TypeError(f"fn must be a function of the head's output (B, T, d_head), got {_got(fn)}")
        attn = self.blocks[layer].attn
        assert isinstance(attn, MultiHeadAttention)  # each block's attention (nn.Module's getattr types it loosely)
        return attn.register_head_hook(on_head(index, fn))

    # ------------------------------------------------------------------------------------------ helpers

    def _head(self, head: object) -> tuple[int, int]:
        if isinstance(head, str) or not isinstance(head, (tuple, list)) or len(head) != 2:
            raise TypeError(f"head must be a (layer, head) tuple such as (0, 2), got {_got(head)}")
        layer, index = head
        for name, value, size in (("layer", layer, self.num_layers), ("head", index, self.num_heads)):
            check_int(name, value, minimum=0)
            if value >= size:
                raise ValueError(f"{name} must be < {size}, got {value}")
        return int(layer), int(index)

    def _check(self, ids: object, valid_lens: object, head_gates: object) -> Tensor:
        if not isinstance(ids, Tensor) or ids.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"ids must be a tensor of integer token ids (batch, tokens), got {_got(ids)}"
                            + (f" of dtype {ids.dtype}" if isinstance(ids, Tensor) else ""))
        if ids.dim() != 2:
            raise ValueError(f"ids must have shape (batch, tokens), got {_shape(ids)}")
        if ids.shape[1] > self.config.max_positions:
            raise ValueError(f"ids has {ids.shape[1]} tokens, more than max_positions={self.config.max_positions}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size):
            raise ValueError(f"ids must be in [0, {self.config.vocab_size}), got values from {int(ids.min())} to "
                             f"{int(ids.max())}")
        if ids.device != self.device:
            raise ValueError(f"ids is on {ids.device} but the model is on {self.device}: move it with ids.to(...)")
        if valid_lens is not None:
            if not isinstance(valid_lens, Tensor) or valid_lens.shape != (ids.shape[0],):
                raise ValueError(f"valid_lens must be a tensor of shape ({ids.shape[0]},) (one length per "
                                 f"sentence), got {_got(valid_lens)}")
            if int(valid_lens.min()) < 1 or int(valid_lens.max()) > ids.shape[1]:
                raise ValueError(f"valid_lens must be between 1 and {ids.shape[1]} (the number of tokens), got "
                                 f"{valid_lens.tolist()}")
        gates = self.head_gates if head_gates is None else head_gates
        if not isinstance(gates, Tensor) or gates.shape != (self.num_layers, self.num_heads):
            raise ValueError(f"head_gates must be a tensor of shape ({self.num_layers}, {self.num_heads})"
                             f" (layers, heads), got {_got(gates)}")
        return gates.to(self.device)


# ------------------------------------------------------------------------------------------ sentences


def _lengths(valid_lens: Tensor | None, states: Tensor) -> Tensor:
    if valid_lens is None:
        return torch.full((states.shape[0],), states.shape[1], device=states.device)
    return valid_lens.to(states.device)


def mean_pool(states: Tensor, valid_lens: Tensor | None = None) -> Tensor:
    """``(B, T, d)`` -> ``(B, d)``: the mean of each sentence's real token states (padding left out)."""
    check_tensor("states", states, 3, "(batch, tokens, d_model)")
    lens = _lengths(valid_lens, states)  # (B,)
    real = torch.arange(states.shape[1], device=states.device)[None, :] < lens[:, None]  # (B, T)
    return (states * real[..., None]).sum(1) / lens[:, None].to(states.dtype)


def sentence_embeddings(states: Tensor, valid_lens: Tensor | None = None) -> Tensor:
    """``(B, T, d)`` -> ``(B, d)``: mean pooling, then each vector scaled to length 1 (sentence-transformers)."""
    return F.normalize(mean_pool(states, valid_lens), dim=-1)


# ----------------------------------------------------------------------------------------- detectors


def _square(weights: Tensor) -> Tensor:
    """``(B, h, T, T)`` float64 on the CPU, from ``(h, T, T)`` or ``(B, h, T, T)`` weights."""
    check_tensor("weights", weights, (3, 4), "(batch, heads, T, T) or (heads, T, T)")
    if weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be square in the last two dimensions (self-attention), got {_shape(weights)}")
    return (weights if weights.dim() == 4 else weights[None]).detach().to("cpu", torch.float64)


def next_token_score(weights: Tensor) -> Tensor:
    """``(h,)``: mean weight from query ``i`` on key ``i + 1`` (queries ``i <= T - 2``); 1 for a perfect head."""
    return torch.diagonal(_square(weights), offset=1, dim1=-2, dim2=-1).mean((0, 2))


def entropy_bits(weights: Tensor) -> Tensor:
    """``(h,)``: the mean entropy of the rows, in bits (0: all weight on one key; ``log2 T``: spread evenly)."""
    w = _square(weights)
    return -(w * torch.log2(w.clamp_min(1e-300))).sum(-1).mean((0, 2))


def duplicate_token_score(weights: Tensor, ids: Tensor) -> Tensor:
    """``(h,)``: weight a token puts on the **other** positions holding the same token id, before or after it.

    Averaged over the queries whose token occurs elsewhere in the sequence; ``ids`` ``(B, T)``. A perfect
    *duplicate-token head* (Wang et al., 2022) scores 1. No padding: every token of ``ids`` is real.
    """
    w = _square(weights)  # (B, h, T, T)
    if not isinstance(ids, Tensor) or ids.shape != (w.shape[0], w.shape[-1]):
        raise ValueError(f"ids must have shape ({w.shape[0]}, {w.shape[-1]}), got {_got(ids)}")
    ids = ids.cpu()
    same = (ids[:, :, None] == ids[:, None, :]) & ~torch.eye(ids.shape[1], dtype=torch.bool)  # (B, T, T)
    on_copies = (w * same[:, None].double()).sum(-1)  # (B, h, T)
    counted = same.any(-1)[:, None, :].expand_as(on_copies).double()  # (B, h, T): queries with a copy
    return (on_copies * counted).sum((0, 2)) / counted.sum((0, 2)).clamp_min(1.0)


def _sentence_scores(weights: Tensor, n: int) -> dict[str, Tensor]:
    """The detector scores ``(L, h)`` of one sentence: ``weights`` ``(L, h, T, T)``, its first ``n`` tokens real."""
    w = [layer[:, :n, :n] for layer in weights]  # L x (h, n, n): real queries and keys only
    return {
        N_("previous token"): torch.stack([toy.previous_token_score(x) for x in w]),
        N_("next token"): torch.stack([next_token_score(x) for x in w]),
        "[CLS]": torch.stack([toy.bos_share(x) for x in w]),  # key 0, from queries 1 .. n-1
        "[SEP]": torch.stack([toy.bos_share(x.flip((-2, -1))) for x in w]),  # key n-1, from queries 0 .. n-2
        N_("entropy (bits)"): torch.stack([entropy_bits(x) for x in w]),
    }


def head_scores(weights: Tensor, valid_lens: Tensor) -> pd.DataFrame:
    """One row per head, indexed by ``(layer, head)``: what it attends to, averaged over sentences.

    ``weights`` ``(L, B, h, T, T)`` (``BertEncoder.attention``), ``valid_lens`` ``(B,)``. Each sentence is read on
    its real tokens only, ``[CLS] ... [SEP]``: **previous token** (query ``i`` on key ``i - 1``), **next token**
    (on key ``i + 1``), **[CLS]** (on key 0, from the other queries), **[SEP]** (on the last real key, from the
    other queries) and the **entropy (bits)** of each row. Every sentence counts the same.
    """
    check_tensor("weights", weights, 5, "(layers, batch, heads, T, T)")
    if not isinstance(valid_lens, Tensor) or valid_lens.shape != (weights.shape[1],):
        raise ValueError(f"valid_lens must be a tensor of shape ({weights.shape[1]},), got {_got(valid_lens)}")
    if int(valid_lens.min()) < 3:
        raise ValueError(f"every sentence needs [CLS], a token and [SEP] (3 tokens), got valid_lens "
                         f"{valid_lens.tolist()}")
    per_sentence = [_sentence_scores(weights[:, b], int(n)) for b, n in enumerate(valid_lens.tolist())]
    scores = {name: torch.stack([s[name] for s in per_sentence]).mean(0) for name in per_sentence[0]}
    return toy.head_table(scores)


# ---------------------------------------------------------------------------------------- importance


@torch.no_grad()
def ablation_scores(encoder: BertEncoder, ids: Tensor, valid_lens: Tensor | None,
                    metric: Callable[[Tensor], float]) -> Tensor:
    """``(L, h)``: how ``metric(sentence embeddings)`` changes when one head is removed (its gate set to 0).

    ``metric`` maps the ``(B, d_model)`` sentence embeddings to a number; entry ``[layer, head]`` is
    ``metric(with that head removed) - metric(intact)``. The layers below the removed head are unchanged, so
    each run starts from the states the intact model has there: the same numbers as a full forward pass with
    ``head_gates``, with about 40% less work (the layers below the removed head run once).
    """
    if not isinstance(encoder, BertEncoder):
        raise TypeError(f"encoder must be a mha_lib.bert.BertEncoder, got {_got(encoder)}")
    if not callable(metric):
        raise TypeError(f"metric must be a function of the sentence embeddings (B, d_model), got {_got(metric)}")
    traces = encoder.trace(ids, valid_lens)  # one forward pass; traces[l].hidden_in enters layer l
    base = float(metric(sentence_embeddings(traces[-1].hidden_out, valid_lens)))
    scores = torch.zeros(encoder.num_layers, encoder.num_heads)
    for layer, head in head_index(encoder.num_layers, encoder.num_heads):
        gates = encoder.head_gates.clone()
        gates[layer, head] = 0.0
        x = traces[layer].hidden_in  # (B, T, d_model)
        for block, layer_gates in zip(encoder.blocks[layer:], gates[layer:]):
            x = block(x, valid_lens, layer_gates)
        scores[layer, head] = float(metric(sentence_embeddings(x, valid_lens))) - base
    return scores
