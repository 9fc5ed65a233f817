"""Sphinx configuration of the series' website; ``tools/site_build.py`` copies it into the staged sources.

Offline by design: MathJax is served from the English site's _static/mathjax (npm's mathjax3), the theme and its
icons come from PyPI's sphinx-book-theme, search is Sphinx's own index, and nothing is executed (the notebooks'
saved outputs). One file for every edition's site: the edition is the one whose staged sources this copy sits in.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # build/site-src/conf.py -> the repository
sys.path[:0] = [str(ROOT / "tools"), str(ROOT)]  # the site's tools, and mha_lib from this checkout (autodoc)

import site_build  # noqa: E402
from docutils import nodes  # noqa: E402
from sphinx import search  # noqa: E402

URLS = site_build.project_urls()
LANGUAGE = site_build.language_of(Path(__file__).resolve().parent)
WORDS = LANGUAGE.words
SOURCE_SITE = site_build.site_url(site_build.SOURCE)
TO_SOURCE = "" if LANGUAGE.is_source else "../" * (LANGUAGE.folder.count("/") + 1)  # _static/ -> the English one

project = site_build.readme_title(LANGUAGE)
author = WORDS["author"]
copyright = WORDS["copyright"]  # noqa: A001 (Sphinx's name)
html_title = project
html_baseurl = site_build.site_url(LANGUAGE)
language = LANGUAGE.sphinx  # Sphinx's and the themes' own words (search, contents, previous and next)
# The theme's words that no installed catalog has (site_build.theme_catalog), and the search page's JavaScript
# catalog (sphinx.js), which Sphinx reads from here relative to the working folder: hence absolute.
locale_dirs = [str(Path(__file__).resolve().parent / "_locale")]
if language == "zh_CN":
    # Sphinx splits Chinese into words with jieba (requirements-site.txt; without it no Chinese word is indexed);
    # the course's terms are added to jieba's dictionary so that 多头注意力 or 因果掩码 stay whole words.
    html_search_options = {"dict": str(ROOT / "site" / "search-words.zh-CN.txt")}

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.mathjax",
              "sphinx.ext.githubpages", "sphinx_copybutton", "sphinxext.opengraph"]
exclude_patterns = ["_extra", "_static", "_locale", "_templates"]
suppress_warnings = ["mystnb.unknown_mime_type", "misc.highlighting_failure"]

# The notebooks: saved outputs only, never executed.
nb_execution_mode = "off"
nb_merge_streams = True
nb_ipywidgets_js: dict = {}  # widget outputs are replaced when staging; nothing is fetched for them
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "html_image"]
myst_heading_anchors = 3
myst_dmath_double_inline = True
# A link to a page of another edition's site: `other-site:` and its relative URL (see setup below).
myst_url_schemes = ["http", "https", "mailto", "ftp", site_build.OTHER_SITE.rstrip(":")]

# The API reference: autosummary writes a page per module of mha_lib from _templates/autosummary/module.rst,
# autodoc fills it from the docstrings (it imports mha_lib, which imports torch).
autosummary_generate = True
autosummary_ignore_module_all = False  # the package's page lists mha_lib.__all__
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autodoc_default_options = {"ignore-module-all": True}  # each name once: in the module that defines it
autosummary_context = {"private_homes": site_build.private_homes()}  # _templates/autosummary/module.rst
add_module_names = False
toc_object_entries_show_parents = "hide"  # the page's contents: "trace()", not "MultiHeadAttention.trace()"

# Copy buttons on code cells and code blocks, not on outputs; the prompt-free code copies as it is.
copybutton_selector = "div.cell_input div.highlight pre, div.highlight-bash pre, div.highlight-python pre"
copybutton_exclude = ".linenos, .gp, .go"

# Page descriptions and social cards (<meta name="description">, og:*): one card image for every page, the series'
# diagram, published with the English site (sphinxext-opengraph's generated cards would need matplotlib's fonts
# and a PNG per page; a link preview needs one picture, not ninety).
ogp_site_url = html_baseurl
ogp_image = SOURCE_SITE + "_static/card.png"
ogp_image_alt = project
ogp_social_cards = {"enable": False}
ogp_enable_meta_description = True
ogp_type = "article"
ogp_custom_meta_tags = [f'<meta property="og:locale" content="{LANGUAGE.code.replace("-", "_")}">']

# MathJax 3 from npm, served once with the English site (the other sites point at it).
# A relative path is read from _static/: "../" leaves it, TO_SOURCE climbs to the English site.
mathjax_path = "mathjax/tex-chtml.js" if LANGUAGE.is_source else f"../{TO_SOURCE}_static/mathjax/tex-chtml.js"

html_theme = "sphinx_book_theme"
html_static_path = ["_static"]
html_extra_path = ["_extra"]
html_css_files = ["site.css"] + (["cjk.css"] if LANGUAGE.code in site_build.FONTS.NEEDS_CJK else [])  # Chinese glyphs
html_js_files = ["site.js"]
templates_path = ["_templates"]
html_last_updated_fmt = None
html_domain_indices = False  # the module index: the API reference lists the modules already
html_use_index = False  # the general index (genindex.html): empty here, and linked from nowhere
html_show_sourcelink = False
html_copy_source = False
# A first visit has no mode in localStorage; without a default the theme logs "invalid theme mode" to the console.
html_context = {"default_mode": "auto",
                "language_menu": site_build.language_menu(LANGUAGE),  # _templates/language-switch.html
                "english_pages": site_build.english_pages(LANGUAGE),  # _templates/english-pages.html
                "author_line": WORDS["author_line"]}  # _templates/author.html
# The book theme's sidebar (its title is the home page's link), then the English-only pages (none on the English site).
html_sidebars = {"**": ["navbar-logo.html", "icon-links.html", "search-button-field.html", "sbt-sidebar-nav.html",
                        "english-pages.html"]}
html_theme_options = {
    "repository_url": URLS["Repository"],
    "repository_branch": site_build.BRANCH,
    "use_repository_button": True,
    "use_download_button": True,  # its menu's "Print to PDF" (window.print(), with site.css's print styles)
    "use_fullscreen_button": False,
    "home_page_in_toc": False,  # the sidebar's title already links the home page
    "show_toc_level": 2,
    "show_navbar_depth": 1,
    "navigation_with_keys": False,
    "launch_buttons": {},
    "search_bar_text": WORDS["search_bar"],
    # No top bar: its hidden copies of the sidebar buttons were the ones the theme's scripts bound (the visible ones
    # did nothing below 992 px), and it held a second search field.
    "navbar_persistent": [],
    # The language menu, in the header of every page, phones included.
    "article_header_end": ["language-switch.html", "article-header-buttons.html"],
}


def fold_accents(word: str) -> str:
    """``máscara`` -> ``mascara``: the search index and the query both lose their accents (site.js does the query)."""
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


def _accent_free_search(lang: str) -> None:
    """Make the search language of ``lang`` fold accents before it stems, so that a word typed without its accents
    finds the pages that have it (site.js wraps the page's JavaScript stemmer the same way)."""
    key = lang if lang in search.languages else lang.partition("_")[0]
    base = search.languages.get(key, search.SearchEnglish)
    if isinstance(base, str):
        module, _, name = base.rpartition(".")
        base = getattr(importlib.import_module(module), name)

    class AccentFree(base):
        # The page's stemmer is named after the language (``window.Stemmer = <language_name>Stemmer``); Sphinx
        # 9's Chinese ships the English stemmer's code under the name ChineseStemmer, which no code defines (the
        # search page then stops with a ReferenceError): name it after the stemmer the page really loads.
        if getattr(base, "js_stemmer_rawcode", None):
            language_name = base.js_stemmer_rawcode.removesuffix("-stemmer.js").title()

        def stem(self, word: str) -> str:
            return super().stem(fold_accents(word))

    search.languages[key] = AccentFree


def _other_site_links(app, doctree) -> None:
    """`other-site:../teaching/README.html` (a page of another site, staged so) becomes a plain relative link."""
    for reference in doctree.findall(nodes.reference):
        if reference.get("refuri", "").startswith(site_build.OTHER_SITE):
            reference["refuri"] = reference["refuri"].removeprefix(site_build.OTHER_SITE)
            reference["classes"].append("other-site")


def _reexported(app, env, node, contnode):
    """A reference to ``mha_lib.X`` (the package's name for it, as autosummary's table writes it) resolves to where
    X is documented, ``mha_lib.module.X``."""
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("mha_lib.") or target.count(".") != 1:
        return None
    obj = getattr(importlib.import_module("mha_lib"), target.split(".")[1], None)
    home = getattr(obj, "__module__", None)
    if home is None or home == "mha_lib":
        return None
    canonical = f"{home}.{getattr(obj, '__qualname__', target.split('.')[1])}"
    return env.domains["py"].resolve_xref(env, node["refdoc"], app.builder, node["reftype"], canonical, node,
                                          contnode)


def _public_data_only(app, what, name, obj, skip, options):
    """A module's constants and aliases are documented when some module of mha_lib exports them (``__all__``)."""
    if what == "module" and not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj)):
        return True if name not in site_build.exported_names() else None
    return None


def _print_only(app, pagename, templatename, context, doctree) -> None:
    """The theme's download menu keeps its "Print to PDF" alone: the page's source file is not published."""
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"] = [b for b in group["buttons"] if b.get("label") == "download-pdf-button"]


def setup(app) -> None:
    app.connect("html-page-context", _print_only, priority=900)
    app.connect("autodoc-skip-member", _public_data_only)
    _accent_free_search(language)
    app.connect("doctree-read", _other_site_links)
    app.connect("missing-reference", _reexported)
