"""The gateway app's modules import each other without a circle, at the top of the module (the
Celery tasks' imports inside their functions are the house's convention for tasks), and the
modules named in issue 12 sit where they should: the selectors read gateway.config, the agent
and the services both go through gateway.lifecycle."""

from __future__ import annotations

import ast
from pathlib import Path

import gateway

APP = Path(gateway.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(APP.rglob("*.py")):
        rel = path.relative_to(APP)
        if rel.parts[0] in ("migrations", "management"):
            continue
        dotted = ".".join(("gateway", *rel.with_suffix("").parts))
        out[dotted.removesuffix(".__init__")] = path
    return out


def _gateway_imports(tree: ast.AST, *, top: bool) -> set[str]:
    found = set()
    nodes = tree.body if top else [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    for node in nodes:
        for sub in [node] if top else ast.walk(node):
            if isinstance(sub, ast.ImportFrom) and sub.module and sub.module.startswith("gateway"):
                names = {f"{sub.module}.{a.name}" for a in sub.names}
                found |= {sub.module} | names
            elif isinstance(sub, ast.Import):
                found |= {a.name for a in sub.names if a.name.startswith("gateway")}
    return found


def test_the_app_imports_without_a_circle_and_not_inside_functions():
    modules = _modules()
    graph: dict[str, set[str]] = {}
    inside: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        graph[name] = {m for m in _gateway_imports(tree, top=True) if m in modules and m != name}
        late = {m for m in _gateway_imports(tree, top=False) if m in modules}
        if late and not name.endswith((".tasks", ".apps")):
            inside[name] = late
    assert inside == {}

    def cycle_from(start: str) -> list[str] | None:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in graph.get(node, ()):
                if nxt == start:
                    return [*path, nxt]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
        return None

    cycles = [c for c in map(cycle_from, graph) if c]
    assert cycles == []
    # The modules named in the issue are where they should be.
    assert "gateway.agent" not in graph["gateway.selectors"]
    assert "gateway.services" not in graph["gateway.agent"]
    assert "gateway.config" in graph["gateway.selectors"]
    assert "gateway.lifecycle" in graph["gateway.agent"] & graph["gateway.services"]
