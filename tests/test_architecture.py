"""The layout keeps its promises: layers point one way, no import circles, no prefect in the library, and
every import of an nlsim name (also inside functions) names something that exists."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS: dict[str, int] = {
    "nlsim": 0,
    "nlsim.errors": -2,
    "nlsim.environment": -1,
    "nlsim.options": 0,
    "nlsim.progress": 0,
    "nlsim.orchestration": 0,
    "nlsim.faults": 0,
    "nlsim.conversion": 1,
    "nlsim.io": 2,
    "nlsim.inference": 3,
    "nlsim.encoders": 4,
    "nlsim.search": 4,
    "nlsim.clusters": 4,
    "nlsim.evaluation": 5,
    "nlsim.rerank": 6,
    "nlsim.report": 7,
    "nlsim.models": 8,
    "nlsim.dedup": 9,
    "nlsim.training": 9,
    "nlsim.annotation": 9,
    "nlsim.chain": 10,
    "nlsim.commands": 11,
    "nlsim.cli": 11,
    "nlsim.__main__": 11,
}
"""errors -> environment (the NLSIM_* variables, refused with errors) -> base (options, progress,
orchestration, faults) -> conversion -> io -> inference (how a model runs)
-> encoders/search/clusters -> evaluation -> rerank -> report -> models (the model a run judges with) ->
dedup/training/annotation -> chain -> commands; flows on top. Within a rank, a package imports only from
itself (the command line's modules excepted). A module sits in its package's layer: no module of a package has
a rank of its own."""
TOP = 11


def modules(folder: str) -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(path: Path, name: str) -> list[tuple[str, list[str], int]]:
    """``(module, names, line)`` of every import in the file, at any depth; relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = name.split(".")[
                    : -node.level if path.name != "__init__.py" else len(name.split(".")) - node.level + 1
                ]
                mod = ".".join([*base, mod] if mod else base)
            out.append((mod, [a.name for a in node.names], node.lineno))
    return out


def layer_of(module: str) -> tuple[str, int] | None:
    best = None
    for prefix, rank in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (
            best is None or len(prefix) > len(best[0])
        ):
            best = (prefix, rank)
    return best


LIBRARY = modules("nlsim")


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_layers_point_one_way(name: str) -> None:
    mine = layer_of(name)
    assert mine is not None, f"{name} is in no layer: add its package to LAYERS"
    for mod, _, line in imports(LIBRARY[name], name):
        if not mod.startswith("nlsim"):
            continue
        theirs = layer_of(mod)
        assert theirs is not None, f"{name}:{line} imports {mod}, which is in no layer"
        ok = theirs[1] < mine[1] or theirs[0] == mine[0] or theirs[1] == mine[1] == TOP
        assert ok, f"{name}:{line} ({mine[0]}, rank {mine[1]}) imports {mod} ({theirs[0]}, rank {theirs[1]})"


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_the_library_never_imports_prefect(name: str) -> None:
    for mod, _, line in imports(LIBRARY[name], name):
        assert mod.split(".")[0] not in ("prefect", "prefect_dask"), f"{name}:{line} imports {mod}"


def test_no_import_circles() -> None:
    graph: dict[str, set[str]] = {}
    for name, path in LIBRARY.items():
        deps = set()
        for mod, names, _ in imports(path, name):
            for target in [mod, *(f"{mod}.{n}" for n in names)]:
                if target in LIBRARY and target != name:
                    deps.add(target)
        graph[name] = deps
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        seen[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if dep.startswith(node + "."):
                continue  # a package's __init__ may import its own modules
            if seen.get(dep) == 1:
                cycle = stack[stack.index(dep) :] + [dep]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if dep not in seen:
                visit(dep)
        stack.pop()
        seen[node] = 2

    for node in sorted(graph):
        if node not in seen:
            visit(node)


@pytest.mark.parametrize("name", sorted({**LIBRARY, **modules("flows")}))
def test_every_nlsim_import_names_something_that_exists(name: str) -> None:
    path = {**LIBRARY, **modules("flows")}[name]
    for mod, names, _ in imports(path, name):
        if not mod.startswith(("nlsim", "flows")):
            continue
        module = importlib.import_module(mod)
        for n in names:
            if not hasattr(module, n):
                importlib.import_module(f"{mod}.{n}")  # a submodule


def names_used(folders: tuple[str, ...]) -> set[str]:
    """Every name the code under ``folders`` reads: names, attributes, imported names, and the names that
    doctests and string references (``getattr``, entry points) spell out."""
    used: set[str] = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Name):
                    used.add(node.id)
                elif isinstance(node, ast.Attribute):
                    used.add(node.attr)
                elif isinstance(node, ast.alias):
                    used.add(node.name.rsplit(".", 1)[-1])
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    used.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", node.value))
    return used


CALLERS = ("nlsim", "flows")
"""Where a call keeps a library function alive: the library (its doctests included) and the flows. A function
only tests or benchmarks call is not part of what nlsim does."""


@pytest.mark.slow
def test_every_function_has_a_caller() -> None:
    """A function nothing calls (in the library, its doctests or the flows) is dead weight a newcomer still
    has to read."""
    used = names_used(CALLERS)
    dead = []
    for name, path in LIBRARY.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("__"):
                if node.name not in used and not node.decorator_list:
                    dead.append(f"{name}:{node.lineno} {node.name}")
    assert not dead, "functions without a caller: " + ", ".join(dead)


LONGEST_FUNCTION = 80
"""Lines a function of the library may span (its decorators not counted): a longer one is split into named
steps."""


def test_no_function_of_the_library_is_longer_than_a_screen() -> None:
    long = []
    for path in sorted((ROOT / "nlsim").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1 if node.end_lineno else 0
                if lines > LONGEST_FUNCTION:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "split into named steps: " + "; ".join(long)
