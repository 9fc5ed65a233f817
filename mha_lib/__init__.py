"""mha_lib: the attention library behind the *Multi-Head Attention, from tokens to heads* notebooks.

mha_lib/README.md maps its modules, layer by layer; a module imports only from the layers below its own.
"""

from mha_lib._validate import set_value_checks, value_checks
from mha_lib.attention import (
    AdditiveAttention,
    causal_mask,
    masked_softmax,
    scaled_dot_product_attention,
    tiled_attention,
    valid_lens_mask,
)
from mha_lib.cache import KVCache, causal_window_mask, kv_cache_bytes_per_token
from mha_lib.heads import head_index, head_label, merge_heads, split_heads, transpose_output, transpose_qkv
from mha_lib.hooks import HeadHook, gate_heads, on_head
from mha_lib.kernels import ATTENTION_FUNCTIONS, register_attention_function
from mha_lib.mha import MultiHeadAttention
from mha_lib.trace import AttentionTrace

# A release is tagged vYYYY.N (the N-th release of year YYYY) and carries __version__ "YYYY.N"; pyproject.toml reads
# it from here. The setup cell of every notebook prints it, so a class can see which release it runs.
__version__ = "2026.1"

__all__ = [
    "ATTENTION_FUNCTIONS",
    "AdditiveAttention",
    "AttentionTrace",
    "HeadHook",
    "KVCache",
    "MultiHeadAttention",
    "causal_mask",
    "causal_window_mask",
    "gate_heads",
    "head_index",
    "head_label",
    "kv_cache_bytes_per_token",
    "masked_softmax",
    "merge_heads",
    "on_head",
    "register_attention_function",
    "scaled_dot_product_attention",
    "set_value_checks",
    "split_heads",
    "tiled_attention",
    "transpose_output",
    "transpose_qkv",
    "valid_lens_mask",
    "value_checks",
]

# The value-check switch lives in the private _validate (the door's checks read it); it is the package's public API,
# so it is documented as the package's own.
for _public in (set_value_checks, value_checks):
    _public.__module__ = __name__
del _public
