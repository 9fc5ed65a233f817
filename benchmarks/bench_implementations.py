"""The eight implementations the benchmark times, each a few lines, all built from one layer's weights.

Every one computes the same causal multi-head attention as ``mha_lib.MultiHeadAttention``; ``check_agreement``
asserts it on one input before anything is timed, ``unsupported`` drops those that cannot run a dtype on a
device. ``_runner`` runs one pass of a module: ``forward`` (eval, no grad) or ``forward+backward`` (train).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mha_lib import MultiHeadAttention
from mha_lib.reference import to_torch_mha

BASELINE = "minimal SDPA"
DTYPES = ("float32", "float64", "bfloat16", "float16")
TOLERANCE = {"float64": 1e-9, "float32": 1e-4, "float16": 5e-3, "bfloat16": 3e-2}  # atol = rtol, vs minimal SDPA
PASSES = ("forward", "forward+backward")


def _linear(weight: Tensor, bias: Tensor | None = None) -> nn.Linear:
    """An ``nn.Linear`` holding a copy of ``weight`` ``(out, in)`` (and ``bias``)."""
    layer = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        layer.weight.copy_(weight)
        if bias is not None:
            layer.bias.copy_(bias)
    return layer


def _blocked(tokens: int, device: torch.device) -> Tensor:
    """``(T, T)`` bool, True above the diagonal: the future keys a causal query must NOT see."""
    return torch.ones(tokens, tokens, dtype=torch.bool, device=device).triu(1)


class OneHead(nn.Module):
    """Causal attention for one head, as in a first course: its own three projections, explicit softmax."""

    def __init__(self, w_query: Tensor, w_key: Tensor, w_value: Tensor, context_length: int) -> None:
        super().__init__()
        self.W_query, self.W_key, self.W_value = _linear(w_query), _linear(w_key), _linear(w_value)
        self.register_buffer("blocked", _blocked(context_length, w_query.device), persistent=False)

    def forward(self, x: Tensor) -> Tensor:  # (B, T, d_in) -> (B, T, head_dim)
        tokens = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)  # (B, T, head_dim)
        scores = q @ k.transpose(1, 2)  # (B, T, T)
        scores.masked_fill_(self.blocked[:tokens, :tokens], float("-inf"))
        weights = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
        return weights @ v


class PerHeadLoop(nn.Module):
    """A Python loop over ``h`` single-head modules, outputs concatenated, then the output projection."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        rows = [slice(i * ref.head_dim, (i + 1) * ref.head_dim) for i in range(ref.num_heads)]
        weights = (ref.W_query.weight, ref.W_key.weight, ref.W_value.weight)
        self.heads = nn.ModuleList(OneHead(*(w[r] for w in weights), context_length) for r in rows)
        self.out_proj = copy.deepcopy(ref.out_proj)

    def forward(self, x: Tensor) -> Tensor:
        return self.out_proj(torch.cat([head(x) for head in self.heads], dim=-1))


class Textbook(nn.Module):
    """All heads at once with batched matmuls; explicit mask, scale and softmax on the ``(T, T)`` scores."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        self.h, self.dh = ref.num_heads, ref.head_dim
        self.W_query, self.W_key, self.W_value = (_linear(m.weight) for m in (ref.W_query, ref.W_key, ref.W_value))
        self.out_proj = copy.deepcopy(ref.out_proj)
        self.register_buffer("blocked", _blocked(context_length, ref.out_proj.weight.device), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, self.h, self.dh).transpose(1, 2)  # (B, h, T, dh)
        k = self.W_key(x).view(b, t, self.h, self.dh).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.h, self.dh).transpose(1, 2)
        scores = q @ k.transpose(2, 3)  # (B, h, T, T)
        scores.masked_fill_(self.blocked[:t, :t], float("-inf"))
        weights = torch.softmax(scores / self.dh**0.5, dim=-1)
        context = (weights @ v).transpose(1, 2).contiguous().view(b, t, self.h * self.dh)
        return self.out_proj(context)


class CombinedQKV(nn.Module):
    """One ``(d_in, 3 d_out)`` projection for queries, keys and values; explicit softmax."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        self.h, self.dh = ref.num_heads, ref.head_dim
        self.qkv = _linear(torch.cat([ref.W_query.weight, ref.W_key.weight, ref.W_value.weight]))
        self.out_proj = copy.deepcopy(ref.out_proj)
        self.register_buffer("blocked", _blocked(context_length, ref.out_proj.weight.device), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)  # 3 x (B, h, T, dh)
        scores = (q @ k.transpose(2, 3)).masked_fill_(self.blocked[:t, :t], float("-inf"))  # (B, h, T, T)
        weights = torch.softmax(scores / self.dh**0.5, dim=-1)
        return self.out_proj((weights @ v).transpose(1, 2).reshape(b, t, self.h * self.dh))


class Einsum(nn.Module):
    """Every product written as ``torch.einsum``, heads kept as an index; the head merge folds into ``out_proj``."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        h, dh = ref.num_heads, ref.head_dim
        split = [m.weight.detach().view(h, dh, -1).clone() for m in (ref.W_query, ref.W_key, ref.W_value)]
        self.w_q, self.w_k, self.w_v = (nn.Parameter(w) for w in split)  # (h, dh, d_in)
        self.w_o = nn.Parameter(ref.out_proj.weight.detach().view(-1, h, dh).clone())  # (d_out, h, dh)
        self.b_o = nn.Parameter(ref.out_proj.bias.detach().clone())
        self.register_buffer("blocked", _blocked(context_length, self.b_o.device), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        t = x.shape[1]
        q = torch.einsum("btd,hed->bhte", x, self.w_q)  # (B, h, T, dh)
        k = torch.einsum("btd,hed->bhte", x, self.w_k)
        v = torch.einsum("btd,hed->bhte", x, self.w_v)
        scores = torch.einsum("bhqe,bhke->bhqk", q, k) / q.shape[-1] ** 0.5  # (B, h, T, T)
        weights = torch.softmax(scores.masked_fill(self.blocked[:t, :t], float("-inf")), dim=-1)
        context = torch.einsum("bhqk,bhke->bhqe", weights, v)  # (B, h, T, dh)
        return torch.einsum("bhqe,ohe->bqo", context, self.w_o) + self.b_o


class MinimalSDPA(nn.Module):
    """The shortest fast version: one QKV projection and ``F.scaled_dot_product_attention(is_causal=True)``."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        self.h, self.dh = ref.num_heads, ref.head_dim
        self.qkv = _linear(torch.cat([ref.W_query.weight, ref.W_key.weight, ref.W_value.weight]))
        self.out_proj = copy.deepcopy(ref.out_proj)

    def forward(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)  # 3 x (B, h, T, dh)
        context = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, h, T, dh)
        return self.out_proj(context.transpose(1, 2).reshape(b, t, self.h * self.dh))


class TorchMultiheadAttention(nn.Module):
    """``nn.MultiheadAttention`` with a boolean causal ``attn_mask`` (True = blocked) and ``need_weights=False``."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        self.mha = to_torch_mha(ref)
        self.register_buffer("blocked", _blocked(context_length, ref.out_proj.weight.device), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        t = x.shape[1]
        return self.mha(x, x, x, attn_mask=self.blocked[:t, :t], need_weights=False)[0]


class LibFused(nn.Module):
    """``mha_lib.MultiHeadAttention.forward``: the fused path."""

    def __init__(self, ref: MultiHeadAttention, context_length: int) -> None:
        super().__init__()
        self.mha = copy.deepcopy(ref)

    def forward(self, x: Tensor) -> Tensor:
        return self.mha(x)


class LibTrace(LibFused):
    """``mha_lib.MultiHeadAttention.trace(x).output``: the explicit path that keeps every intermediate."""

    def forward(self, x: Tensor) -> Tensor:
        return self.mha.trace(x).output


IMPLEMENTATIONS: dict[str, type[nn.Module]] = {
    "per-head loop": PerHeadLoop,
    "textbook batched": Textbook,
    "combined QKV": CombinedQKV,
    "einsum": Einsum,
    BASELINE: MinimalSDPA,
    "nn.MultiheadAttention": TorchMultiheadAttention,
    "mha_lib fused": LibFused,
    "mha_lib trace": LibTrace,
}


@dataclass
class Config:
    """One benchmark setting."""

    batch: int
    tokens: int
    d_model: int
    heads: int
    dtype: str = "float32"
    device: str = "cpu"
    warmup: int = 1
    repeats: int = 5
    seed: int = 123

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)


def build(config: Config) -> tuple[dict[str, nn.Module], Tensor]:
    """Every implementation, sharing one set of weights, and an input ``(B, T, d_model)``."""
    torch.manual_seed(config.seed)
    ref = MultiHeadAttention(config.d_model, config.d_model, config.tokens, 0.0, config.heads, causal=True)
    ref = ref.to(device=config.device, dtype=config.torch_dtype)
    modules = {name: cls(ref, config.tokens) for name, cls in IMPLEMENTATIONS.items()}
    x = torch.randn(config.batch, config.tokens, config.d_model, device=config.device, dtype=config.torch_dtype)
    return modules, x


def unsupported(modules: dict[str, nn.Module], x: Tensor) -> dict[str, str]:
    """The implementations that cannot run this dtype on this device (e.g. float16 on some CPU builds), and why.

    Each one runs forward and forward+backward once on the first 8 tokens; a ``RuntimeError`` marks it.
    """
    short = x[:, : min(8, x.shape[1])]
    failed = {}
    for name, module in modules.items():
        try:
            with torch.no_grad():
                module.eval()(short)
            _forward_backward(module.train(), short)()
        except RuntimeError as error:
            failed[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"
        finally:
            module.zero_grad(set_to_none=True)
    return failed


def check_agreement(modules: dict[str, nn.Module], x: Tensor) -> float:
    """Assert that every implementation gives the same output; return the largest absolute difference."""
    with torch.no_grad():
        outputs = {name: module.eval()(x) for name, module in modules.items()}
    expected = outputs[BASELINE]
    tol = TOLERANCE[str(x.dtype).removeprefix("torch.")]
    worst = 0.0
    for name, out in outputs.items():
        torch.testing.assert_close(out, expected, atol=tol, rtol=tol, msg=lambda m, name=name: f"{name} differs: {m}")
        worst = max(worst, (out - expected).abs().max().item())
    return worst


def _forward(module: nn.Module, x: Tensor) -> Callable[[], None]:
    def run() -> None:
        with torch.no_grad():
            module(x)

    return run


def _forward_backward(module: nn.Module, x: Tensor) -> Callable[[], None]:
    x = x.detach().requires_grad_(True)

    def run() -> None:
        x.grad = None
        module.zero_grad(set_to_none=True)
        module(x).sum().backward()

    return run


def _runner(module: nn.Module, x: Tensor, pass_: str) -> Callable[[], None]:
    """A function of no argument running one pass: ``forward`` (eval, no grad) or ``forward+backward`` (train)."""
    training = pass_ == "forward+backward"
    return (_forward_backward if training else _forward)(module.train(training), x)
