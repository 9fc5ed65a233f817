"""What a code cell says in words: its comments and the string literals a learner reads (standard library only).

The translation tool (``tools/translations.py``) and the parity test (``tests/test_translations.py``) read code
cells through this module, the same way on Python 3.10 to 3.13. Python 3.12 tokenizes an f-string as
``FSTRING_START``, ``FSTRING_MIDDLE``, ... ``FSTRING_END`` (PEP 701) where 3.10 and 3.11 give one ``STRING``
token; ``python_tokens`` joins the pieces back into one ``STRING`` token, so every version sees the same tokens.

**Which string literals are words to translate** (``is_words``): a literal that is not bytes and

- whose text, once its placeholders (``{...}`` fields, ``%`` specs) and escapes (``\\n``) are set aside, holds two
  runs of 2+ letters separated by spaces, with a space of its own among them (``"rows sum to 1"``,
  ``f"{n} heads, one per row"``, a docstring; ``"encoder.layer.{i}.attention"`` is a key, not words), unless it
  is given to a keyword that takes a setting (``loc="upper left"``, ``textcoords=...``: ``SETTING_KEYWORDS``);
- or a literal printed or drawn as it is, holding a word of 2+ letters that stands alone (``"of W_Q"``, ``"ids:"``,
  ``"keys"``; not ``"W_Q"``): an argument of ``print(...)`` itself, or a figure's or a table's text (``title=``,
  ``xlabel=``, ``label=``..., ``set_title(...)``, ``suptitle(...)``: ``LABEL_KEYWORDS``, ``LABEL_CALLS``).

Identifiers, dictionary keys, paths, modes and format specs are single words without spaces (``"weights"``,
``"sdpa"``, ``"images/x.png"``), so they are never translated. A multi-word literal that code compares or uses as
a key (``"causal + padding"`` as a dict key, then a label) is translated the same in every cell of its notebook
(the test refuses two translations of one literal in one notebook), and the translated notebook is executed, so a
literal the library needs in English (a column it names, a recorded benchmark's row) fails its run unless its
translation is the English itself. The notebook's setup cell (its first code cell) is never translated.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import NamedTuple


def is_ipython(line: str) -> bool:
    """Whether a code cell's line is IPython's, not Python's (``%pip ...``, ``!ls``)."""
    return line.lstrip().startswith(("%", "!"))


_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def _offsets(text: str) -> list[int]:
    """The offset of each line's start in ``text`` (index 0 is line 1)."""
    starts, total = [], 0
    for line in text.split("\n"):
        starts.append(total)
        total += len(line) + 1
    return starts


def python_tokens(source: str) -> list[tokenize.TokenInfo] | None:
    """The Python tokens of a code cell, its IPython lines blanked (rows kept); ``None`` if Python cannot read it.

    An f-string is one ``STRING`` token on every Python (3.12's pieces are joined), so the tokens are the same on
    3.10 to 3.13.
    """
    readable = "\n".join("" if is_ipython(line) else line for line in source.split("\n"))
    try:
        raw = list(tokenize.generate_tokens(io.StringIO(readable).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    if _FSTRING_START is None:
        return raw
    starts = _offsets(readable)
    tokens: list[tokenize.TokenInfo] = []
    depth, opening = 0, None
    for token in raw:
        if token.type == _FSTRING_START:
            if depth == 0:
                opening = token
            depth += 1
        elif token.type == _FSTRING_END:
            depth -= 1
            if depth == 0 and opening is not None:
                begin = starts[opening.start[0] - 1] + opening.start[1]
                end = starts[token.end[0] - 1] + token.end[1]
                tokens.append(tokenize.TokenInfo(tokenize.STRING, readable[begin:end], opening.start, token.end,
                                                 opening.line))
        elif depth == 0:
            tokens.append(token)
    return tokens


# --- String literals -------------------------------------------------------------------------------------------

class Literal(NamedTuple):
    """One string literal of a cell: where it is (offsets in the source), its prefix and quotes, and its body."""

    begin: int
    end: int
    prefix: str
    quote: str
    body: str
    label: bool  # one word given as a figure's or a table's text (title=..., set_xlabel(...))
    setting: bool = False  # given to a keyword that takes a setting (loc="upper left"): never words
    printed: bool = False  # an argument of print(...) itself (not of a call inside it)

    @property
    def is_f(self) -> bool:
        return "f" in self.prefix.lower()


_QUOTED = re.compile(r"(?s)([A-Za-z]*)('''|\"\"\"|'|\")(.*)\2$")
# One word given as a figure's or a table's text is a word to translate too.
LABEL_KEYWORDS = {"title", "xlabel", "ylabel", "label", "caption", "suptitle", "legend_title"}
# A literal given to these keywords is a setting read by code (``loc="upper left"``), never words.
SETTING_KEYWORDS = {"loc", "ha", "va", "horizontalalignment", "verticalalignment", "cmap", "dtype", "device", "mode",
                    "kind", "method", "how", "orient", "family", "fontfamily", "style", "marker", "linestyle", "ls",
                    "color", "colors", "edgecolor", "facecolor", "kernel", "view", "format", "bbox_inches", "sep",
                    "end", "errors", "textcoords", "xycoords", "coords",
                    "encoding", "interpolation", "aspect", "origin", "norm", "scale", "which",
                    "axis", "reduction", "padding", "rounding_mode", "indexing", "nonlinearity", "align", "where"}
LABEL_CALLS = {"set_title", "set_xlabel", "set_ylabel", "suptitle", "title", "xlabel", "ylabel", "set_caption",
               "print"}


def split_literal(text: str) -> tuple[str, str, str]:
    """``(prefix, quote, body)`` of a string token's text (``f"x {y}"`` -> ``("f", '"', "x {y}")``)."""
    found = _QUOTED.match(text)
    if found is None:
        raise ValueError(f"not a string literal: {text!r}")
    return found.group(1), found.group(2), found.group(3)


def literals(source: str) -> list[Literal]:
    """Every string literal of a code cell (bytes excluded), in order; none if Python cannot read the cell."""
    tokens = python_tokens(source)
    if tokens is None:
        return []
    starts = _offsets(source)  # IPython lines were blanked with their rows kept: a token's row and column hold
    found = []
    significant = [t for t in tokens if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT,
                                                         tokenize.INDENT, tokenize.DEDENT)]
    calls: list[str | None] = []  # the enclosing brackets, innermost last: a call's name, or None
    for index, token in enumerate(significant):
        if token.type == tokenize.OP and token.string in "([{":
            before_name = significant[index - 1] if index else None
            calls.append(before_name.string if token.string == "(" and before_name is not None
                         and before_name.type == tokenize.NAME else None)
        elif token.type == tokenize.OP and token.string in ")]}" and calls:
            calls.pop()
        if token.type != tokenize.STRING:
            continue
        prefix, quote, body = split_literal(token.string)
        if "b" in prefix.lower():
            continue
        before = [t.string for t in significant[max(0, index - 3):index]]
        label = (len(before) >= 2 and before[-1] == "=" and before[-2] in LABEL_KEYWORDS) or \
                (len(before) >= 2 and before[-1] == "(" and before[-2] in LABEL_CALLS)
        setting = len(before) >= 2 and before[-1] == "=" and before[-2] in SETTING_KEYWORDS
        begin = starts[token.start[0] - 1] + token.start[1]
        end = starts[token.end[0] - 1] + token.end[1]
        printed = bool(calls) and calls[-1] == "print" and not setting
        found.append(Literal(begin, end, prefix, quote, body, label, setting, printed))
    return found


def _fields(body: str) -> list[str]:
    """The replacement fields ``{...}`` of a format string (nested braces kept; ``{{`` and ``}}`` are text)."""
    fields, depth, start, i = [], 0, 0, 0
    while i < len(body):
        char = body[i]
        if depth == 0 and body.startswith(("{{", "}}"), i):
            i += 2
            continue
        if char == "{":
            if depth == 0:
                start = i
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                fields.append(body[start:i + 1])
        i += 1
    return fields


_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0+]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa%]")
_FORMAT_FIELD = re.compile(r"\{[\w.\[\]]*(?:![rsa])?(?::[^{}\s]*)?\}")
_ESCAPE = re.compile(r"\\(?:N\{[^}]*\}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)", re.S)


def placeholders(body: str, f_string: bool | None = None) -> list[str]:
    """What a translation of ``body`` must keep verbatim, sorted: an f-string's ``{...}`` fields, or a plain
    string's ``str.format`` fields (``{}``, ``{name:>8}``) and ``%`` specs (``%d``, ``%.2f``).

    ``f_string`` None: an f-string if ``body`` has a field with an expression that is not a plain name.
    """
    if f_string is None:
        f_string = any(not _FORMAT_FIELD.fullmatch(f) for f in _fields(body))
    if f_string:
        return sorted(_fields(body))
    return sorted(_FORMAT_FIELD.findall(body.replace("{{", "").replace("}}", "")) + _PERCENT.findall(body))


# An f-string field that only spells an English plural ending (``{'s' if n > 1 else ''}``, ``{'es' * (n > 1)}``):
# a language whose plural is not a suffix (Russian's three forms, Chinese none) words the line otherwise and may
# leave it out. It may not add one, nor change any other field.
_ENGLISH_ENDING = re.compile(r"""\{(['"])[a-z]{1,2}\1\s*(?:if\s.+\selse\s*(['"])\2|\*\s*\(.+\))\}""")


def keeps_placeholders(english: str, translation: str, f_string: bool | None = None) -> bool:
    """Whether ``translation`` keeps the placeholders of ``english`` (``placeholders``), an English plural ending's
    field excepted, which it may leave out."""
    if f_string is None:
        f_string = any(not _FORMAT_FIELD.fullmatch(f) for f in _fields(english))
    want, got = placeholders(english, f_string), placeholders(translation, f_string)
    return got == [f for f in want if f in got or not _ENGLISH_ENDING.fullmatch(f)]


def escapes(body: str) -> list[str]:
    """The escape sequences of ``body`` (``\\n``, ``\\t``...), quotes aside, sorted: a translation keeps them."""
    return sorted(e for e in _ESCAPE.findall(body) if e not in ("\\'", '\\"'))


def words_of(body: str) -> str:
    """``body`` with its placeholders and escapes replaced by spaces: the text a reader reads."""
    text = body
    for field in _fields(body):
        text = text.replace(field, " ")
    return _ESCAPE.sub(" ", _PERCENT.sub(" ", text))


_TWO_WORDS = re.compile(r"[A-Za-z]{2,}(?:[^\sA-Za-z0-9_]*\s+)+[^\sA-Za-z0-9_]*[A-Za-z]{2,}")
_WORD = re.compile(r"(?<![\w.])[A-Za-z]{2,}(?![\w(.])")  # a word standing alone, not part of a name or a path


def is_words(literal: Literal) -> bool:
    """Whether a learner reads ``literal`` as words (the rule in this module's docstring)."""
    if literal.setting:
        return False
    text = words_of(literal.body)
    bare = literal.body
    for field in _fields(literal.body):
        bare = bare.replace(field, "")
    if (literal.label or literal.printed) and _WORD.search(text):
        return True
    return bool(re.search(r"\s", _ESCAPE.sub(" ", bare))) and bool(_TWO_WORDS.search(text))


def replace_literals(source: str, translate) -> str:
    """``source`` with each literal's body replaced by ``translate(literal)`` (None keeps it)."""
    out, last = [], 0
    for literal in literals(source):
        new = translate(literal)
        if new is None or new == literal.body:
            continue
        body_start = literal.begin + len(literal.prefix) + len(literal.quote)
        out += [source[last:body_start], new]
        last = literal.end - len(literal.quote)
    out.append(source[last:])
    return "".join(out)
