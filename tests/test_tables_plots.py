"""mha_lib.tables and mha_lib.plots: labels, values, deterministic HTML, figures, errors."""

from __future__ import annotations

import dataclasses
import io
import math

import numpy as np
import pandas as pd
import pytest
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from torch import nn

from mha_lib import MultiHeadAttention
from mha_lib.mha import AttentionTrace
from mha_lib.plots import (
    plot_attention_heads,
    plot_head_lines,
    plot_head_table,
    plot_positional_curves,
    plot_positional_heatmap,
    show_heatmaps,
)
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
from mha_lib.toy import TinyTransformer

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


def test_show_heatmaps_without_a_colorbar_draws_on_every_matplotlib() -> None:
    """A two-valued mask gets a legend instead; removing the bar after the layout breaks matplotlib < 3.11."""
    fig = show_heatmaps(torch.rand(1, 2, 4, 4), "keys", "queries", vmin=0.0, vmax=1.0, colorbar=False)
    assert len(fig.axes) == 2 and all(ax.get_label() != "<colorbar>" for ax in fig.axes)
    fig.axes[-1].legend(handles=[Patch(color="k", label="may attend")], bbox_to_anchor=(1.03, 1.0))
    fig.savefig(io.BytesIO(), format="png", bbox_inches="tight")  # what the notebook's inline display does


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


def test_a_string_of_tokens_is_a_type_error(traced) -> None:
    _, _, trace = traced
    with pytest.raises(TypeError, match="q_tokens"):
        attention_table(trace, "O gato sobe no tapete")


def test_plot_head_table_returns_an_annotated_figure() -> None:
    table = pd.DataFrame({"a": [0.1, 0.9], "b": [0.5, 0.0]}, index=["L0H0", "L0H1"])
    fig = plot_head_table(table, title="scores")
    assert len(fig.axes) == 2  # the heatmap and its colour bar
    assert [t.get_text() for t in fig.axes[0].texts] == ["0.10", "0.50", "0.90", "0.00"]


# --- one vocabulary of errors: TypeError for a wrong type, ValueError for a wrong value, with the fix ---------------


@pytest.mark.parametrize(
    ("error", "call", "name"),
    [
        (ValueError, lambda tr: attention_table(tr, TOKENS, head=2), "head"),
        (ValueError, lambda tr: attention_table(tr, TOKENS, head=-1), "head"),
        (ValueError, lambda tr: attention_table(tr, TOKENS, batch=1), "batch"),
        (ValueError, lambda tr: attention_table(tr, TOKENS[:4]), "q_tokens"),
        (ValueError, lambda tr: qkv_tables(tr, TOKENS, head=5), "head"),
        (ValueError, lambda tr: head_context_table(tr, TOKENS + ["extra"]), "tokens"),
        (ValueError, lambda tr: concat_table(tr, TOKENS[:2]), "tokens"),
        (ValueError, lambda tr: output_table(tr, TOKENS, batch=3), "batch"),
        (ValueError, lambda tr: vectors_table(tr.concat, TOKENS), "vectors"),
        (ValueError, lambda tr: head_summary(tr, batch=1), "batch"),
        (ValueError, lambda tr: head_summary(tr.weights * 2), "weights"),
        (ValueError, lambda tr: head_summary(tr.weights[0, 0]), "weights"),
        (ValueError, lambda tr: plot_attention_heads(tr, TOKENS, heads=[2]), "heads"),
        (ValueError, lambda tr: plot_attention_heads(tr, TOKENS[:3]), "q_tokens"),
        (ValueError, lambda tr: plot_attention_heads(tr, TOKENS, ncols=0), "ncols"),
        (ValueError, lambda tr: plot_head_lines(tr, TOKENS, heads=[0, 7]), "heads"),
        (ValueError, lambda tr: plot_head_lines(tr, TOKENS[:4]), "tokens"),
        (ValueError, lambda tr: plot_head_lines(tr, TOKENS, query=5), "query"),
        (ValueError, lambda tr: show_heatmaps(tr.weights[0], "k", "q"), "matrices"),
        (TypeError, lambda tr: attention_table(tr, TOKENS, head=1.0), "head"),
        (TypeError, lambda tr: qkv_tables(tr, TOKENS, head=1.0), "head"),
        (TypeError, lambda tr: head_context_table(tr, TOKENS, head="1"), "head"),
        (TypeError, lambda tr: output_table(tr, TOKENS, batch=0.0), "batch"),
        (TypeError, lambda tr: plot_attention_heads(tr, TOKENS, heads=[1.0]), r"heads\[0\]"),
        (TypeError, lambda tr: plot_attention_heads(tr, TOKENS, batch=0.0), "batch"),
        (TypeError, lambda tr: plot_head_lines(tr, TOKENS, heads=[0, 1.0]), r"heads\[1\]"),
        (TypeError, lambda tr: plot_head_lines(tr, TOKENS, query=1.0), "query"),
        (TypeError, lambda tr: plot_attention_heads(tr, TOKENS, ncols=1.5), "ncols"),
        (TypeError, lambda tr: plot_head_lines(tr, "O gato sobe no tapete"), "tokens"),
        (TypeError, lambda tr: plot_head_lines(tr, torch.arange(5)), "tokens"),
        (TypeError, lambda tr: vectors_table(tr.concat[0].tolist(), TOKENS), "vectors"),
        (TypeError, lambda tr: show_heatmaps(tr.weights.tolist(), "k", "q"), "matrices"),
        (TypeError, lambda tr: plot_head_table(tr.weights[0, 0]), "table"),
    ],
)
def test_bad_arguments_raise_an_error_naming_them(traced, error, call, name) -> None:
    """A wrong value is a ValueError, a wrong type a TypeError; the message starts with the argument's name."""
    _, _, trace = traced
    with pytest.raises(error, match=rf"^{name}(\[\d+\])? must"):
        call(trace)


def test_a_float_head_index_is_the_same_type_error_in_tables_and_plots(traced) -> None:
    _, _, trace = traced
    with pytest.raises(TypeError, match=r"^head must be an int in \[0, 2\) .*got float 1.0: write head=1$"):
        attention_table(trace, TOKENS, head=1.0)
    with pytest.raises(TypeError, match=r"^heads\[0\] must be an int, got float 1.0: write heads=\[1\]$"):
        plot_attention_heads(trace, TOKENS, heads=[1.0])


def test_one_head_instead_of_a_list_gets_the_fix(traced) -> None:
    _, _, trace = traced
    for plot in (plot_attention_heads, plot_head_lines):
        with pytest.raises(TypeError, match=r"^heads must be a list of head indices, got int 1: write heads=\[1\]$"):
            plot(trace, TOKENS, heads=1)


def test_a_negative_head_says_heads_count_from_zero(traced) -> None:
    _, _, trace = traced
    with pytest.raises(ValueError, match=r"^head must be in \[0, 2\) .*got -1: count from 0, the last is 1$"):
        attention_table(trace, TOKENS, head=-1)


@pytest.mark.parametrize(
    "call",
    [
        lambda out: attention_table(out, TOKENS),
        lambda out: qkv_tables(out, TOKENS),
        lambda out: head_context_table(out, TOKENS),
        lambda out: concat_table(out, TOKENS),
        lambda out: output_table(out, TOKENS),
        lambda out: plot_attention_heads(out, TOKENS),
        lambda out: plot_head_lines(out, TOKENS),
    ],
)
def test_a_tensor_where_a_trace_goes_says_call_trace(traced, call) -> None:
    mha, x, _ = traced
    with torch.no_grad():
        out = mha(x)  # the output tensor, not a trace: a common slip
    with pytest.raises(TypeError, match=r"^trace must be an AttentionTrace, got a Tensor of shape \(1, 5, 4\): "
                                        r"call trace = mha.trace\(x\)"):
        call(out)


# --- NaN and inf: refused with a ValueError that counts them, never drawn as an empty cell -------------------------


def _poisoned(trace: AttentionTrace) -> AttentionTrace:
    weights = trace.weights.clone()
    weights[0, 0, 1, 0] = math.nan
    weights[0, 1, 2, 1] = math.inf
    return dataclasses.replace(trace, weights=weights)


@pytest.mark.parametrize(
    ("call", "name", "nan", "inf"),
    [
        (lambda tr: attention_table(tr, TOKENS), "weights", 1, 0),
        (lambda tr: weights_table(tr.weights[0, 1]), "weights", 0, 1),
        (lambda tr: vectors_table(torch.full((2, 3), math.nan)), "vectors", 6, 0),
        (lambda tr: style_weights(weights_table(torch.eye(2)).replace(0.0, math.nan)), "df", 2, 0),
        (lambda tr: head_summary(tr), r"trace\.weights", 1, 1),
        (lambda tr: head_summary(tr.weights), "weights", 1, 1),
        (lambda tr: plot_attention_heads(tr, TOKENS), r"trace\.weights", 1, 1),
        (lambda tr: plot_head_lines(tr, TOKENS), r"trace\.weights", 1, 1),
        (lambda tr: show_heatmaps(tr.weights, "k", "q"), "matrices", 1, 1),
        (lambda tr: plot_head_table(pd.DataFrame({"a": [math.nan, 0.5]})), "table", 1, 0),
        (lambda tr: plot_positional_curves(torch.full((4, 8), math.inf)), "table", 0, 32),
        (lambda tr: plot_positional_heatmap(torch.full((4, 8), math.nan)), "table", 32, 0),
    ],
)
def test_non_finite_values_raise_value_error_counting_them(traced, call, name, nan, inf) -> None:
    _, _, trace = traced
    with pytest.raises(ValueError, match=rf"^{name} must be finite, got {nan} NaN and {inf} inf of \d+ values"):
        call(_poisoned(trace))


def test_head_summary_of_cross_attention_has_no_diagonal_column() -> None:
    weights = torch.full((2, 3, 4), 0.25)  # (h, Tq, Tk), Tq != Tk
    summary = head_summary(weights)
    assert list(summary.columns) == ["entropy (bits)", "max entropy (bits)", "mean distance"]
    assert not summary.isna().any().any()


# --- token text is HTML-escaped in every styled table --------------------------------------------------------------

ODD_TOKENS = ["<pad>", "<script>alert(1)</script>", "a&b"]


def test_styled_table_escapes_token_text() -> None:
    table = weights_table(torch.full((3, 3), 1 / 3), ODD_TOKENS, ODD_TOKENS)
    page = style_weights(table, caption="<b>keys</b> & queries").to_html()
    assert page.count("Q:&lt;pad&gt;") == 1 and page.count("K:&lt;pad&gt;") == 1, "<pad> shows as text"
    assert "Q:&lt;script&gt;alert(1)&lt;/script&gt;" in page and "K:&lt;script&gt;" in page
    assert "<script>" not in page and "<pad>" not in page, "no token reaches the page as a tag"
    assert "Q:a&amp;b" in page and "&lt;b&gt;keys&lt;/b&gt; &amp; queries" in page


def test_styled_table_of_a_trace_escapes_padding_tokens(traced) -> None:
    _, _, trace = traced
    tokens = ["O", "gato", "<pad>", "<pad>", "<unk>"]
    page = style_weights(attention_table(trace, tokens), mask=trace.mask[0, 0]).to_html()
    assert "K:&lt;pad&gt; (2)" in page and "K:&lt;pad&gt; (3)" in page, "repeated tokens stay distinct"
    assert page.count("Q:&lt;unk&gt;") == 1 and ">K:gato<" in page, "a label said once keeps its text"
    assert "<pad>" not in page and "<unk>" not in page


# --- orientation: heatmap rows are queries, columns keys; the line view is not mirrored ------------------------------


@pytest.fixture
def lopsided() -> AttentionTrace:
    """A trace with non-symmetric weights: a transposed or mirrored drawing cannot pass for the right one."""
    torch.manual_seed(3)
    mha = MultiHeadAttention(4, 4, None, 0.0, 2, causal=False)
    with torch.no_grad():
        trace = mha.trace(torch.randn(1, 4, 4) * 3)
    assert not torch.allclose(trace.weights, trace.weights.transpose(-1, -2), atol=0.05)
    return trace


def test_heatmap_rows_are_queries_and_columns_keys(lopsided) -> None:
    fig = plot_attention_heads(lopsided, ["a", "b", "c", "d"], ["k0", "k1", "k2", "k3"])
    for head, ax in enumerate(fig.axes[:2]):
        image = np.asarray(ax.images[0].get_array())
        np.testing.assert_allclose(image, lopsided.weights[0, head].double().numpy())
        for text in ax.texts:  # each annotation sits at (x = key, y = query) and prints weights[query, key]
            q, k = round(text.get_position()[1]), round(text.get_position()[0])
            assert text.get_text() == f"{float(lopsided.weights[0, head, q, k]):.2f}"
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["a", "b", "c", "d"], "queries down the side"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["k0", "k1", "k2", "k3"], "keys across"
    assert fig.axes[0].get_ylabel() == "queries"
    assert fig.axes[1].get_xlabel() == "keys"


def test_causal_heatmap_is_lower_triangular(traced) -> None:
    _, _, trace = traced
    image = np.asarray(plot_attention_heads(trace, TOKENS).axes[0].images[0].get_array())
    assert np.all(np.triu(image, k=1) == 0) and np.all(np.diag(image) > 0), "query i sees keys j <= i"


def test_show_heatmaps_draws_each_matrix_as_given() -> None:
    matrices = torch.arange(24.0).reshape(1, 2, 3, 4)  # (rows, cols, height 3, width 4)
    fig = show_heatmaps(matrices, "keys", "queries")
    for c in range(2):
        np.testing.assert_array_equal(np.asarray(fig.axes[c].images[0].get_array()), matrices[0, c].numpy())


def _drawn_lines(ax) -> dict[tuple[int, int], tuple[float, float]]:
    """Each line of the line view as (query, key) -> (alpha, width), read from its end points."""
    drawn = {}
    for line in ax.lines:
        (x0, x1), (y0, y1) = line.get_xdata(), line.get_ydata()
        assert (x0, x1) == (0, 1), "every line runs from the query side (x=0) to the key side (x=1)"
        drawn[(round(y0), round(y1))] = (line.get_alpha(), line.get_linewidth())
    return drawn


def test_line_view_joins_query_on_the_left_to_key_on_the_right(lopsided) -> None:
    tokens = ["a", "b", "c", "d"]
    fig = plot_head_lines(lopsided, tokens, min_weight=0.0)
    for head, ax in enumerate(fig.axes):
        w = lopsided.weights[0, head].double()
        drawn = _drawn_lines(ax)
        assert set(drawn) == {(q, k) for q in range(4) for k in range(4)}
        for (q, k), (alpha, width) in drawn.items():
            assert alpha == pytest.approx(min(1.0, 0.15 + float(w[q, k])))
            assert width == pytest.approx(0.5 + 4 * float(w[q, k]))
        left = [t for t in ax.texts if t.get_position()[0] < 0.5]
        right = [t for t in ax.texts if t.get_position()[0] > 0.5]
        assert left[-1].get_text() == "queries" and right[-1].get_text() == "keys"
        assert all(t.get_ha() == "right" for t in left) and all(t.get_ha() == "left" for t in right)


def test_line_view_of_one_query_draws_only_its_row(lopsided) -> None:
    ax = plot_head_lines(lopsided, ["a", "b", "c", "d"], heads=[1], query=2, min_weight=0.1).axes[0]
    drawn = _drawn_lines(ax)
    expected = {(2, k) for k in range(4) if float(lopsided.weights[0, 1, 2, k]) >= 0.1}
    assert set(drawn) == expected and expected
    bold = [t.get_text() for t in ax.texts if t.get_fontweight() == "bold"]
    assert bold == ["c"], "the chosen query is marked on the query side"


def test_plot_head_table_labels_layer_head_rows() -> None:
    index = pd.MultiIndex.from_tuples([(0, 0), (0, 1), (1, 10)], names=["layer", "head"])
    fig = plot_head_table(pd.DataFrame({"score": [0.1, 0.5, 0.9]}, index=index))
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["L0H0", "L0H1", "L1H10"]


def test_a_model_trace_where_a_layer_trace_goes_says_which_to_pass() -> None:
    model = TinyTransformer(8, 16, d_model=8, num_heads=2, num_layers=2, seed=0)
    with torch.no_grad():
        blocks = model.trace(torch.tensor([[1, 2, 3]]))
    with pytest.raises(TypeError, match=r"^trace must be an AttentionTrace, got a list of 2: .* trace\[layer\]\.attn$"):
        plot_attention_heads(blocks, ["a", "b", "c"])
    with pytest.raises(TypeError, match=r"^trace must be an AttentionTrace, got a BlockTrace: pass .* trace\.attn$"):
        attention_table(blocks[1], ["a", "b", "c"])
    assert attention_table(blocks[1].attn, ["a", "b", "c"]).shape == (3, 3)


# --- details a wrong implementation would get wrong ------------------------------------------------------------------


def test_head_summary_averages_only_rows_with_a_visible_key() -> None:
    weights = torch.tensor([[[0.5, 0.5], [0.0, 0.0]]])  # (h=1, 2, 2): query 1 sees no key at all
    mask = torch.tensor([[[True, True], [False, False]]])
    summary = head_summary(weights, mask=mask)
    assert summary.loc["head 0", "entropy (bits)"] == pytest.approx(1.0), "the empty row is not averaged in as 0"
    assert summary.loc["head 0", "mean distance"] == pytest.approx(0.5)


def test_head_summary_refuses_negative_weights_even_when_rows_sum_to_one() -> None:
    with pytest.raises(ValueError, match="^weights must be non-negative"):
        head_summary(torch.tensor([[[1.5, -0.5], [0.5, 0.5]]]))


def test_style_weights_shades_on_a_fixed_zero_to_one_scale() -> None:
    import matplotlib as mpl
    from matplotlib.colors import to_hex

    half = to_hex(mpl.colormaps["Reds"](0.5))
    for matrix in ([[0.5, 0.5]], [[0.5, 0.5], [0.9, 0.1]]):  # the same weight, the same colour, whatever else is shown
        page = style_weights(weights_table(torch.tensor(matrix))).to_html()
        assert f"background-color: {half}" in page


def _lines_trace(traced: tuple, weights: torch.Tensor) -> AttentionTrace:
    """The fixture's trace, cut to 2 tokens, with hand-set weights (h=2, 2, 2) and no mask."""
    _, _, trace = traced
    small = {name: getattr(trace, name)[..., :2, :] for name in ("queries", "keys", "values", "head_context")}
    return dataclasses.replace(trace, **small, weights=weights[None], mask=torch.ones(1, 2, 2, 2, dtype=torch.bool),
                               scores=weights[None], concat=trace.concat[:, :2], output=trace.output[:, :2])


def test_line_view_draws_a_weight_equal_to_min_weight_and_keeps_the_head_order(traced) -> None:
    weights = torch.tensor([[[0.5, 0.5], [0.25, 0.75]], [[1.0, 0.0], [0.0, 1.0]]])  # (h, T, T)
    trace = _lines_trace(traced, weights)
    fig = plot_head_lines(trace, ["a", "b"], heads=[1, 0], min_weight=0.25)
    assert [ax.get_title() for ax in fig.axes] == ["head 1", "head 0"], "panels in the order asked for"
    assert set(_drawn_lines(fig.axes[0])) == {(0, 0), (1, 1)}
    assert set(_drawn_lines(fig.axes[1])) == {(0, 0), (0, 1), (1, 0), (1, 1)}, "0.25 >= min_weight is drawn"


def test_heatmap_panels_follow_the_heads_asked_for(lopsided) -> None:
    fig = plot_attention_heads(lopsided, ["a", "b", "c", "d"], heads=[1, 0])
    assert [ax.get_title() for ax in fig.axes[:2]] == ["head 1", "head 0"]
    np.testing.assert_allclose(np.asarray(fig.axes[0].images[0].get_array()), lopsided.weights[0, 1].double().numpy())


def test_heatmap_greys_hidden_keys_and_writes_only_visible_weights(traced) -> None:
    _, _, trace = traced  # causal, 5 tokens: 15 visible cells per head, 10 hidden
    ax = plot_attention_heads(trace, TOKENS).axes[0]
    assert len(ax.images) == 2, "the weights, then a grey layer over the hidden keys"
    grey = np.asarray(np.ma.filled(ax.images[1].get_array(), np.nan))
    np.testing.assert_array_equal(np.isnan(grey), trace.mask[0, 0].numpy(), "grey exactly where the mask hides")
    assert len(ax.texts) == 15
    for text in ax.texts:  # dark cells get white text
        q, k = round(text.get_position()[1]), round(text.get_position()[0])
        assert text.get_color() == ("white" if float(trace.weights[0, 0, q, k]) > 0.6 else "black")


def test_positional_curves_draw_the_columns_asked_for() -> None:
    table = torch.arange(40.0).reshape(5, 8)  # (positions, d)
    ax = plot_positional_curves(table, columns=(1, 6)).axes[0]
    assert [line.get_label() for line in ax.lines] == ["col 1", "col 6"]
    np.testing.assert_array_equal(ax.lines[1].get_ydata(), table[:, 6].numpy())
    np.testing.assert_array_equal(ax.lines[1].get_xdata(), np.arange(5))


def test_a_dollar_in_a_token_is_drawn_as_text_not_as_a_formula(lopsided) -> None:
    tokens = ["$x$", "US$5", "a", "b"]
    heat = plot_attention_heads(lopsided, tokens)
    assert [t.get_text() for t in heat.axes[0].get_yticklabels()][:2] == [r"\$x\$", r"US\$5"]
    lines = plot_head_lines(lopsided, tokens)
    assert r"\$x\$" in [t.get_text() for t in lines.axes[0].texts]
    heat.savefig(io.BytesIO(), format="png")  # a lone "$x$" would be typeset as maths; escaped, it draws as text
    assert plot_head_lines(lopsided, [r"\$x\$", "US$5", "a", "b"]).axes[0].texts[0].get_text() == r"\$x\$", (
        "escaping twice changes nothing"
    )
