"""Checks for notebook 12: one layer of a real checkpoint, copied into a ``MultiHeadAttention`` that computes it.

The learner writes ``load_attention(state, layer, num_heads)``: build the layer at the checkpoint's width and copy
the 8 tensors of ``encoder.layer.{layer}.attention`` (BERT's names) into it. The cases are small made-up
checkpoints with BERT's key names (the check needs no download), and the layer is judged by what it computes: its
output and attention weights on a fixed input, compared with ``mha_lib.pretrained.load_attention_layer``'s.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from mha_lib._validate import _got
from mha_lib.checks._core import Case, difference, generator, run, verdict
from mha_lib.i18n import _
from mha_lib.mha import MultiHeadAttention
from mha_lib.pretrained import SKIPPED, load_attention_layer

__all__ = ["load_attention"]


def _checkpoint(d_model: int, num_layers: int, seed: int, *, biases: bool) -> dict[str, Tensor]:
    """A made-up BERT checkpoint: every attention key of ``num_layers`` layers, plus keys a loader must skip."""
    g = generator(seed)
    state: dict[str, Tensor] = {}
    for layer in range(num_layers):
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            key = f"encoder.layer.{layer}.{part}"
            state[f"{key}.weight"] = torch.randn(d_model, d_model, generator=g) / d_model**0.5
            bias = torch.randn(d_model, generator=g) * 0.5
            state[f"{key}.bias"] = bias if biases else torch.zeros(d_model)
        state[f"encoder.layer.{layer}.attention.output.LayerNorm.weight"] = torch.ones(d_model)
        state[f"encoder.layer.{layer}.intermediate.dense.weight"] = torch.randn(4 * d_model, d_model, generator=g)
    for key in SKIPPED:
        state[key] = torch.zeros(1)
    return state


def _cases() -> list[Case]:
    specs = [
        (_("layer 0 of a small checkpoint (d_model 8, 2 heads), its biases all 0"), 8, 2, 0, False, 1,
         _("build the layer at the checkpoint's width (read it from the query weight's shape), causal=False (BERT is "
         "an encoder); copy attention.self.query.weight into W_query.weight as it is (nn.Linear stores (out, in) "
         "on both sides: no transpose), key -> W_key, value -> W_value, attention.output.dense -> out_proj")),
        (_("the same layer with its biases"), 8, 2, 0, True, 1,
         _("copy the biases too: the layer needs qkv_bias=True, and out_proj has a bias of its own")),
        (_("layer 1 of the same checkpoint"), 8, 2, 1, True, 1,
         _("build every key from the layer number, e.g. f'encoder.layer.{layer}.attention.self.query.weight'")),
        (_("a wider checkpoint (d_model 16, 4 heads), layer 2"), 16, 4, 2, True, 2,
         _("read d_model from the query weight's shape and pass num_heads on: nothing fixed to one checkpoint's size")),
    ]
    cases = []
    for name, d_model, heads, layer, biases, seed, hint in specs:
        state = _checkpoint(d_model, layer + 1, seed, biases=biases)
        x = torch.randn(2, 5, d_model, generator=generator(10 + seed))  # (B, T, d_model)
        with torch.no_grad():
            trace = load_attention_layer(state, layer, heads).trace(x)
        cases.append(Case(name, (state, layer, heads), (x, trace.output, trace.weights, state, layer), hint=hint))
    return cases


def _compare(expected: Any, got: object) -> str | None:
    """What the learner's layer computes on the case's input, against the library's layer."""
    x, output, weights, state, layer = expected
    if not isinstance(got, MultiHeadAttention):
        return _("expected a mha_lib.MultiHeadAttention, got {kind}").format(kind=type(got).__name__)
    if got.d_in != x.shape[-1] or got.num_heads != weights.shape[1]:
        return _("expected a layer of width {width} with {heads} heads, got d_in={d_in} and num_heads={got_heads}"
                 ).format(width=x.shape[-1], heads=weights.shape[1], d_in=got.d_in, got_heads=got.num_heads)
    slip = _slip(got, state, layer)
    if slip:
        return slip
    try:
        with torch.no_grad():
            trace = got.trace(x)
    except Exception as err:  # noqa: BLE001 - reported, not raised
        return _("your layer raised {error} on an input of shape {shape}: {message}").format(
            error=type(err).__name__, shape=tuple(x.shape), message=str(err)[:160])
    found = difference(weights, trace.weights)
    if found:
        return _("attention weights: {found}").format(found=found)
    found = difference(output, trace.output)
    return _("output: {found}").format(found=found) if found else None


def _same(parameter: object, tensor: Tensor) -> bool:
    return isinstance(parameter, Tensor) and parameter.shape == tensor.shape and torch.allclose(parameter, tensor)


def _slip(got: MultiHeadAttention, state: dict[str, Tensor], layer: int) -> str | None:
    """The typical slips named one by one: a causal layer, transposed weights, query and key swapped."""
    if getattr(got, "causal", False):
        return _("the layer is causal (causal=True): BERT is an encoder, every token reads every other; build it"
                 " with causal=False")
    key = f"encoder.layer.{layer}.attention"
    query, key_weight = state[f"{key}.self.query.weight"], state[f"{key}.self.key.weight"]
    with torch.no_grad():
        got_query = getattr(getattr(got, "W_query", None), "weight", None)
        got_key = getattr(getattr(got, "W_key", None), "weight", None)
        if _same(got_query, query.T) and not _same(got_query, query):
            return _("W_query.weight holds the checkpoint's query weight transposed: nn.Linear stores (out, in) in both"
                     " BERT and mha_lib, so copy each weight as it is, no .T")
        if _same(got_query, key_weight) and _same(got_key, query):
            return _("W_query and W_key are swapped: attention.self.query goes into W_query and attention.self.key"
                     " into W_key")
    return None


def load_attention(fn: object, *, strict: bool = False) -> None:
    """Check ``fn(state, layer, num_heads)`` -> ``MultiHeadAttention`` against ``pretrained.load_attention_layer``."""
    if not callable(fn):
        raise TypeError(_("fn must be your function, e.g. checks.load_attention(load_attention), got {got}").format(
            got=_got(fn)))

    def quiet(*args: object) -> object:
        with torch.random.fork_rng(devices=[]):  # building a layer draws random weights: keep the notebook's state
            return fn(*args)

    report = run("load_attention", quiet, _cases(), reference="mha_lib.pretrained.load_attention_layer",
                 compare=_compare, forbid=[(load_attention_layer, "mha_lib.pretrained.load_attention_layer")])
    verdict(report, strict=strict)
