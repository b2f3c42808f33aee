"""Evaluating one condition text against one message, as the standalone evaluator does."""

from __future__ import annotations

from rules.lang import (
    Message,
    UserMessage,
    bindings_for,
    compile_python,
    parse,
    validate,
    variables_of,
)


def value_of(text: str, message: Message) -> bool | None:
    """TRUE / FALSE / NULL of ``text`` for ``message``: ``:dml`` binds a row LCR, ``:ddl`` a DDL
    LCR, and a user message binds ``:msg`` and the condition's ``VAR$_n`` variable."""
    cond = parse(text)
    validate(cond, variables=None)
    user_vars = sorted(n for n in variables_of(cond) if n.startswith("VAR$"))
    b = bindings_for(message, user_variable=user_vars[0] if user_vars else None)
    if isinstance(message, UserMessage):
        for name in user_vars[1:]:
            b[name] = message
    return compile_python(cond)(b)
