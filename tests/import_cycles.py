"""Import cycles among Skein's own modules: every import statement counts, at the top of a module
or inside a function, as a reader following the code sees it.

``python tests/import_cycles.py`` lists each cycle (a strongly connected group of modules) with
one import path round it; tests/test_architecture.py asserts there is none among Skein's packages
(the ``root_packages`` of pyproject.toml's import-linter contracts). Edges go to the module named (``from a.b import c`` reaches ``a.b.c`` when that is a
module, ``a.b`` otherwise), never implicitly to the packages above it.

One direction is allowed by design (HackSoft's Django Styleguide): services import the Celery tasks
they enqueue at the top, and a task imports the service it hands to inside its body. So imports
inside the functions of a ``tasks`` module are not edges; every other import is.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = tuple(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"])
SKIPPED_PARTS = {"migrations", "management"}


def _modules(packages=PACKAGES) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if SKIPPED_PARTS & set(parts):
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def import_graph(packages=PACKAGES) -> dict[str, set[str]]:
    """Module → the modules of ``packages`` it imports."""
    modules = _modules(packages)
    graph: dict[str, set[str]] = {name: set() for name in modules}

    def target(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        package = name if is_package else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        deferred = set()
        if name.rpartition(".")[2] == "tasks":  # a task's body imports the service it calls
            for function in ast.walk(tree):
                if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    deferred.update(id(inner) for inner in ast.walk(function))
        for node in ast.walk(tree):
            if id(node) in deferred:
                continue
            named: list[str] = []
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = package.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                named = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            for imported in named:
                if (resolved := target(imported)) is not None and resolved != name:
                    graph[name].add(resolved)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each as one cycle path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(start: str) -> None:  # iterative, so deep graphs do not hit the recursion limit
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(group)

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return [_path_round(graph, group) for group in groups]


def _path_round(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """The shortest cycle through the group's first module (breadth-first inside the group)."""
    start = min(group)
    previous = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & group):
            if child == start:
                path = [node]
                while previous[path[-1]] is not None:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return sorted(group)


def main() -> int:
    found = cycles(import_graph())
    for cycle in found:
        print(" -> ".join(cycle))
    print(f"{len(found)} import cycle(s) in {', '.join(PACKAGES)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
