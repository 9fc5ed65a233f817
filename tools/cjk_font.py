"""The Chinese font the figures carry: a subset of Noto Sans CJK SC, shipped in ``mha_lib/fonts/``.

matplotlib's default font (DejaVu Sans) has no Han characters, and Colab, Binder, a JupyterHub and most student
laptops have no CJK font that matplotlib finds: a figure with Chinese words would show empty boxes there. So the
package ships the glyphs its Chinese figures need, and ``mha_lib.fonts`` registers them with matplotlib (a fallback
after DejaVu Sans: Latin letters, digits and maths keep their look).

``python tools/cjk_font.py`` writes ``mha_lib/fonts/NotoSansCJKsc-Regular-subset.otf`` from Debian's
``fonts-noto-cjk`` (``apt-get download fonts-noto-cjk``; the package is fetched into a temporary folder when no
``--source`` is given) with fontTools' subsetter, keeping:

- every character of the Chinese catalogs (``locale/zh_CN/*.po``, ``mha_lib/locale/zh_CN/``): what the notebooks
  print and draw, the library's messages, the diagrams' words;
- the 3,755 characters of GB 2312's first level (the common Han characters), so that a learner's own Chinese title
  in an exercise draws too, and the Latin, Greek, Cyrillic, punctuation, arrows and mathematical operators that
  the words around a label's ``$...$`` may hold (matplotlib draws those with the first font only).

``--check`` writes nothing and exits 1 listing the catalogs' characters the shipped font lacks (what
``tests/test_fonts.py`` also checks, with matplotlib alone). The font is under the SIL Open Font License 1.1
(``mha_lib/fonts/OFL.txt``); a subset is a modified version that keeps the family's name, which the licence allows
for Noto (its reserved name is "Source").
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import polib

ROOT = Path(__file__).resolve().parents[1]
FONT = ROOT / "mha_lib" / "fonts" / "NotoSansCJKsc-Regular-subset.otf"
CATALOGS = [*sorted((ROOT / "locale" / "zh_CN").rglob("*.po")),
            ROOT / "mha_lib" / "locale" / "zh_CN" / "LC_MESSAGES" / "mha_lib.po"]
SC_FACE = "Noto Sans CJK SC"  # the Simplified Chinese face of the collection (face 0 is the Japanese one)


def catalog_characters() -> set[str]:
    """Every character of the Chinese catalogs' translations (a string's ``{fields}`` and escapes included)."""
    chars: set[str] = set()
    for path in CATALOGS:
        for entry in polib.pofile(str(path)):
            if not entry.obsolete:
                chars.update(entry.msgstr, *entry.msgstr_plural.values())
    return {c for c in chars if not c.isspace()}


def common_characters() -> set[str]:
    """ASCII, Latin-1, Greek, Cyrillic, punctuation (general, CJK, full-width), arrows, mathematical operators (the
    minus sign of a tick label) and GB 2312's level-1 Han characters: what the words around a label's ``$...$`` may
    hold, which matplotlib draws with the first font alone."""
    chars = {chr(c) for c in [*range(0x20, 0x7F), *range(0xA0, 0x100), *range(0x370, 0x460), *range(0x2010, 0x2070),
                              *range(0x2190, 0x2300), *range(0x3000, 0x3040), *range(0xFF00, 0xFF66)]}
    for high in range(0xB0, 0xD8):
        for low in range(0xA1, 0xFF):
            try:
                chars.add(bytes([high, low]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    return chars


def missing(font: Path = FONT) -> list[str]:
    """The catalogs' characters that ``font`` has no glyph for (matplotlib's own reading of its character map)."""
    from matplotlib.ft2font import FT2Font

    charmap = FT2Font(str(font)).get_charmap()
    return sorted(c for c in catalog_characters() if ord(c) not in charmap and ord(c) > 0x7F)


def _debian_collection(folder: Path) -> Path:
    subprocess.run(["apt-get", "download", "fonts-noto-cjk"], cwd=folder, check=True)
    deb = next(folder.glob("fonts-noto-cjk_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(folder / "x")], check=True)
    return next((folder / "x").rglob("NotoSansCJK-Regular.ttc"))


def write(source: Path) -> None:
    from fontTools.subset import Options, Subsetter
    from fontTools.ttLib import TTCollection, TTFont

    faces = TTCollection(str(source)).fonts if source.suffix == ".ttc" else [TTFont(str(source))]
    font = next(f for f in faces if f["name"].getDebugName(1) == SC_FACE)
    options = Options()
    options.layout_features = ["*"]
    options.hinting = False
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    subsetter = Subsetter(options)
    subsetter.populate(text="".join(sorted(catalog_characters() | common_characters())))
    subsetter.subset(font)
    FONT.parent.mkdir(exist_ok=True)
    font.save(str(FONT))
    print(f"{FONT.relative_to(ROOT)}: {len(font.getBestCmap())} characters, {FONT.stat().st_size // 1024} KiB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, help="NotoSansCJK-Regular.ttc (default: Debian's, downloaded)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a character is missing")
    args = parser.parse_args(argv)
    if not args.check:
        if args.source:
            write(args.source)
        else:
            with tempfile.TemporaryDirectory() as folder:
                write(_debian_collection(Path(folder)))
    lacking = missing()
    if lacking:
        print(f"{FONT.relative_to(ROOT)} lacks {len(lacking)} characters of the Chinese catalogs: {''.join(lacking)}"
              " (run python tools/cjk_font.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
