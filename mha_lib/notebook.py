"""One call that makes a notebook's outputs reproducible: seeds, print precision, figure format."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import torch

from mha_lib._validate import check_int


def setup(seed: int = 42, *, precision: int = 4) -> None:
    """Seed Python, NumPy and torch; print tensors and tables with ``precision`` decimals; PNG figures."""
    seed = check_int("seed", seed, minimum=0)
    precision = check_int("precision", precision, minimum=0)
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
