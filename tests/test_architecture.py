"""The architecture as tests: no import cycle, each layer imports only layers below it, a small API.

The import graph is read from the source with ``ast``, imports inside functions
included, so a cycle cannot hide behind a deferred ``import``. ``docs/architecture.md``
draws the same layers. The benchmark package ``prelens_bench`` (beside ``prelens``, in the
same distribution) is read too, as the layer between ``testing`` and ``cli``: it may import any
layer below ``cli``, and of the library only ``prelens.cli.bench`` (``prelens bench``) imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import prelens
import prelens.nn
import prelens_bench

ROOT = Path(prelens.__file__).parent
#: The packages read: the library and the benchmark.
ROOTS = (ROOT, Path(prelens_bench.__file__).parent)

#: Bottom to top; a module may import its own package and the packages before it.
LAYERS = [
    ("_version", "errors", "_deprecated"),
    ("backend",),
    ("core",),
    ("tambara", "show"),
    ("datasets",),
    ("learn",),
    ("nn",),
    ("io",),
    ("train",),
    ("faithful",),
    ("testing",),
    ("prelens_bench",),  # the benchmark package, beside prelens
    ("cli", "__main__"),
    ("__init__", "optim", "checkpoint", "diagram"),
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p, root): p for root in ROOTS for p in sorted(root.rglob("*.py"))}


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports anywhere in its body (functions included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # a relative import, resolved against the importing package
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if sub in known else base)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(path, name, known) for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layer(module: str) -> int:
    parts = module.split(".")
    if parts[0] == "prelens_bench":
        return RANK["prelens_bench"]
    return RANK["__init__"] if len(parts) == 1 else RANK[parts[1]]


def test_the_graph_is_read_from_every_module() -> None:
    edges = graph()
    assert "prelens.core._lens" in edges and "prelens.io._describe" in edges
    assert "prelens.core._lens" in edges["prelens.io._describe"]
    assert "prelens_bench.peers" in edges and "prelens.core._trace" in edges["prelens_bench.peers"]
    assert "prelens_bench._command" in edges["prelens.cli.bench"]


def test_no_import_cycle() -> None:
    assert cycles(graph()) == []


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_package_has_a_layer() -> None:
    assert {m.split(".")[1] for m in modules() if m.startswith("prelens.")} <= set(RANK)


def test_each_layer_imports_only_layers_below_it() -> None:
    upward = sorted(
        f"{m} -> {d}" for m, deps in graph().items() for d in deps if layer(d) > layer(m) and m != "prelens"
    )
    assert upward == []


def test_the_library_imports_the_benchmark_only_from_its_command() -> None:
    """``prelens bench``'s front end is the one door from the library into ``prelens_bench``."""
    importers = sorted(
        m
        for m, deps in graph().items()
        if not m.startswith("prelens_bench") and any(d.split(".")[0] == "prelens_bench" for d in deps)
    )
    assert importers == ["prelens.cli.bench"]


def test_an_upward_import_of_the_benchmark_is_found(tmp_path: Path) -> None:
    """A library module importing ``prelens_bench`` points up, and the layer check sees it."""
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from prelens_bench import peers\n", encoding="utf-8")
    deps = imports_of(path, "prelens.nn.m", set(graph()))
    assert deps == {"prelens_bench.peers"}
    assert layer("prelens_bench.peers") > layer("prelens.nn.m")
    assert layer("prelens.cli.bench") > layer("prelens_bench.peers") > layer("prelens.testing")


def private_imports_across_packages() -> list[str]:
    """``module -> other.module._name``: a private name (not a module) imported from another package of prelens."""
    mods = modules()
    found = []
    for name, path in mods.items():
        if not name.startswith("prelens."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("prelens."):
                other = node.module or ""
                for a in node.names:
                    private = a.name.startswith("_") and not a.name.endswith("__") and f"{other}.{a.name}" not in mods
                    if private and other.split(".")[1] != name.split(".")[1]:
                        found.append(f"{name} -> {other}.{a.name}")
    return found


def test_no_package_imports_another_packages_private_names() -> None:
    """A name one package lends another is named without an underscore: a private name stays in its package."""
    assert private_imports_across_packages() == []


def test_public_api_size() -> None:
    """Half of 0.3.2's 92 names each, at most."""
    assert len(prelens.__all__) <= 47  # 46, then scan
    # 46, then conv1d, conv2d, ConvParams, max_pool, avg_pool, flatten, rnn, gru, lstm, bidirectional, RecurrentParams
    assert len(prelens.nn.__all__) <= 57
    assert len(set(prelens.__all__)) == len(prelens.__all__)
