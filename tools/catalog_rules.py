"""What every catalog of an edition shares: its header, what a translation must keep of its English (code spans,
maths, link targets, headings, markers, placeholders), and how a translated text's links and stubs are rewritten.

Used by ``tools/translations.py`` (the notebooks) and ``tools/teaching_catalogs.py`` (the teacher's guide and notes).
"""

from __future__ import annotations

import re
import sys
import tokenize
from pathlib import Path

import polib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from code_strings import escapes, keeps_placeholders, literals, placeholders, python_tokens, split_literal  # noqa: E402
from editions import SOURCE, TRANSLATED, Edition  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "mha-course/multi-head-attention"


def header(edition: Edition) -> dict[str, str]:
    """The PO header of ``edition``'s catalogs."""
    return {
        "Project-Id-Version": "multi-head-attention",
        "Language": edition.gettext,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": edition.plural_forms,
    }


def new_catalog(edition: Edition, old: polib.POFile | None) -> tuple[polib.POFile, list[polib.POEntry]]:
    """An empty catalog with ``edition``'s header (and ``old``'s own header lines kept), and ``old``'s live
    (not obsolete) entries: the start of every merge, for the notebooks' catalogs and the guide's."""
    po = polib.POFile(wrapwidth=0)
    po.metadata = header(edition)
    if old is not None:
        po.metadata.update({k: v for k, v in old.metadata.items() if k not in po.metadata})
        po.header = old.header
    return po, [e for e in old if not e.obsolete] if old is not None else []


# --- What a translation must keep -------------------------------------------------------------------------------

_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$[^$]+?\$", re.S)  # inline maths may span lines
_TARGET = re.compile(r"\]\(([^)\s]+)\)|(?:src|href)=\"([^\"]+)\"")
_MARKER = re.compile(r"<!--\s*(/?teacher|student:)")


def _headings(text: str) -> list[str]:
    outside = re.sub(r"```.*?```", "", text, flags=re.S)
    return [m.group(1) for m in re.finditer(r"^(#{1,6}) ", outside, re.M)]


def kept(text: str) -> dict[str, list[str]]:
    """What a translation of ``text`` must keep unchanged: code spans, maths, link targets, headings, markers."""
    return {
        "code spans": sorted(m.group(2).strip() for m in _CODE_SPAN.finditer(text)),
        "maths": sorted(m.group(0) for m in _MATH.finditer(_CODE_SPAN.sub("", text))),
        "link targets": sorted(a or b for a, b in _TARGET.findall(text)),
        "heading levels": _headings(text),
        "teacher/student markers": [m.group(1) for m in _MARKER.finditer(text)],
        "code blocks": [b.strip() for b in re.findall(r"```[^\n]*\n(.*?)```", text, re.S)],
    }


def structure_problems(english: str, translation: str) -> list[str]:
    """How ``translation`` fails to keep what ``english`` holds besides its words (empty: it keeps all)."""
    problems = []
    want, got = kept(english), kept(translation)
    for what in want:
        if want[what] != got[what]:
            lost = [x for x in want[what] if x not in got[what]]
            added = [x for x in got[what] if x not in want[what]]
            problems.append(f"{what} differ: English only {lost[:3]}, translation only {added[:3]}")
    return problems


def string_problems(source: str, msgid: str, msgstr: str) -> list[str]:
    """How ``msgstr`` fails as the translation of the literal ``msgid`` of the code cell ``source`` (empty: fine).

    It keeps the placeholders (an f-string's ``{...}`` fields, a plain string's format fields and ``%`` specs) and
    the escapes (``\\n``...) verbatim, and it still makes one string literal with the English prefix and quotes.
    """
    problems = []
    for literal in literals(source):
        if literal.body != msgid:
            continue
        want, got = placeholders(msgid, literal.is_f), placeholders(msgstr, literal.is_f)
        if not keeps_placeholders(msgid, msgstr, literal.is_f):
            problems.append(f"placeholders differ: English {want}, translation {got}")
        if escapes(msgstr) != escapes(msgid):
            problems.append(f"escapes differ: English {escapes(msgid)}, translation {escapes(msgstr)}")
        text = f"{literal.prefix}{literal.quote}{msgstr}{literal.quote}"
        tokens = [t for t in (python_tokens(text) or []) if t.type not in (tokenize.NEWLINE, tokenize.ENDMARKER)]
        if len(tokens) != 1 or tokens[0].type != tokenize.STRING or split_literal(tokens[0].string)[2] != msgstr:
            problems.append(f"not one string literal between {literal.quote}: {msgstr[:60]!r}")
        break
    else:
        problems.append("no such string literal in the cell")
    return problems


# --- The glossary's forms to avoid ------------------------------------------------------------------------------

def avoided_forms(glossary: Path) -> list[str]:
    """The forms a GLOSSARY.md's terms table lists to avoid: its third column ("Evitar", "避免", «Избегать»),
    comma-separated, a parenthesis a note."""
    lines = glossary.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|") and i + 1 < len(lines)
                 and re.match(r"^\|\s*-{3}", lines[i + 1]))
    forms = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 2 and not set(cells[2]) <= set("- "):
            forms += [t.strip() for t in re.sub(r"\(.*?\)", "", cells[2]).split(",") if t.strip()]
    return forms


def avoided_in(forms: list[str], text: str) -> list[str]:
    """The ``forms`` that ``text`` uses: each as a whole word, a Chinese one wherever its characters stand (no
    spaces between Chinese words, and every Han character is a word character to ``re``)."""
    def pattern(form: str) -> str:
        return re.escape(form) if re.search(r"[\u3400-\u9fff]", form) else rf"(?<!\w){re.escape(form)}(?!\w)"

    return [form for form in forms if re.search(pattern(form), text, re.I)]


# --- Links and stubs ------------------------------------------------------------------------------------------

def translations(po: polib.POFile) -> dict[tuple[str, str], str]:
    """``(msgctxt, msgid) -> msgstr`` for every entry translated and not fuzzy (gettext uses no other)."""
    return {(e.msgctxt, e.msgid): e.msgstr for e in po if e.translated() and not e.obsolete}


_LINK = re.compile(r"(\]\(|src=\"|href=\")([^)\"\s]+)")


def relocate_links(markdown: str, edition: Edition | None = None) -> str:
    """``markdown``'s links as seen from ``E/notebooks/`` (or ``E/student/``): the translated edition's.

    Badges and GitHub links to ``notebooks/`` and ``student/`` open the edition's, and a code span naming
    one of those folders names the edition's; a relative link to another
    notebook, or to ``../student``, stays in the edition; any other relative path gains a ``../``, and the README
    is the edition's (``README.pt-BR.md``).
    """
    edition = edition or TRANSLATED[0]
    code = edition.code
    markdown = (markdown
                .replace(f"{REPOSITORY}/blob/main/notebooks/", f"{REPOSITORY}/blob/main/{code}/notebooks/")
                .replace(f"{REPOSITORY}/blob/main/student/", f"{REPOSITORY}/blob/main/{code}/student/")
                .replace("?labpath=notebooks%2F", f"?labpath={code}%2Fnotebooks%2F")
                .replace("?labpath=student%2F", f"?labpath={code}%2Fstudent%2F"))
    markdown = re.sub(r"`(notebooks|student)/", rf"`{code}/\1/", markdown)  # the folders, named in code spans

    def fix(match: re.Match[str]) -> str:
        opening, target = match.groups()
        if re.match(r"^[a-z]+:|^#", target) or not target.startswith("../"):
            return match.group(0)
        if re.match(r"^\.\./(student|notebooks)(/|$)", target):
            return match.group(0)
        if re.match(r"^\.\./README\.md(#|$)", target):
            target = target.replace("README.md", edition.readme)
        return opening + "../" + target

    return _LINK.sub(fix, markdown)


def with_stubs(text: str, edition: Edition) -> str:
    """``text`` naming nbgrader's stubs as the edition's student copies show them (``locale/editions.toml``).

    The catalogs keep the English stubs in their code spans (the structure test compares code spans); the
    edition's notebooks, student note and student copies show the edition's own.
    """
    for english, translated in ((SOURCE.code_stub, edition.code_stub), (SOURCE.text_stub, edition.text_stub)):
        text = text.replace(english.split("\n")[0], translated.split("\n")[0])
    return text


