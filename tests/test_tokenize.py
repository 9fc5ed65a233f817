"""mha_lib.tokenize: whitespace tokens, Vocab, padded batches and the tiny byte-pair encoding."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_lib.tokenize import (
    END_OF_WORD,
    PAD,
    UNK,
    Vocab,
    apply_bpe,
    encode_batch,
    learn_bpe,
    pad_batch,
    tokenize,
)

SENTENCE = "O gato sobe no tapete"
SENTENCES = ["O gato sobe no tapete", "the cat sleeps", "the dog climbs onto the rug"]

# Tokens: printable text without whitespace, so that " ".join(tokens).split() gives them back.
TOKEN = st.text(st.characters(blacklist_categories=("Cs", "Z", "Cc")), min_size=1, max_size=8)
WORD = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=10)


# --- tokenize -------------------------------------------------------------------------------------


def test_tokenize_splits_on_whitespace() -> None:
    assert tokenize(SENTENCE) == ["O", "gato", "sobe", "no", "tapete"]
    assert tokenize("  a\tb\n c  ") == ["a", "b", "c"]
    assert tokenize(SENTENCE, lower=True)[0] == "o"


def test_tokenize_rejects_a_non_string() -> None:
    with pytest.raises(TypeError, match="text must be a str"):
        tokenize(["O", "gato"])  # type: ignore[arg-type]


# --- Vocab ----------------------------------------------------------------------------------------


def test_ids_follow_first_appearance() -> None:
    vocab = Vocab(tokenize(SENTENCE))
    assert vocab.encode(tokenize(SENTENCE)) == [0, 1, 2, 3, 4]
    assert vocab.idx_to_token == ["O", "gato", "sobe", "no", "tapete"]
    assert len(vocab) == 5 and vocab.pad_id is None and vocab.unk_id is None


def test_vocab_round_trip() -> None:
    tokens = tokenize("the cat sat on the mat and the cat slept")
    vocab = Vocab(tokens)
    ids = vocab.encode(tokens)
    assert vocab.decode(ids) == tokens
    assert vocab.decode(torch.tensor(ids)) == tokens
    assert len(vocab) == len(set(tokens))


def test_vocab_accepts_a_list_of_token_lists() -> None:
    vocab = Vocab([tokenize(s) for s in SENTENCES])
    assert "rug" in vocab and "gato" in vocab
    assert vocab["the"] == 5  # after the 5 Portuguese words


def test_special_token_ids() -> None:
    vocab = Vocab(tokenize(SENTENCE), pad=True, unk=True)
    assert (vocab.pad_id, vocab.unk_id) == (0, 1)
    assert vocab.idx_to_token[:2] == [PAD, UNK]
    assert vocab["O"] == 2
    only_unk = Vocab(tokenize(SENTENCE), unk=True)
    assert (only_unk.pad_id, only_unk.unk_id) == (None, 0)


def test_unknown_token_maps_to_unk() -> None:
    vocab = Vocab(tokenize(SENTENCE), pad=True, unk=True)
    ids = vocab.encode(tokenize("O cão sobe no tapete"))
    assert ids[1] == vocab.unk_id
    assert vocab.decode(ids) == ["O", UNK, "sobe", "no", "tapete"]


def test_unknown_token_without_unk_raises_a_value_error_naming_it() -> None:
    vocab = Vocab(tokenize(SENTENCE))
    with pytest.raises(ValueError, match="'cão'") as info:
        vocab.encode(["O", "cão"])
    assert "unk=True" in str(info.value)
    with pytest.raises(KeyError):  # a dict-like lookup miss, too
        vocab["cão"]


def test_min_freq_leaves_out_rare_tokens() -> None:
    tokens = tokenize("the cat the dog the cat")
    vocab = Vocab(tokens, unk=True, min_freq=2)
    assert vocab.idx_to_token == [UNK, "the", "cat"]
    assert vocab["dog"] == vocab.unk_id
    assert vocab.counts["dog"] == 1


def test_repeated_special_tokens_are_not_duplicated() -> None:
    vocab = Vocab([PAD, "a", UNK, "b"], pad=True, unk=True)
    assert vocab.idx_to_token == [PAD, UNK, "a", "b"]


@pytest.mark.parametrize("min_freq", [0, -1])
def test_bad_min_freq(min_freq: object) -> None:
    with pytest.raises(ValueError, match=rf"^min_freq must be >= 1, got {min_freq}$"):
        Vocab(["a"], min_freq=min_freq)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("min_freq", "got"), [(1.5, "float 1.5"), (True, "bool True"), (2.0, "float 2.0: write min_freq=2")]
)
def test_min_freq_of_the_wrong_type(min_freq: object, got: str) -> None:
    with pytest.raises(TypeError, match=rf"^min_freq must be an int, got {got}$"):
        Vocab(["a"], min_freq=min_freq)  # type: ignore[arg-type]


def test_vocab_rejects_a_string() -> None:
    with pytest.raises(TypeError, match=r"^tokens must be a list of .* got a str: split it first, e.g. mha_lib"):
        Vocab(SENTENCE)


def test_vocab_rejects_non_string_tokens() -> None:
    with pytest.raises(TypeError, match=r"^tokens\[1\] must be a str, got int 3$"):
        Vocab(["a", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^tokens\[0\]\[1\] must be a str, got int 3$"):
        Vocab([["a", 3]])  # type: ignore[list-item]


def test_encode_rejects_a_string() -> None:
    with pytest.raises(TypeError, match=r"^tokens must be a list of tokens, got a str: split it first"):
        Vocab(["a"]).encode("a")
    with pytest.raises(TypeError, match=r"^tokens\[1\] must be a str, got int 0$"):
        Vocab(["a"]).encode(["a", 0])  # type: ignore[list-item]


@pytest.mark.parametrize("bad_id", [5, -1])
def test_decode_rejects_ids_out_of_range(bad_id: object) -> None:
    expected = rf"^ids\[1\] must be in \[0, 5\) \(the vocabulary has 5 tokens\), got {bad_id}: count from 0"
    with pytest.raises(ValueError, match=expected):
        Vocab(tokenize(SENTENCE)).decode([0, bad_id])  # type: ignore[list-item]


@pytest.mark.parametrize(("bad_id", "got"), [(1.0, "float 1.0"), (True, "bool True"), ("1", "str '1'")])
def test_decode_rejects_ids_that_are_not_ints(bad_id: object, got: str) -> None:
    with pytest.raises(TypeError, match=rf"^ids\[1\] must be an int in \[0, 5\) .*got {got}$"):
        Vocab(tokenize(SENTENCE)).decode([0, bad_id])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^ids must be a list or 1-D tensor of int ids, got a torch.float32 Tensor"):
        Vocab(tokenize(SENTENCE)).decode(torch.zeros(3))


def test_repr() -> None:
    assert repr(Vocab(["a"], pad=True)) == "Vocab(size=2, pad=True, unk=False)"


@settings(max_examples=60, deadline=None)
@given(st.lists(TOKEN, min_size=1, max_size=20))
def test_decode_encode_is_the_identity(tokens: list[str]) -> None:
    vocab = Vocab(tokens, pad=True, unk=True)
    assert vocab.decode(vocab.encode(tokens)) == tokens
    assert tokenize(" ".join(tokens)) == tokens


@settings(max_examples=60, deadline=None)
@given(st.lists(TOKEN, min_size=1, max_size=20), st.integers(1, 4))
def test_vocab_ids_are_a_bijection(tokens: list[str], min_freq: int) -> None:
    vocab = Vocab(tokens, unk=True, min_freq=min_freq)
    assert [vocab[t] for t in vocab.idx_to_token] == list(range(len(vocab)))
    for t in tokens:
        assert (t in vocab) == (t == UNK or tokens.count(t) >= min_freq)


# --- pad_batch and encode_batch -------------------------------------------------------------------


def test_pad_batch_shapes_and_valid_lens() -> None:
    ids, valid_lens = pad_batch([[1, 2, 3], [4], [5, 6]], pad_id=0)
    assert ids.shape == (3, 3) and ids.dtype == torch.long
    assert valid_lens.shape == (3,) and valid_lens.dtype == torch.long
    assert ids.tolist() == [[1, 2, 3], [4, 0, 0], [5, 6, 0]]
    assert valid_lens.tolist() == [3, 1, 2]


def test_pad_batch_max_len_pads_further() -> None:
    ids, valid_lens = pad_batch([[1, 2], [3]], pad_id=9, max_len=4)
    assert ids.tolist() == [[1, 2, 9, 9], [3, 9, 9, 9]]
    assert valid_lens.tolist() == [2, 1]


def test_pad_batch_accepts_tensors_and_empty_rows() -> None:
    ids, valid_lens = pad_batch([torch.tensor([7, 8]), []], pad_id=0)
    assert ids.tolist() == [[7, 8], [0, 0]]
    assert valid_lens.tolist() == [2, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(1, 50), max_size=7), min_size=1, max_size=6))
def test_pad_batch_keeps_every_id_and_pads_the_rest(sequences: list[list[int]]) -> None:
    ids, valid_lens = pad_batch(sequences, pad_id=0)
    assert ids.shape == (len(sequences), max(len(s) for s in sequences))
    for row, seq in enumerate(sequences):
        assert valid_lens[row] == len(seq)
        assert ids[row, : len(seq)].tolist() == seq
        assert (ids[row, len(seq) :] == 0).all()


def test_pad_batch_rejects_an_empty_batch() -> None:
    with pytest.raises(ValueError, match="sequences must be a non-empty list"):
        pad_batch([], pad_id=0)


def test_pad_batch_rejects_a_tensor_batch() -> None:
    with pytest.raises(TypeError, match=r"^sequences must be a list of id lists, got a torch.int64 Tensor .* a batch"):
        pad_batch(torch.zeros(2, 3, dtype=torch.long), pad_id=0)  # type: ignore[arg-type]


def test_pad_batch_rejects_a_sequence_longer_than_max_len() -> None:
    with pytest.raises(ValueError, match=r"sequences\[1\] has 3 tokens, more than max_len=2"):
        pad_batch([[1], [1, 2, 3]], pad_id=0, max_len=2)


def test_pad_batch_rejects_a_bad_max_len() -> None:
    with pytest.raises(ValueError, match=r"^max_len must be >= 0, got -1$"):
        pad_batch([[1]], pad_id=0, max_len=-1)
    for max_len in (2.0, True):
        with pytest.raises(TypeError, match="^max_len must be an int"):
            pad_batch([[1]], pad_id=0, max_len=max_len)  # type: ignore[arg-type]


@pytest.mark.parametrize("pad_id", [0.0, None, False])
def test_pad_batch_rejects_a_bad_pad_id(pad_id: object) -> None:
    with pytest.raises(TypeError, match="^pad_id must be an int"):
        pad_batch([[1]], pad_id=pad_id)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^pad_id must be >= 0, got -1"):
        pad_batch([[1]], pad_id=-1)


def test_pad_batch_rejects_non_integer_ids() -> None:
    with pytest.raises(TypeError, match=r"^sequences\[1\]\[0\] must be an int, got float 2.5$"):
        pad_batch([[1], [2.5]], pad_id=0)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^sequences\[0\] must be a list of ids, got int 3$"):
        pad_batch([3], pad_id=0)  # type: ignore[list-item]


def test_encode_batch_pads_sentences() -> None:
    vocab = Vocab([tokenize(s) for s in SENTENCES], pad=True, unk=True)
    ids, valid_lens = encode_batch(vocab, SENTENCES)
    assert ids.shape == (3, 6)
    assert valid_lens.tolist() == [5, 3, 6]
    assert vocab.decode(ids[1]) == ["the", "cat", "sleeps", PAD, PAD, PAD]
    assert (ids[0, :5] == torch.arange(2, 7)).all()


def test_encode_batch_needs_a_pad_token() -> None:
    with pytest.raises(ValueError, match="vocab must have a <pad> token"):
        encode_batch(Vocab(tokenize(SENTENCE)), [SENTENCE])


# --- byte-pair encoding ---------------------------------------------------------------------------

BPE_WORDS = tokenize("the cat climbs onto the rug the cats climbed onto the rugs the dog climbs onto the cat")


def test_learn_bpe_first_merge_is_the_most_frequent_pair() -> None:
    # "the" appears 6 times, so ("t", "h"), ("h", "e") and ("e", "</w>") are tied at 6, more than any
    # other pair; ties go to the pair seen first.
    merges = learn_bpe(BPE_WORDS, 1)
    assert merges == [("t", "h")]


def test_learn_bpe_is_deterministic() -> None:
    assert learn_bpe(BPE_WORDS, 15) == learn_bpe(list(BPE_WORDS), 15)
    assert learn_bpe(BPE_WORDS, 15)[:5] == learn_bpe(BPE_WORDS, 5)


def test_learn_bpe_stops_when_no_pair_is_left() -> None:
    merges = learn_bpe(["ab", "ab"], 10)
    assert merges == [("a", "b"), ("ab", END_OF_WORD)]
    assert apply_bpe("ab", merges) == ["ab" + END_OF_WORD]


def test_zero_merges_gives_characters() -> None:
    assert learn_bpe(BPE_WORDS, 0) == []
    assert apply_bpe("cat", []) == ["c", "a", "t", END_OF_WORD]


def test_merges_reduce_the_token_count() -> None:
    counts = [sum(len(apply_bpe(w, learn_bpe(BPE_WORDS, n))) for w in BPE_WORDS) for n in range(0, 30, 5)]
    assert all(a > b for a, b in zip(counts, counts[1:])), counts
    assert counts[0] == sum(len(w) + 1 for w in BPE_WORDS)


def test_unseen_word_splits_into_known_subwords() -> None:
    merges = learn_bpe(BPE_WORDS, 20)
    pieces = apply_bpe("climbing", merges)
    assert pieces[0] == "climb" and len(pieces) < len("climbing") + 1
    known = {c for w in BPE_WORDS for c in w} | {END_OF_WORD} | {a + b for a, b in merges}
    assert set(pieces) <= known


@settings(max_examples=80, deadline=None)
@given(st.lists(WORD, min_size=1, max_size=8), WORD, st.integers(0, 12))
def test_apply_bpe_keeps_the_characters(words: list[str], word: str, num_merges: int) -> None:
    pieces = apply_bpe(word, learn_bpe(words, num_merges))
    assert "".join(pieces) == word + END_OF_WORD
    assert pieces[-1].endswith(END_OF_WORD)


def test_learn_bpe_rejects_a_bad_num_merges() -> None:
    with pytest.raises(ValueError, match="^num_merges must be >= 0, got -1$"):
        learn_bpe(["a"], -1)
    for num_merges in (1.5, True):
        with pytest.raises(TypeError, match="^num_merges must be an int"):
            learn_bpe(["a"], num_merges)  # type: ignore[arg-type]


def test_learn_bpe_rejects_a_string() -> None:
    with pytest.raises(TypeError, match="^words must be a list of words, got a str: split it first"):
        learn_bpe("the cat", 2)


def test_learn_bpe_rejects_empty_words() -> None:
    with pytest.raises(ValueError, match=r"^words\[1\] must be a non-empty str, got ''$"):
        learn_bpe(["a", ""], 2)
    with pytest.raises(TypeError, match=r"^words\[0\] must be a str, got int 3$"):
        learn_bpe([3], 2)  # type: ignore[list-item]


def test_apply_bpe_rejects_a_bad_word() -> None:
    with pytest.raises(ValueError, match="^word must be a non-empty str, got ''$"):
        apply_bpe("", [])
    for word in (None, ["a"]):
        with pytest.raises(TypeError, match="^word must be a str, got"):
            apply_bpe(word, [])  # type: ignore[arg-type]


def test_apply_bpe_replays_merges_in_the_order_learned() -> None:
    # "bc" first takes the b, so ("a", "b") finds no pair left: in the other order "ab" would form instead
    assert apply_bpe("abc", [("b", "c"), ("a", "b")]) == ["a", "bc", END_OF_WORD]
    assert apply_bpe("abc", [("a", "b"), ("b", "c")]) == ["ab", "c", END_OF_WORD]
    merges = learn_bpe(BPE_WORDS, 20)
    assert apply_bpe("climbs", merges) == ["climbs" + END_OF_WORD]


def test_learn_bpe_merges_the_most_frequent_pair_at_each_step() -> None:
    # counts: ("a", "b") 3 times, ("c", "d") twice; after "ab" forms, ("ab", "</w>") is seen 3 times
    assert learn_bpe(["ab", "ab", "ab", "cd", "cd"], 3) == [("a", "b"), ("ab", END_OF_WORD), ("c", "d")]
