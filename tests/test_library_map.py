"""mha_lib's layers (mha_lib/README.md): a module imports only from layers below its own, so no import circle can form.

The imports are read with ``ast`` from the source, including imports inside functions (the kind that hid the old
circle between ``_validate`` and ``mha``). A new module must be placed on the map, here and in the README.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "mha_lib"

# Bottom to top; a module may import only modules of lower layers (the package names its own inner order below).
LAYERS: list[list[str]] = [
    ["fonts"],  # the glyphs the figures need (Chinese)
    ["_validate", "i18n"],  # argument checks; the library's language
    ["tokenize", "heads", "positional", "attention", "cache", "trace", "hooks", "measure", "notebook"],  # pieces
    ["kernels", "arguments"],  # the attention functions the layer calls, and its argument checks
    ["mha"],  # the layer
    ["reference", "tables", "plots", "head_maps", "toy"],  # built on the layer: references, views, the toy kit
    ["bert"],  # a BERT encoder from the layer, scored with the toy kit's detectors
    ["pretrained"],  # real checkpoints into bert and the layer
    ["explorer"],  # the interactive widget over all of them
    ["checks"],  # the notebooks' exercise checks: may use everything
]
# Inside a package, its modules in order (earlier ones never import later ones); the package's __init__ may
# import them all. Packages not listed here only have to stay free of circles.
INNER = {"toy": ["tasks", "model", "adamw", "training", "detectors", "importance"]}
LAYER_OF = {name: i for i, layer in enumerate(LAYERS) for name in layer}
MAX_LINES = 400


def _module_name(path: Path) -> str:
    """``mha_lib/toy/model.py`` -> ``toy.model``; a package's ``__init__.py`` -> its name (``""`` for mha_lib)."""
    parts = path.relative_to(LIB).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(LIB.rglob("*.py"))}


def _imports(path: Path) -> set[str]:
    """The ``mha_lib`` modules that ``path`` imports, anywhere in the file, as names relative to ``mha_lib``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "mha_lib":  # from mha_lib import toy: the names are modules
                found |= {alias.name for alias in node.names}
            elif node.module.startswith("mha_lib."):
                found.add(node.module.removeprefix("mha_lib."))
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("mha_lib.") for a in node.names if a.name.startswith("mha_lib.")}
        assert not (isinstance(node, ast.ImportFrom) and node.level), f"{path.name}: relative import, use mha_lib.…"
    return found


def _top(name: str) -> str:
    return name.split(".")[0]


def test_every_module_is_on_the_map() -> None:
    tops = {_top(name) for name in MODULES if name}
    assert tops == set(LAYER_OF), f"not on the map: {tops - set(LAYER_OF)}; on the map, gone: {set(LAYER_OF) - tops}"
    for package, order in INNER.items():
        inside = {name.split(".", 1)[1] for name in MODULES if name.startswith(package + ".")}
        assert inside == set(order), f"{package}: modules {sorted(inside)}, the map lists {order}"


def test_the_readme_draws_every_module() -> None:
    readme = (LIB / "README.md").read_text()
    for name in [*LAYER_OF, *(f"{p}.{m}" for p, order in INNER.items() for m in order)]:
        assert f"`{name}" in readme, f"mha_lib/README.md does not mention `{name}`"


@pytest.mark.parametrize("name", [name for name in MODULES if name], ids=str)
def test_a_module_imports_only_from_lower_layers(name: str) -> None:
    top = _top(name)
    for target in _imports(MODULES[name]):
        assert target in MODULES or target.rsplit(".", 1)[0] in MODULES, f"{name} imports an unknown mha_lib.{target}"
        if _top(target) == top:  # inside one package
            order = INNER.get(top)
            if order is None or name == top:
                continue
            mine, theirs = order.index(name.split(".", 1)[1]), order.index(target.split(".", 1)[1])
            assert theirs < mine, f"{name} imports {target}, which comes after it in {top}'s order {order}"
        else:
            assert LAYER_OF[_top(target)] < LAYER_OF[top], (
                f"{name} (layer {LAYER_OF[top]}) imports {target} (layer {LAYER_OF[_top(target)]}): a module imports"
                " only from layers below its own (mha_lib/README.md); move the shared piece down a layer"
            )


def test_there_is_no_import_circle() -> None:
    graph = {name: {t for t in _imports(path) if t in MODULES} for name, path in MODULES.items() if name}
    graphlib.TopologicalSorter(graph).static_order()  # raises CycleError, naming the circle, if there is one


@pytest.mark.parametrize("name", list(MODULES), ids=lambda n: n or "__init__")
def test_no_module_holds_two_jobs(name: str) -> None:
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"mha_lib/{MODULES[name].relative_to(LIB)} has {lines} lines: split it by job"
