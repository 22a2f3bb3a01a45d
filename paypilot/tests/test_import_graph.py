"""No import circle among the project's modules: a static graph of every import, module-level and deferred.

A deferred (function-level) import is counted like any other: one that only dodges a circle
still leaves the two modules depending on each other. Imports under `if TYPE_CHECKING:`
count too. An import of a package's submodule is an edge to that submodule, not to the
package's `__init__` (Python initialises the parent first, but that is not a circle).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("paypilot", "decisions", "ledger", "dunning", "approvals", "integrations", "reconciliation", "operations")


def project_modules(root: Path = ROOT, apps: tuple[str, ...] = APPS) -> dict[str, Path]:
    """Dotted name -> file of every project module outside tests and migrations."""
    found: dict[str, Path] = {}
    for app in apps:
        for path in sorted((root / app).rglob("*.py")):
            rel = path.relative_to(root)
            if "tests" in rel.parts or "migrations" in rel.parts:
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest project module that `name` (a dotted name) is or lies in."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules `module` imports anywhere in its file (with the line of the first import)."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the submodule when there is one, else a name of pkg.
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name, modules)
            if target is not None and target != module:
                targets.add(target)
    return targets


def import_graph(root: Path = ROOT, apps: tuple[str, ...] = APPS) -> dict[str, set[str]]:
    modules = project_modules(root, apps)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle through each strongly connected group of modules (Tarjan), e.g. [a, b, a]."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(start: str) -> None:
        # Iterative, so a deep chain of modules cannot hit the recursion limit.
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
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
    return [_circle_in(group, graph) for group in sorted(groups, key=min)]


def _circle_in(group: set[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest path from the group's first module back to itself, inside the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph[node] & group):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    raise AssertionError(f"no circle in {group}")  # pragma: no cover - a group always has one


def test_the_check_finds_a_circle_module_level_or_deferred(tmp_path: Path) -> None:
    app = tmp_path / "app"
    (app / "sub").mkdir(parents=True)
    (app / "__init__.py").write_text("")
    (app / "sub" / "__init__.py").write_text("")
    (app / "a.py").write_text("from app.sub.b import thing\n")
    (app / "sub" / "b.py").write_text("def f():\n    from ..c import other\n    return other\nthing = 1\n")
    (app / "c.py").write_text("from app import a\nother = 2\n")
    (app / "d.py").write_text("import app.c\n")  # imports into the circle, is not in it
    assert cycles(import_graph(tmp_path, ("app",))) == [["app.a", "app.sub.b", "app.c", "app.a"]]


def test_no_import_circle_among_the_projects_modules() -> None:
    found = cycles(import_graph())
    assert found == [], "import circles:\n" + "\n".join(" -> ".join(circle) for circle in found)
