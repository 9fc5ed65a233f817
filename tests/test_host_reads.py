"""No host read in the forward pass: the fused path and a cached decode step never read a tensor's values on the host.

On a GPU every such read (``.item()``, ``bool(t)``, ``.tolist()``, ``.cpu()``, a boolean index...) makes the host
wait for the device. The reads are counted on the CPU with a ``TorchFunctionMode``, with the value checks set as on
a GPU (``set_value_checks``: by default the door reads the values of tensors in CPU memory only, where reading
waits for nothing); the meta device, which holds no values at all, runs the same calls as a second witness.
"""

from __future__ import annotations

import pytest
import torch

from mha_lib import KVCache, MultiHeadAttention
from mha_lib._validate import reads_values, set_value_checks, value_checks

# Tensor methods and torch functions whose result depends on the values and comes back to Python (or whose output
# shape depends on the values, which needs the same read).
HOST_READS = {"item", "__bool__", "__int__", "__float__", "__index__", "tolist", "numpy", "cpu", "nonzero",
              "masked_select", "unique", "argwhere", "nonzero_static"}


class HostReads(torch.overrides.TorchFunctionMode):
    """Counts the data-dependent host reads made inside the block, by name (``reads``)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        if name in HOST_READS:
            self.reads.append(name)
        elif name == "__getitem__" and _bool_index(args[1] if len(args) > 1 else None):
            self.reads.append("__getitem__ with a boolean index")
        return func(*args, **(kwargs or {}))


def _bool_index(index: object) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, torch.Tensor) and p.dtype == torch.bool for p in parts)


def _layer(**options) -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(32, 32, None, 0.0, 4, **options).eval()


CASES = {
    "plain": {},
    "GQA + RoPE": {"num_kv_heads": 2, "rope_base": 10000.0},
    "window + sink": {"window": 4, "sink": 1},
    "ALiBi + window": {"alibi": True, "window": 4},
    "non-causal": {"causal": False},
}


@pytest.mark.parametrize("options", CASES.values(), ids=CASES.keys())
def test_the_fused_forward_reads_nothing_on_the_host(options) -> None:
    layer, x = _layer(**options), torch.randn(2, 7, 32)
    with torch.no_grad(), value_checks("never"), HostReads() as mode:
        layer(x)
        layer(x, valid_lens=torch.tensor([7, 3]))  # padding: a mask built from the lengths, without reading them
    assert mode.reads == [], f"host reads in a fused forward: {mode.reads}"


@pytest.mark.parametrize("options", [o for o in CASES.values() if o.get("causal", True)],
                         ids=[k for k, o in CASES.items() if o.get("causal", True)])
def test_a_cached_decode_step_reads_nothing_on_the_host(options) -> None:
    layer, x = _layer(**options), torch.randn(2, 12, 32)
    cache = KVCache()
    with torch.no_grad(), value_checks("never"):
        layer(x[:, :5], kv_cache=cache)  # the prompt
        for t in range(5, 12):
            with HostReads() as mode:
                out = layer(x[:, t:t + 1], kv_cache=cache)
            assert mode.reads == [], f"host reads in decode step {t}: {mode.reads}"
        full = layer(x)
    torch.testing.assert_close(out, full[:, -1:], atol=1e-5, rtol=1e-5)


def test_the_counter_sees_the_reads_it_is_meant_to_see() -> None:
    x = torch.randn(3, 4)
    with HostReads() as mode:
        x.sum().item()
        bool(x.sum() > 0)
        x.tolist()
        x[x > 0]
    assert mode.reads == ["item", "__bool__", "tolist", "__getitem__ with a boolean index"]


def test_on_the_cpu_the_door_checks_values_by_default() -> None:
    """The default reads values in CPU memory only: a learner's NaN still gets its message; a GPU is not waited for."""
    layer, x = _layer(), torch.randn(2, 7, 32)
    assert reads_values(x) and not reads_values(x.to("meta"))
    x[0, 1, 2] = float("nan")
    with pytest.raises(ValueError, match=r"queries must be finite, got 1 NaN and 0 inf of 448 values"):
        layer(x)
    with value_checks("never"):
        assert torch.isnan(layer(x)).any(), "never: the NaN passes, as it would on a GPU"
    with pytest.raises(ValueError, match="queries must be finite"):
        layer(x)  # the default is back after the block


def test_the_meta_device_runs_forward_and_decoding_without_values() -> None:
    """On the meta device a tensor has no values: any host read would raise. Here the default mode is in force."""
    layer = _layer(window=4, sink=1).to("meta")
    x = torch.randn(2, 9, 32, device="meta")
    assert layer(x).shape == (2, 9, 32)
    cache = KVCache()
    layer(x[:, :5], kv_cache=cache)
    for t in range(5, 9):
        assert layer(x[:, t:t + 1], kv_cache=cache).shape == (2, 1, 32)
    assert cache.keys.shape[2] == 4  # the sink and the window's last 3


def test_the_switch_refuses_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match=r"mode must be one of 'cpu', 'always', 'never', got 'gpu'"):
        set_value_checks("gpu")
    with pytest.raises(TypeError, match=r"mode must be a str, got bool True"):
        set_value_checks(True)
    assert set_value_checks("cpu") == "cpu"
