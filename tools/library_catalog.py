"""The library's catalogs: extract ``mha_lib``'s messages, merge them into each language's ``.po``, compile ``.mo``.

``python tools/library_catalog.py`` reads every ``_("...")``, ``N_("...")`` (a data key shown as a word) and
``ngettext("...", "...", n)`` of the package with ``ast`` (only string literals count: a message is a whole
template, never an f-string), then, for each ``mha_lib/locale/<gettext>/LC_MESSAGES/mha_lib.po``:

- adds a new message with an empty translation (a changed English message is a new one);
- keeps a message that the code no longer uses as obsolete (``#~``), so a translator can reuse its words;
- rewrites each entry's source references (``#: mha_lib/checks/_core.py:210``);
- compiles the ``.mo`` beside it (the file gettext reads; both are committed, so a wheel carries them).

``--check`` writes nothing and fails (exit 1) with the list of what is missing: a message without a translation,
a fuzzy one, or a ``.mo`` that is not the compiled ``.po``. ``tests/test_i18n.py`` runs the same check.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

import polib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mha_lib"
LOCALE = PACKAGE / "locale"
DOMAIN = "mha_lib"


@dataclass
class Message:
    """One message of the code: its English text (and plural), and where it is used."""

    msgid: str
    msgid_plural: str = ""
    occurrences: list[tuple[str, str]] = field(default_factory=list)


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def extract(package: Path = PACKAGE) -> dict[str, Message]:
    """Every message of ``package``, by English text, in the order the files and lines come.

    A call of ``_`` or ``ngettext`` whose message is not a string literal is an error: the catalog could not hold it.
    """
    found: dict[str, Message] = {}
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), where)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("_", "N_", "ngettext")):
                continue
            texts = [_literal(a) for a in node.args[:2 if node.func.id == "ngettext" else 1]]
            if not texts or any(t is None for t in texts):
                raise ValueError(f"{where}:{node.lineno}: {node.func.id}() needs string literals (a whole template)")
            message = found.setdefault(texts[0], Message(texts[0], texts[1] if len(texts) > 1 else ""))
            message.occurrences.append((where, str(node.lineno)))
    return dict(sorted(found.items(), key=lambda item: item[1].occurrences[0]))


def catalogs() -> list[Path]:
    """Each language's ``mha_lib.po``."""
    return sorted(LOCALE.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))


def merge(po: polib.POFile, messages: dict[str, Message]) -> None:
    """Bring ``po`` in step with ``messages``: new ones empty, gone ones obsolete, references renewed, code order."""
    old = {e.msgid: e for e in po if not e.obsolete}
    obsolete = [e for e in po if e.obsolete]
    entries = []
    for msgid, message in messages.items():
        entry = old.pop(msgid, None)
        if entry is None:
            entry = polib.POEntry(msgid=msgid, msgstr="")
            if message.msgid_plural:
                entry.msgid_plural = message.msgid_plural
                entry.msgstr_plural = {0: "", 1: ""}
        entry.occurrences = message.occurrences
        entries.append(entry)
    for entry in old.values():
        entry.obsolete = True
        entry.occurrences = []
        obsolete.append(entry)
    po[:] = entries + obsolete


def problems(po_path: Path, messages: dict[str, Message]) -> list[str]:
    """What keeps ``po_path`` from translating the library: a message missing, untranslated or fuzzy; a stale .mo."""
    po = polib.pofile(str(po_path), wrapwidth=0)
    name = po_path.relative_to(ROOT).as_posix()
    entries = {e.msgid: e for e in po if not e.obsolete}
    found = []
    for msgid in messages:
        entry = entries.get(msgid)
        if entry is None:
            found.append(f"{name}: no entry for {msgid!r} (run python tools/library_catalog.py)")
        elif "fuzzy" in entry.flags or not entry.translated():
            found.append(f"{name}: {msgid!r} is not translated")
    mo = po_path.with_suffix(".mo")
    if not mo.exists() or mo.read_bytes() != compiled(po):
        found.append(f"{name}: {mo.name} is not the compiled catalog (run python tools/library_catalog.py)")
    return found


def compiled(po: polib.POFile) -> bytes:
    """The ``.mo`` of ``po``: its translated entries only (an empty translation would show as an empty message)."""
    kept = polib.POFile(wrapwidth=0)
    kept.metadata = po.metadata
    for entry in po:
        if not entry.obsolete and entry.translated() and "fuzzy" not in entry.flags:
            kept.append(entry)
    return kept.to_binary()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; fail when a catalog is behind")
    args = parser.parse_args(argv)
    messages = extract()
    if args.check:
        found = [p for path in catalogs() for p in problems(path, messages)]
        print("\n".join(found) or f"{len(messages)} messages, every catalog translates them")
        return 1 if found else 0
    for path in catalogs():
        po = polib.pofile(str(path), wrapwidth=0)
        merge(po, messages)
        po.save(str(path))
        path.with_suffix(".mo").write_bytes(compiled(po))
        todo = sum(1 for e in po if not e.obsolete and (not e.translated() or "fuzzy" in e.flags))
        print(f"{path.relative_to(ROOT)}: {len(messages)} messages, {todo} to translate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
