"""An ipywidgets explorer of attention heads: type a sentence, pick a layer and a head, toggle the causal mask.

``attention_explorer(model, vocab, sentence)`` returns an ``AttentionExplorer``, an ``ipywidgets.VBox`` with a
``Text`` (description ``"sentence"``, redraws on Enter), a ``Dropdown`` ``"layer"`` (a ``TinyTransformer`` only),
a ``Dropdown`` ``"head"`` (one head, or all), ``ToggleButtons`` ``"view"`` (heatmap or line view), a
``Checkbox`` ``"causal"`` and an ``Output`` that shows the figure. ``model`` is either

* a trained ``mha_lib.toy.TinyTransformer``, with ``vocab`` a ``Vocab`` or the list of token names
  (name ``i`` is token id ``i``, e.g. ``["BOS", "a", "b", ...]``); or
* one ``MultiHeadAttention`` layer, with ``vocab`` a ``(Vocab, nn.Embedding)`` pair or a function
  tokens -> ``(1, T, d_in)``.

The figure is drawn in the kernel, written as a PNG into the ``Output`` widget's state (the ``outputs`` trait,
the same in ipywidgets 7 and 8) and never sent as a cell output: executing a notebook that shows the explorer
leaves one widget output whose text is fixed, so ``pytest --nbval`` sees the same text on every run. The line
above the figure is a text stream, never HTML, so a token such as ``<pad>`` or ``<script>`` stays text.
``explorer.figure()`` returns the current figure without any display (for tests and scripts).

A pretrained encoder works too (notebook 12): ``attention_explorer(minilm.encoder, minilm.tokenizer, sentence)``
with a ``mha_lib.bert.BertEncoder`` and its ``mha_lib.pretrained.WordPieceTokenizer`` (or simply
``attention_explorer(minilm, None, sentence)`` with the ``pretrained.MiniLM``). The sentence is typed as plain
text and cut into WordPiece tokens, ``[CLS]`` and ``[SEP]`` included; the layer dropdown runs over its blocks.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, cast

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from mha_lib._validate import _got, check_choice, check_index, check_probability, check_str
from mha_lib.bert import BertEncoder
from mha_lib.i18n import _, ngettext
from mha_lib.mha import AttentionTrace, MultiHeadAttention
from mha_lib.plots import plot_attention_heads, plot_head_lines
from mha_lib.tokenize import UNK, Vocab, tokenize
from mha_lib.toy.model import TinyTransformer

if TYPE_CHECKING:  # the tokenizer's module needs the optional `tokenizers` package only when one is built
    from mha_lib.pretrained import MiniLM, WordPieceTokenizer

EmbedFn = Callable[[Sequence[str]], Tensor]
ALL_HEADS = -1
VIEWS = ("heatmap", "lines")
_SHOWN_KNOWN = 24  # how many known tokens an "unknown token" message lists


def embedder(vocab: Vocab, embedding: nn.Embedding) -> EmbedFn:
    """Tokens -> ``(1, T, d_model)`` vectors through ``vocab`` and ``embedding`` (unknown tokens need ``<unk>``)."""
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a mha_lib.tokenize.Vocab, got {type(vocab).__name__}")
    if not isinstance(embedding, nn.Embedding):
        raise TypeError(f"embedding must be a torch.nn.Embedding, got {type(embedding).__name__}")
    if embedding.num_embeddings < len(vocab):
        raise ValueError(
            f"embedding must have a row per vocabulary entry, got num_embeddings={embedding.num_embeddings}"
            f" for a vocabulary of {len(vocab)}"
        )

    def embed(tokens: Sequence[str]) -> Tensor:
        ids = torch.tensor(vocab.encode(list(tokens)), dtype=torch.long, device=embedding.weight.device)
        return embedding(ids)[None]  # (1, T, d_model)

    embed.vocab = vocab  # type: ignore[attr-defined]  # lets the explorer name the unknown words
    return embed


def _token_vocab(vocab: object) -> Vocab:
    """A ``Vocab`` from a ``Vocab`` or a list of distinct token names (name ``i`` = id ``i``)."""
    if isinstance(vocab, Vocab):
        return vocab
    if isinstance(vocab, str) or not isinstance(vocab, Sequence):
        raise TypeError(
            "vocab must be a mha_lib.tokenize.Vocab or a list of token names (name i = token id i) for a"
            f" TinyTransformer, got {type(vocab).__name__}"
        )
    names = list(vocab)
    if not all(isinstance(n, str) and n and not n.isspace() and n.split() == [n] for n in names):
        raise ValueError("vocab must hold non-empty token names without spaces (the sentence is split on spaces)")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"vocab must name every token id once, got repeated names: {', '.join(repeated)}")
    return Vocab(names)


@contextmanager
def _causal(layers: Sequence[MultiHeadAttention], causal: bool) -> Iterator[None]:
    """Run ``layers`` with ``causal`` for the duration of a ``with`` block, then restore their settings."""
    with ExitStack() as stack:
        for layer in layers:
            saved = layer.causal
            stack.callback(setattr, layer, "causal", saved)
            layer.causal = causal
        yield


def _attention_trace(item: object) -> AttentionTrace:
    """The attention trace of one layer, from what ``TinyTransformer.trace`` returns for it."""
    if isinstance(item, AttentionTrace):
        return item
    for name in ("attention", "attn", "attention_trace"):
        inner = getattr(item, name, None)
        if isinstance(inner, AttentionTrace):
            return inner
    raise TypeError(f"cannot find the attention trace in a {type(item).__name__}")


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class AttentionExplorer(widgets.VBox):
    """A VBox that redraws one head (or all) of one layer of ``model`` for the sentence typed in ``text``.

    ``min_weight``: the line view's threshold; ``None`` draws weights above ``1.3 / T`` (a bit over uniform).
    """

    def __init__(
        self,
        model: MultiHeadAttention | TinyTransformer | BertEncoder | MiniLM,
        vocab: Vocab | Sequence[str] | EmbedFn | tuple[Vocab, nn.Embedding] | WordPieceTokenizer | None,
        sentence: str,
        *,
        layer: int | None = None,
        head: int = ALL_HEADS,
        causal: bool | None = None,
        view: str = "heatmap",
        lower: bool = False,
        min_weight: float | None = None,
    ) -> None:
        self.embed: EmbedFn | None = None
        self.vocab: Vocab | None = None
        self.tokenizer: WordPieceTokenizer | None = None
        if hasattr(model, "encoder") and hasattr(model, "tokenizer") and isinstance(model.encoder, BertEncoder):
            vocab = cast("WordPieceTokenizer", model.tokenizer) if vocab is None else vocab  # a pretrained.MiniLM
            model = model.encoder  # its encoder, its tokenizer
        self.model = cast("MultiHeadAttention | TinyTransformer | BertEncoder", model)
        if isinstance(model, BertEncoder):
            if not callable(getattr(vocab, "encode", None)):
                raise TypeError("vocab must be the model's tokenizer (a mha_lib.pretrained.WordPieceTokenizer, e.g."
                                f" minilm.tokenizer) for a BertEncoder, got {_got(vocab)}")
            self.tokenizer = vocab  # type: ignore[assignment]
            self._layers = [cast(MultiHeadAttention, block.attn) for block in model.blocks]
        elif isinstance(model, TinyTransformer):
            self.vocab = _token_vocab(vocab)
            if len(self.vocab) > model.vocab_size:
                raise ValueError(f"vocab names {len(self.vocab)} tokens, more than the model's "
                                 f"vocab_size={model.vocab_size}")
            self._layers = [cast(MultiHeadAttention, block.attn) for block in model.blocks]
        elif isinstance(model, MultiHeadAttention):
            if isinstance(vocab, tuple):
                vocab = embedder(*vocab)
            if not callable(vocab):
                raise TypeError("vocab must be a (Vocab, nn.Embedding) pair or a function tokens -> (1, T, d_in)"
                                f" for a MultiHeadAttention layer, got {type(vocab).__name__}")
            self.embed = vocab
            self.vocab = getattr(vocab, "vocab", None)
            self._layers = [model]
        else:
            raise TypeError(f"model must be a mha_lib.MultiHeadAttention, a mha_lib.toy.TinyTransformer or a "
                            f"mha_lib.bert.BertEncoder, got {type(model).__name__}")
        check_str("sentence", sentence)
        num_layers, num_heads = len(self._layers), self._layers[0].num_heads
        layer = num_layers - 1 if layer is None else check_index("layer", layer, num_layers, what=" (None = the last)")
        if head != ALL_HEADS or isinstance(head, bool):
            head = check_index("head", head, num_heads, what=" (or -1 for all heads)")
        check_choice("view", view, VIEWS)
        if min_weight is not None:
            min_weight = check_probability("min_weight", min_weight)
        self.lower = lower
        self.min_weight = min_weight
        self.text = widgets.Text(value=sentence, description=_("sentence"), continuous_update=False,
                                 layout=widgets.Layout(width="36em"))
        self.layer: widgets.Dropdown | None = None
        if isinstance(model, (TinyTransformer, BertEncoder)):
            self.layer = widgets.Dropdown(options=[(_("layer {layer}").format(layer=i), i) for i in range(num_layers)],
                                          value=layer, description=_("layer"), layout=widgets.Layout(width="13em"))
        options = [(_("all heads"), ALL_HEADS)] + [(_("head {head}").format(head=h), h) for h in range(num_heads)]
        self.head = widgets.Dropdown(options=options, value=head, description=_("head"),
                                     layout=widgets.Layout(width="13em"))
        views = {"heatmap": _("heatmap"), "lines": _("lines")}  # the value stays the code's name
        self.view = widgets.ToggleButtons(options=[(views[v], v) for v in VIEWS], value=view, description=_("view"))
        start = self._layers[0].causal if causal is None else bool(causal)
        self.causal = widgets.Checkbox(value=start, description=_("causal"), indent=False)
        self.output = widgets.Output()
        controls = [c for c in (self.layer, self.head, self.view, self.causal) if c is not None]
        super().__init__(children=[self.text, widgets.HBox(controls), self.output])
        for control in [self.text, *controls]:
            control.observe(self._changed, names="value")
        self.update()

    def __repr__(self) -> str:
        # The text/plain of the widget output (ipywidgets cuts it at 110 characters): fixed, short, and
        # readable where widgets do not run (GitHub). It names the explorer and its starting state.
        sentence = self.text.value if len(self.text.value) <= 40 else self.text.value[:39] + "…"
        num_heads = self._layers[0].num_heads
        if self.head.value == ALL_HEADS:
            head = _("all heads of {count}").format(count=num_heads)
        else:
            head = _("head {head} of {count}").format(head=self.head.value, count=num_heads)
        layer = "" if self.layer is None else _("layer {layer}").format(layer=self.layer.value) + ", "
        return f"AttentionExplorer({sentence!r}, {layer}{head}, causal={self.causal.value})"

    def tokens(self) -> list[str]:
        """The typed sentence, split into tokens (a BertEncoder's: WordPiece tokens, [CLS] and [SEP] included)."""
        if self.tokenizer is not None:
            return self.tokenizer.encode(self.text.value).tokens[0] if self.text.value.strip() else []
        return tokenize(self.text.value, lower=self.lower)

    def unknown(self) -> list[str]:
        """The typed tokens the vocabulary does not know, each once, in order."""
        if self.vocab is None:
            return []
        return list(dict.fromkeys(t for t in self.tokens() if t not in self.vocab))

    def _known(self) -> str:
        assert self.vocab is not None
        names = [t for t in self.vocab.idx_to_token if t != UNK]
        more = " … " + _("({count} in all)").format(count=len(names)) if len(names) > _SHOWN_KNOWN else ""
        return " ".join(names[:_SHOWN_KNOWN]) + more

    def trace(self) -> AttentionTrace:
        """Trace the chosen layer on the typed sentence with the chosen causal setting (no gradients)."""
        tokens = self.tokens()
        if not tokens:
            raise ValueError(_("sentence must hold at least one token, got an empty sentence"))
        limit = self._layers[0].context_length
        if isinstance(self.model, BertEncoder):
            limit = self.model.config.max_positions
        if limit is not None and len(tokens) > limit:
            raise ValueError(_("sentence has {count} tokens, more than the model's context_length={limit}").format(
                count=len(tokens), limit=limit))
        unknown = self.unknown()
        if unknown and self.vocab is not None and (self.vocab.unk_id is None or len(unknown) == len(set(tokens))):
            why = "" if self.vocab.unk_id is None else " " + _("(all would be the same {unk} vector: a flat picture)"
                                                                 ).format(unk=UNK)
            raise ValueError(ngettext("sentence: {tokens} is not in the vocabulary{why}; type tokens separated by"
                                      " spaces from: {known}",
                                      "sentence: {tokens} are not in the vocabulary{why}; type tokens separated by"
                                      " spaces from: {known}", len(unknown)).format(
                tokens=", ".join(unknown), why=why, known=self._known()))
        with torch.no_grad(), _causal(self._layers, self.causal.value):
            if isinstance(self.model, BertEncoder):
                assert self.tokenizer is not None
                ids = self.tokenizer.encode(self.text.value).ids.to(self.model.device)  # (1, T), no padding
                return self.model.trace(ids)[self._layer()].attn
            if isinstance(self.model, TinyTransformer):
                device = next(self.model.parameters()).device
                ids = torch.tensor([self.vocab.encode(tokens)], dtype=torch.long, device=device)  # type: ignore[union-attr]
                return _attention_trace(self.model.trace(ids)[self._layer()])
            assert self.embed is not None
            x = self.embed(tokens)
            if not isinstance(x, Tensor) or x.dim() == 2:
                x = torch.as_tensor(x)[None]
            if x.shape != (1, len(tokens), self.model.d_in):
                raise ValueError(
                    f"embed must return shape (1, {len(tokens)}, {self.model.d_in}) (1, tokens, d_in) "
                    f"for {len(tokens)} tokens, got {tuple(x.shape)}"
                )
            return self.model.trace(x)

    def _layer(self) -> int:
        return 0 if self.layer is None else self.layer.value

    def figure(self) -> Figure:
        """The figure for the current sentence, layer, head, view and causal setting (nothing is displayed)."""
        trace = self.trace()
        tokens = self.tokens()  # mha_lib.plots draws a "$" in a token as a dollar sign
        heads = None if self.head.value == ALL_HEADS else [self.head.value]
        if self.view.value == "lines":
            # By default draw only weights clearly above the uniform 1/T; below that every head is a solid block.
            min_weight = max(0.05, 1.3 / len(tokens)) if self.min_weight is None else self.min_weight
            fig = plot_head_lines(trace, tokens, heads=heads, min_weight=min(min_weight, 0.99),
                                  size=2.4 if heads is None else 3.2)
        else:
            ncols = math.ceil(math.sqrt(trace.num_heads)) if heads is None else 1  # 4 heads: a 2 x 2 grid
            fig = plot_attention_heads(trace, tokens, heads=heads, ncols=ncols, annotate=len(tokens) <= 8,
                                       size=3.2 if heads is None else 4.0)
        if self.layer is not None:
            fig.suptitle(_("layer {layer}").format(layer=self._layer()))
        return fig

    def message(self) -> str:
        """A line about the sentence: how many tokens, and which ones the vocabulary does not know."""
        unknown = self.unknown()
        count = len(self.tokens())
        text = ngettext("{count} token", "{count} tokens", count).format(count=count)
        if self.tokenizer is not None:
            text += " " + _("(WordPiece, [CLS] and [SEP] included)")
        if unknown:
            text += _("; not in the vocabulary, embedded as {unk}: {tokens}").format(unk=UNK, tokens=", ".join(unknown))
        return text

    def update(self) -> None:
        """Redraw: put the figure (or the reason there is none) into the ``Output`` widget's state."""
        try:
            fig = self.figure()
        except ValueError as err:
            self.output.outputs = ({"output_type": "stream", "name": "stdout", "text": f"{err}\n"},)
            return
        self.output.outputs = (
            {"output_type": "stream", "name": "stdout", "text": self.message() + "\n"},
            {"output_type": "display_data", "metadata": {},
             "data": {"image/png": _png(fig), "text/plain": "<attention figure>"}},
        )

    def _changed(self, _change: dict) -> None:
        self.update()


def attention_explorer(
    model: MultiHeadAttention | TinyTransformer | BertEncoder | MiniLM,
    vocab: Vocab | Sequence[str] | EmbedFn | tuple[Vocab, nn.Embedding] | WordPieceTokenizer | None,
    sentence: str,
    *,
    layer: int | None = None,
    head: int = ALL_HEADS,
    causal: bool | None = None,
    view: str = "heatmap",
    lower: bool = False,
    min_weight: float | None = None,
) -> AttentionExplorer:
    """An ``ipywidgets.VBox`` to explore the heads of ``model`` on any sentence typed as space-separated tokens.

    ``model`` is a ``TinyTransformer`` (``vocab``: a ``Vocab`` or the token names, name ``i`` = id ``i``;
    ``layer`` starts on the last layer by default), a ``MultiHeadAttention`` layer (``vocab``: a
    ``(Vocab, nn.Embedding)`` pair or a function tokens -> ``(1, T, d_in)``), or a ``bert.BertEncoder`` with its
    ``pretrained.WordPieceTokenizer`` (a ``pretrained.MiniLM`` brings its own: ``vocab=None``). ``head=-1`` shows
    every head; ``causal=None`` starts from the model's setting, which is restored after every redraw.
    """
    return AttentionExplorer(model, vocab, sentence, layer=layer, head=head, causal=causal, view=view,
                             lower=lower, min_weight=min_weight)
