"""Bad input gets a clear error naming the argument, what was expected and what came: one test per case."""

from __future__ import annotations

import math

import pytest
import torch

from mha_lib import MultiHeadAttention, merge_heads, scaled_dot_product_attention, split_heads, transpose_output
from mha_lib.attention import AdditiveAttention, causal_mask, masked_softmax, valid_lens_mask
from mha_lib.tokenize import Vocab
from mha_lib.toy import TinyTransformer


@pytest.fixture
def mha() -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(4, 6, 5, 0.0, 2)


def x(batch: int = 2, tokens: int = 3, width: int = 4) -> torch.Tensor:
    return torch.randn(batch, tokens, width)


def test_d_out_not_divisible_by_num_heads() -> None:
    with pytest.raises(ValueError, match=r"d_out must be divisible by num_heads, got d_out=6 and num_heads=4"):
        MultiHeadAttention(4, 6, 5, 0.0, 4)


@pytest.mark.parametrize("num_heads", [0, -2])
def test_num_heads_below_one(num_heads) -> None:
    with pytest.raises(ValueError, match=rf"num_heads must be >= 1, got {num_heads}"):
        MultiHeadAttention(4, 6, 5, 0.0, num_heads)


def test_num_heads_not_an_int() -> None:
    with pytest.raises(TypeError, match=r"num_heads must be an int, got float 2.0"):
        MultiHeadAttention(4, 6, 5, 0.0, 2.0)


@pytest.mark.parametrize("dropout", [1.0, -0.1, 1.5])
def test_dropout_outside_unit_interval(dropout) -> None:
    with pytest.raises(ValueError, match=rf"dropout must be in \[0, 1\), got {dropout}"):
        MultiHeadAttention(4, 6, 5, dropout, 2)


def test_context_length_below_one() -> None:
    with pytest.raises(ValueError, match=r"context_length must be >= 1, got 0"):
        MultiHeadAttention(4, 6, 0, 0.0, 2)


def test_queries_not_3d(mha) -> None:
    with pytest.raises(ValueError, match=r"queries must have shape \(batch, queries, d_in\) \(3-D\), got \(3, 4\)"):
        mha(torch.randn(3, 4))


def test_keys_not_3d(mha) -> None:
    with pytest.raises(ValueError, match=r"keys must have shape \(batch, keys, kv_dim\) \(3-D\), got \(5, 4\)"):
        mha(x(), torch.randn(5, 4), torch.randn(5, 4))


def test_wrong_feature_width(mha) -> None:
    with pytest.raises(ValueError, match=r"queries must have last dimension d_in=4, got shape \(2, 3, 5\)"):
        mha(x(width=5))


def test_wrong_key_width() -> None:
    mha = MultiHeadAttention(4, 6, None, 0.0, 2, kv_dim=3)
    with pytest.raises(ValueError, match=r"keys must have last dimension kv_dim=3, got shape \(2, 3, 4\)"):
        mha(x(), x(), x())


def test_integer_ids_instead_of_embeddings(mha) -> None:
    with pytest.raises(TypeError, match=r"queries must be a floating-point tensor .* got dtype torch.int64"):
        mha(torch.tensor([[0, 1, 2]]))


def test_not_a_tensor(mha) -> None:
    with pytest.raises(TypeError, match=r"queries must be a torch.Tensor .* got list"):
        mha([[0.0, 1.0, 2.0, 3.0]])


def test_sequence_longer_than_context_length(mha) -> None:
    with pytest.raises(ValueError, match=r"queries has 6 tokens, more than context_length=5"):
        mha(x(tokens=6))


def test_keys_longer_than_context_length(mha) -> None:
    with pytest.raises(ValueError, match=r"keys has 7 tokens, more than context_length=5"):
        mha(x(), x(tokens=7), x(tokens=7))


def test_valid_lens_wrong_shape(mha) -> None:
    with pytest.raises(ValueError, match=r"valid_lens must have shape \(2,\) or \(2, 3\) .* got \(3,\)"):
        mha(x(), valid_lens=torch.tensor([1, 2, 3]))


def test_valid_lens_negative(mha) -> None:
    with pytest.raises(ValueError, match=r"valid_lens must lie in \[0, 3\] .* got values from -1 to 2"):
        mha(x(), valid_lens=torch.tensor([-1, 2]))


def test_valid_lens_longer_than_keys(mha) -> None:
    with pytest.raises(ValueError, match=r"valid_lens must lie in \[0, 3\] .* got values from 2 to 4"):
        mha(x(), valid_lens=torch.tensor([2, 4]))


def test_valid_lens_not_integers(mha) -> None:
    with pytest.raises(TypeError, match=r"valid_lens must hold integers, got dtype torch.float32"):
        mha(x(), valid_lens=torch.tensor([1.0, 2.0]))


def test_valid_lens_not_a_tensor(mha) -> None:
    with pytest.raises(TypeError, match=r"valid_lens must be a torch.Tensor of integers, got list"):
        mha(x(), valid_lens=[1, 2])


def test_keys_and_values_of_different_lengths(mha) -> None:
    with pytest.raises(ValueError, match=r"keys and values must have the same length, got \(2, 4, 4\) and \(2, 5, 4\)"):
        mha(x(), x(tokens=4), x(tokens=5))


def test_batch_sizes_differ(mha) -> None:
    with pytest.raises(ValueError, match=r"same batch size, got 2, 3 and 3"):
        mha(x(), x(batch=3), x(batch=3))


def test_keys_without_values(mha) -> None:
    with pytest.raises(ValueError, match=r"values is None: pass both keys and values"):
        mha(x(), x())


def test_head_gates_wrong_shape(mha) -> None:
    with pytest.raises(ValueError, match=r"head_gates must be a tensor of shape \(2,\) .* got \(3,\)"):
        mha(x(), head_gates=torch.ones(3))


def test_unknown_token_without_unk() -> None:
    vocab = Vocab("O gato sobe".split())
    with pytest.raises(ValueError, match=r"token 'cão' is not in the vocabulary .* has no <unk>"):
        vocab.encode(["O", "cão"])


def test_split_heads_not_divisible() -> None:
    with pytest.raises(ValueError, match=r"last dimension of x \(6\) must be divisible by num_heads \(4\)"):
        split_heads(x(width=6), 4)


def test_merge_heads_wrong_rank() -> None:
    with pytest.raises(ValueError, match=r"x must have shape \(batch, heads, tokens, head_dim\) \(4-D\), got"):
        merge_heads(x())


def test_transpose_output_batch_not_divisible() -> None:
    with pytest.raises(ValueError, match=r"first dimension of x \(5\) must be divisible by num_heads \(2\)"):
        transpose_output(torch.randn(5, 3, 2), 2)


def test_sdpa_query_key_widths_differ() -> None:
    with pytest.raises(ValueError, match=r"k must have the same last dimension as q \(4\), got \(2, 3, 5\)"):
        scaled_dot_product_attention(x(), x(width=5), x())


def test_sdpa_ranks_differ() -> None:
    with pytest.raises(ValueError, match=r"q, k and v must have the same rank"):
        scaled_dot_product_attention(x(), torch.randn(2, 1, 3, 4), x())


def test_sdpa_mask_not_bool() -> None:
    with pytest.raises(TypeError, match=r"attn_mask must be a bool tensor \(True = may attend\), got torch.float32"):
        scaled_dot_product_attention(x(), x(), x(), attn_mask=torch.ones(3, 3))


def test_sdpa_mask_wrong_shape() -> None:
    with pytest.raises(ValueError, match=r"attn_mask must broadcast to \(\.\.\., 3, 3\) .* got \(4, 4\)"):
        scaled_dot_product_attention(x(), x(), x(), attn_mask=torch.ones(4, 4, dtype=torch.bool))


def test_sdpa_dropout_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"dropout_p must be in \[0, 1\), got 1.0"):
        scaled_dot_product_attention(x(), x(), x(), dropout_p=1.0)


def test_masked_softmax_wrong_rank() -> None:
    with pytest.raises(ValueError, match=r"scores must have shape .* got \(3, 4\)"):
        masked_softmax(torch.randn(3, 4), torch.tensor([1, 2, 3]))


def test_valid_lens_mask_wrong_rank() -> None:
    expected = r"valid_lens must have shape \(batch,\) or \(batch, queries\), got \(1, 2, 3\)"
    with pytest.raises(ValueError, match=expected):
        valid_lens_mask(torch.ones(1, 2, 3, dtype=torch.long), 2, 3)


def test_causal_mask_sizes() -> None:
    with pytest.raises(ValueError, match=r"num_keys must be >= 1, got 0"):
        causal_mask(3, 0)


def test_additive_attention_lengths_differ() -> None:
    attention = AdditiveAttention(4, 4, 8)
    with pytest.raises(ValueError, match=r"keys and values must have the same length, got 3 and 2"):
        attention(x(), x(), x(tokens=2))


# --- the mistakes students make most: a clear TypeError or ValueError with the fix, never a raw PyTorch error ------


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16])
def test_input_of_another_float_dtype_than_the_layer(mha, dtype) -> None:
    expected = (rf"^queries has dtype {dtype} but the layer's weights are torch.float32: "
                rf"convert it with queries.to\(torch.float32\) or the layer with layer.to\({dtype}\)$")
    with pytest.raises(TypeError, match=expected):
        mha(x().to(dtype))


def test_padding_lengths_passed_by_position_as_in_d2l(mha) -> None:
    expected = (r"^keys must be a floating-point tensor .* got integers of shape \(2,\): "
                r"if these are padding lengths, pass them by name, mha\(x, valid_lens=valid_lens\)")
    with pytest.raises(TypeError, match=expected):
        mha(x(), torch.tensor([2, 3]))


@pytest.mark.parametrize("call", ["forward", "trace"])
def test_an_empty_sequence(mha, call) -> None:
    with pytest.raises(ValueError, match=r"^queries must hold at least one token, got shape \(2, 0, 4\)"):
        getattr(mha, call)(torch.randn(2, 0, 4))


@pytest.mark.parametrize("call", ["forward", "trace"])
def test_nan_and_inf_inputs_are_refused_with_a_count(mha, call) -> None:
    bad = x()
    bad[0, 0, :2] = torch.tensor([math.nan, math.inf])
    with pytest.raises(ValueError, match=r"^queries must be finite, got 1 NaN and 1 inf of 24 values"):
        getattr(mha, call)(bad)


def test_a_model_vocabulary_smaller_than_the_task() -> None:
    model = TinyTransformer(8, 16, d_model=8, num_heads=2, num_layers=1, seed=0)
    expected = (r"^tokens must be ids in \[0, 8\) \(the model's vocab_size\), got ids from 0 to 11: "
                r"build the model with a vocab_size at least as large")
    with pytest.raises(ValueError, match=expected):
        model(torch.tensor([[0, 3, 11]]))


def test_a_head_label_where_a_layer_head_tuple_goes() -> None:
    model = TinyTransformer(8, 16, d_model=8, num_heads=2, num_layers=1, seed=0)
    with pytest.raises(TypeError, match=r"got str 'L0H1': labels like 'L0H1' are for printing only"):
        model.patch_head("L0H1", torch.zeros_like)


def test_a_float_where_an_int_goes_gets_the_fix() -> None:
    with pytest.raises(TypeError, match=r"^d_out must be an int, got float 6.0: write d_out=6$"):
        MultiHeadAttention(4, 6.0, 5, 0.0, 2)


def test_embeddings_where_token_ids_go() -> None:
    model = TinyTransformer(8, 16, d_model=8, num_heads=2, num_layers=1, seed=0)
    with pytest.raises(TypeError, match=r"^tokens must hold integer token ids, got dtype torch.float32: pass ids"):
        model(torch.randn(2, 5))


def test_one_sequence_without_its_batch_axis() -> None:
    model = TinyTransformer(8, 16, d_model=8, num_heads=2, num_layers=1, seed=0)
    with pytest.raises(ValueError, match=r"^tokens must have shape \(batch, tokens\), got \(5,\): add the batch axis"):
        model(torch.tensor([1, 2, 3, 4, 5]))


def test_valid_lens_mask_of_a_list() -> None:
    with pytest.raises(TypeError, match=r"^valid_lens must be a torch.Tensor of integers, got list$"):
        valid_lens_mask([1, 2], 3, 3)


def test_an_unknown_choice_lists_the_choices() -> None:
    with pytest.raises(ValueError, match=r"^positions must be one of 'learned', 'sinusoidal', got 'rope'$"):
        TinyTransformer(8, 16, positions="rope")
