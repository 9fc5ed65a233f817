"""The mistakes students make with the layer and the toy model get a clear error: the argument, what was
expected, what came, and the fix (dtype, d2l-style lengths, empty sequences, NaN, vocabulary, context length)."""

from __future__ import annotations

import functools

import pytest
import torch

from mha_lib import AdditiveAttention, MultiHeadAttention, toy


@pytest.fixture
def mha() -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(8, 8, None, 0.0, 2)


@pytest.fixture
def cross() -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(8, 8, None, 0.0, 2, kv_dim=6)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_input_of_another_dtype_names_both_dtypes_and_the_fix(mha, cross, dtype) -> None:
    pattern = (rf"queries has dtype {dtype} but the layer's weights are torch.float32: convert it with"
               rf" queries.to\(torch.float32\) or the layer with layer.to\({dtype}\)")
    with pytest.raises(TypeError, match=pattern):
        mha(torch.randn(2, 3, 8, dtype=dtype))
    with pytest.raises(TypeError, match=rf"values has dtype {dtype}"):
        cross(torch.randn(2, 3, 8), torch.randn(2, 4, 6), torch.randn(2, 4, 6, dtype=dtype))
    assert mha.to(dtype)(torch.randn(2, 3, 8, dtype=dtype)).dtype == dtype, "the suggested fix works"


def test_autocast_may_mix_dtypes(mha) -> None:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = mha(torch.randn(2, 3, 8, dtype=torch.bfloat16))
    assert out.shape == (2, 3, 8)


def test_d2l_style_lengths_as_the_second_argument_point_to_valid_lens() -> None:
    mha = MultiHeadAttention(8, 8, None, 0.0, 2, causal=False)
    x = torch.randn(2, 3, 8)
    with pytest.raises(TypeError, match=r"keys must be a floating-point tensor .* got integers of shape \(2,\):"
                                        r" if these are padding lengths, pass them by name,"
                                        r" mha\(x, valid_lens=valid_lens\)"):
        mha(x, torch.tensor([3, 2]))
    with torch.no_grad():
        both = mha(x, valid_lens=torch.tensor([3, 2]))
        torch.testing.assert_close(both[1:], mha(x[1:], valid_lens=torch.tensor([2])))


def test_an_empty_sequence_is_refused_naming_the_argument(mha, cross) -> None:
    with pytest.raises(ValueError, match=r"queries must hold at least one token, got shape \(2, 0, 8\)"):
        mha(torch.randn(2, 0, 8))
    with pytest.raises(ValueError, match=r"queries must hold at least one token"):
        mha.trace(torch.randn(2, 0, 8))
    with pytest.raises(ValueError, match=r"keys must hold at least one token, got shape \(2, 0, 6\)"):
        cross(torch.randn(2, 3, 8), torch.randn(2, 0, 6), torch.randn(2, 0, 6))
    additive = AdditiveAttention(8, 6, 4)
    with pytest.raises(ValueError, match=r"queries must hold at least one token, got shape \(2, 0, 8\)"):
        additive(torch.randn(2, 0, 8), torch.randn(2, 3, 6), torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match=r"keys must hold at least one token"):
        additive(torch.randn(2, 1, 8), torch.randn(2, 0, 6), torch.randn(2, 0, 6))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_inputs_are_refused_with_a_count(mha, cross, bad: float) -> None:
    x = torch.randn(2, 3, 8)
    x[0, 1, 2] = bad
    kind = "1 NaN and 0 inf" if bad != bad else "0 NaN and 1 inf"
    with pytest.raises(ValueError, match=rf"queries must be finite, got {kind} of 48 values"):
        mha(x)
    with pytest.raises(ValueError, match="queries must be finite"):
        mha.trace(x)
    y = torch.randn(2, 4, 6)
    y[1, 0, 0] = bad
    with pytest.raises(ValueError, match="values must be finite"):
        cross(torch.randn(2, 3, 8), torch.randn(2, 4, 6), y)


def test_a_large_but_finite_input_is_accepted() -> None:
    mha = MultiHeadAttention(4, 4, None, 0.0, 1)
    x = torch.full((1, 2, 4), 3e38)  # the sum overflows to inf; the values do not
    with torch.no_grad():
        assert mha(x).shape == (1, 2, 4)


# ---------------------------------------------------------------------------------------- the toy model


def _model() -> toy.TinyTransformer:
    return toy.TinyTransformer(8, 10, d_model=16, num_heads=2, num_layers=1, seed=0)


def test_a_task_vocabulary_larger_than_the_models_is_named() -> None:
    model = _model()
    batch = toy.induction_task(2, 10, 16, max_period=5, seed=0)
    pattern = (r"tokens must be ids in \[0, 8\) \(the model's vocab_size\), got ids from 0 to 1[0-5]: build the"
               r" model with a vocab_size at least as large as the task's")
    with pytest.raises(ValueError, match=pattern):
        model(batch.inputs)
    with pytest.raises(ValueError, match=pattern):
        toy.task_loss(model, batch)
    task = functools.partial(toy.induction_task, length=10, vocab_size=16, max_period=5)
    with pytest.raises(ValueError, match=pattern):
        toy.train(model, task, steps=2, batch_size=4)
    with pytest.raises(ValueError, match=r"got ids from -1 to"):
        model(torch.tensor([[0, -1, 2]]))


def test_tokens_must_be_integers_within_the_context_length() -> None:
    model = _model()
    with pytest.raises(ValueError, match=r"tokens has 11 positions, more than the model's context_length=10"):
        model(torch.zeros(1, 11, dtype=torch.long))
    with pytest.raises(TypeError, match="tokens must hold integer token ids"):
        model(torch.zeros(1, 4))
    with pytest.raises(TypeError, match="tokens must be an integer tensor .* got list"):
        model([[1, 2, 3]])
    with pytest.raises(ValueError, match="tokens must hold at least one token"):
        model(torch.zeros(2, 0, dtype=torch.long))


def test_a_diverged_model_is_reported_not_propagated() -> None:
    model = _model()
    with torch.no_grad():
        model.embed.weight[3] = float("nan")
    with pytest.raises(ValueError, match="queries must be finite"):
        model(torch.tensor([[1, 3, 2]]))


def test_self_attention_on_a_cross_attention_layer_says_which_widths(cross) -> None:
    with pytest.raises(ValueError, match=r"this layer has kv_dim=6 and d_in=8: pass keys and values of width 6"):
        cross(torch.randn(2, 3, 8))


def test_toy_functions_name_what_they_expected() -> None:
    model = _model()
    batch = toy.induction_task(2, 10, 8, max_period=5, seed=0)
    with pytest.raises(TypeError, match="batch must be a TaskBatch"):
        toy.task_loss(model, batch.inputs)
    with pytest.raises(TypeError, match="model must be a TinyTransformer"):
        toy.accuracy(MultiHeadAttention(8, 8, None, 0.0, 2), batch)
    with pytest.raises(TypeError, match=r"head_gates must be a tensor of shape \(1, 2\)"):
        model(batch.inputs, head_gates=[[1.0, 0.0]])


# ---------------------------------------------------------------------------------------- no silent truthiness


@pytest.mark.parametrize(("option", "value", "hint"), [
    ("causal", "no", ""), ("causal", "False", ": write causal=False"), ("qkv_bias", "False", ": write qkv_bias=False"),
    ("qkv_bias", 1, ""), ("causal", None, ""), ("sink_logit", "yes", ""),
])
def test_boolean_options_refuse_what_is_not_a_bool(option: str, value: object, hint: str) -> None:
    got = f"{type(value).__name__} {value!r}"
    with pytest.raises(TypeError, match=rf"^{option} must be True or False, got {got}{hint}$"):
        MultiHeadAttention(8, 8, None, 0.0, 2, **{option: value})


def test_a_numpy_bool_is_a_bool() -> None:
    import numpy as np

    assert not MultiHeadAttention(8, 8, None, 0.0, 2, causal=np.bool_(False)).causal


def test_functions_with_a_causal_flag_refuse_a_str() -> None:
    from mha_lib import scaled_dot_product_attention, tiled_attention

    q = torch.randn(1, 3, 4)
    for fn in (scaled_dot_product_attention, tiled_attention):
        with pytest.raises(TypeError, match=r"causal must be True or False, got str 'no'"):
            fn(q, q, q, causal="no")
