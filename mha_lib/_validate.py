"""Argument checks shared by the public functions: each error names the argument, what was expected and what came."""

from __future__ import annotations

import torch
from torch import Tensor


def _shape(x: Tensor) -> str:
    return str(tuple(x.shape))


def check_int(name: str, value: object, *, minimum: int = 1) -> int:
    """Return ``value`` if it is an int >= ``minimum``; raise otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_probability(name: str, value: object) -> float:
    """Return ``value`` as a float in [0, 1); raise otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float in [0, 1), got {type(value).__name__} {value!r}")
    if not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return float(value)


def check_tensor(name: str, x: object, ndim: int | tuple[int, ...], layout: str) -> Tensor:
    """Check that ``x`` is a floating-point tensor with ``ndim`` dimensions laid out as ``layout``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {layout}, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(
            f"{name} must be a floating-point tensor of shape {layout}, got dtype {x.dtype}"
            " (token ids must go through an embedding layer first)"
        )
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if x.dim() not in allowed:
        raise ValueError(f"{name} must have shape {layout} ({' or '.join(map(str, allowed))}-D), got {_shape(x)}")
    return x


def check_last_dim(name: str, x: Tensor, expected: int, what: str) -> None:
    """Check the feature width of ``x``."""
    if x.shape[-1] != expected:
        raise ValueError(f"{name} must have last dimension {what}={expected}, got shape {_shape(x)}")


def check_valid_lens(valid_lens: object, batch: int, num_queries: int, num_keys: int) -> Tensor:
    """Return ``valid_lens`` as an int64 tensor of shape ``(batch,)`` or ``(batch, num_queries)``."""
    if not isinstance(valid_lens, Tensor):
        raise TypeError(f"valid_lens must be a torch.Tensor of integers, got {type(valid_lens).__name__}")
    if valid_lens.is_floating_point() or valid_lens.is_complex() or valid_lens.dtype == torch.bool:
        raise TypeError(f"valid_lens must hold integers, got dtype {valid_lens.dtype}")
    if valid_lens.shape not in ((batch,), (batch, num_queries)):
        raise ValueError(
            f"valid_lens must have shape ({batch},) or ({batch}, {num_queries}) (batch, or batch and queries),"
            f" got {_shape(valid_lens)}"
        )
    if valid_lens.numel() and (int(valid_lens.min()) < 0 or int(valid_lens.max()) > num_keys):
        raise ValueError(
            f"valid_lens must lie in [0, {num_keys}] (the number of keys), "
            f"got values from {int(valid_lens.min())} to {int(valid_lens.max())}"
        )
    return valid_lens.long()
