"""mha_lib.tables and mha_lib.plots: labels, values, deterministic HTML, figures, errors."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from matplotlib.figure import Figure
from torch import nn

from mha_lib import MultiHeadAttention
from mha_lib.mha import AttentionTrace
from mha_lib.plots import plot_attention_heads, plot_head_lines, plot_head_table, show_heatmaps
from mha_lib.tables import (
    attention_table,
    concat_table,
    head_context_table,
    head_summary,
    output_table,
    qkv_tables,
    style_weights,
    vectors_table,
    weights_table,
)

TOKENS = ["O", "gato", "sobe", "no", "tapete"]


@pytest.fixture
def traced() -> tuple[MultiHeadAttention, torch.Tensor, AttentionTrace]:
    torch.manual_seed(42)
    x = nn.Embedding(5, 3)(torch.arange(5))[None].detach()  # (1, 5, 3)
    mha = MultiHeadAttention(3, 4, 5, 0.0, 2)
    with torch.no_grad():
        return mha, x, mha.trace(x)


def _values(df: pd.DataFrame) -> torch.Tensor:
    return torch.tensor(df.to_numpy(), dtype=torch.float32)


def test_tables_have_token_labels_and_equal_the_trace(traced) -> None:
    _, _, trace = traced
    for head in range(trace.num_heads):
        table = attention_table(trace, TOKENS, head=head)
        assert list(table.index) == [f"Q:{t}" for t in TOKENS]
        assert list(table.columns) == [f"K:{t}" for t in TOKENS]
        torch.testing.assert_close(_values(table), trace.weights[0, head])
        qkv = qkv_tables(trace, TOKENS, head=head)
        for name, tensor in (("Q", trace.queries), ("K", trace.keys), ("V", trace.values)):
            assert list(qkv[name].index) == TOKENS and list(qkv[name].columns) == ["dim0", "dim1"]
            torch.testing.assert_close(_values(qkv[name]), tensor[0, head])
        torch.testing.assert_close(_values(head_context_table(trace, TOKENS, head=head)), trace.head_context[0, head])
    concat = concat_table(trace, TOKENS)
    assert list(concat.columns) == ["h0.d0", "h0.d1", "h1.d0", "h1.d1"]
    torch.testing.assert_close(_values(concat), trace.concat[0])
    out = output_table(trace, TOKENS)
    assert list(out.columns) == ["out0", "out1", "out2", "out3"]
    torch.testing.assert_close(_values(out), trace.output[0])


def test_weights_table_defaults_to_positions() -> None:
    table = weights_table(torch.eye(3))
    assert list(table.index) == ["Q:0", "Q:1", "Q:2"] and list(table.columns) == ["K:0", "K:1", "K:2"]


def test_style_weights_html_is_deterministic_and_shows_row_sums(traced) -> None:
    _, _, trace = traced
    table = attention_table(trace, TOKENS, head=0)
    first = style_weights(table, caption="head 0").to_html()
    second = style_weights(attention_table(trace, TOKENS, head=0), caption="head 0").to_html()
    assert first == second
    assert "row sum" in first and first.count(">1.000<") >= 5  # one per row (and the 1.0 of the first query)
    assert repr(style_weights(table, caption="head 0")) == (
        "<styled weights table 'head 0': 5 queries x 5 keys, with row sums>"
    ), "a text form without a memory address"
    other = style_weights(attention_table(trace, TOKENS, head=1), caption="head 1").to_html()
    assert first.split('id="')[1].split('"')[0] != other.split('id="')[1].split('"')[0], "distinct ids per table"


def test_style_weights_mask_dots_hidden_keys(traced) -> None:
    _, _, trace = traced
    html = style_weights(attention_table(trace, TOKENS), mask=trace.mask[0, 0]).to_html()
    assert html.count(">·<") == 10  # the 10 keys above the diagonal of a causal 5 x 5 table
    with pytest.raises(ValueError, match="mask"):
        style_weights(attention_table(trace, TOKENS), mask=torch.ones(4, 4, dtype=torch.bool))


def test_head_summary_on_hand_built_weights() -> None:
    t = 6
    weights = torch.stack([torch.eye(t), torch.full((t, t), 1.0 / t)])  # (2, T, T): identity, uniform
    summary = head_summary(weights)
    assert list(summary.index) == ["head 0", "head 1"]
    identity, uniform = summary.loc["head 0"], summary.loc["head 1"]
    assert identity["diagonal share"] == pytest.approx(1.0)
    assert identity["entropy (bits)"] == pytest.approx(0.0, abs=1e-12)
    assert identity["mean distance"] == pytest.approx(0.0)
    assert uniform["entropy (bits)"] == pytest.approx(math.log2(t))
    assert uniform["max entropy (bits)"] == pytest.approx(math.log2(t))
    assert uniform["diagonal share"] == pytest.approx(1.0 / t)
    assert uniform["mean distance"] == pytest.approx((t * t - 1) / (3 * t))  # mean |i - j| over a t x t grid


def test_head_summary_of_a_trace_uses_its_mask(traced) -> None:
    _, _, trace = traced
    summary = head_summary(trace)
    expected = sum(math.log2(k) for k in range(1, 6)) / 5  # query i sees i + 1 keys
    assert summary["max entropy (bits)"].tolist() == pytest.approx([expected, expected])
    batched = head_summary(trace.weights, mask=trace.mask)
    pd.testing.assert_frame_equal(summary, batched)


def test_show_heatmaps_returns_a_figure_with_a_colorbar() -> None:
    fig = show_heatmaps(torch.rand(2, 3, 4, 4), "keys", "queries", titles=["a", "b", "c"])
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2 * 3 + 1
    assert fig.axes[-1].get_label() == "<colorbar>"


def test_plot_attention_heads_and_lines_run(traced) -> None:
    _, _, trace = traced
    fig = plot_attention_heads(trace, TOKENS)
    assert isinstance(fig, Figure) and len(fig.axes) == trace.num_heads + 1
    assert [ax.get_title() for ax in fig.axes[:2]] == ["head 0", "head 1"]
    grid = plot_attention_heads(trace, TOKENS, heads=[1], ncols=1, annotate=False)
    assert len(grid.axes) == 2 and grid.axes[0].get_title() == "head 1"
    lines = plot_head_lines(trace, TOKENS)
    assert isinstance(lines, Figure) and len(lines.axes) == trace.num_heads
    assert len(plot_head_lines(trace, TOKENS, heads=[0], query=2).axes) == 1


def test_plot_attention_heads_grid_wraps() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 8, None, 0.0, 4, causal=False)
    with torch.no_grad():
        trace = mha.trace(torch.randn(1, 3, 8))
    fig = plot_attention_heads(trace, ["a", "b", "c"], ncols=3)  # 2 rows x 3 columns, one slot empty
    assert len(fig.axes) == 6 + 1
    assert [ax.get_visible() for ax in fig.axes[:6]] == [True] * 4 + [False] * 2


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda tr: attention_table(tr, TOKENS, head=2), "head"),
        (lambda tr: attention_table(tr, TOKENS, head=-1), "head"),
        (lambda tr: attention_table(tr, TOKENS, batch=1), "batch"),
        (lambda tr: attention_table(tr, TOKENS[:4]), "q_tokens"),
        (lambda tr: qkv_tables(tr, TOKENS, head=5), "head"),
        (lambda tr: head_context_table(tr, TOKENS + ["extra"]), "tokens"),
        (lambda tr: concat_table(tr, TOKENS[:2]), "tokens"),
        (lambda tr: output_table(tr, TOKENS, batch=3), "batch"),
        (lambda tr: vectors_table(tr.concat, TOKENS), "vectors"),
        (lambda tr: head_summary(tr, batch=1), "batch"),
        (lambda tr: head_summary(tr.weights * 2), "weights"),
        (lambda tr: head_summary(tr.weights[0, 0]), "weights"),
        (lambda tr: plot_attention_heads(tr, TOKENS, heads=[2]), "heads"),
        (lambda tr: plot_attention_heads(tr, TOKENS[:3]), "q_tokens"),
        (lambda tr: plot_attention_heads(tr, TOKENS, ncols=0), "ncols"),
        (lambda tr: plot_head_lines(tr, TOKENS, heads=[0, 7]), "heads"),
        (lambda tr: plot_head_lines(tr, TOKENS[:4]), "tokens"),
        (lambda tr: plot_head_lines(tr, TOKENS, query=5), "query"),
        (lambda tr: show_heatmaps(tr.weights[0], "k", "q"), "matrices"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(traced, call, name) -> None:
    _, _, trace = traced
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        call(trace)


def test_a_string_of_tokens_is_a_type_error(traced) -> None:
    _, _, trace = traced
    with pytest.raises(TypeError, match="q_tokens"):
        attention_table(trace, "O gato sobe no tapete")


def test_plot_head_table_returns_an_annotated_figure() -> None:
    table = pd.DataFrame({"a": [0.1, 0.9], "b": [0.5, 0.0]}, index=["L0H0", "L0H1"])
    fig = plot_head_table(table, title="scores")
    assert len(fig.axes) == 2  # the heatmap and its colour bar
    assert [t.get_text() for t in fig.axes[0].texts] == ["0.10", "0.50", "0.90", "0.00"]
