"""The running example ("O gato sobe no tapete", seed 42, a 2-head layer 3 -> 4) gives the same numbers every time.

Notebooks 05 and 06 print these embeddings, weights, per-head vectors and outputs; a change in mha_lib that moves
them (initialisation order, a different split into heads) fails here first, with the numbers side by side.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_lib import MultiHeadAttention
from mha_lib.tables import attention_table, concat_table, head_context_table, output_table
from mha_lib.tokenize import Vocab, tokenize

SENTENCE = "O gato sobe no tapete"
EMBEDDINGS = [
    [0.3367, 0.1288, 0.2345],
    [0.2303, -1.1229, -0.1863],
    [2.2082, -0.6380, 0.4617],
    [0.2674, 0.5349, 0.8094],
    [1.1103, -1.6898, -0.9890],
]
OUTPUT = [
    [0.3455, 0.0400, 0.1735, -0.3224],
    [0.3484, 0.0101, 0.1389, -0.2539],
    [0.4340, 0.2990, -0.0576, -0.1211],
    [0.4144, 0.2152, -0.0041, -0.1653],
    [0.4142, 0.1889, 0.0125, -0.1536],
]
WEIGHTS = [
    [
        [1.0, 0.0, 0.0, 0.0, 0.0],
        [0.495, 0.505, 0.0, 0.0, 0.0],
        [0.285, 0.266, 0.449, 0.0, 0.0],
        [0.259, 0.238, 0.252, 0.251, 0.0],
        [0.177, 0.193, 0.249, 0.183, 0.198],
    ],
    [
        [1.0, 0.0, 0.0, 0.0, 0.0],
        [0.457, 0.543, 0.0, 0.0, 0.0],
        [0.346, 0.418, 0.236, 0.0, 0.0],
        [0.236, 0.211, 0.305, 0.248, 0.0],
        [0.199, 0.286, 0.091, 0.166, 0.258],
    ],
]
OUTPUT_TABLE = [
    [0.346, 0.04, 0.173, -0.322],
    [0.348, 0.01, 0.139, -0.254],
    [0.434, 0.299, -0.058, -0.121],
    [0.414, 0.215, -0.004, -0.165],
    [0.414, 0.189, 0.012, -0.154],
]
HEAD_CONTEXT = [
    [[0.166, -0.226], [0.067, -0.143], [0.317, -0.58], [0.294, -0.455], [0.207, -0.429]],
    [[0.076, -0.059], [0.16, -0.299], [0.265, -0.402], [0.271, -0.355], [0.242, -0.386]],
]


def _running_example():
    torch.manual_seed(42)
    tokens = tokenize(SENTENCE)
    vocab = Vocab(tokens)
    ids = torch.tensor(vocab.encode(tokens))
    embedding = nn.Embedding(len(vocab), 3)
    x = embedding(ids).unsqueeze(0)  # (1, 5, 3)
    mha = MultiHeadAttention(3, 4, 5, 0.0, 2)
    return tokens, x, mha


def test_vocabulary_ids_follow_first_appearance() -> None:
    tokens = tokenize(SENTENCE)
    assert Vocab(tokens).encode(tokens) == [0, 1, 2, 3, 4]


def test_embeddings_and_output_are_the_printed_ones() -> None:
    _, x, mha = _running_example()
    torch.testing.assert_close(x[0], torch.tensor(EMBEDDINGS), atol=1e-4, rtol=0)
    torch.testing.assert_close(mha(x)[0], torch.tensor(OUTPUT), atol=1e-4, rtol=0)


def test_per_head_tables_are_the_printed_ones() -> None:
    tokens, x, mha = _running_example()
    trace = mha.trace(x)
    for head in range(2):
        table = attention_table(trace, tokens, head=head)
        assert list(table.index) == [f"Q:{t}" for t in tokens]
        assert list(table.columns) == [f"K:{t}" for t in tokens]
        assert table.round(3).values.tolist() == WEIGHTS[head]
        assert head_context_table(trace, tokens, head=head).round(3).values.tolist() == HEAD_CONTEXT[head]
    concat = concat_table(trace, tokens).round(3).values.tolist()
    assert concat == [h0 + h1 for h0, h1 in zip(*HEAD_CONTEXT)]
    assert output_table(trace, tokens).round(3).values.tolist() == OUTPUT_TABLE
