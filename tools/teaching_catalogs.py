"""The teacher's guide and notes (``teaching/*.md``) through gettext catalogs: one entry per markdown block.

``tools/translations.py`` (``make translations``) writes ``<code>/teaching/`` from ``locale/<gettext>/teaching/*.po``;
the tests are in ``tests/test_translations.py`` (``-k teaching``).
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

import polib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from catalog_rules import _CODE_SPAN, ROOT, new_catalog, relocate_links, structure_problems, translations, with_stubs  # noqa: E402
from editions import Edition  # noqa: E402

# --- The teacher's guide and notes -------------------------------------------------------------------------------

TEACHING = ROOT / "teaching"


def markdown_segments(text: str) -> list[tuple[str, str]]:
    """``text`` as ``(kind, text)`` segments that join back to it with newlines: "text" blocks (a paragraph, a list,
    a table, a heading), "code" blocks (a fenced block, kept whole) and "blank" lines."""
    segments: list[tuple[str, str]] = []
    block: list[str] = []
    fence = None

    def flush() -> None:
        if block:
            segments.append(("text", "\n".join(block)))
            block.clear()

    for line in text.split("\n"):
        opening = re.match(r"^\s*(```+|~~~+)", line)
        if fence is not None:
            block.append(line)
            if opening and opening.group(1).startswith(fence):
                segments.append(("code", "\n".join(block)))
                block.clear()
                fence = None
        elif opening:
            flush()
            fence = opening.group(1)
            block.append(line)
        elif not line.strip():
            flush()
            segments.append(("blank", line))
        else:
            block.append(line)
    if fence is not None:
        segments.append(("code", "\n".join(block)))
    else:
        flush()
    return segments


def _slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-") or "top"


def teaching_entries(text: str) -> list[tuple[str, str]]:
    """``(msgctxt, msgid)`` of each block of a teaching file to translate: ``msgctxt`` is its section (the slug of
    the heading above it) and its place there ("grading-with-nbgrader 3"); fenced code is kept, not translated."""
    found, section, place = [], "top", 0
    for kind, block in markdown_segments(text):
        if kind != "text":
            continue
        heading = re.match(r"^#{1,6} (.*)", block)
        if heading and "\n" not in block:
            section, place = _slug(heading.group(1)), 0
        found.append((f"{section} {place}", block))
        place += 1
    return found


def teaching_catalog_path(edition: Edition, page: Path) -> Path:
    return edition.catalogs / "teaching" / f"{page.stem}.po"


def merged_teaching_catalog(page: Path, old: polib.POFile | None, edition: Edition) -> polib.POFile:
    """The catalog of the teaching file ``page``, merged as ``msgmerge`` would: a block that moved keeps its
    translation; a block whose English changed keeps the old one, fuzzy; a new block arrives empty."""
    po, live = new_catalog(edition, old)
    exact = {(e.msgctxt, e.msgid): e for e in live}
    by_text = {e.msgid: e for e in live if e.msgstr and "fuzzy" not in e.flags}
    used: set[int] = set()
    where = f"teaching/{page.name}"
    for ctxt, msgid in teaching_entries(page.read_text(encoding="utf-8")):
        entry = polib.POEntry(msgctxt=ctxt, msgid=msgid, msgstr="", occurrences=[(where, ctxt.split()[0])])
        before = exact.get((ctxt, msgid)) or by_text.get(msgid)
        if before is not None:
            entry.msgstr, entry.flags = before.msgstr, list(before.flags)
            entry.previous_msgid, entry.tcomment = before.previous_msgid, before.tcomment
            used.add(id(before))
        else:
            candidates = [e for e in live if e.msgctxt == ctxt and id(e) not in used and e.msgstr]
            best = max(candidates, key=lambda e: difflib.SequenceMatcher(None, e.msgid, msgid).ratio(), default=None)
            if best is not None and difflib.SequenceMatcher(None, best.msgid, msgid).ratio() >= 0.5:
                entry.msgstr, entry.flags = best.msgstr, ["fuzzy"]
                entry.previous_msgid = best.previous_msgid if "fuzzy" in best.flags else best.msgid
                used.add(id(best))
        po.append(entry)
    for e in live:
        if id(e) not in used and e.msgstr:
            e.obsolete = True
            po.append(e)
    return po


def relocate_teaching_links(markdown: str, edition: Edition) -> str:
    """A teaching block's links as seen from ``E/teaching/``: the edition's notebooks, student copies, README and
    install page; any other path outside ``teaching/`` one folder further up."""
    markdown = relocate_links(markdown, edition)  # ../notebooks, ../student stay (the edition's); others gain ../
    markdown = re.sub(r"(\]\(|src=\"|href=\")((?:\.\./)+)INSTALL\.md", rf"\1\2{edition.install}", markdown)
    # a file of teaching/ that is not a translated page (nbgrader_config.py) is the English folder's
    return re.sub(r"(\]\(|src=\"|href=\")(?![a-z]+:|#|\.\./|/)([^)\"\s#]+)",
                  lambda m: m.group(0) if m.group(2).endswith(".md") else f"{m.group(1)}../../teaching/{m.group(2)}",
                  markdown)


def translated_teaching(page: Path, po: polib.POFile, edition: Edition) -> str:
    """``E/teaching/<page>``: each translated block in place (an empty or fuzzy one keeps the English)."""
    words = translations(po)
    out, section, place = [], "top", 0
    for kind, block in markdown_segments(page.read_text(encoding="utf-8")):
        if kind == "text":
            heading = re.match(r"^#{1,6} (.*)", block)
            if heading and "\n" not in block:
                section, place = _slug(heading.group(1)), 0
            block = with_stubs(relocate_teaching_links(words.get((f"{section} {place}", block), block), edition),
                               edition)
            place += 1
        out.append(block)
    return "\n".join(out)


_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


def numbers(text: str, edition: Edition | None = None) -> list[str]:
    """The numbers of ``text``, thousands commas dropped (``1,297`` and ``1297`` are one number), sorted. In a
    translation (``edition`` given) numbers are read with the edition's own separators (``decimal`` and
    ``thousands`` of the table: Russian ``0,25`` and ``50 257`` are 0.25 and 50257); code spans never count."""
    text = _CODE_SPAN.sub("", text)
    if edition is not None and (edition.decimal, edition.thousands) != (".", ""):
        if edition.thousands:
            text = re.sub(rf"(?<=\d){re.escape(edition.thousands)}(?=\d{{3}}(?!\d))", "", text)
        if edition.decimal != ".":
            text = re.sub(rf"(?<=\d){re.escape(edition.decimal)}(?=\d)", ".", text)
    return sorted(n.replace(",", "") for n in _NUMBER.findall(text))


def teaching_problems(english: str, translation: str, edition: Edition | None = None) -> list[str]:
    """What a teaching block's translation loses: its structure (``structure_problems``) and its numbers (read in
    the edition's number style)."""
    problems = structure_problems(english, translation)
    if numbers(english) != numbers(translation, edition):
        problems.append(f"numbers differ: English {numbers(english)}, translation {numbers(translation, edition)}")
    return problems


