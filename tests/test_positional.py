"""Positional information: the sinusoidal table equals d2l's, offsets are rotations, RoPE sees only m - n."""

from __future__ import annotations

import math
from functools import cache

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_lib.positional import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    RotaryEmbedding,
    apply_rope,
    offset_rotation,
    rope_angles,
    sinusoidal_table,
)
from mha_lib.reference import load_d2l

SIZES = [(1, 2), (7, 2), (60, 32), (100, 6), (1000, 512), (50, 130)]
F64 = {"atol": 1e-10, "rtol": 1e-10}
FAST = settings(max_examples=60, deadline=None)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@cache
def _table64(max_len: int, d_model: int) -> torch.Tensor:
    """A float64 sinusoidal table, computed once per size for the property tests."""
    return sinusoidal_table(max_len, d_model, dtype=torch.float64)


WIDTHS = st.sampled_from([2, 4, 6, 16, 32, 64, 128])


# --- the sinusoidal table --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("max_len", "d_model"), SIZES)
def test_sinusoidal_table_equals_d2l(max_len: int, d_model: int) -> None:
    d2l = load_d2l()
    reference = d2l.PositionalEncoding(d_model, 0.0, max_len).P[0]  # (max_len, d_model)
    table = sinusoidal_table(max_len, d_model)
    assert table.shape == (max_len, d_model) and table.dtype == torch.float32
    torch.testing.assert_close(table, reference, atol=1e-6, rtol=0)


@pytest.mark.parametrize(("max_len", "d_model"), [(60, 32), (20, 8)])
def test_sinusoidal_table_follows_the_formula(max_len: int, d_model: int) -> None:
    table = sinusoidal_table(max_len, d_model, dtype=torch.float64)
    for p in range(0, max_len, 7):
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i / d_model)
            assert math.isclose(table[p, 2 * i].item(), math.sin(angle), abs_tol=1e-12)
            assert math.isclose(table[p, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-12)


def test_sinusoidal_table_rows_have_constant_norm() -> None:
    table = sinusoidal_table(200, 16, dtype=torch.float64)
    torch.testing.assert_close(table.norm(dim=-1), torch.full((200,), math.sqrt(8), dtype=torch.float64))


def test_sinusoidal_table_base_changes_the_wavelengths() -> None:
    # with base = 1 every pair turns at 1 radian per position, so all sin columns are equal
    table = sinusoidal_table(10, 6, base=1.0, dtype=torch.float64)
    torch.testing.assert_close(table[:, 0::2], table[:, :1].expand(10, 3))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(("num_hiddens", "steps"), [(32, 60), (8, 5), (100, 17)])
def test_positional_encoding_equals_d2l(seed: int, num_hiddens: int, steps: int) -> None:
    d2l = load_d2l()
    ours, ref = PositionalEncoding(num_hiddens, 0.5).eval(), d2l.PositionalEncoding(num_hiddens, 0.5).eval()
    X = torch.randn(3, steps, num_hiddens, generator=_gen(seed))  # (B, T, d)
    out = ours(X)
    assert out.shape == X.shape
    assert torch.equal(out, ref(X))


def test_positional_encoding_adds_the_table_and_keeps_dtype() -> None:
    pe = PositionalEncoding(8, 0.0, max_len=10)
    assert pe.max_len == 10
    X = torch.randn(2, 4, 8, dtype=torch.float64, generator=_gen(0))
    out = pe(X)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out - X, sinusoidal_table(4, 8, dtype=torch.float64).expand(2, 4, 8), atol=1e-7, rtol=0)


def test_positional_encoding_dropout_only_in_training() -> None:
    p = 0.25  # not 0.5, where the right scale 1 / (1 - p) and a wrong 1 / p would agree
    pe = PositionalEncoding(16, p)
    X = torch.full((8, 50, 16), 3.0)  # X + P lies in [2, 4]: a zero in the output can only come from dropout
    clean = X + sinusoidal_table(50, 16)
    assert (clean != 0).all()
    pe.train()
    torch.manual_seed(0)
    out = pe(X)
    dropped = out == 0
    assert abs(float(dropped.float().mean()) - p) < 0.02, "about a share p of the entries is zeroed"
    torch.testing.assert_close(out[~dropped], clean[~dropped] / (1 - p))  # survivors are scaled by 1 / (1 - p)
    pe.eval()
    assert torch.equal(pe(X), clean), "no dropout in eval mode"


def test_positional_encoding_table_is_not_in_the_state_dict() -> None:
    # d2l keeps P as a plain attribute: loading d2l-style checkpoints must not expect a "P" entry
    assert "P" not in PositionalEncoding(8, 0.0).state_dict()


# --- relative position: an offset is a rotation ------------------------------------------------------------------


@FAST
@given(k=st.integers(-300, 300), d_model=WIDTHS)
def test_offset_rotation_maps_every_row(k: int, d_model: int) -> None:
    table = _table64(1200, d_model)  # (positions, d)
    M = offset_rotation(k, d_model)  # (d, d)
    p = torch.arange(max(0, -k), min(1200, 1200 - k))
    error = (table[p + k] - table[p] @ M.T).abs().max().item()  # every row at once
    assert error < 1e-9, error


@FAST
@given(p=st.integers(0, 5000), k=st.integers(0, 5000), d_model=WIDTHS)
def test_offset_rotation_single_position(p: int, k: int, d_model: int) -> None:
    rows = _table64(10_001, d_model)
    torch.testing.assert_close(offset_rotation(k, d_model) @ rows[p], rows[p + k], atol=1e-8, rtol=0)


@FAST
@given(a=st.integers(-500, 500), b=st.integers(-500, 500))
def test_offset_rotations_compose_and_are_orthogonal(a: int, b: int) -> None:
    Ma, Mb = offset_rotation(a, 16), offset_rotation(b, 16)
    torch.testing.assert_close(Ma @ Mb, offset_rotation(a + b, 16), **F64)
    torch.testing.assert_close(Ma @ Ma.T, torch.eye(16, dtype=torch.float64), **F64)
    torch.testing.assert_close(offset_rotation(-a, 16), Ma.T, **F64)


def test_offset_rotation_dtype_and_zero() -> None:
    assert offset_rotation(3, 8).dtype == torch.float64
    assert offset_rotation(3, 8, dtype=torch.float32).dtype == torch.float32
    torch.testing.assert_close(offset_rotation(0, 8), torch.eye(8, dtype=torch.float64))


def test_similarity_depends_only_on_the_offset() -> None:
    table = sinusoidal_table(80, 32, dtype=torch.float64)
    sim = table @ table.T  # (positions, positions)
    for k in range(-40, 41):
        diagonal = torch.diagonal(sim, offset=k)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal), atol=1e-9, rtol=0)


# --- learned positions -------------------------------------------------------------------------------------------


def test_learned_embedding_adds_one_vector_per_position() -> None:
    torch.manual_seed(0)
    layer = LearnedPositionalEmbedding(max_len=12, d_model=6)
    X = torch.randn(3, 5, 6, generator=_gen(1))  # (B, T, d)
    added = layer(X) - X  # (B, T, d)
    torch.testing.assert_close(added, layer.embedding.weight[:5].detach().expand(3, 5, 6))
    assert not torch.allclose(added[:, 0], added[:, 1]), "different positions get different vectors"
    torch.testing.assert_close(added[0], added[2])  # the same for every sequence of the batch


def test_learned_embedding_is_trainable() -> None:
    layer = LearnedPositionalEmbedding(max_len=4, d_model=3)
    layer(torch.zeros(1, 2, 3)).sum().backward()
    grad = layer.embedding.weight.grad
    assert grad is not None
    torch.testing.assert_close(grad[:2], torch.ones(2, 3))
    torch.testing.assert_close(grad[2:], torch.zeros(2, 3))  # positions not used get no gradient


# --- rotary embeddings -------------------------------------------------------------------------------------------


def _rope_at(vector: torch.Tensor, position: int) -> torch.Tensor:
    """Rotate one ``(dim,)`` vector as if it sat at ``position``."""
    return apply_rope(vector[None], offset=position)[0]


@FAST
@given(
    m=st.integers(0, 2000), n=st.integers(0, 2000), shift=st.integers(0, 2000),
    d_half=st.integers(1, 32), seed=st.integers(0, 2**16),
)
def test_rope_dot_product_depends_only_on_m_minus_n(m: int, n: int, shift: int, d_half: int, seed: int) -> None:
    q, k = torch.randn(2, 2 * d_half, dtype=torch.float64, generator=_gen(seed))
    score = _rope_at(q, m) @ _rope_at(k, n)
    shifted = _rope_at(q, m + shift) @ _rope_at(k, n + shift)
    relative = q @ _rope_at(k, n - m) if n >= m else _rope_at(q, m - n) @ k
    torch.testing.assert_close(score, shifted, atol=1e-9, rtol=1e-9)
    torch.testing.assert_close(score, relative, atol=1e-9, rtol=1e-9)


@FAST
@given(t=st.integers(1, 40), d_half=st.integers(1, 16), offset=st.integers(0, 10_000), seed=st.integers(0, 2**16))
def test_rope_preserves_norms(t: int, d_half: int, offset: int, seed: int) -> None:
    x = torch.randn(2, 3, t, 2 * d_half, dtype=torch.float64, generator=_gen(seed))  # (B, h, T, d)
    rotated = apply_rope(x, offset=offset)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1), **F64)
    pairs = rotated.unflatten(-1, (d_half, 2)).norm(dim=-1)
    torch.testing.assert_close(pairs, x.unflatten(-1, (d_half, 2)).norm(dim=-1), **F64)  # each pair keeps its norm


@FAST
@given(t=st.integers(2, 30), start=st.integers(0, 29), offset=st.integers(0, 500), seed=st.integers(0, 2**16))
def test_rope_offset_is_consistent(t: int, start: int, offset: int, seed: int) -> None:
    start = start % t
    x = torch.randn(2, t, 8, dtype=torch.float64, generator=_gen(seed))  # (B, T, d)
    whole = apply_rope(x, offset=offset)
    tail = apply_rope(x[:, start:], offset=offset + start)
    torch.testing.assert_close(tail, whole[:, start:], **F64)


def test_rope_position_zero_is_identity_and_pair_zero_turns_one_radian() -> None:
    x = torch.randn(1, 3, 4, dtype=torch.float64, generator=_gen(0))
    rotated = apply_rope(x)
    torch.testing.assert_close(rotated[:, 0], x[:, 0])
    torch.testing.assert_close(rope_angles(3, 4)[:, 0], torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64))
    c, s = math.cos(2.0), math.sin(2.0)
    expected = torch.stack([c * x[0, 2, 0] - s * x[0, 2, 1], s * x[0, 2, 0] + c * x[0, 2, 1]])
    torch.testing.assert_close(rotated[0, 2, :2], expected)


def test_rotary_embedding_matches_apply_rope() -> None:
    rope = RotaryEmbedding(8)
    q, k = torch.randn(2, 2, 3, 5, 8, generator=_gen(0))  # (B, h, T, head_dim) each
    rq, rk = rope(q, k, offset=4)
    torch.testing.assert_close(rq, apply_rope(q, offset=4))
    torch.testing.assert_close(rk, apply_rope(k, offset=4))
    assert "head_dim=8" in repr(rope)


def test_rope_scores_are_a_function_of_the_offset_matrix() -> None:
    # one query vector and one key vector repeated at every position: the score matrix is Toeplitz
    q, k = torch.randn(2, 16, dtype=torch.float64, generator=_gen(3))
    T = 12
    rq, rk = RotaryEmbedding(16)(q.expand(1, T, 16), k.expand(1, T, 16))
    scores = rq[0] @ rk[0].T  # (T, T)
    for offset in range(-T + 1, T):
        diagonal = torch.diagonal(scores, offset=offset)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal), **F64)


# --- errors name the argument ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: sinusoidal_table(10, 7), "d_model"),
        (lambda: sinusoidal_table(0, 8), "max_len"),
        (lambda: sinusoidal_table(10, 8, base=0.0), "base"),
        (lambda: offset_rotation(1, 5), "d_model"),
        (lambda: PositionalEncoding(7, 0.0), "num_hiddens"),
        (lambda: PositionalEncoding(8, 1.5), "dropout"),
        (lambda: PositionalEncoding(8, 0.0, max_len=5)(torch.zeros(1, 6, 8)), "max_len=5"),
        (lambda: PositionalEncoding(8, 0.0)(torch.zeros(1, 3, 6)), "num_hiddens=8"),
        (lambda: PositionalEncoding(8, 0.0)(torch.zeros(3, 8)), "X"),
        (lambda: LearnedPositionalEmbedding(4, 8)(torch.zeros(1, 5, 8)), "max_len=4"),
        (lambda: LearnedPositionalEmbedding(4, 8)(torch.zeros(1, 3, 6)), "d_model=8"),
        (lambda: LearnedPositionalEmbedding(0, 8), "max_len"),
        (lambda: apply_rope(torch.zeros(2, 3, 5)), "x"),
        (lambda: rope_angles(4, 3), "dim"),
        (lambda: RotaryEmbedding(7), "head_dim"),
        (lambda: RotaryEmbedding(8)(torch.zeros(1, 3, 6), torch.zeros(1, 3, 8)), "head_dim=8"),
        (lambda: RotaryEmbedding(8)(torch.zeros(1, 3, 8), torch.zeros(1, 3, 4)), "k must"),
    ],
)
def test_errors_name_the_argument(call, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: sinusoidal_table(10.0, 8), "max_len"),
        (lambda: sinusoidal_table(10, 8, base="1e4"), "base"),
        (lambda: rope_angles(4, 8, offset=1.0), "offset"),
        (lambda: offset_rotation("1", 8), "offset"),
        (lambda: PositionalEncoding(8, 0.0)(torch.zeros(1, 3, 8, dtype=torch.long)), "X"),
        (lambda: apply_rope(torch.zeros(1, 3, 8), offset=1.5), "offset"),
        (lambda: RotaryEmbedding(8)([0.0] * 8, torch.zeros(1, 3, 8)), "q"),
    ],
)
def test_type_errors_name_the_argument(call, name: str) -> None:
    with pytest.raises(TypeError, match=name):
        call()


def test_error_messages_say_what_came() -> None:
    with pytest.raises(TypeError, match=r"^max_len must be an int, got float 10.0: write max_len=10$"):
        sinusoidal_table(10.0, 8)
    with pytest.raises(ValueError, match=r"X has 6 tokens, more than max_len=5"):
        LearnedPositionalEmbedding(5, 4)(torch.zeros(1, 6, 4))
    with pytest.raises(ValueError, match=r"got 7"):
        sinusoidal_table(3, 7)
    with pytest.raises(ValueError, match=r"got shape \(1, 3, 6\)"):
        PositionalEncoding(8, 0.0)(torch.zeros(1, 3, 6))
