"""Sphinx configuration of the series' website; ``tools/site_build.py`` copies it into the staged sources.

Offline by design: MathJax is served from _static/mathjax (npm's mathjax3), the theme and its icons come from
PyPI's sphinx-book-theme, search is Sphinx's own index, and nothing is executed (the notebooks' saved outputs).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # build/site-src/conf.py -> the repository
sys.path.insert(0, str(ROOT / "tools"))

import site_build  # noqa: E402

URLS = site_build.project_urls()

project = "Multi-Head Attention, from tokens to heads"
author = "The series' authors"
copyright = "the series' authors, MIT license"  # noqa: A001 (Sphinx's name)
html_title = "Multi-Head Attention, from tokens to heads"
html_baseurl = URLS["Documentation"]

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.mathjax", "sphinx.ext.githubpages"]
exclude_patterns = ["_extra", "_static"]
suppress_warnings = ["mystnb.unknown_mime_type", "misc.highlighting_failure"]

# The notebooks: saved outputs only, never executed.
nb_execution_mode = "off"
nb_merge_streams = True
nb_ipywidgets_js: dict = {}  # widget outputs are replaced when staging; nothing is fetched for them
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "html_image"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

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
html_context = {"default_mode": "auto"}
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
}
