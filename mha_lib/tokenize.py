"""From text to token ids: whitespace tokens, a vocabulary, padded batches and a tiny byte-pair encoding.

Bad input follows ``mha_lib._validate``: a wrong type (a str where a list of tokens goes, a float id) is a
``TypeError``, a wrong value (an id out of range, an empty word) a ``ValueError``; an unknown token without
``<unk>`` raises ``UnknownTokenError``, a ``ValueError`` (and ``KeyError``) that names the token and the fix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import torch
from torch import Tensor

from mha_lib._validate import check_index, check_int, check_list, check_str
from mha_lib.i18n import _

PAD = "<pad>"
UNK = "<unk>"
END_OF_WORD = "</w>"


class UnknownTokenError(KeyError, ValueError):
    """A token that is not in the vocabulary, and the vocabulary has no ``<unk>``."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0])


def _describe(x: Tensor) -> str:
    return f"a {x.dtype} Tensor of shape {tuple(x.shape)}"


def tokenize(text: str, *, lower: bool = False) -> list[str]:
    """Split ``text`` on whitespace: ``"O gato sobe"`` -> ``["O", "gato", "sobe"]``."""
    text = check_str("text", text)
    return (text.lower() if lower else text).split()


class Vocab:
    """A two-way map between tokens and integer ids.

    Ids are given in order of first appearance (so ``"O gato sobe no tapete"`` gets 0..4), after the
    special tokens: ``<pad>`` (if ``pad``) is 0 and ``<unk>`` (if ``unk``) comes next. Tokens seen fewer
    than ``min_freq`` times are left out. Without ``<unk>``, looking up an unknown token is an error.
    """

    def __init__(
        self,
        tokens: Iterable[str] | Iterable[Sequence[str]] = (),
        *,
        pad: bool = False,
        unk: bool = False,
        min_freq: int = 1,
    ) -> None:
        check_int("min_freq", min_freq)
        flat: list[str] = []
        for i, item in enumerate(check_list("tokens", tokens, "tokens or of token lists")):
            if isinstance(item, str) or not isinstance(item, Iterable):
                flat.append(check_str(f"tokens[{i}]", item))
            else:
                flat.extend(check_str(f"tokens[{i}][{j}]", t) for j, t in enumerate(item))
        counts = Counter(flat)
        self.idx_to_token: list[str] = ([PAD] if pad else []) + ([UNK] if unk else [])
        seen = set(self.idx_to_token)
        for t in flat:
            if t not in seen and counts[t] >= min_freq:
                self.idx_to_token.append(t)
                seen.add(t)
        self.token_to_idx: dict[str, int] = {t: i for i, t in enumerate(self.idx_to_token)}
        self.counts = counts

    def __len__(self) -> int:
        return len(self.idx_to_token)

    def __contains__(self, token: object) -> bool:
        return token in self.token_to_idx

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, pad={self.pad_id is not None}, unk={self.unk_id is not None})"

    @property
    def pad_id(self) -> int | None:
        """The id of ``<pad>``, or None."""
        return self.token_to_idx.get(PAD)

    @property
    def unk_id(self) -> int | None:
        """The id of ``<unk>``, or None."""
        return self.token_to_idx.get(UNK)

    def __getitem__(self, token: str) -> int:
        if token in self.token_to_idx:
            return self.token_to_idx[token]
        if self.unk_id is not None:
            return self.unk_id
        raise UnknownTokenError(
            _("token {token} is not in the vocabulary ({size} tokens) and the vocabulary has no {unk};"
              " build it with unk=True to map unknown tokens to <unk>").format(
                token=repr(token), size=len(self), unk=UNK)
        )

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Tokens -> ids."""
        return [self[check_str(f"tokens[{i}]", t)] for i, t in enumerate(check_list("tokens", tokens))]

    def decode(self, ids: Iterable[int] | Tensor) -> list[str]:
        """Ids -> tokens."""
        if isinstance(ids, Tensor):
            if ids.is_floating_point() or ids.dim() > 1:
                raise TypeError(f"ids must be a list or 1-D tensor of int ids, got {_describe(ids)}")
            ids = ids.tolist()
        values = check_list("ids", ids, "int ids")
        what = f" (the vocabulary has {len(self)} tokens)"
        return [self.idx_to_token[check_index(f"ids[{n}]", i, len(self), what=what)] for n, i in enumerate(values)]


def pad_batch(sequences: Sequence[Sequence[int]], *, pad_id: int, max_len: int | None = None) -> tuple[Tensor, Tensor]:
    """Right-pad id lists into ``ids`` ``(B, T)`` int64 and ``valid_lens`` ``(B,)``, the true lengths."""
    check_int("pad_id", pad_id, minimum=0)
    if max_len is not None:
        check_int("max_len", max_len, minimum=0)
    if isinstance(sequences, Tensor):
        raise TypeError(f"sequences must be a list of id lists, got {_describe(sequences)}: it is already a batch")
    sequences = check_list("sequences", sequences, "id lists")
    if not sequences:
        raise ValueError("sequences must be a non-empty list of id lists, got an empty list")
    rows = [seq.tolist() if isinstance(seq, Tensor) else check_list(f"sequences[{r}]", seq, "ids")
            for r, seq in enumerate(sequences)]
    for row, seq in enumerate(rows):
        for col, i in enumerate(seq):
            check_int(f"sequences[{row}][{col}]", i, minimum=0)
    lengths = [len(s) for s in rows]
    width = max(lengths) if max_len is None else max_len
    longest = max(range(len(rows)), key=lengths.__getitem__)
    if lengths[longest] > width:
        raise ValueError(f"sequences[{longest}] has {lengths[longest]} tokens, more than max_len={width}")
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    for row, seq in enumerate(rows):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return ids, torch.tensor(lengths, dtype=torch.long)


def encode_batch(vocab: Vocab, sentences: Sequence[str], *, lower: bool = False) -> tuple[Tensor, Tensor]:
    """Sentences -> padded ``ids`` ``(B, T)`` and ``valid_lens`` ``(B,)``; the vocabulary needs ``<pad>``."""
    if vocab.pad_id is None:
        raise ValueError("vocab must have a <pad> token to batch sentences of different lengths: Vocab(..., pad=True)")
    return pad_batch([vocab.encode(tokenize(s, lower=lower)) for s in sentences], pad_id=vocab.pad_id)


def _merge_pair(symbols: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    out: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def learn_bpe(words: Iterable[str], num_merges: int) -> list[tuple[str, str]]:
    """Learn up to ``num_merges`` byte-pair merges from ``words`` (characters plus an end-of-word ``</w>``).

    Each step merges the most frequent adjacent pair; ties go to the pair seen first, so the result
    is deterministic.
    """
    words = check_list("words", words, "words")
    check_int("num_merges", num_merges, minimum=0)
    for n, w in enumerate(words):
        check_str(f"words[{n}]", w, nonempty=True)
    corpus = Counter(tuple(w) + (END_OF_WORD,) for w in words)
    merges: list[tuple[str, str]] = []
    for _merge in range(num_merges):
        pairs: Counter[tuple[str, str]] = Counter()
        for symbols, freq in corpus.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += freq
        if not pairs:
            break
        best = max(pairs, key=lambda p: pairs[p])  # max keeps the first of equal counts
        merges.append(best)
        corpus = Counter({_merge_pair(s, best): f for s, f in corpus.items()})
    return merges


def apply_bpe(word: str, merges: Sequence[tuple[str, str]]) -> list[str]:
    """Split one ``word`` into subwords by replaying ``merges`` in order; the last one ends with ``</w>``."""
    check_str("word", word, nonempty=True)
    symbols = tuple(word) + (END_OF_WORD,)
    for pair in merges:
        symbols = _merge_pair(symbols, pair)
    return list(symbols)
