"""The ``rules`` suite of bench/WORKLOADS.md: the condition language's evaluation rates.

Conditions come from the rule generators exactly as the console would store them; messages are
built before the clock starts, so the figures are evaluations (or decisions) per second.
"""

from __future__ import annotations

import importlib.util
import random
import time
from collections.abc import Callable
from typing import Any

from rules import lang
from rules.lang import generators

Log = Callable[[str], None]
SOURCE = "DBS1.EXAMPLE.COM"


def _rate(n: int, fn: Callable[[], Any], repeat: int = 3) -> tuple[float, float]:
    """Best of ``repeat`` runs: (rate per second, seconds of the best run)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n / best, best


def _table_rule(owner: str, table: str, *, negative: bool = False) -> str:
    [rule] = generators.table_rules(
        table_name=f"{owner}.{table}",
        source_database=SOURCE,
        include_tagged_lcr=negative,
        inclusion_rule=not negative,
    )
    return rule.condition


def _row(owner: str, table: str, *, tag: bytes | None = None, i: int = 0) -> lang.RowLCR:
    return lang.RowLCR(SOURCE, "INSERT", owner, table, tag, {}, {"ID": i, "REGION": "EUROPE"})


def run(*, scale: float = 1.0, baseline: bool = False, log: Log = print) -> dict[str, Any]:
    n = max(1, int(100_000 * scale))
    rnd = random.Random(42)
    out: dict[str, Any] = {"suite": "rules", "scale": scale, "n": n}

    # eval_simple: one generated table rule (owner, name, tag, source database), half matching.
    g7 = _table_rule("HR", "LOCATIONS")
    rows = [_row("HR", "LOCATIONS" if i % 2 == 0 else "EMPLOYEES", i=i) for i in range(n)]
    rule = lang.compile_rule("G7", g7, variables=lang.STREAMS_VARIABLES)
    binds = [lang.bindings_for(m) for m in rows]
    fn = rule.fn
    hits = sum(1 for b in binds if fn(b) is True)
    out["eval_simple"], out["eval_simple_s"] = _rate(n, lambda: [fn(b) for b in binds])
    out["eval_simple_true"] = hits
    log(f"  eval_simple        {out['eval_simple']:>12,.0f}/s ({hits} TRUE of {n})\n")

    # eval_message_rule: :msg.region = 'EUROPE' AND :msg.priority = 1 over user messages.
    msg_rule = lang.compile_python(lang.parse(":msg.region = 'EUROPE' AND :msg.priority = 1"))
    users = [
        lang.UserMessage(
            "STRMADMIN.REGION_PRI_MSG",
            {"region": "EUROPE" if i % 2 == 0 else "AMERICAS", "priority": 1 + (i % 3 == 0)},
        )
        for i in range(n)
    ]
    ubinds = [lang.bindings_for(m) for m in users]
    out["eval_message_rule"], out["eval_message_rule_s"] = _rate(
        n, lambda: [msg_rule(b) for b in ubinds]
    )
    log(f"  eval_message_rule  {out['eval_message_rule']:>12,.0f}/s\n")

    # ruleset_50: 50 positive table rules, 5 negative (tagged) ones, through decide().
    tables = [f"T{i:02d}" for i in range(50)]
    positive = lang.RuleSetSpec(
        [
            lang.compile_rule(f"P{i}", _table_rule("HR", t), variables=lang.STREAMS_VARIABLES)
            for i, t in enumerate(tables)
        ],
        name="POSITIVE",
    )
    negative = lang.RuleSetSpec(
        [
            lang.compile_rule(
                f"N{i}",
                _table_rule("HR", f"T{i:02d}", negative=True),
                variables=lang.STREAMS_VARIABLES,
            )
            for i in range(5)
        ],
        name="NEGATIVE",
    )
    changes = [
        _row(
            "HR",
            rnd.choice(tables) if i % 2 == 0 else rnd.choice(["OTHER", "X1", "Y"]),
            tag=None if i % 3 else b"\x01",
            i=i,
        )
        for i in range(n)
    ]
    performed = sum(lang.decide(m, positive=positive, negative=negative).perform for m in changes)
    out["ruleset_50"], out["ruleset_50_s"] = _rate(
        n, lambda: [lang.decide(m, positive=positive, negative=negative) for m in changes]
    )
    out["ruleset_50_performed"] = performed
    log(f"  ruleset_50         {out['ruleset_50']:>12,.0f}/s ({performed} PERFORM of {n})\n")

    if importlib.util.find_spec("rules.lang.compile_spark") is None:
        out["spark_filter_status"] = "not measured: the Spark compiler is not built yet"
    else:
        from console.bench.rules_spark import spark_filter

        out.update(spark_filter(scale=scale, log=log, tables=tables))
    return out
