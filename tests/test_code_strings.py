"""tools/code_strings.py reads a code cell's words the same way on Python 3.10 to 3.13 (3.12 splits f-strings).

These cases run under every Python the project supports (`make test-pythons`): an f-string is one STRING token
everywhere, its literal's offsets and body are the same, and the rule for which literals are words holds.
"""

from __future__ import annotations

import sys
import tokenize
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from code_strings import (  # noqa: E402
    escapes,
    is_words,
    keeps_placeholders,
    literals,
    placeholders,
    python_tokens,
    replace_literals,
)

CELL = '''%matplotlib inline
x = 3  # a comment
print(f"{x:>4} heads, {'a' if x else 'b'} per row", "of W_Q", "W_Q")
ax.set_title(f"layer {x}: weights")
ax.legend(loc="upper left", title="keys")
d["two words"] = f"""a docstring-like
f-string over {x} lines"""
'''


def test_an_f_string_is_one_token_with_its_text() -> None:
    tokens = python_tokens(CELL)
    assert tokens is not None
    strings = [t.string for t in tokens if t.type == tokenize.STRING]
    assert strings[0] == "f\"{x:>4} heads, {'a' if x else 'b'} per row\""
    assert strings[-1] == 'f"""a docstring-like\nf-string over {x} lines"""'
    assert not [t for t in tokens if tokenize.tok_name[t.type].startswith("FSTRING")]
    assert all(t.string != "%" for t in tokens), "IPython lines are blanked"


def test_literals_give_offsets_bodies_and_kinds() -> None:
    found = literals(CELL)
    for literal in found:
        assert CELL[literal.begin:literal.end] == f"{literal.prefix}{literal.quote}{literal.body}{literal.quote}"
    words = {lit.body for lit in found if is_words(lit)}
    assert words == {"{x:>4} heads, {'a' if x else 'b'} per row", "of W_Q", "layer {x}: weights", "keys",
                     "two words", "a docstring-like\nf-string over {x} lines"}
    setting = next(lit for lit in found if lit.body == "upper left")
    assert setting.setting and not is_words(setting), "loc= takes a setting"
    assert not is_words(next(lit for lit in found if lit.body == "W_Q")), "a name alone is not words"


@pytest.mark.parametrize(("body", "f_string", "expected"), [
    ("{x:>4} heads, {'a' if x else 'b'} per row", True, ["{'a' if x else 'b'}", "{x:>4}"]),
    ("{{literal}} and {n:,}", True, ["{n:,}"]),
    ("Sizes -> {name: shape} for queries", False, []),  # a docstring's braces are not a format
    ("{} of {name:>8} at %d and 5% more", False, ["%d", "{name:>8}", "{}"]),
])
def test_placeholders(body: str, f_string: bool, expected: list[str]) -> None:
    assert placeholders(body, f_string) == sorted(expected)


def test_escapes_and_replacement() -> None:
    assert escapes(r"row\n\t it\'s") == [r"\n", r"\t"]
    source = 'print("of W_Q", f"{n} heads")  # two\n'
    out = replace_literals(source, lambda lit: {"of W_Q": "de W_Q", "{n} heads": "{n} cabeças"}.get(lit.body))
    assert out == 'print("de W_Q", f"{n} cabeças")  # two\n'


def test_an_escaped_newline_separates_words_and_a_key_is_not_words() -> None:
    cell = 'ticks = ["per-sequence\\ngradient", f"layer.{i}.attention."]'
    found = {lit.body: is_words(lit) for lit in literals(cell)}
    assert found == {"per-sequence\\ngradient": True, "layer.{i}.attention.": False}


def test_an_unreadable_cell_has_no_literals() -> None:
    assert python_tokens("def (:\n") is None and literals("def (:\n") == []


def test_a_translation_may_leave_out_an_english_plural_ending_only() -> None:
    english = "{n:3d} forward pass{'es' if n > 1 else ''} of {size} sentence{'s' * (size > 1)}"
    assert keeps_placeholders(english, "проходов вперёд: {n:3d}, предложений: {size}", True)
    assert keeps_placeholders(english, english, True)
    assert not keeps_placeholders(english, "проходов вперёд: {n:3d}", True), "a real field is kept"
    assert not keeps_placeholders("{n} heads", "{n} голов{'ы' if n > 1 else ''}", True), "none is added"
    assert not keeps_placeholders("{x if a else b}", "", True)
