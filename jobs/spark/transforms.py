"""Transformations inside the Spark job: the rules engine's own pipeline, run on the executors
for the messages a transforming rule was the first TRUE positive rule for, so a bulk job
transforms exactly as a propagation's run does. Rebuilt from the spec (no Django, no registry
lookup beyond the paths the spec carries)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

_CACHE: dict[tuple[int, str], Any] = {}


def _rule_transforms(dest: dict[str, Any], rule_name: str) -> Any:
    from rules.lang.pipeline import RuleTransforms
    from rules.lang.transform import Declarative, resolve

    key = (dest["queue_id"], rule_name)
    if key not in _CACHE:
        rule = next(r for r in dest["positive"] if r["name"] == rule_name)
        t = rule["transform"]
        custom = None
        if t.get("custom_name"):
            custom = resolve(t["custom_name"], {t["custom_name"]: t["custom_path"]})
        _CACHE[key] = RuleTransforms(
            action_context=t.get("action_context") or {},
            declarative=tuple(Declarative(**d) for d in t.get("declarative") or ()),
            custom=custom,
            custom_name=t.get("custom_name") or "",
        )
    return _CACHE[key]


@lru_cache(maxsize=64)
def _queue_info(text: str) -> Any:
    from queues.engine import QueueInfo

    return QueueInfo(**json.loads(text))


def transform_one(
    dest: dict[str, Any], rule_name: str, kind: str, type_name: str | None, payload: str | None
) -> tuple[str, str | None, str | None, str | None, str | None]:
    """(status, kind, type_name, payload JSON, error): status ``changed``, ``discard`` (a custom
    transformation returned nothing) or ``error`` (it failed, or the destination refuses the
    result: both go to the exception queue with the reason)."""
    from queues.engine import InvalidMessage, NewMessage, validate_message
    from rules.lang import MessageError, message_from_queue
    from rules.lang.pipeline import message_content, run_transformations
    from rules.lang.transform import TransformationError

    try:
        msg = message_from_queue(kind, type_name, json.loads(payload) if payload else None)
        out, _steps = run_transformations(
            msg, _rule_transforms(dest, rule_name), rule_name=rule_name
        )
    except (MessageError, TransformationError) as exc:
        return ("error", None, None, None, str(exc))
    except Exception as exc:  # a custom function's own bug: the message, not the job, fails
        return ("error", None, None, None, f"{type(exc).__name__}: {exc}")
    if out is None:
        return ("discard", None, None, None, None)
    new_kind, new_type, new_payload = message_content(out, type_name=type_name)
    try:
        validate_message(
            _queue_info(json.dumps(dest["queue_info"], sort_keys=True)),
            NewMessage(payload=new_payload, kind=new_kind, type_name=new_type or ""),
        )
    except InvalidMessage as exc:
        return ("error", None, None, None, f"{dest['name']} refused it: {exc}")
    return ("changed", new_kind, new_type, json.dumps(new_payload), None)
