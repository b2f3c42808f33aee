"""The house rules of the gateway app, read from its source: gateway/lifecycle.py is the only
module that writes an agent's or a job's status (raw SQL, ORM assignment or ``update()``), and
the app's modules import each other without a circle, at the top of the module (the Celery
tasks' imports inside their functions are the house's convention for tasks)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import gateway

APP = Path(gateway.__file__).parent
OWNER = "lifecycle.py"
# A raw UPDATE of gateway_agent/gateway_job that sets status; an ORM write of a status value.
RAW = re.compile(r"UPDATE\s+gateway_(agent|job)\b[^;]*?\bSET\b[^;]*?\bstatus\s*=", re.I | re.S)
ORM = re.compile(r"\.status\s*=\s*(AgentStatus|JobStatus)\b|update\([^)]*\bstatus\s*=", re.S)


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(APP.rglob("*.py")):
        rel = path.relative_to(APP)
        if rel.parts[0] in ("migrations", "management"):
            continue
        dotted = ".".join(("gateway", *rel.with_suffix("").parts))
        out[dotted.removesuffix(".__init__")] = path
    return out


def test_no_module_but_the_lifecycle_writes_a_status():
    writers = []
    for name, path in _modules().items():
        text = path.read_text()
        if path.name != OWNER and (RAW.search(text) or ORM.search(text)):
            writers.append(name)
    assert writers == []
    owner = (APP / OWNER).read_text()
    assert RAW.search(owner)  # the patterns do find a status write


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
