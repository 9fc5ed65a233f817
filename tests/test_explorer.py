"""mha_lib.explorer: widgets, a redraw on every control, escaping, bad input, a trained TinyTransformer."""

from __future__ import annotations

import base64
import functools
import io

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from torch import nn

from mha_lib import MultiHeadAttention, toy
from mha_lib.tokenize import Vocab

widgets = pytest.importorskip("ipywidgets")
from mha_lib.explorer import AttentionExplorer, attention_explorer  # noqa: E402

TOKENS = ["O", "gato", "sobe", "no", "tapete"]
LETTERS = ["BOS"] + [chr(ord("a") + i) for i in range(15)]  # token id i is named LETTERS[i]


@pytest.fixture
def layer() -> MultiHeadAttention:
    torch.manual_seed(42)
    return MultiHeadAttention(3, 4, 5, 0.0, 2)  # causal, 2 heads, at most 5 tokens


@pytest.fixture
def explorer(layer) -> AttentionExplorer:
    torch.manual_seed(0)
    vocab = Vocab(TOKENS, unk=True)
    return attention_explorer(layer, (vocab, nn.Embedding(len(vocab), 3)), "O gato sobe")


@pytest.fixture(scope="module")
def induction_model() -> toy.TinyTransformer:
    """A 2-layer attention-only model trained on repeated patterns (about 2 s on one CPU thread)."""
    task = functools.partial(toy.induction_task, length=24, vocab_size=16, min_period=4, max_period=10)
    model = toy.TinyTransformer(16, 24, d_model=32, num_heads=2, num_layers=2, seed=0)
    toy.train(model, task, steps=400, batch_size=32, lr=5e-3, seed=0, threads=1, progress=False)
    return model


def _png(explorer: AttentionExplorer) -> bytes:
    outputs = explorer.output.outputs
    assert [o["output_type"] for o in outputs] == ["stream", "display_data"], outputs
    return base64.b64decode(outputs[1]["data"]["image/png"])


def _message(explorer: AttentionExplorer) -> str:
    return explorer.output.outputs[0]["text"]


class TestLayer:
    def test_builds_its_widgets(self, explorer) -> None:
        assert isinstance(explorer, widgets.VBox)
        assert isinstance(explorer.text, widgets.Text) and explorer.text.value == "O gato sobe"
        assert explorer.text.continuous_update is False, "redraws on Enter, not on every key"
        assert isinstance(explorer.head, widgets.Dropdown) and len(explorer.head.options) == 2 + 1
        assert isinstance(explorer.view, widgets.ToggleButtons)
        assert isinstance(explorer.causal, widgets.Checkbox) and explorer.causal.value is True
        assert isinstance(explorer.output, widgets.Output)
        assert explorer.layer is None, "one layer: no layer control"
        assert _png(explorer).startswith(b"\x89PNG")

    def test_controls_have_stable_descriptions(self, explorer) -> None:
        descriptions = [explorer.text.description, explorer.head.description, explorer.view.description,
                        explorer.causal.description]
        assert descriptions == ["sentence", "head", "view", "causal"]

    def test_every_control_redraws(self, explorer) -> None:
        before = _png(explorer)
        for control, value in ((explorer.head, 1), (explorer.view, "lines"), (explorer.causal, False),
                               (explorer.text, "gato no tapete")):
            control.value = value
            after = _png(explorer)
            assert after != before, f"changing {control.description} redraws"
            before = after
        assert _message(explorer) == "3 tokens\n"

    def test_figure_rows_are_queries(self, explorer) -> None:
        explorer.head.value = 0
        fig = explorer.figure()
        ax = fig.axes[0]
        weights = explorer.trace().weights[0, 0].numpy()  # (Tq, Tk)
        np.testing.assert_allclose(ax.images[0].get_array(), weights, rtol=0, atol=1e-6)
        assert [t.get_text() for t in ax.get_yticklabels()] == ["O", "gato", "sobe"]
        assert ax.get_ylabel() == "queries" and ax.get_xlabel() == "keys"
        image = np.asarray(ax.images[0].get_array())
        assert image[0, 0] == pytest.approx(1.0) and (image[0, 1:] == 0).all(), "causal: row 0 sees key 0 only"

    def test_update_draws_without_a_display(self, explorer) -> None:
        fig = explorer.figure()
        assert isinstance(fig, Figure) and len(fig.axes) == 2 + 1
        explorer.head.value = 1
        explorer.view.value = "lines"
        explorer.text.value = "gato rato no"  # 'rato' is not in the vocabulary: <unk>
        assert len(explorer.figure().axes) == 1
        assert "rato" in _message(explorer) and "<unk>" in _message(explorer)
        assert explorer.trace().weights.shape == (1, 2, 3, 3)

    def test_causal_toggle_restores_the_layer(self, explorer) -> None:
        explorer.causal.value = False
        weights = explorer.trace().weights
        assert explorer.model.causal is True, "the layer's own setting is restored"
        assert weights[0, :, 0, 1:].sum() > 0, "without the mask the first token sees later ones"

    def test_repr_is_fixed_and_short(self, explorer) -> None:
        assert repr(explorer) == "AttentionExplorer('O gato sobe', all heads of 2, causal=True)"
        explorer.text.value = "O gato sobe no tapete " * 5
        assert len(repr(explorer)) <= 110

    def test_bad_sentences_become_a_message(self, explorer) -> None:
        explorer.text.value = "   "
        assert _message(explorer).startswith("sentence must hold at least one token")
        explorer.text.value = "O gato sobe no tapete O"
        assert "context_length=5" in _message(explorer)
        explorer.text.value = "the cat sat"  # every token unknown: all <unk>, a flat picture, so no picture
        assert len(explorer.output.outputs) == 1
        assert "the, cat, sat are not in the vocabulary" in _message(explorer)
        assert "O gato sobe no tapete" in _message(explorer), "the message lists the known tokens"

    def test_token_text_stays_text(self, layer) -> None:
        vocab = Vocab(["<script>alert(1)</script>", "$x$", "a"], pad=True, unk=True)
        explorer = attention_explorer(layer, (vocab, nn.Embedding(len(vocab), 3)),
                                      "<pad> <script>alert(1)</script> $x$ <b>")
        for output in explorer.output.outputs:  # a text stream and a PNG: nothing a browser parses as HTML
            assert output["output_type"] in ("stream", "display_data")
            assert "text/html" not in output.get("data", {})
        assert "<b>" in _message(explorer), "the unknown token is named as it was typed"
        labels = [t.get_text() for t in explorer.figure().axes[0].get_yticklabels()]
        assert labels[:2] == ["<pad>", "<script>alert(1)</script>"] and labels[2] == r"\$x\$"

    def test_bad_arguments(self, layer) -> None:
        embed = (Vocab(TOKENS, unk=True), nn.Embedding(6, 3))
        with pytest.raises(ValueError, match="^head"):
            attention_explorer(layer, embed, "O gato", head=2)
        with pytest.raises(ValueError, match="^layer"):
            attention_explorer(layer, embed, "O gato", layer=1)
        with pytest.raises(ValueError, match="^view"):
            attention_explorer(layer, embed, "O gato", view="3d")
        with pytest.raises(ValueError, match="^embed"):
            attention_explorer(layer, lambda tokens: torch.zeros(1, len(tokens), 7), "O gato").figure()
        with pytest.raises(ValueError, match="^embedding"):
            attention_explorer(layer, (Vocab(TOKENS, unk=True), nn.Embedding(2, 3)), "O gato")
        with pytest.raises(TypeError, match="^vocab"):
            attention_explorer(layer, Vocab(TOKENS), "O gato")
        with pytest.raises(TypeError, match="^model"):
            attention_explorer(nn.Linear(3, 4), embed, "O gato")
        with pytest.raises(TypeError, match="^sentence"):
            attention_explorer(layer, embed, ["O", "gato"])
        with pytest.raises(TypeError, match="^head"):
            attention_explorer(layer, embed, "O gato", head=1.0)
        with pytest.raises(ValueError, match="^min_weight"):
            attention_explorer(layer, embed, "O gato", min_weight=2.0)


class TestTinyTransformer:
    def test_layer_and_head_controls(self) -> None:
        model = toy.TinyTransformer(16, 24, d_model=16, num_heads=2, num_layers=3, seed=0)
        explorer = attention_explorer(model, LETTERS, "BOS a b c a b c")
        assert isinstance(explorer.layer, widgets.Dropdown) and explorer.layer.description == "layer"
        assert explorer.layer.value == 2, "starts on the last layer"
        assert [v for _, v in explorer.layer.options] == [0, 1, 2]
        assert repr(explorer) == "AttentionExplorer('BOS a b c a b c', layer 2, all heads of 2, causal=True)"
        before = _png(explorer)
        explorer.layer.value = 0
        assert _png(explorer) != before, "changing the layer redraws"
        with torch.no_grad():
            expected = model.attention(torch.tensor([[0, 1, 2, 3, 1, 2, 3]]))[0, 0]  # layer 0: (h, T, T)
        torch.testing.assert_close(explorer.trace().weights[0], expected)
        assert explorer.figure()._suptitle.get_text() == "layer 0"

    def test_causal_toggle_restores_every_layer(self) -> None:
        model = toy.TinyTransformer(16, 24, d_model=16, num_heads=2, num_layers=2, seed=0)
        explorer = attention_explorer(model, LETTERS, "BOS a b c", layer=0)
        explorer.causal.value = False
        assert explorer.trace().weights[0, :, 0, 1:].sum() > 0
        assert all(block.attn.causal for block in model.blocks)

    def test_unknown_tokens_get_a_message_not_a_picture(self) -> None:
        model = toy.TinyTransformer(16, 24, d_model=16, num_heads=2, num_layers=2, seed=0)
        explorer = attention_explorer(model, LETTERS, "the cat sat on the mat")
        assert len(explorer.output.outputs) == 1
        text = _message(explorer)
        assert text.startswith("sentence: the, cat, sat, on, mat are not in the vocabulary")
        assert "BOS a b c d e f g h i j k l m n o" in text
        explorer.text.value = "a b z"
        assert "z is not in the vocabulary" in _message(explorer)
        explorer.text.value = " ".join(["a"] * 25)
        assert "context_length=24" in _message(explorer)

    def test_bad_vocab(self) -> None:
        model = toy.TinyTransformer(4, 8, d_model=8, num_heads=2, num_layers=1, seed=0)
        with pytest.raises(ValueError, match="^vocab names 5 tokens"):
            attention_explorer(model, ["a", "b", "c", "d", "e"], "a b")
        with pytest.raises(ValueError, match="repeated names: a"):
            attention_explorer(model, ["a", "a", "b"], "a b")
        with pytest.raises(ValueError, match="without spaces"):
            attention_explorer(model, ["a b", "c"], "a b")
        with pytest.raises(TypeError, match="^vocab"):
            attention_explorer(model, "abcd", "a b")
        with pytest.raises(ValueError, match="^layer"):
            attention_explorer(model, ["a", "b"], "a b", layer=1)

    def test_a_repeated_pattern_lights_up_the_induction_head(self, induction_model) -> None:
        explorer = attention_explorer(induction_model, LETTERS, "BOS c a f b c a f b c")
        assert explorer.layer.value == 1 and _message(explorer) == "10 tokens\n"
        weights = explorer.trace().weights  # (1, h, T, T), layer 1
        tokens = torch.tensor([toy.BOS, 3, 1, 6, 2, 3, 1, 6, 2, 3])[None]
        induction = toy.induction_score(weights, tokens)  # (h,)
        assert float(induction.max()) > 0.8, induction
        # Query 5 (the second c) puts its largest weight on key 2 (the a after the first c).
        best = int(induction.argmax())
        assert int(weights[0, best, 5].argmax()) == 2

    def test_a_figure_per_head_and_view(self, induction_model) -> None:
        explorer = attention_explorer(induction_model, LETTERS, "BOS a b c a b c", head=0, view="lines")
        fig = explorer.figure()
        assert len(fig.axes) == 1 and fig.axes[0].get_title() == "head 0"
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        assert buffer.getvalue().startswith(b"\x89PNG")
