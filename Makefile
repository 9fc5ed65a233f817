# Two commands set everything up on a fresh machine: `make lab` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
D2L := d2l==1.0.3
PYTEST_ARGS ?= -n 2 --dist loadfile

.PHONY: help install lab test lint unit notebooks images benchmark clean

help:
	@echo "make lab        create .venv, install, open JupyterLab on notebooks/"
	@echo "make test       create .venv, install, run ruff and every test (notebooks included)"
	@echo "make notebooks  re-execute every notebook in place (clean diffs)"
	@echo "make images     regenerate the figures in images/"
	@echo "make benchmark  run the full attention benchmark (minutes)"

$(PY):
	$(PYTHON) -m venv $(VENV)

# Re-runs only when the pins or the package metadata change; otherwise `make test` starts at once.
$(STAMP): requirements.txt pyproject.toml | $(PY)
	$(PY) -m pip install --upgrade --quiet pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps $(D2L)
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# JupyterLab refuses to run as root (containers, CI) unless told to.
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
LAB_ARGS ?=

lab: install
	$(VENV)/bin/jupyter lab $(ROOT_FLAG) $(LAB_ARGS) notebooks/

lint: install
	$(VENV)/bin/ruff check .

test: lint
	$(PY) -m pytest $(PYTEST_ARGS)

notebooks: install
	$(PY) tools/execute_notebooks.py notebooks/*.ipynb

images: install
	$(PY) images/make_figures.py

benchmark: install
	$(PY) benchmarks/mha_benchmark.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
