"""Argument checks shared by the public functions: each error names the argument, what was expected and what came.

One vocabulary everywhere: a value of the wrong *type* raises ``TypeError``, a value of the right type but a
wrong *value* (out of range, wrong shape, NaN) raises ``ValueError``. For the mistakes students make most
(a float where an int goes, ``heads=1`` for ``heads=[1]``, a tensor where a trace goes) the message ends
with the fix. NaN and inf are never passed on silently: ``check_finite`` refuses them with a ``ValueError`` that
counts them, in the layer's inputs and in everything a table or a figure shows.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch
from torch import Tensor


def _shape(x: Tensor) -> str:
    return str(tuple(x.shape))


def _got(value: object) -> str:
    """What came, for an error message: ``float 2.0``, ``a Tensor of shape (2, 3)``, ``str 'abc'``."""
    if isinstance(value, Tensor):
        return f"a Tensor of shape {_shape(value)}"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _int_hint(name: str, value: object) -> str:
    """``: write n=2`` when ``value`` is a whole float such as ``2.0``."""
    if isinstance(value, float) and value.is_integer() and name.isidentifier():
        return f": write {name}={int(value)}"
    return ""


def check_int(name: str, value: object, *, minimum: int | None = 1) -> int:
    """Return ``value`` as an int if it is one (NumPy ints too, never a bool) and >= ``minimum``; raise otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {_got(value)}{_int_hint(name, value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_bool(name: str, value: object) -> bool:
    """Return ``value`` if it is True or False (NumPy's bool too); anything else is refused, never read as truthy.

    ``causal="no"`` would otherwise build a causal layer (a non-empty str is true), and ``qkv_bias="False"`` biases.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    hint = f": write {name}={value.strip().capitalize()}" if isinstance(value, str) and value.strip().lower() in (
        "true", "false") else ""
    raise TypeError(f"{name} must be True or False, got {_got(value)}{hint}")


def check_index(name: str, value: object, size: int, *, what: str = "") -> int:
    """Return ``value`` if it is an int in ``[0, size)``; ``what`` says what is counted, e.g. ``" (2 heads)"``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int in [0, {size}){what}, got {_got(value)}{_int_hint(name, value)}")
    value = int(value)
    if not 0 <= value < size:
        hint = f": count from 0, the last is {size - 1}" if -size <= value < 0 or value == size else ""
        raise ValueError(f"{name} must be in [0, {size}){what}, got {value}{hint}")
    return int(value)


def check_number(name: str, value: object, *, positive: bool = False) -> float:
    """Return ``value`` as a float if it is a real number (> 0 with ``positive``); raise otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {_got(value)}")
    if positive and not float(value) > 0.0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return float(value)


def check_choice(name: str, value: object, choices: Sequence[object]) -> object:
    """Return ``value`` if it is one of ``choices``; raise ``ValueError`` listing them otherwise."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_str(name: str, value: object, *, nonempty: bool = False) -> str:
    """Return ``value`` if it is a str (non-empty with ``nonempty``); raise otherwise."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {_got(value)}")
    if nonempty and not value:
        raise ValueError(f"{name} must be a non-empty str, got ''")
    return value


def check_list(name: str, value: object, of: str = "tokens") -> list:
    """Return ``value`` as a list if it is a list-like of ``of`` (a str or a tensor is refused, with the fix)."""
    if isinstance(value, str):
        raise TypeError(
            f"{name} must be a list of {of}, got a str: split it first, e.g. mha_lib.tokenize.tokenize(text)"
        )
    if isinstance(value, Tensor):
        raise TypeError(
            f"{name} must be a list of {of}, got {_got(value)}: turn ids into tokens with vocab.decode(ids)"
        )
    if not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of {of}, got {_got(value)}")
    return list(value)


def check_tokens(name: str, tokens: object, expected: int) -> list[str]:
    """Return ``tokens`` as ``expected`` labels, one per position; a str or a wrong length is refused."""
    labels = check_list(name, tokens)
    if len(labels) != expected:
        raise ValueError(f"{name} must have {expected} entries (one per position), got {len(labels)}")
    return [str(t) for t in labels]


def check_heads(heads: object, num_heads: int) -> list[int]:
    """Return ``heads`` (None = all) as a non-empty list of head indices in ``[0, num_heads)``."""
    if heads is None:
        return list(range(num_heads))
    if isinstance(heads, numbers.Integral) and not isinstance(heads, bool):
        raise TypeError(f"heads must be a list of head indices, got int {heads}: write heads=[{heads}]")
    if isinstance(heads, Tensor):
        heads = heads.tolist()
    chosen = check_list("heads", heads, "head indices")
    if not chosen:
        raise ValueError("heads must name at least one head, got an empty list")
    for i, h in enumerate(chosen):
        if isinstance(h, float) and h.is_integer():
            fixed = [int(v) if isinstance(v, float) and v.is_integer() else v for v in chosen]
            raise TypeError(f"heads[{i}] must be an int, got float {h!r}: write heads={fixed}")
    what = f" (there are {num_heads} heads, numbered from 0)"
    return [check_index(f"heads[{i}]", h, num_heads, what=what) for i, h in enumerate(chosen)]


def check_finite(name: str, x: Tensor | np.ndarray) -> None:
    """Refuse NaN and inf: ``ValueError`` saying how many of each ``x`` holds, never a silent NaN in a figure."""
    if isinstance(x, Tensor) and x.is_floating_point():
        # One cheap reduction on x's own device: a NaN or inf makes the sum non-finite (a mere overflow of the
        # sum only costs the exact count below).
        wide = torch.float64 if x.dtype == torch.float64 else torch.float32
        total = (x.detach() if x.requires_grad else x).sum(dtype=wide)
        if math.isfinite(total.item()):
            return
    values = x.detach().cpu().double().numpy() if isinstance(x, Tensor) else np.asarray(x, dtype=float)
    nan, inf = int(np.isnan(values).sum()), int(np.isinf(values).sum())
    if nan or inf:
        raise ValueError(
            f"{name} must be finite, got {nan} NaN and {inf} inf of {values.size} values: "
            "look upstream for an overflow (e.g. float16 scores) or a division by zero"
        )


VALUE_CHECKS = ("cpu", "always", "never")
_value_checks = "cpu"


def set_value_checks(mode: str) -> str:
    """Choose when the layer's door reads the *values* of its inputs (NaN, inf); returns the previous mode.

    A check of values must read the tensor on the host. For a tensor in CPU memory that waits for nothing: the CPU
    has already computed it, and the check costs one reduction. For a tensor on a GPU it is a synchronisation: the
    host stops until the device has finished everything queued before, so every call of the layer, and every step
    of cached decoding, would wait for the GPU (on an H200 that made the layer 1.5x slower than PyTorch's own).
    Hence the modes:

    - ``"cpu"`` (the default): check the values of tensors in CPU memory only, where a learner's NaN gets its
      clear message at no cost in waiting; on a GPU (or the meta device) the values are not read.
    - ``"always"``: check on every device, e.g. to find where a GPU run diverges (one synchronisation per input).
    - ``"never"``: never read values, not even on the CPU (the shapes, dtypes and devices are still checked).

    Only the layer's inputs follow this switch; tables and figures read values anyway, and always check them.
    """
    global _value_checks
    check_choice("mode", check_str("mode", mode), VALUE_CHECKS)
    previous, _value_checks = _value_checks, mode
    return previous


@contextmanager
def value_checks(mode: str) -> Iterator[None]:
    """``with value_checks("always"): ...``: ``set_value_checks(mode)`` for one block, then the previous mode."""
    previous = set_value_checks(mode)
    try:
        yield
    finally:
        set_value_checks(previous)


def reads_values(x: Tensor) -> bool:
    """Whether the door may read ``x``'s values now: the mode of ``set_value_checks`` and ``x``'s device."""
    return _value_checks == "always" or (_value_checks == "cpu" and x.is_cpu)


def check_device(name: str, device: object) -> torch.device | None:
    """Return ``device`` as a ``torch.device`` (None stays None); a CUDA device without a GPU is refused."""
    if device is None:
        return None
    if not isinstance(device, (str, torch.device, int)) or isinstance(device, bool):
        raise TypeError(f"{name} must be a str such as 'cpu' or 'cuda', or a torch.device, got {_got(device)}")
    try:
        device = torch.device(device)
    except RuntimeError:
        raise ValueError(f"{name} must name a device such as 'cpu' or 'cuda', got {device!r}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"{name}={str(device)!r} but this machine has no CUDA GPU (torch.cuda.is_available() is False):"
            " use device='cpu', or on Colab choose Runtime > Change runtime type > a GPU"
        )
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(f"{name}={str(device)!r} but this machine has {torch.cuda.device_count()} CUDA GPU(s)")
    return device


def check_same_device(name: str, x: Tensor, device: torch.device, holder: str = "model") -> None:
    """Refuse a tensor ``x`` that is not on ``device``, where the weights of ``holder`` ("model", "layer") are."""
    if x.device != device:
        raise ValueError(
            f"{name} is on device {x.device} but the {holder}'s weights are on {device}:"
            f" move it with {name}.to('{device}'), or the {holder} with {holder}.to('{x.device}')"
        )


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
    # The range is read where reading waits for nothing (lengths in CPU memory; set_value_checks): on a GPU it would
    # make the host wait, and a length out of range only means every key (or none).
    if valid_lens.numel() and reads_values(valid_lens) and (int(valid_lens.min()) < 0
                                                            or int(valid_lens.max()) > num_keys):
        raise ValueError(
            f"valid_lens must lie in [0, {num_keys}] (the number of keys), "
            f"got values from {int(valid_lens.min())} to {int(valid_lens.max())}"
        )
    return valid_lens.long()
