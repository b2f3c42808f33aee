"""gateway/lifecycle.py is the only gateway module that writes an agent's or a job's status:
no other module (migrations aside) passes ``status=`` to ``update``/``create``/
``update_or_create``/``get_or_create``/``bulk_update``, assigns ``x.status``, or holds raw SQL
that sets the status column of gateway_agent or gateway_job. Read from the source with ``ast``,
so a status keyword after another argument or inside nested parentheses is seen."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import gateway

APP = Path(gateway.__file__).parent
OWNER = APP / "lifecycle.py"
WRITES = {"update", "create", "update_or_create", "get_or_create", "bulk_update", "bulk_create"}
# A raw UPDATE of gateway_agent/gateway_job that sets status, or an INSERT naming the column.
RAW = re.compile(
    r"\bUPDATE\s+gateway_(agent|job)\b[^;]*?\bSET\b[^;]*?\bstatus\s*="
    r"|\bINSERT\s+INTO\s+gateway_(agent|job)\b[^;]*?\bstatus\b",
    re.I | re.S,
)


def _names_status(node: ast.AST) -> bool:
    """A dict with a "status" key (``defaults={...}``, ``**{...}``) or a list of field names
    holding "status" (``bulk_update(objs, ["status"])``)."""
    if isinstance(node, ast.Dict):
        return any(isinstance(k, ast.Constant) and k.value == "status" for k in node.keys)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return any(isinstance(e, ast.Constant) and e.value == "status" for e in node.elts)
    return False


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts, a gap for each field
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def status_writes(source: str) -> list[str]:
    """Each status write in ``source``, as "line: what"."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in WRITES:
                for kw in node.keywords:
                    if kw.arg == "status" or (
                        kw.arg in (None, "defaults", "create_defaults") and _names_status(kw.value)
                    ):
                        found.append(f"{line}: .{func.attr}(status=...)")
                if func.attr == "bulk_update" and any(_names_status(a) for a in node.args):
                    found.append(f"{line}: .bulk_update(..., ['status'])")
            if (
                isinstance(func, ast.Name)
                and func.id == "setattr"
                and len(node.args) > 1
                and _text(node.args[1]) == "status"
            ):
                found.append(f"{line}: setattr(..., 'status', ...)")
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = [t for tgt in node.targets for t in ast.walk(tgt)]
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Attribute) and t.attr == "status" for t in targets):
            found.append(f"{line}: x.status = ...")
        text = _text(node)
        if text is not None and RAW.search(text):
            found.append(f"{line}: raw SQL sets status")
    return found


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(APP.rglob("*.py")):
        rel = path.relative_to(APP)
        if rel.parts[0] == "migrations":
            continue
        dotted = ".".join(("gateway", *rel.with_suffix("").parts))
        out[dotted.removesuffix(".__init__")] = path
    return out


def test_no_module_but_the_lifecycle_writes_a_status():
    writers = {
        name: writes
        for name, path in _modules().items()
        if path != OWNER and (writes := status_writes(path.read_text()))
    }

    assert writers == {}
    assert status_writes(OWNER.read_text())  # the owner's writes are seen, so the check reads


@pytest.mark.parametrize(
    "source",
    [
        "Job.objects.filter(pk=1).update(updated=now(), status=JobStatus.READY)",
        "Agent.objects.filter(pk=f(1)).update(x=g(h(2)), status='RUNNING')",
        "Job.objects.create(name='J', link=l, status=JobStatus.READY)",
        "Agent.objects.update_or_create(name='A', defaults={'status': 'RUNNING'})",
        "Agent.objects.get_or_create(name='A', status='RUNNING')",
        "Job.objects.filter(pk=1).update(**{'status': 'BROKEN'})",
        "Job.objects.bulk_update(jobs, ['failures', 'status'])",
        "a.status = 'RUNNING'",
        "self.agent.status = AgentStatus.BROKEN",
        "a.x, a.status = 1, 'RUNNING'",
        "setattr(a, 'status', 'RUNNING')",
        "cur.execute('UPDATE gateway_agent SET heartbeat = now(), status = %s WHERE id = %s')",
        'cur.execute(f"UPDATE gateway_job\\n   SET status = %s WHERE id = {pk}")',
        "SQL = ('UPDATE gateway_job SET failures = failures + 1, '\n       'status = %s')",
        "cur.execute('INSERT INTO gateway_agent (name, status) VALUES (%s, %s)')",
    ],
)
def test_the_check_sees_each_form_of_a_status_write(source):
    assert status_writes(source), source


@pytest.mark.parametrize(
    "source",
    [
        "Response(body, status=status.HTTP_201_CREATED)",
        "Job.objects.filter(status=JobStatus.READY).update(failures=0)",
        "if a.status == AgentStatus.BROKEN: pass",
        "status = models.CharField(max_length=16)",
        "cur.execute('SELECT status FROM gateway_agent WHERE id = %s')",
        "cur.execute('UPDATE gateway_link SET status = %s')",
    ],
)
def test_the_check_leaves_reads_and_other_tables_alone(source):
    assert status_writes(source) == [], source
