"""What a notebook needs around the lessons: reproducible outputs, training seeds, and the series' diagrams."""

from __future__ import annotations

import os
import random
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from mha_lib._validate import check_int, check_str
from mha_lib.i18n import _, get_language
from mha_lib.i18n import _set as set_language

if TYPE_CHECKING:  # Python 3.11+ has importlib.resources.abc; only the annotation needs it
    from importlib.resources.abc import Traversable

TRAINING_SEED_VARIABLE = "MHA_TRAINING_SEED"
"""Set it to a whole number ``s`` to retrain every model of a notebook with other seeds (``make test-seeds``)."""


def setup(seed: int = 42, *, precision: int = 4, language: str | None = None) -> None:
    """Seed Python, NumPy and torch; print tensors and tables with ``precision`` decimals; PNG figures.

    ``language``: the edition's language for every message of the library (``"en"``, ``"pt-BR"``; see
    ``mha_lib.i18n``); None leaves it as it is (English, unless ``MHA_LANGUAGE`` names another).
    """
    seed = check_int("seed", seed, minimum=0)
    precision = check_int("precision", precision, minimum=0)
    if language is not None:
        set_language("language", language)
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - seeds the legacy global generator that older code uses
    torch.manual_seed(seed)
    torch.set_printoptions(precision=precision, sci_mode=False)
    np.set_printoptions(precision=precision, suppress=True)
    pd.set_option("display.precision", precision)
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing to configure
        return
    shell = get_ipython()
    if shell is not None:
        shell.run_line_magic("matplotlib", "inline")
        shell.run_line_magic("config", "InlineBackend.figure_formats = ['png']")
        shell.run_line_magic("config", "InlineBackend.rc = {'figure.dpi': 100, 'savefig.dpi': 100}")


def training_seed(committed: int) -> int:
    """The seed a model is trained with: ``committed`` (the run whose outputs the notebook shows), or another run's.

    With the environment variable ``MHA_TRAINING_SEED`` set to a whole number ``s >= 1``, every call returns
    ``1000 * s + committed`` instead: each model of the notebook still gets its own seed, and run ``s`` shares
    none with the committed run. ``make test-seeds`` uses it to check that a notebook's claims about trained
    models hold for other seeds, not for one lucky start.
    """
    committed = check_int("committed", committed, minimum=0)
    if committed >= 1000:
        raise ValueError(f"committed must be < 1000 (runs are 1000 apart), got {committed}")
    run = os.environ.get(TRAINING_SEED_VARIABLE, "").strip()
    if not run:
        return committed
    try:
        shift = int(run)
    except ValueError:
        raise ValueError(f"{TRAINING_SEED_VARIABLE} must be a whole number >= 1 (a run), got {run!r}") from None
    if shift < 1:
        raise ValueError(f"{TRAINING_SEED_VARIABLE} must be a whole number >= 1 (a run), got {run!r}")
    return 1000 * shift + committed


# ------------------------------------------------------------------------------------------------ diagrams


def _images() -> Traversable | Path:
    """The folder of the series' diagrams: the installed ``mha_lib.images``, or ``images/`` of a checkout."""
    try:
        return files("mha_lib.images")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[1] / "images"


@cache
def diagram_names() -> tuple[str, ...]:
    """The name of every diagram in ``images/`` (``"09_head_gates"``, ...), sorted."""
    return tuple(sorted(p.name.removesuffix(".png") for p in _images().iterdir() if p.name.endswith(".png")))


def diagram_path(name: str, language: str | None = None) -> Traversable | Path:
    """The PNG of diagram ``name`` in ``language`` (default: the library's, ``mha_lib.i18n``).

    An edition's diagrams are ``images/<code>/<name>.png`` (``images/pt-BR/04_mask_polarity.png``), drawn from the
    same scripts with their words translated; a diagram without words of its own, or a language without
    drawings, falls back to the English ``images/<name>.png``.
    """
    code = get_language() if language is None else language
    translated = _images().joinpath(code).joinpath(f"{name}.png")  # one step at a time: a MultiplexedPath
    return translated if code != "en" and translated.is_file() else _images().joinpath(f"{name}.png")


class Diagram:
    """One diagram of ``images/`` as a cell output: the PNG where pictures show, its description as text.

    The picture and the text are those of the library's language when the diagram was asked for (``diagram_path``).
    """

    def __init__(self, name: str, description: str) -> None:
        self.name = check_str("name", name, nonempty=True)
        self.description = check_str("description", description, nonempty=True)
        if name not in diagram_names():
            raise ValueError(f"name must be one of the diagrams in images/ ({', '.join(diagram_names())}), "
                             f"got {name!r}")
        self.png = diagram_path(name).read_bytes()
        self.text = _("[diagram {name}: {description}]").format(name=name, description=description)

    def _repr_png_(self) -> bytes:
        return self.png

    def __repr__(self) -> str:
        return self.text


def show_diagram(name: str, description: str) -> Diagram:
    """The diagram ``images/{name}.png``; as a cell's last expression it shows as a picture, on any front end.

    A picture stored as a cell output travels inside the notebook: GitHub, Colab, JupyterLab, VS Code and
    nbviewer all show it, and re-running the cell draws it again. ``description`` says in words what it shows
    (it is the output's text, read where pictures are not shown).
    """
    return Diagram(name, description)
