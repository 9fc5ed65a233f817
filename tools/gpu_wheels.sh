#!/usr/bin/env bash
# The wheels tools/gpu_run.sh installs on a lent GPU machine, which has PyTorch, pandas, matplotlib, pytest,
# pytest-xdist, hypothesis and transformers but reaches no registry: the notebook runner (nbval, nbclient,
# ipykernel and what they need), ipywidgets, d2l and polib, for Python 3.12 on x86-64 Linux, into .whl/
# (ignored by git; about 17 MB). The versions are requirements.txt's. Usage: bash tools/gpu_wheels.sh [PYVER [DIR]]
set -euo pipefail
cd "$(dirname "$0")/.."
PYVER=${1:-3.12}
DIR=${2:-.whl}
PACKAGES=(
    nbval==0.11.0 nbclient==0.11.0 nbformat==5.11.1 fastjsonschema==2.22.3 jsonschema==4.26.0
    jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
    ipykernel==7.4.0 ipython==9.18.1 ipython_pygments_lexers==1.1.1 jedi==0.20.1 parso==0.8.7 prompt_toolkit==3.0.53
    wcwidth==0.9.4 matplotlib-inline==0.2.2 stack-data==0.6.3 executing==2.3.0 asttokens==3.0.2 pure_eval==0.2.4
    pexpect==4.9.0 ptyprocess==0.7.0 traitlets==5.16.1 jupyter_client==8.10.0 jupyter_core==5.9.1
    platformdirs==4.14.8 pyzmq==27.3.0 tornado==6.6.1 comm==0.2.3 debugpy==1.8.22
    ipywidgets==8.1.9 widgetsnbextension==4.0.16 jupyterlab_widgets==3.0.17 d2l==1.0.3 polib==1.2.0
)
PLATFORMS=()
for p in manylinux_2_28 manylinux_2_27 manylinux_2_26 manylinux_2_24 manylinux_2_17 manylinux2014 manylinux_2_5 manylinux1; do
    PLATFORMS+=(--platform "${p}_x86_64")
done
rm -rf "$DIR"
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
    "${PLATFORMS[@]}" -d "$DIR" "${PACKAGES[@]}"
echo "$(ls "$DIR" | wc -l) wheels in $DIR ($(du -sh "$DIR" | cut -f1))"
