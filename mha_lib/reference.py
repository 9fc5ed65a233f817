"""Reference implementations to check ``mha_lib`` against: d2l.ai and ``torch.nn.MultiheadAttention``."""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

import torch
from torch import Tensor, nn

from mha_lib._validate import check_device
from mha_lib.i18n import _
from mha_lib.mha import MultiHeadAttention


def _torchvision_importable() -> bool:
    try:
        importlib.import_module("torchvision")
    except Exception:  # ImportError, or the RuntimeError of a torchvision built for another torch
        sys.modules.pop("torchvision", None)
        return False
    return True


def load_d2l() -> types.ModuleType:
    """Import and return ``d2l.torch`` (install it with ``pip install --no-deps d2l==1.0.3``).

    ``d2l.torch`` runs ``import torchvision`` and ``from torchvision import transforms`` at import time,
    but only its image-dataset helpers (Fashion-MNIST, VOC, ...) ever use them, and none of those is
    used in this course. torchvision is large, must match the installed torch build exactly, and
    does not import beside the CPU build of torch that we pin. So, only when torchvision cannot be
    imported, a minimal stand-in module is registered while d2l.torch imports, and removed afterwards;
    any use of it through d2l raises a clear error.
    """
    if "d2l.torch" in sys.modules:
        return sys.modules["d2l.torch"]
    if not _torchvision_importable():
        stub = types.ModuleType("torchvision")
        stub.__doc__ = "Stand-in registered by mha_lib.reference.load_d2l: torchvision is not installed."
        transforms = types.ModuleType("torchvision.transforms")

        def _refuse(prefix: str) -> Any:
            def __getattr__(name: str) -> Any:
                if name.startswith("__"):  # the import system and inspectors probe dunders such as __path__
                    raise AttributeError(name)
                raise ImportError(
                    f"{prefix}{name} is not available: mha_lib registered a stand-in torchvision so that"
                    " d2l.torch imports; install a torchvision that matches your torch to use d2l's image datasets"
                )

            return __getattr__

        # PEP 562: a module's own __getattr__, set on the stand-ins at run time (mypy types ModuleType's as a method)
        stub.__getattr__ = _refuse("torchvision.")  # type: ignore[method-assign]
        transforms.__getattr__ = _refuse("torchvision.transforms.")  # type: ignore[method-assign]
        stub.__path__ = []  # a package, so that "from torchvision import transforms" works
        stub.transforms = transforms  # type: ignore[attr-defined]  # a stand-in package holds its submodule
        sys.modules["torchvision"] = stub
        sys.modules["torchvision.transforms"] = transforms
        try:
            return importlib.import_module("d2l.torch")
        finally:
            # d2l.torch keeps its own references; others (transformers asks importlib.util.find_spec) must
            # still see that torchvision is not installed.
            sys.modules.pop("torchvision", None)
            sys.modules.pop("torchvision.transforms", None)
    return importlib.import_module("d2l.torch")


@torch.no_grad()
def to_torch_mha(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """An ``nn.MultiheadAttention`` (``batch_first=True``) holding a copy of ``mha``'s weights.

    PyTorch's query input width is its ``embed_dim``, so this needs ``d_in == d_out``. Without
    ``qkv_bias`` the input-projection biases are set to 0 (PyTorch has one switch for all biases).
    """
    if mha.d_in != mha.d_out:
        raise ValueError(
            f"nn.MultiheadAttention needs query width == embed_dim, got d_in={mha.d_in} and d_out={mha.d_out}"
        )
    kdim = None if mha.kv_dim == mha.d_in else mha.kv_dim
    ref = nn.MultiheadAttention(
        mha.d_out, mha.num_heads, dropout=mha.dropout.p, bias=True, batch_first=True, kdim=kdim, vdim=kdim,
        device=mha.out_proj.weight.device, dtype=mha.out_proj.weight.dtype,
    )
    if kdim is None:
        ref.in_proj_weight.copy_(torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight]))
    else:
        ref.q_proj_weight.copy_(mha.W_query.weight)
        ref.k_proj_weight.copy_(mha.W_key.weight)
        ref.v_proj_weight.copy_(mha.W_value.weight)
    biases: list[Tensor] = [lin.bias if lin.bias is not None else torch.zeros_like(mha.out_proj.bias)
              for lin in (mha.W_query, mha.W_key, mha.W_value)]
    ref.in_proj_bias.copy_(torch.cat(biases))
    ref.out_proj.weight.copy_(mha.out_proj.weight)
    ref.out_proj.bias.copy_(mha.out_proj.bias)
    return ref.train(mha.training)


def torch_mha_masks(
    batch: int, num_queries: int, num_keys: int, num_heads: int, *, valid_lens: Tensor | None = None, causal: bool,
    device: torch.device | str | None = None,
) -> tuple[Tensor | None, Tensor | None]:
    """``(key_padding_mask, attn_mask)`` for ``nn.MultiheadAttention``, whose masks are True = **blocked**.

    ``valid_lens`` ``(B,)`` becomes ``key_padding_mask`` ``(B, Tk)``; ``(B, Tq)`` and ``causal`` become a
    3-D ``attn_mask`` ``(B*h, Tq, Tk)``. The masks are built on ``device``, the inputs' device (default:
    ``valid_lens``'s device, else the CPU).
    """
    from mha_lib.attention import build_mask

    device = check_device("device", device)
    if device is None:
        device = valid_lens.device if isinstance(valid_lens, Tensor) else torch.device("cpu")
    if valid_lens is not None and valid_lens.dim() == 1 and not causal:
        keys = torch.arange(num_keys, device=device)
        return keys[None, :] >= valid_lens.to(device)[:, None], None
    allowed = build_mask(
        batch=batch, num_queries=num_queries, num_keys=num_keys, ndim=3, valid_lens=valid_lens, causal=causal,
        device=device,
    )
    if allowed is None:
        return None, None
    allowed = allowed.expand(batch, num_queries, num_keys)
    return None, ~allowed.repeat_interleave(num_heads, dim=0)


@torch.no_grad()
def to_d2l_mha(mha: MultiHeadAttention, d2l: types.ModuleType | None = None) -> nn.Module:
    """A ``d2l.MultiHeadAttention`` holding a copy of ``mha``'s weights (needs ``causal=False``).

    d2l has one ``bias`` switch for all four projections; with ``qkv_bias=False`` its output projection
    has no bias, so ``mha.out_proj.bias`` must be 0 for the two to agree (checked here).
    """
    d2l = load_d2l() if d2l is None else d2l
    if mha.causal:
        raise ValueError("d2l.MultiHeadAttention has no causal mask: build the MultiHeadAttention with causal=False")
    has_bias = mha.W_query.bias is not None
    if not has_bias and bool(mha.out_proj.bias.ne(0).any()):
        raise ValueError(_("with qkv_bias=False, d2l has no output bias: zero mha.out_proj.bias first"))
    weight = mha.out_proj.weight
    ref = d2l.MultiHeadAttention(mha.d_out, mha.num_heads, mha.dropout.p, bias=has_bias)
    ref = ref.to(device=weight.device, dtype=weight.dtype)
    # d2l uses LazyLinear layers: one call fixes their input widths before the weights are copied.
    ref(
        torch.zeros(1, 1, mha.d_in, dtype=weight.dtype, device=weight.device),
        torch.zeros(1, 1, mha.kv_dim, dtype=weight.dtype, device=weight.device),
        torch.zeros(1, 1, mha.kv_dim, dtype=weight.dtype, device=weight.device),
        None,
    )
    for ours, theirs in ((mha.W_query, ref.W_q), (mha.W_key, ref.W_k), (mha.W_value, ref.W_v), (mha.out_proj, ref.W_o)):
        theirs.weight.copy_(ours.weight)
        if has_bias:
            theirs.bias.copy_(ours.bias)
    return ref.train(mha.training)
