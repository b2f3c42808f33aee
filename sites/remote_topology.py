"""Another site's topology, read through a database link with plain SQL on its tables (the
remote is the same codebase and schema): its propagations with a coarse state, its queues' ready
depth, its rule sets. The topology graph and "trace a message" read a linked site with these.

Every read has a short connect and statement timeout (``AQ_SITE_READ_TIMEOUT_S``, default 2 s):
a page that shows a remote site must degrade to "site unreachable", never hang. The link's role
needs SELECT on the tables read here (the same grants an enqueuer through the link has).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
from django.conf import settings

from sites import remote

if TYPE_CHECKING:
    from sites.models import DatabaseLink


@dataclass(frozen=True)
class RemotePropagation:
    """A propagation defined at the remote site, as that site stores it."""

    name: str
    source: str  # the source queue's name there
    destination: str  # the destination queue's name: there, or at ``dblink``'s site
    dblink: str  # "" for a propagation local to the remote site
    dblink_site: str  # the global name the remote's link reaches ("" when local)
    state: str  # coarse: idle, running, backing_off, disabled, failed, stopped, unscheduled
    positive_rule_set_id: int | None
    negative_rule_set_id: int | None


@dataclass
class RemoteSite:
    global_name: str
    propagations: list[RemotePropagation] = field(default_factory=list)
    depth: dict[str, int] = field(default_factory=dict)  # queue name → READY messages


@dataclass(frozen=True)
class RemoteRuleSet:
    name: str
    rules: list[tuple[str, str, dict[str, str] | None]]  # (rule name, condition, variables)


def read_timeout_s() -> int:
    # libpq reads a connect_timeout below 2 as 2.
    return max(2, int(getattr(settings, "AQ_SITE_READ_TIMEOUT_S", 2)))


@contextmanager
def site_reader(link: DatabaseLink) -> Iterator[psycopg.Connection]:
    """A read-only connection to the link's site with short timeouts, checked to be the site
    the link was made for. RemoteError (naming the link's field) when it cannot be used."""
    endpoint = remote.link_endpoint(link)
    conn = remote.connect(endpoint, read_timeout_s=read_timeout_s())
    try:
        site = remote.read_site(conn, endpoint)
        if site.global_name != link.remote_global_name:
            raise remote.RemoteError(
                f"The site answers as {site.global_name}, not {link.remote_global_name} as when "
                "the link was made.",
                field="database",
            )
        yield conn
    finally:
        conn.close()


_PROPAGATIONS_SQL = """
SELECT p.name, sq.name, coalesce(dq.name, p.destination_remote_queue), p.destination_dblink,
       coalesce(l.remote_global_name, ''),
       CASE
         WHEN s.id IS NULL THEN 'unscheduled'
         WHEN NOT p.enabled THEN 'stopped'
         WHEN NOT s.enabled AND s.failures >= s.max_failures THEN 'failed'
         WHEN NOT s.enabled THEN 'disabled'
         WHEN s.run_id IS NOT NULL THEN 'running'
         WHEN s.failures > 0 THEN 'backing_off'
         ELSE 'idle'
       END,
       p.positive_rule_set_id, p.negative_rule_set_id
FROM jobs_propagation p
JOIN queues_queue sq ON sq.id = p.source_queue_id
LEFT JOIN queues_queue dq ON dq.id = p.destination_queue_id
LEFT JOIN sites_databaselink l ON l.name = p.destination_dblink
LEFT JOIN jobs_propagationschedule s ON s.propagation_id = p.id
ORDER BY p.name
"""

_DEPTH_SQL = """
SELECT q.name, (SELECT count(*) FROM aq_message m WHERE m.queue_id = q.id AND m.state = 'READY')
FROM queues_queue q WHERE upper(q.name) = ANY(%s)
"""


def read_propagations(conn: psycopg.Connection) -> list[RemotePropagation]:
    return [RemotePropagation(*row) for row in conn.execute(_PROPAGATIONS_SQL).fetchall()]


def read_depth(conn: psycopg.Connection, queues: list[str]) -> dict[str, int]:
    rows = conn.execute(_DEPTH_SQL, ([q.upper() for q in queues],)).fetchall()
    return {str(name).upper(): int(n) for name, n in rows}


def read_site_topology(link: DatabaseLink, *, queues: list[str]) -> RemoteSite:
    """The site's propagations and the ready depth of ``queues`` plus every queue its
    propagations touch; RemoteError when the site cannot be read."""
    try:
        with site_reader(link) as conn:
            props = read_propagations(conn)
            names = set(queues) | {p.source for p in props}
            names |= {p.destination for p in props if not p.dblink}
            return RemoteSite(
                global_name=link.remote_global_name,
                propagations=props,
                depth=read_depth(conn, sorted(names)),
            )
    except remote.RemoteError:
        raise
    except (psycopg.Error, ValueError) as exc:
        raise remote.RemoteError(" ".join(str(exc).split()), field="database") from exc


_RULE_SET_SQL = """
SELECT rs.name, r.name, r.condition, coalesce(r.evaluation_context_id, rs.evaluation_context_id)
FROM rules_ruleset rs
LEFT JOIN rules_rulesetrule m ON m.rule_set_id = rs.id AND m.enabled
LEFT JOIN rules_rule r ON r.id = m.rule_id
WHERE rs.id = %s
ORDER BY r.name
"""

_VARIABLES_SQL = """
SELECT context_id, name, variable_type, user_type
FROM rules_evaluationcontextvariable WHERE context_id = ANY(%s)
"""


def read_rule_set(conn: psycopg.Connection, rule_set_id: int) -> RemoteRuleSet | None:
    """The remote rule set's enabled rules with their evaluation context's variables, as
    ``rules.selectors.rule_set_spec`` reads a local one (None when it is gone)."""
    from rules.choices import VariableType
    from rules.lang import is_variable_name

    rows = conn.execute(_RULE_SET_SQL, (rule_set_id,)).fetchall()
    if not rows:
        return None
    contexts = sorted({r[3] for r in rows if r[3] is not None})
    variables: dict[int, dict[str, str]] = {c: {} for c in contexts}
    if contexts:
        for ctx, name, vtype, utype in conn.execute(_VARIABLES_SQL, (contexts,)).fetchall():
            if not is_variable_name(name):
                continue
            kind = {VariableType.ROW_LCR: "row_lcr", VariableType.DDL_LCR: "ddl_lcr"}.get(
                vtype, f"user:{utype}"
            )
            variables[ctx][name] = kind
    rules = [
        (rule, condition, variables[ctx] if ctx is not None else None)
        for _, rule, condition, ctx in rows
        if rule is not None
    ]
    return RemoteRuleSet(name=rows[0][0], rules=rules)


def rule_set_spec(remote_set: RemoteRuleSet) -> Any:
    """The remote rule set compiled by this site's rules engine (the same language)."""
    from rules.lang import RuleSetSpec, compile_rule

    compiled = [compile_rule(n, c, variables=v) for n, c, v in remote_set.rules]
    return RuleSetSpec(compiled, name=remote_set.name)
