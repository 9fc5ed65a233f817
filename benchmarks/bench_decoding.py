"""Greedy decoding with and without a KV cache (notebook 11), beside a minimal hand-written cached decoder.

``Decoder`` stacks ``mha_lib.MultiHeadAttention`` layers (RoPE, ``num_kv_heads``); ``PlainDecoder`` runs the same
weights in plain PyTorch (projections, a precomputed RoPE table, ``torch.cat`` onto the cache, SDPA), with no checks,
hooks or traces: the baseline row of the decoding table. ``one_token_cost`` times one layer's one-token step with a
KV cache side by side with its own four projections, the cache append and ``F.scaled_dot_product_attention``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from bench_implementations import TOLERANCE
from torch import Tensor, nn

from mha_lib import KVCache, MultiHeadAttention, kv_cache_bytes_per_token
from mha_lib.measure import synchronize


@dataclass
class DecodeConfig:
    """The decoding benchmark: a small decoder of ``layers`` RoPE attention layers, ``heads`` query heads of
    ``d_model // heads``, one K/V-head count per variant; ``new_tokens`` generated so that the last step sees T."""

    tokens: tuple[int, ...] = (128, 512, 2048)
    d_model: int = 512
    heads: int = 8
    layers: int = 4
    vocab: int = 256
    new_tokens: int = 16
    variants: tuple[tuple[str, int], ...] = (("MHA", 8), ("GQA", 2), ("MQA", 1))
    dtype: str = "float32"
    device: str = "cpu"
    warmup: int = 1
    repeats: int = 3
    seed: int = 7

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


QUICK_DECODE = {"tokens": (16, 32), "d_model": 64, "heads": 4, "layers": 2, "vocab": 32, "new_tokens": 4,
                "variants": (("MHA", 4), ("GQA", 2), ("MQA", 1))}
DECODE_PATHS = ("uncached", "cached", "hand-written")  # the last: PlainDecoder, the baseline


class Decoder(nn.Module):
    """Token ids ``(B, T)`` -> next-token logits ``(B, T, vocab)``: embedding, pre-norm residual attention layers
    (``mha_lib.MultiHeadAttention`` with RoPE and ``num_kv_heads``), final norm, unembedding. No MLP: the benchmark
    is about attention and its cache."""

    def __init__(self, config: DecodeConfig, num_kv_heads: int) -> None:
        super().__init__()
        d, place = config.d_model, {"device": config.device, "dtype": getattr(torch, config.dtype)}
        self.embed = nn.Embedding(config.vocab, d, **place)
        self.norms = nn.ModuleList(nn.LayerNorm(d, **place) for _ in range(config.layers))
        self.blocks = nn.ModuleList(
            MultiHeadAttention(d, d, None, 0.0, config.heads, num_kv_heads=num_kv_heads, rope_base=10000.0, **place)
            for _ in range(config.layers))
        self.norm, self.unembed = nn.LayerNorm(d, **place), nn.Linear(d, config.vocab, **place)

    def new_caches(self) -> list[KVCache]:
        """One empty cache per layer."""
        return [KVCache() for _ in self.blocks]

    def forward(self, ids: Tensor, caches: list[KVCache] | None = None) -> Tensor:
        z = self.embed(ids)  # (B, T, d)
        for i, (norm, block) in enumerate(zip(self.norms, self.blocks)):
            z = z + block(norm(z), kv_cache=None if caches is None else caches[i])
        return self.unembed(self.norm(z))  # (B, T, vocab)


class PlainCache:
    """A hand-written decoder's cache of one layer: the keys and values seen so far, ``(B, h_kv, T, d_head)``."""

    def __init__(self) -> None:
        self.keys: Tensor | None = None
        self.values: Tensor | None = None

    @property
    def offset(self) -> int:
        return 0 if self.keys is None else self.keys.shape[2]

    @property
    def nbytes(self) -> int:
        return 0 if self.keys is None else 2 * self.keys.numel() * self.keys.element_size()


class PlainDecoder:
    """The minimal hand-written cached decoder, in plain PyTorch, running the weights of a ``Decoder``.

    Per layer: project, view as heads, rotate by a RoPE table computed once, ``torch.cat`` onto the cache,
    ``F.scaled_dot_product_attention``, merge, project out. No checks, hooks or traces: what a decoder costs without
    a library around it. Prefill (several tokens) only into an empty cache, then one token per step.
    """

    def __init__(self, model: Decoder, max_tokens: int) -> None:
        self.model = model
        block = model.blocks[0]
        self.heads, self.kv_heads, self.head_dim = block.num_heads, block.num_kv_heads, block.head_dim
        pairs = torch.arange(0, self.head_dim, 2, dtype=torch.float64) / self.head_dim
        angles = torch.arange(max_tokens, dtype=torch.float64)[:, None] / block.rope_base**pairs  # (T, d_head/2)
        place = {"device": block.out_proj.weight.device, "dtype": block.out_proj.weight.dtype}
        self.cos, self.sin = torch.cos(angles).to(**place), torch.sin(angles).to(**place)

    def new_caches(self) -> list[PlainCache]:
        return [PlainCache() for _ in self.model.blocks]

    def _rotate(self, x: Tensor, start: int) -> Tensor:
        """RoPE on ``(B, h, T, d_head)``: each feature pair turned by its position's angle."""
        cos, sin = self.cos[start : start + x.shape[2]], self.sin[start : start + x.shape[2]]  # (T, d_head/2)
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)

    def __call__(self, ids: Tensor, caches: list[PlainCache] | None = None) -> Tensor:
        m, (batch, tokens) = self.model, ids.shape
        start = 0 if caches is None else caches[0].offset
        z = m.embed(ids)  # (B, T, d)
        for i, (norm, block) in enumerate(zip(m.norms, m.blocks)):
            x = norm(z)
            q = block.W_query(x).view(batch, tokens, self.heads, self.head_dim).transpose(1, 2)  # (B, h, T, d_head)
            k = block.W_key(x).view(batch, tokens, self.kv_heads, self.head_dim).transpose(1, 2)  # (B, h_kv, T, d_h)
            v = block.W_value(x).view(batch, tokens, self.kv_heads, self.head_dim).transpose(1, 2)
            q, k = self._rotate(q, start), self._rotate(k, start)
            if caches is not None:
                cache = caches[i]
                if cache.keys is not None:
                    k, v = torch.cat([cache.keys, k], dim=2), torch.cat([cache.values, v], dim=2)
                cache.keys, cache.values = k, v
            context = F.scaled_dot_product_attention(q, k, v, is_causal=tokens > 1,
                                                     enable_gqa=self.kv_heads != self.heads)  # (B, h, T, d_head)
            z = z + block.out_proj(context.transpose(1, 2).reshape(batch, tokens, -1))
        return m.unembed(m.norm(z))  # (B, T, vocab)


def decode_ms(model: Decoder | PlainDecoder, prompt: Tensor, new_tokens: int, cached: bool,
              device: str = "cpu", cpu_ms: list[float] | None = None) -> tuple[float, list | None]:
    """Greedy decoding of ``new_tokens`` after ``prompt`` ``(B, P)``: the ms of the new tokens only, and the caches.

    Without a cache every step runs the model on the whole sequence; with caches the prompt goes in once (the
    prefill, not timed: it is the same work as the uncached path's first step) and each step feeds one token.
    ``cpu_ms``: a list that receives the same steps' ms of this thread's CPU time (``time.thread_time``).
    """
    caches = model.new_caches() if cached else None
    with torch.no_grad():
        logits = model(prompt, caches)  # (B, P, vocab)
        ids = prompt
        synchronize(device)
        start, start_cpu = time.perf_counter(), time.thread_time()
        for _ in range(new_tokens):
            next_id = logits[:, -1:].argmax(-1)  # (B, 1): greedy
            ids = torch.cat([ids, next_id], dim=1)
            logits = model(next_id if cached else ids, caches)
        synchronize(device)
    if cpu_ms is not None:
        cpu_ms.append((time.thread_time() - start_cpu) * 1000)
    return (time.perf_counter() - start) * 1000, caches


def check_decoding(model: Decoder | PlainDecoder, config: DecodeConfig, tokens: int,
                   full_pass: Decoder | None = None) -> float:
    """Assert that decoding with caches gives the logits of one full pass; return the largest difference.

    ``full_pass``: the decoder whose full pass is the reference (default ``model`` itself; a ``PlainDecoder`` is
    checked against the ``Decoder`` it copies).
    """
    ids = torch.randint(0, config.vocab, (1, tokens), generator=torch.Generator().manual_seed(config.seed))
    ids = ids.to(config.device)
    prompt = tokens - config.new_tokens
    with torch.no_grad():
        caches = model.new_caches()
        stepwise = [model(ids[:, :prompt], caches)] + [model(ids[:, t : t + 1], caches) for t in range(prompt, tokens)]
        full = (model if full_pass is None else full_pass)(ids)
    tol = TOLERANCE[config.dtype] * 10
    torch.testing.assert_close(torch.cat(stepwise, dim=1), full, atol=tol, rtol=tol)
    return float((torch.cat(stepwise, dim=1) - full).abs().max())


def decode_benchmark(config: DecodeConfig) -> list[dict]:
    """Tokens per second of greedy decoding with and without a KV cache, and the cache's bytes per token.

    One row per (T, variant, path). Rounds are interleaved over the variants and paths of one T, so that a busy
    spell slows them alike; ``tokens_per_s`` uses the median time, ``best_tokens_per_s`` the best.
    """
    models, plains = {}, {}
    for name, kv_heads in config.variants:
        torch.manual_seed(config.seed)
        models[name] = Decoder(config, kv_heads).eval()
        check_decoding(models[name], config, config.tokens[0])
        plains[name] = PlainDecoder(models[name], max(config.tokens))
        check_decoding(plains[name], config, config.tokens[0], full_pass=models[name])
    bytes_per_element = torch.empty((), dtype=getattr(torch, config.dtype)).element_size()
    rows = []
    for tokens in config.tokens:
        prompt = torch.randint(0, config.vocab, (1, tokens - config.new_tokens),
                               generator=torch.Generator().manual_seed(tokens)).to(config.device)
        times: dict[tuple[str, str], list[float]] = {(v, p): [] for v, _ in config.variants for p in DECODE_PATHS}
        cpu: dict[tuple[str, str], list[float]] = {key: [] for key in times}
        kept: dict[tuple[str, str], int] = {}
        for round_ in range(config.warmup + config.repeats):
            for (variant, path), ts in times.items():
                model = plains[variant] if path == "hand-written" else models[variant]
                ms, caches = decode_ms(model, prompt, config.new_tokens, path != "uncached", config.device,
                                       cpu[variant, path] if round_ >= config.warmup else None)
                if round_ >= config.warmup:
                    ts.append(ms)
                if caches is not None:
                    kept[variant, path] = sum(c.nbytes for c in caches)
        for variant, kv_heads in config.variants:
            formula = kv_cache_bytes_per_token(config.layers, kv_heads, config.head_dim,
                                               bytes_per_element=bytes_per_element)
            measured = kept[variant, "cached"] / tokens  # the caches hold every one of the T tokens
            for path in ("cached", "hand-written"):
                if kept[variant, path] / tokens != formula:
                    raise AssertionError(f"{variant}, {path}: the caches hold {kept[variant, path] / tokens} bytes per"
                                         f" token, the formula {formula}")
            for path in DECODE_PATHS:
                ts = times[(variant, path)]
                rows.append({
                    "tokens": tokens, "variant": variant, "kv_heads": kv_heads, "path": path,
                    "median_ms": round(statistics.median(ts), 2), "best_ms": round(min(ts), 2),
                    "cpu_median_ms": round(statistics.median(cpu[variant, path]), 2),
                    "tokens_per_s": round(config.new_tokens / (statistics.median(ts) / 1000), 1),
                    "best_tokens_per_s": round(config.new_tokens / (min(ts) / 1000), 1),
                    "cache_kib_per_token": round(measured / 1024, 3), "formula_kib_per_token": round(formula / 1024, 3),
                })
    return rows


def one_token_cost(cached_tokens: tuple[int, ...] = (128, 512, 2048), *, d_model: int = 512, heads: int = 8,
                   calls: int = 20, rounds: int = 30, warmup: int = 3, device: str = "cpu",
                   dtype: str = "float32", seed: int = 7) -> list[dict]:
    """One layer's one-token step with a KV cache of ``T`` tokens, against its own work written out by hand.

    The layer: ``MultiHeadAttention(d_model, d_model, None, 0.0, heads)`` (no RoPE) called on one token with a
    ``KVCache`` holding ``T``. The baseline: the same weights' four projections, the cache append (``torch.cat``) and
    ``F.scaled_dot_product_attention``, in plain PyTorch. Both restore the cache to ``T`` tokens before each call.
    Each timed run is ``calls`` calls, the two alternate run by run, ``rounds`` times after ``warmup``. One row per
    ``T``: microseconds per call (best and median) and the layer's ratio to the hand-written step, from the median of
    the per-round ratios and from the best times. On a CPU, ``cpu_`` columns time the same runs by the thread's CPU
    time (``time.thread_time``): other processes on a shared machine cannot add to it (with one thread, all the work
    is in this thread).
    """
    place = {"device": device, "dtype": getattr(torch, dtype)}
    torch.manual_seed(seed)
    layer = MultiHeadAttention(d_model, d_model, None, 0.0, heads, **place).eval()
    rows = []
    for tokens in cached_tokens:
        steps = dict(zip(("layer", "by hand"), _one_token_step(layer, tokens, place)))
        with torch.no_grad():
            tol = TOLERANCE[dtype]
            torch.testing.assert_close(steps["layer"](), steps["by hand"](), atol=tol, rtol=tol)
            wall, cpu = _alternate(steps, calls, rounds, warmup, device)
        row: dict = {"cached_tokens": tokens}
        clocks = [("", wall), ("cpu_", cpu)] if device == "cpu" else [("", wall)]
        for clock, times in clocks:
            for name, key in (("layer", "layer"), ("by hand", "by_hand")):
                row[f"{clock}{key}_best_us"] = round(min(times[name]), 1)
                row[f"{clock}{key}_median_us"] = round(statistics.median(times[name]), 1)
            pairs = zip(times["layer"], times["by hand"])
            row[f"{clock}ratio"] = round(statistics.median(a / b for a, b in pairs), 3)
            row[f"{clock}best_ratio"] = round(min(times["layer"]) / min(times["by hand"]), 3)
        rows.append(row)
    return rows


def _alternate(steps: dict[str, Callable[[], object]], calls: int, rounds: int, warmup: int,
               device: str) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Microseconds per call of each step, by the wall clock and by the thread's CPU time, run by run in turn."""
    wall: dict[str, list[float]] = {name: [] for name in steps}
    cpu: dict[str, list[float]] = {name: [] for name in steps}
    for round_ in range(warmup + rounds):
        for name, step in steps.items():
            synchronize(device)
            start_wall, start_cpu = time.perf_counter(), time.thread_time()
            for _ in range(calls):
                step()
            synchronize(device)
            if round_ >= warmup:
                wall[name].append((time.perf_counter() - start_wall) / calls * 1e6)
                cpu[name].append((time.thread_time() - start_cpu) / calls * 1e6)
    return wall, cpu


def _one_token_step(layer: MultiHeadAttention, tokens: int,
                    place: dict) -> tuple[Callable[[], Tensor], Callable[[], Tensor]]:
    """The layer's one-token step on a cache of ``tokens`` tokens, and the same step written out by hand."""
    h, d, width = layer.num_heads, layer.head_dim, layer.d_out
    x_new = torch.randn(1, 1, layer.d_in, **place)
    cache = KVCache()
    with torch.no_grad():
        layer(torch.randn(1, tokens, layer.d_in, **place), kv_cache=cache)
    keys, values = cache.keys, cache.values

    def library() -> Tensor:
        cache.keys, cache.values, cache.offset = keys, values, tokens  # back to T tokens (no window: all in order)
        return layer(x_new, kv_cache=cache)

    def by_hand() -> Tensor:
        q = layer.W_query(x_new).view(1, 1, h, d).transpose(1, 2)  # (1, h, 1, d_head)
        k = torch.cat([keys, layer.W_key(x_new).view(1, 1, h, d).transpose(1, 2)], dim=2)  # (1, h, T + 1, d_head)
        v = torch.cat([values, layer.W_value(x_new).view(1, 1, h, d).transpose(1, 2)], dim=2)
        context = F.scaled_dot_product_attention(q, k, v)  # (1, h, 1, d_head)
        return layer.out_proj(context.transpose(1, 2).reshape(1, 1, width))

    return library, by_hand
