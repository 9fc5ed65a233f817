"""An ipywidgets explorer of attention heads: type a sentence, pick a head, toggle the causal mask.

``attention_explorer(mha, embed, sentence)`` returns an ``AttentionExplorer``, an ``ipywidgets.VBox`` with a
``Text`` (the sentence), a ``Dropdown`` (which head, or all), ``ToggleButtons`` (heatmap or line view), a
``Checkbox`` (causal) and an ``Output`` that shows the figure. The figure is drawn in the kernel, written as
a PNG into the ``Output`` widget's state, and never sent as a cell output: executing a notebook that shows
the explorer leaves one widget output whose text is fixed, so ``pytest --nbval`` sees the same text on
every run. ``explorer.figure()`` returns the current figure without any display (for tests and scripts).
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from mha_lib.mha import AttentionTrace, MultiHeadAttention
from mha_lib.plots import plot_attention_heads, plot_head_lines
from mha_lib.tokenize import UNK, Vocab, tokenize

EmbedFn = Callable[[Sequence[str]], Tensor]
ALL_HEADS = -1
VIEWS = ("heatmap", "lines")


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
        ids = torch.tensor(vocab.encode(list(tokens)), dtype=torch.long)
        return embedding(ids)[None]  # (1, T, d_model)

    embed.vocab = vocab  # type: ignore[attr-defined]  # lets the explorer name the unknown words
    return embed


@contextmanager
def _causal(mha: MultiHeadAttention, causal: bool) -> Iterator[None]:
    """Run ``mha`` with ``causal`` for the duration of a ``with`` block, then restore its setting."""
    saved = mha.causal
    mha.causal = causal
    try:
        yield
    finally:
        mha.causal = saved


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class AttentionExplorer(widgets.VBox):
    """A VBox that redraws one head (or all) of ``mha`` for the sentence typed in ``text``.

    ``min_weight``: the line view's threshold; ``None`` draws weights above ``1.3 / T`` (a bit over uniform).
    """

    def __init__(
        self,
        mha: MultiHeadAttention,
        embed: EmbedFn | tuple[Vocab, nn.Embedding],
        sentence: str,
        *,
        head: int = ALL_HEADS,
        causal: bool | None = None,
        view: str = "heatmap",
        lower: bool = False,
        min_weight: float | None = None,
    ) -> None:
        if not isinstance(mha, MultiHeadAttention):
            raise TypeError(f"mha must be a mha_lib.MultiHeadAttention, got {type(mha).__name__}")
        if isinstance(embed, tuple):
            embed = embedder(*embed)
        if not callable(embed):
            raise TypeError(f"embed must be a function tokens -> (1, T, d_model) or a (vocab, embedding) pair, "
                            f"got {type(embed).__name__}")
        if not isinstance(sentence, str):
            raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
        if isinstance(head, bool) or not isinstance(head, int) or not (head == ALL_HEADS or 0 <= head < mha.num_heads):
            raise ValueError(f"head must be -1 (all heads) or an int in [0, {mha.num_heads}), got {head!r}")
        if view not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
        self.mha = mha
        self.embed = embed
        self.lower = lower
        self.min_weight = min_weight
        self.text = widgets.Text(value=sentence, description="sentence", continuous_update=False,
                                 layout=widgets.Layout(width="32em"))
        options = [("all heads", ALL_HEADS)] + [(f"head {h}", h) for h in range(mha.num_heads)]
        self.head = widgets.Dropdown(options=options, value=head, description="head",
                                     layout=widgets.Layout(width="13em"))
        self.view = widgets.ToggleButtons(options=list(VIEWS), value=view)
        self.causal = widgets.Checkbox(value=mha.causal if causal is None else bool(causal), description="causal",
                                       indent=False)
        self.output = widgets.Output()
        super().__init__(children=[self.text, widgets.HBox([self.head, self.view, self.causal]), self.output])
        for control in (self.text, self.head, self.view, self.causal):
            control.observe(self._changed, names="value")
        self.update()

    def __repr__(self) -> str:
        # The text/plain of the widget output (ipywidgets cuts it at 110 characters): fixed, short, and
        # readable where widgets do not run (GitHub). It names the explorer and its starting state.
        sentence = self.text.value if len(self.text.value) <= 44 else self.text.value[:43] + "…"
        head = "all heads" if self.head.value == ALL_HEADS else f"head {self.head.value}"
        return f"AttentionExplorer({sentence!r}, {head} of {self.mha.num_heads}, causal={self.causal.value})"

    def tokens(self) -> list[str]:
        """The typed sentence, split into tokens."""
        return tokenize(self.text.value, lower=self.lower)

    def trace(self) -> AttentionTrace:
        """Trace ``mha`` on the typed sentence with the chosen causal setting (no gradients)."""
        tokens = self.tokens()
        if not tokens:
            raise ValueError("sentence must hold at least one token, got an empty sentence")
        limit = self.mha.context_length
        if limit is not None and len(tokens) > limit:
            raise ValueError(f"sentence has {len(tokens)} tokens, more than the layer's context_length={limit}")
        with torch.no_grad(), _causal(self.mha, self.causal.value):
            x = self.embed(tokens)
            if not isinstance(x, Tensor) or x.dim() == 2:
                x = torch.as_tensor(x)[None]
            if x.shape != (1, len(tokens), self.mha.d_in):
                raise ValueError(
                    f"embed must return shape (1, {len(tokens)}, {self.mha.d_in}) (1, tokens, d_in) "
                    f"for {len(tokens)} tokens, got {tuple(x.shape)}"
                )
            return self.mha.trace(x)

    def figure(self) -> Figure:
        """The figure for the current sentence, head, view and causal setting (nothing is displayed)."""
        trace = self.trace()
        tokens = self.tokens()
        heads = None if self.head.value == ALL_HEADS else [self.head.value]
        if self.view.value == "lines":
            # By default draw only weights clearly above the uniform 1/T; below that every head is a solid block.
            min_weight = max(0.05, 1.3 / len(tokens)) if self.min_weight is None else self.min_weight
            return plot_head_lines(trace, tokens, heads=heads, min_weight=min(min_weight, 0.99),
                                   size=2.4 if heads is None else 3.2)
        ncols = math.ceil(math.sqrt(trace.num_heads)) if heads is None else 1  # 4 heads: a 2 x 2 grid
        return plot_attention_heads(trace, tokens, heads=heads, ncols=ncols, annotate=len(tokens) <= 8,
                                    size=3.2 if heads is None else 4.0)

    def message(self) -> str:
        """A line about the sentence: how many tokens, and which ones the vocabulary does not know."""
        tokens = self.tokens()
        vocab = getattr(self.embed, "vocab", None)
        unknown = [t for t in tokens if vocab is not None and t not in vocab]
        text = f"{len(tokens)} tokens"
        if unknown:
            text += f"; not in the vocabulary, embedded as {UNK}: {', '.join(unknown)}"
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
    mha: MultiHeadAttention,
    embed: EmbedFn | tuple[Vocab, nn.Embedding],
    sentence: str,
    *,
    head: int = ALL_HEADS,
    causal: bool | None = None,
    view: str = "heatmap",
    lower: bool = False,
    min_weight: float | None = None,
) -> AttentionExplorer:
    """An ``ipywidgets.VBox`` to explore ``mha``'s heads on any sentence; ``embed``: tokens -> ``(1, T, d_in)``.

    ``embed`` is a function or a ``(vocab, embedding)`` pair; ``head=-1`` shows every head; ``causal=None``
    starts from ``mha.causal``. The layer's own ``causal`` setting is restored after every redraw.
    """
    return AttentionExplorer(
        mha, embed, sentence, head=head, causal=causal, view=view, lower=lower, min_weight=min_weight
    )
