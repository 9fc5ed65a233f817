"""The layer's door: ``MultiHeadAttention``'s options, checked once when it is built, and its inputs at every call.

``check_options`` turns the constructor's arguments into ``LayerOptions`` (or raises); ``check_inputs`` checks one
call's ``queries``, ``keys``, ``values``, ``valid_lens`` and ``kv_cache`` against a built layer. Every error names
the argument, what was expected and what came (``mha_lib._validate``); the messages are pinned by
``tests/test_layer_errors.py`` and ``tests/test_bad_input.py``. After the door, the layer's ``forward`` trusts what
it was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor, nn

from mha_lib._validate import (
    _got,
    _shape,
    check_bool,
    check_device,
    check_finite,
    check_int,
    check_last_dim,
    check_number,
    check_probability,
    check_same_device,
    check_str,
    check_tensor,
    reads_values,
)
from mha_lib.attention import check_has_tokens
from mha_lib.cache import KVCache
from mha_lib.i18n import _

__all__ = ["LayerOptions", "check_gates", "check_head_hook", "check_inputs", "check_kernel_output", "check_options"]


@dataclass(frozen=True)
class LayerOptions:
    """The constructor's arguments of ``MultiHeadAttention``, checked and with their defaults filled in."""

    d_in: int
    d_out: int
    context_length: int | None
    dropout: float
    num_heads: int
    qkv_bias: bool
    causal: bool
    kv_dim: int
    num_kv_heads: int
    rope_base: float | None
    window: int | None
    sink: int
    sink_logit: bool
    alibi: bool
    attn_implementation: str
    device: torch.device | None

    @property
    def head_dim(self) -> int:
        """The width of one head, ``d_out // num_heads``."""
        return self.d_out // self.num_heads


def check_options(d_in: object, d_out: object, context_length: object, dropout: object, num_heads: object,
                  qkv_bias: object, *, causal: object, kv_dim: object, num_kv_heads: object, rope_base: object,
                  window: object, sink: object, sink_logit: object, alibi: object, attn_implementation: object,
                  device: object) -> LayerOptions:
    """``MultiHeadAttention``'s arguments as ``LayerOptions``; a ``TypeError`` or ``ValueError`` naming the bad one."""
    d_in, d_out, num_heads = check_int("d_in", d_in), check_int("d_out", d_out), check_int("num_heads", num_heads)
    context_length = None if context_length is None else check_int("context_length", context_length)
    kv_dim = d_in if kv_dim is None else check_int("kv_dim", kv_dim)
    qkv_bias, causal = check_bool("qkv_bias", qkv_bias), check_bool("causal", causal)
    if d_out % num_heads:
        raise ValueError(
            _("d_out must be divisible by num_heads, got d_out={d_out} and num_heads={num_heads}"
              " (d_out % num_heads = {rest})").format(d_out=d_out, num_heads=num_heads, rest=d_out % num_heads)
        )
    num_kv_heads = num_heads if num_kv_heads is None else check_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_heads must be divisible by num_kv_heads (each K/V head is read by the same number of query"
            f" heads), got num_heads={num_heads} and num_kv_heads={num_kv_heads}"
            f" (num_heads % num_kv_heads = {num_heads % num_kv_heads})"
        )
    if rope_base is not None:
        rope_base = check_number("rope_base", rope_base, positive=True)
        if (d_out // num_heads) % 2:
            raise ValueError(f"rope_base needs an even head_dim (RoPE rotates features in pairs), got head_dim="
                             f"{d_out // num_heads} (d_out={d_out}, num_heads={num_heads})")
    if window is not None:
        window = check_int("window", window)
        if not causal:
            raise ValueError(f"window={window} needs causal=True: a query sees the window keys up to itself")
    sink = check_int("sink", sink, minimum=0)
    if sink and window is None:
        raise ValueError(f"sink={sink} keeps the first tokens visible outside a window, but window is None:"
                         " pass a window too, or sink=0")
    sink_logit, alibi = check_bool("sink_logit", sink_logit), check_bool("alibi", alibi)
    if alibi and rope_base is not None:
        raise ValueError(f"alibi=True and rope_base={rope_base:g} are two ways to give positions: choose one")
    if attn_implementation is None:
        attn_implementation = "eager_sink" if sink_logit else "sdpa"
    attn_implementation = check_str("attn_implementation", attn_implementation)  # the layer looks it up
    if sink_logit and attn_implementation in ("eager", "sdpa"):
        raise ValueError(f"sink_logit=True needs a kernel with a sink column, attn_implementation='eager_sink'"
                         f" (the default with a sink), got {attn_implementation!r}")
    return LayerOptions(d_in=d_in, d_out=d_out, context_length=context_length,
                        dropout=check_probability("dropout", dropout), num_heads=num_heads, qkv_bias=qkv_bias,
                        causal=causal, kv_dim=kv_dim, num_kv_heads=num_kv_heads, rope_base=rope_base, window=window,
                        sink=sink, sink_logit=sink_logit, alibi=alibi, attn_implementation=attn_implementation,
                        device=check_device("device", device))


class Layer(Protocol):
    """What the input checks read off a built layer (``MultiHeadAttention`` has all of it)."""

    d_in: int
    kv_dim: int
    num_heads: int
    causal: bool
    window: int | None
    alibi: bool
    context_length: int | None
    out_proj: nn.Linear


def check_inputs(layer: Layer, queries: object, keys: object, values: object, valid_lens: object,
                 kv_cache: object) -> tuple[Tensor, Tensor, Tensor, int]:
    """Check one call; return ``(queries, keys, values, start)``: ``queries`` for self-attention, the tokens cached."""
    queries = _check_input(layer, "queries", queries, "(batch, queries, d_in)", layer.d_in, "d_in")
    start = 0
    if kv_cache is not None:
        if not isinstance(kv_cache, KVCache):
            raise TypeError(f"kv_cache must be a mha_lib.KVCache (cache = KVCache()), got {_got(kv_cache)}")
        if not layer.causal:
            raise ValueError("kv_cache needs a causal layer (causal=True), but this layer has causal=False:"
                             " without the causal mask every earlier output changes when a token is appended,"
                             " so there is nothing to reuse")
        if keys is not None or values is not None:
            raise ValueError("kv_cache works with self-attention only, mha(x_new, kv_cache=cache): for"
                             " cross-attention, compute the keys and values of the encoder's output once")
        if valid_lens is not None:
            raise ValueError("valid_lens cannot be combined with kv_cache: a cache holds whole sequences"
                             " (decode sequences of equal length together, or one at a time)")
        start = kv_cache.check(layer, queries.shape[0])
    if (layer.window is not None or layer.alibi) and (keys is not None or values is not None):
        option = f"window={layer.window}" if layer.window is not None else "alibi=True"
        raise ValueError(f"{option} works with self-attention only, mha(x): it is measured between positions of"
                         " one sequence")
    if isinstance(keys, Tensor) and values is None and not keys.is_floating_point():
        raise TypeError(
            f"keys must be a floating-point tensor (batch, keys, kv_dim), got integers of shape {_shape(keys)}:"
            " if these are padding lengths, pass them by name, mha(x, valid_lens=valid_lens)"
            " (the 2nd and 3rd arguments are keys and values, for cross-attention)"
        )
    if keys is None and values is None:
        if layer.kv_dim != layer.d_in:
            raise ValueError(
                f"keys and values are None (self-attention), but this layer has kv_dim={layer.kv_dim} and"
                f" d_in={layer.d_in}: pass keys and values of width {layer.kv_dim} (cross-attention)"
            )
        keys = values = queries
        kv_name = "queries"
    elif keys is None or values is None:
        missing = "keys" if keys is None else "values"
        raise ValueError(f"{missing} is None: pass both keys and values (cross-attention) or neither")
    else:
        keys = _check_input(layer, "keys", keys, "(batch, keys, kv_dim)", layer.kv_dim, "kv_dim")
        values = _check_input(layer, "values", values, "(batch, keys, kv_dim)", layer.kv_dim, "kv_dim")
        if keys.shape[1] != values.shape[1]:
            raise ValueError(f"keys and values must have the same length, got {_shape(keys)} and {_shape(values)}")
        if not queries.shape[0] == keys.shape[0] == values.shape[0]:
            raise ValueError(
                "queries, keys and values must have the same batch size, got "
                f"{queries.shape[0]}, {keys.shape[0]} and {values.shape[0]}"
            )
        kv_name = "keys"
    if layer.context_length is not None:
        _check_length(queries, keys, kv_name, start, layer.context_length)
    return queries, keys, values, start


def _check_length(queries: Tensor, keys: Tensor, kv_name: str, start: int, context_length: int) -> None:
    for name, x in (("queries", queries), (kv_name, keys)):
        if x.shape[1] > context_length:
            raise ValueError(_("{name} has {tokens} tokens, more than context_length={context_length}").format(
                name=name, tokens=x.shape[1], context_length=context_length))
    if start + queries.shape[1] > context_length:
        raise ValueError(
            f"queries has {queries.shape[1]} tokens after the {start} in kv_cache: {start + queries.shape[1]}"
            f" in all, more than context_length={context_length}"
        )


def _check_input(layer: Layer, name: str, x: object, layout: str, width: int, width_name: str) -> Tensor:
    """One input: a 3-D float tensor of width ``width``, with tokens, on the weights' device and dtype, finite."""
    x = check_tensor(name, x, 3, layout)
    check_last_dim(name, x, width, width_name)
    check_has_tokens(name, x, layout)
    weight = layer.out_proj.weight
    if x.device != weight.device:
        check_same_device(name, x, weight.device, "layer")
    if x.dtype != weight.dtype and not _autocast_on(x.device.type):
        raise TypeError(
            f"{name} has dtype {x.dtype} but the layer's weights are {weight.dtype}: convert it with"
            f" {name}.to({weight.dtype}) or the layer with layer.to({x.dtype})"
        )
    if reads_values(x):  # on a GPU, reading values would make the host wait for it (set_value_checks)
        check_finite(name, x)
    return x


def _autocast_on(device_type: str) -> bool:
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4: no device argument
        return torch.is_autocast_enabled() if device_type == "cuda" else torch.is_autocast_cpu_enabled()


def check_gates(head_gates: object, num_heads: int) -> Tensor:
    """``head_gates``: a tensor of shape ``(num_heads,)``."""
    if not isinstance(head_gates, Tensor):
        raise TypeError(f"head_gates must be a tensor of shape ({num_heads},) (one per head), got {_got(head_gates)}")
    if head_gates.shape != (num_heads,):
        raise ValueError(
            f"head_gates must be a tensor of shape ({num_heads},) (one per head), got {_shape(head_gates)}"
        )
    return head_gates


def check_head_hook(name: str, fn: object) -> None:
    """A head hook must be callable: ``fn(context (B, h, Tq, d_head)) -> context or None``."""
    if not callable(fn):
        raise TypeError(f"{name} must be a function of the head outputs (B, h, Tq, d_head), got {_got(fn)}")


def check_kernel_output(name: str, result: object, q: Tensor) -> Tensor:
    """A registered attention function's ``(context, weights)``: ``context`` must have the queries' shape."""
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], Tensor)):
        raise TypeError(f"the attention function {name!r} must return (context, weights) with context a tensor"
                        f" {_shape(q)} (weights may be None), got {_got(result)}")
    if result[0].shape != q.shape:
        raise ValueError(f"the attention function {name!r} returned a context of shape {_shape(result[0])}, expected"
                         f" {_shape(q)} (batch, heads, queries, d_head)")
    return result[0]
