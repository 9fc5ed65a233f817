"""From text to token ids: whitespace tokens, a vocabulary, padded batches and a tiny byte-pair encoding."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import torch
from torch import Tensor

PAD = "<pad>"
UNK = "<unk>"
END_OF_WORD = "</w>"


class UnknownTokenError(KeyError, ValueError):
    """A token that is not in the vocabulary, and the vocabulary has no ``<unk>``."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0])


def tokenize(text: str, *, lower: bool = False) -> list[str]:
    """Split ``text`` on whitespace: ``"O gato sobe"`` -> ``["O", "gato", "sobe"]``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
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
        if isinstance(tokens, str):
            raise TypeError("tokens must be a list of tokens or of token lists, got a str: call tokenize() first")
        if isinstance(min_freq, bool) or not isinstance(min_freq, int) or min_freq < 1:
            raise ValueError(f"min_freq must be an int >= 1, got {min_freq!r}")
        flat: list[str] = []
        for item in tokens:
            for t in [item] if isinstance(item, str) or not isinstance(item, Iterable) else item:
                if not isinstance(t, str):
                    raise TypeError(f"tokens must be strings, got {type(t).__name__} {t!r}")
                flat.append(t)
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
            f"token {token!r} is not in the vocabulary ({len(self)} tokens) and the vocabulary has no {UNK};"
            " build it with unk=True to map unknown tokens to <unk>"
        )

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Tokens -> ids."""
        if isinstance(tokens, str):
            raise TypeError("tokens must be a list of str, got a str: call tokenize() first")
        return [self[t] for t in tokens]

    def decode(self, ids: Iterable[int] | Tensor) -> list[str]:
        """Ids -> tokens."""
        values = ids.tolist() if isinstance(ids, Tensor) else list(ids)
        out = []
        for i in values:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self):
                raise ValueError(f"ids must be ints in [0, {len(self)}), got {i!r}")
            out.append(self.idx_to_token[i])
        return out


def pad_batch(sequences: Sequence[Sequence[int]], *, pad_id: int, max_len: int | None = None) -> tuple[Tensor, Tensor]:
    """Right-pad id lists into ``ids`` ``(B, T)`` int64 and ``valid_lens`` ``(B,)``, the true lengths."""
    if isinstance(pad_id, bool) or not isinstance(pad_id, int):
        raise TypeError(f"pad_id must be an int, got {type(pad_id).__name__}")
    if max_len is not None and (isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 0):
        raise ValueError(f"max_len must be None or an int >= 0, got {max_len!r}")
    if isinstance(sequences, (str, Tensor)) or len(sequences) == 0:
        got = "an empty list" if not isinstance(sequences, (str, Tensor)) else type(sequences).__name__
        raise ValueError(f"sequences must be a non-empty list of id lists, got {got}")
    rows = [seq.tolist() if isinstance(seq, Tensor) else list(seq) for seq in sequences]
    for row, seq in enumerate(rows):
        for i in seq:
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"sequences[{row}] must hold int ids, got {type(i).__name__} {i!r}")
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
    if isinstance(words, str):
        raise TypeError("words must be a list of words, got a str: call tokenize() first")
    if isinstance(num_merges, bool) or not isinstance(num_merges, int) or num_merges < 0:
        raise ValueError(f"num_merges must be an int >= 0, got {num_merges!r}")
    words = list(words)
    for w in words:
        if not isinstance(w, str) or not w:
            raise ValueError(f"words must be non-empty strings, got {w!r}")
    corpus = Counter(tuple(w) + (END_OF_WORD,) for w in words)
    merges: list[tuple[str, str]] = []
    for _ in range(num_merges):
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
    if not isinstance(word, str) or not word:
        raise ValueError(f"word must be a non-empty str, got {word!r}")
    symbols = tuple(word) + (END_OF_WORD,)
    for pair in merges:
        symbols = _merge_pair(symbols, pair)
    return list(symbols)
