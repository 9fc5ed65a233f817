"""Sphinx configuration of the series' website; ``tools/site_build.py`` copies it into the staged sources.

Offline by design: MathJax is served from _static/mathjax (npm's mathjax3), the theme and its icons come from
PyPI's sphinx-book-theme, search is Sphinx's own index, and nothing is executed (the notebooks' saved outputs).
One file for both sites: the language is the one whose staged sources this copy sits in (site_build.LANGUAGES).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # build/site-src/conf.py -> the repository
sys.path.insert(0, str(ROOT / "tools"))

import site_build  # noqa: E402
from docutils import nodes  # noqa: E402

URLS = site_build.project_urls()
LANGUAGE = site_build.language_of(Path(__file__).resolve().parent)
WORDS = LANGUAGE.words

project = site_build.readme_title(LANGUAGE)
author = WORDS["author"]
copyright = WORDS["copyright"]  # noqa: A001 (Sphinx's name)
html_title = project
html_baseurl = site_build.site_url(LANGUAGE)
language = LANGUAGE.sphinx  # Sphinx's and the themes' own words (search, contents, previous and next)
locale_dirs = ["_locale"]  # the theme's words that no installed catalog has (site_build.theme_catalog)

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.mathjax", "sphinx.ext.githubpages"]
exclude_patterns = ["_extra", "_static", "_locale"]
suppress_warnings = ["mystnb.unknown_mime_type", "misc.highlighting_failure"]

# The notebooks: saved outputs only, never executed.
nb_execution_mode = "off"
nb_merge_streams = True
nb_ipywidgets_js: dict = {}  # widget outputs are replaced when staging; nothing is fetched for them
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "html_image"]
myst_heading_anchors = 3
myst_dmath_double_inline = True
# A link to a page of the other language's site: `other-site:` and its relative URL (see setup below).
myst_url_schemes = ["http", "https", "mailto", "ftp", site_build.OTHER_SITE.rstrip(":")]

# The API reference (autodoc imports mha_lib, which imports torch).
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
add_module_names = False
toc_object_entries_show_parents = "hide"  # the page's contents: "trace()", not "MultiHeadAttention.trace()"

# MathJax 3 from npm, served with the site.
mathjax_path = "mathjax/tex-chtml.js"

html_theme = "sphinx_book_theme"
html_static_path = ["_static"]
html_extra_path = ["_extra"]
html_css_files = ["site.css"]
html_js_files = ["site.js"]
templates_path = ["_templates"]
html_last_updated_fmt = None
html_domain_indices = False  # the module index: the API reference lists the modules already
# A first visit has no mode in localStorage; without a default the theme logs "invalid theme mode" to the console.
html_context = {"default_mode": "auto",
                "language_switch": site_build.language_switch(LANGUAGE),  # _templates/language-switch.html
                "english_pages": site_build.english_pages(LANGUAGE),  # _templates/english-pages.html
                "author_line": WORDS["author_line"]}  # _templates/author.html
# The book theme's sidebar, then the English-only pages (none on the English site itself).
html_sidebars = {"**": ["navbar-logo.html", "icon-links.html", "search-button-field.html", "sbt-sidebar-nav.html",
                        "english-pages.html"]}
html_show_sourcelink = False
html_copy_source = False
html_theme_options = {
    "repository_url": URLS["Repository"],
    "repository_branch": site_build.BRANCH,
    "use_repository_button": True,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "show_navbar_depth": 1,
    "navigation_with_keys": False,
    "launch_buttons": {},
    "search_bar_text": WORDS["search_bar"],
    # The language switch, in the header of every page, phones included.
    "article_header_end": ["language-switch.html", "article-header-buttons.html"],
}


def _other_site_links(app, doctree) -> None:
    """`other-site:../teaching/README.html` (a page of the other site, staged so) becomes a plain relative link."""
    for reference in doctree.findall(nodes.reference):
        if reference.get("refuri", "").startswith(site_build.OTHER_SITE):
            reference["refuri"] = reference["refuri"].removeprefix(site_build.OTHER_SITE)
            reference["classes"].append("other-site")


def setup(app) -> None:
    app.connect("doctree-read", _other_site_links)
