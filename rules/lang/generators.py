"""The rule conditions that DBMS_STREAMS_ADM generates (spec/rules.md §3.4-§3.8).

Global, schema and table rules follow the grammar of §3.4.5; subset rules follow the templates of
§3.5.2; message rules rewrite ``:msg`` to ``:"VAR$_n"`` (§3.6). Every string the seed prints comes
out of these builders byte for byte; none of them is stored here.

User-supplied text (``and_condition``, ``dml_condition``, ``rule_condition``) is rewritten token by
token so that string literals, quoted identifiers and the user's spacing are kept exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from rules.lang.parser import ConditionError, parse, validate
from rules.lang.values import DDL_LCR_METHODS, ROW_LCR_METHODS


class StreamsRuleType(StrEnum):
    GLOBAL = "GLOBAL"
    SCHEMA = "SCHEMA"
    TABLE = "TABLE"
    SUBSET = "SUBSET"
    MESSAGE = "MESSAGE"


class RuleType(StrEnum):
    DML = "DML"
    DDL = "DDL"


class SubsettingOperation(StrEnum):
    INSERT = "INSERT"
    UPDATE = "UPDATE"
    DELETE = "DELETE"


# The action-context name under which Oracle keeps a subset rule's row-migration operation
# ([EXT] §1.2); migration.py reads it back.
ROW_SUBSET_ACTION = "STREAMS$_ROW_SUBSET"

# LCR member functions that exist on one LCR type only (the seed names GET_OBJECT_TYPE as
# DDL-only). An and_condition that calls one of them can only be attached to the rule of that type
# (§3.8). Taken from the condition language so the two never disagree.
DDL_ONLY_MEMBERS = frozenset(DDL_LCR_METHODS) - frozenset(ROW_LCR_METHODS)
ROW_ONLY_MEMBERS = frozenset(ROW_LCR_METHODS) - frozenset(DDL_LCR_METHODS)

# ANYDATA accessor per column type, for the get_value(...) calls of subset rules.
_ACCESSORS = {
    "NUMBER": "AccessNumber",
    "INTEGER": "AccessNumber",
    "FLOAT": "AccessNumber",
    "VARCHAR2": "AccessVarchar2",
    "VARCHAR": "AccessVarchar2",
    "CHAR": "AccessChar",
    "DATE": "AccessDate",
    "TIMESTAMP": "AccessTimestamp",
    "RAW": "AccessRaw",
}


class GeneratorError(ValueError):
    """Bad input to a generator. ``parameter`` is the Oracle parameter name at fault."""

    def __init__(self, message: str, *, parameter: str) -> None:
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class GeneratedRule:
    """One system-created rule: its condition and the DBA_STREAMS_RULES metadata Oracle keeps."""

    condition: str
    streams_rule_type: StreamsRuleType
    rule_type: RuleType | None
    schema: str | None = None
    object: str | None = None
    source_database: str | None = None
    include_tagged_lcr: bool | None = None
    subsetting_operation: SubsettingOperation | None = None
    dml_condition: str | None = None
    message_type: str | None = None
    message_rule_variable: str | None = None
    original_condition: str | None = None
    action_context: dict[str, str] = field(default_factory=dict)
    # Not DBA_STREAMS_RULES columns, but needed to place and explain the rule.
    inclusion_rule: bool = True
    and_condition: str | None = None

    @property
    def variables(self) -> dict[str, str]:
        """The evaluation-context variables the condition uses, as ``validate(variables=...)``
        and EvaluationContext.variable_kinds() spell them."""
        if self.streams_rule_type is StreamsRuleType.MESSAGE:
            return {str(self.message_rule_variable): f"user:{self.message_type}"}
        if self.rule_type is RuleType.DDL:
            return {"DDL": "ddl_lcr"}
        return {"DML": "row_lcr"}

    def model_fields(self) -> dict[str, Any]:
        """Keyword arguments for rules.models.Rule (blank strings where Oracle has NULL)."""
        return {
            "condition": self.condition,
            "action_context": dict(self.action_context),
            "streams_rule_type": str(self.streams_rule_type),
            "rule_type": str(self.rule_type or ""),
            "schema_name": self.schema or "",
            "object_name": self.object or "",
            "subsetting_operation": str(self.subsetting_operation or ""),
            "dml_condition": self.dml_condition or "",
            "source_database": self.source_database or "",
            "include_tagged_lcr": self.include_tagged_lcr,
            "message_type": self.message_type or "",
            "message_rule_variable": self.message_rule_variable or "",
            "original_condition": self.original_condition or "",
        }


@dataclass(frozen=True)
class TableExclusion:
    """The recommended way to take one table out of a schema (§3.7 (c))."""

    positive: list[GeneratedRule]
    negative: list[GeneratedRule]

    @property
    def rules(self) -> list[GeneratedRule]:
        return [*self.positive, *self.negative]


# --- a tokenizer that keeps the user's text ------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<qident>"[^"]+")
  | (?P<bind>:(?:"[^"]+"|[A-Za-z][A-Za-z0-9_$#]*))
  | (?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z][A-Za-z0-9_$#]*)
  | (?P<op><>|!=|\^=|<=|>=|\|\||[-+*/=<>(),.;])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    start: int


def _position(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"


def _tokens(text: str, parameter: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            what = {
                "'": "an unterminated string literal",
                '"': "an unterminated quoted identifier",
                ":": "a bind variable without a name",
            }.get(text[pos], f"an unexpected character {text[pos]!r}")
            raise GeneratorError(
                f"{parameter}: {what} at {_position(text, pos)}.", parameter=parameter
            )
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append(_Tok(kind, m.group(), pos))
        pos = m.end()
    return out


def _bind_name(tok: _Tok) -> str:
    """Oracle folds unquoted bind names to upper case and keeps quoted ones as written."""
    name = tok.text[1:]
    return name[1:-1] if name.startswith('"') else name.upper()


def _rewrite(text: str, tokens: list[_Tok], replace: Mapping[int, str]) -> str:
    """``text`` with the tokens at the given indexes replaced, everything else kept."""
    parts: list[str] = []
    pos = 0
    for i, new in sorted(replace.items()):
        tok = tokens[i]
        parts += [text[pos : tok.start], new]
        pos = tok.start + len(tok.text)
    parts.append(text[pos:])
    return "".join(parts)


def _bound(text: str, *, parameter: str, variable: str) -> tuple[str, list[_Tok], list[int]]:
    """The text's tokens and the indexes of ``:variable`` in it. The variable must be the only one
    used, and it must be used: the seed requires it (§3.6, §3.8)."""
    if not text or not text.strip():
        raise GeneratorError(f"{parameter} is empty.", parameter=parameter)
    tokens = _tokens(text, parameter)
    found = []
    for i, tok in enumerate(tokens):
        if tok.kind != "bind":
            continue
        if _bind_name(tok) != variable.upper():
            raise GeneratorError(
                f"{parameter} uses {tok.text} at {_position(text, tok.start)}; "
                f"the only variable it may use is :{variable}.",
                parameter=parameter,
            )
        found.append(i)
    if not found:
        raise GeneratorError(
            f"{parameter} must refer to the message through :{variable}.", parameter=parameter
        )
    return text, tokens, found


def _members_called(tokens: list[_Tok], variable: str) -> list[tuple[str, int]]:
    """Member functions called directly on ``:variable`` (``:lcr.get_object_type()``)."""
    out = []
    for i in range(len(tokens) - 2):
        a, dot, name = tokens[i : i + 3]
        if (
            a.kind == "bind"
            and _bind_name(a) == variable.upper()
            and dot.text == "."
            and name.kind == "ident"
        ):
            out.append((name.text.upper(), name.start))
    return out


def _check_syntax(
    condition: str,
    *,
    parameter: str,
    variables: Mapping[str, str],
    position: Callable[[int, int], str] | None = None,
) -> None:
    """Parse and validate with the condition language, so a generator never hands out a condition
    that could not be saved. ``position`` turns the error's line and column into a place in the
    user's own text when ``condition`` was rewritten from it."""
    try:
        validate(parse(condition), variables=dict(variables))
    except ConditionError as exc:
        where = (
            position(exc.line, exc.column) if position else f"line {exc.line}, column {exc.column}"
        )
        raise GeneratorError(f"{parameter}: {where}: {exc.message}", parameter=parameter) from exc


# --- names ---------------------------------------------------------------------------------------

_UNQUOTED = re.compile(r"[A-Za-z][A-Za-z0-9_$#]*\Z")
_GLOBAL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_$#-]*(?:\.[A-Za-z0-9_$#-]+)*\Z")


def _identifier(text: str, parameter: str) -> str:
    """Oracle's canonical form: unquoted names upper-cased, quoted names kept as written."""
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] == '"' and '"' not in t[1:-1]:
        return t[1:-1]
    if not _UNQUOTED.match(t):
        raise GeneratorError(f"{parameter}: {text!r} is not a valid name.", parameter=parameter)
    return t.upper()


def _qualified(text: str | None, parameter: str, what: str) -> tuple[str, str]:
    """``schema.name`` → (SCHEMA, NAME). A dot inside a quoted identifier does not split."""
    if not text or not text.strip():
        raise GeneratorError(f"{parameter} is required.", parameter=parameter)
    m = re.fullmatch(r'\s*("[^"]+"|[^."\s]+)\s*\.\s*("[^"]+"|[^."\s]+)\s*', text)
    if m is None:
        raise GeneratorError(
            f"{parameter}: {text!r} must name the {what} as schema.{what}, "
            f"for example hr.{'locations' if what == 'table' else 'region_pri_msg'}.",
            parameter=parameter,
        )
    return _identifier(m.group(1), parameter), _identifier(m.group(2), parameter)


def _source_database(text: str | None) -> str | None:
    # In PL/SQL '' is NULL, so an empty name means "no source database test".
    if text is None or not text.strip():
        return None
    t = text.strip()
    if not _GLOBAL_NAME.match(t):
        raise GeneratorError(
            f"source_database: {text!r} is not a global database name such as dbs1.example.com.",
            parameter="source_database",
        )
    return t.upper()


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# --- global, schema and table rules (§3.4.5) -----------------------------------------------------


def _object_test(level: StreamsRuleType, v: str, schema: str | None, name: str | None) -> str:
    s, t = _literal(schema or ""), _literal(name or "")
    if level is StreamsRuleType.SCHEMA:
        if v == "dml":
            return f"(:dml.get_object_owner() = {s})"
        return f"(:ddl.get_object_owner() = {s} or :ddl.get_base_table_owner() = {s})"
    if level is StreamsRuleType.TABLE:
        if v == "dml":
            return f"((:dml.get_object_owner() = {s} and :dml.get_object_name() = {t}))"
        # DDL may carry no owner/name when a non-owner runs it, hence the base-table test.
        return (
            f"((:ddl.get_object_owner() = {s} and :ddl.get_object_name() = {t}) or "
            f"(:ddl.get_base_table_owner() = {s} and :ddl.get_base_table_name() = {t}))"
        )
    return ""


def _system_condition(
    level: StreamsRuleType,
    v: str,
    *,
    schema: str | None,
    name: str | None,
    include_tagged_lcr: bool,
    source_database: str | None,
) -> str:
    parts = []
    obj = _object_test(level, v, schema, name)
    if obj:
        parts.append(obj)
    if not include_tagged_lcr:
        parts.append(f":{v}.is_null_tag() = 'Y'")
    if source_database is not None:
        parts.append(f":{v}.get_source_database_name() = {_literal(source_database)}")
    if not parts:
        # NULL conditions are not supported, so "everything" is a test true for any source name.
        parts.append(
            f"( :{v}.get_source_database_name()>=' ' OR :{v}.get_source_database_name()<=' ')"
        )
    return "(" + " and ".join(parts) + " )"


def _lcr_rules(
    level: StreamsRuleType,
    *,
    schema: str | None,
    name: str | None,
    include_dml: bool,
    include_ddl: bool,
    include_tagged_lcr: bool,
    source_database: str | None,
    inclusion_rule: bool,
    and_condition: str | None,
) -> list[GeneratedRule]:
    src = _source_database(source_database)
    user_and: tuple[str, list[_Tok], list[int]] | None = None
    if and_condition is not None:
        user_and = _bound(and_condition, parameter="and_condition", variable="lcr")
        text, tokens, _ = user_and
        for member, start in _members_called(tokens, "lcr"):
            where = _position(text, start)
            if include_dml and member in DDL_ONLY_MEMBERS:
                raise GeneratorError(
                    f"and_condition calls {member} (at {where}), which only DDL LCRs have: "
                    "generate the DDL rule alone (include_dml => FALSE, include_ddl => TRUE).",
                    parameter="and_condition",
                )
            if include_ddl and member in ROW_ONLY_MEMBERS:
                raise GeneratorError(
                    f"and_condition calls {member} (at {where}), which only row LCRs have: "
                    "generate the DML rule alone (include_dml => TRUE, include_ddl => FALSE).",
                    parameter="and_condition",
                )
        for kind, wanted in (("row_lcr", include_dml), ("ddl_lcr", include_ddl)):
            if wanted:
                _check_syntax(and_condition, parameter="and_condition", variables={"LCR": kind})
    out = []
    for v, rule_type, wanted in (
        ("dml", RuleType.DML, include_dml),
        ("ddl", RuleType.DDL, include_ddl),
    ):
        if not wanted:
            continue
        condition = _system_condition(
            level,
            v,
            schema=schema,
            name=name,
            include_tagged_lcr=include_tagged_lcr,
            source_database=src,
        )
        if user_and is not None:
            text, tokens, binds = user_and
            rewritten = _rewrite(text, tokens, dict.fromkeys(binds, f":{v}")).strip()
            condition = f"(({condition}) and ({rewritten}))"
        rule = GeneratedRule(
            condition=condition,
            streams_rule_type=level,
            rule_type=rule_type,
            schema=schema,
            object=name,
            source_database=src,
            include_tagged_lcr=include_tagged_lcr,
            original_condition=condition,
            inclusion_rule=inclusion_rule,
            and_condition=and_condition.strip() if and_condition is not None else None,
        )
        _check_syntax(condition, parameter="condition", variables=rule.variables)
        out.append(rule)
    return out


def global_rules(
    *,
    include_dml: bool = True,
    include_ddl: bool = False,
    include_tagged_lcr: bool = False,
    source_database: str | None = None,
    inclusion_rule: bool = True,
    and_condition: str | None = None,
) -> list[GeneratedRule]:
    """ADD_GLOBAL_RULES / ADD_GLOBAL_PROPAGATION_RULES: 0, 1 or 2 rules (DML first)."""
    return _lcr_rules(
        StreamsRuleType.GLOBAL,
        schema=None,
        name=None,
        include_dml=include_dml,
        include_ddl=include_ddl,
        include_tagged_lcr=include_tagged_lcr,
        source_database=source_database,
        inclusion_rule=inclusion_rule,
        and_condition=and_condition,
    )


def schema_rules(
    *,
    schema_name: str,
    include_dml: bool = True,
    include_ddl: bool = False,
    include_tagged_lcr: bool = False,
    source_database: str | None = None,
    inclusion_rule: bool = True,
    and_condition: str | None = None,
) -> list[GeneratedRule]:
    """ADD_SCHEMA_RULES / ADD_SCHEMA_PROPAGATION_RULES."""
    if not schema_name or not schema_name.strip():
        raise GeneratorError("schema_name is required.", parameter="schema_name")
    return _lcr_rules(
        StreamsRuleType.SCHEMA,
        schema=_identifier(schema_name, "schema_name"),
        name=None,
        include_dml=include_dml,
        include_ddl=include_ddl,
        include_tagged_lcr=include_tagged_lcr,
        source_database=source_database,
        inclusion_rule=inclusion_rule,
        and_condition=and_condition,
    )


def table_rules(
    *,
    table_name: str,
    include_dml: bool = True,
    include_ddl: bool = False,
    include_tagged_lcr: bool = False,
    source_database: str | None = None,
    inclusion_rule: bool = True,
    and_condition: str | None = None,
) -> list[GeneratedRule]:
    """ADD_TABLE_RULES / ADD_TABLE_PROPAGATION_RULES; ``table_name`` is ``schema.table``."""
    schema, table = _qualified(table_name, "table_name", "table")
    return _lcr_rules(
        StreamsRuleType.TABLE,
        schema=schema,
        name=table,
        include_dml=include_dml,
        include_ddl=include_ddl,
        include_tagged_lcr=include_tagged_lcr,
        source_database=source_database,
        inclusion_rule=inclusion_rule,
        and_condition=and_condition,
    )


def exclude_table(
    *,
    table_name: str,
    include_dml: bool = True,
    include_ddl: bool = False,
    include_tagged_lcr: bool = False,
    source_database: str | None = None,
) -> TableExclusion:
    """Everything in the table's schema except that table: schema rule(s) for the positive rule
    set and table rule(s) for the negative one (§3.7 (c)). The negative rules include tagged LCRs,
    as the seed advises, so tagged changes to the table are discarded too."""
    schema, _ = _qualified(table_name, "table_name", "table")
    common = {
        "include_dml": include_dml,
        "include_ddl": include_ddl,
        "source_database": source_database,
    }
    return TableExclusion(
        positive=schema_rules(
            schema_name=f'"{schema}"', include_tagged_lcr=include_tagged_lcr, **common
        ),
        negative=table_rules(
            table_name=table_name, include_tagged_lcr=True, inclusion_rule=False, **common
        ),
    )


# --- subset rules (§3.5.2) -----------------------------------------------------------------------

# Words of a dml_condition that are not column names.
_SQL_WORDS = frozenset({"AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE", "ESCAPE"})
# Functions of the condition language whose result or argument shows a column's type.
_RESULT_TYPE = {"HEXTORAW": "RAW"}
_STRING_ARGUMENT = frozenset({"UPPER", "LOWER"})


def _is_column(tokens: list[_Tok], i: int) -> bool:
    tok = tokens[i]
    if tok.kind == "qident":
        return True
    if tok.kind != "ident" or tok.text.upper() in _SQL_WORDS:
        return False
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    return nxt is None or nxt.text != "("  # NAME( is a function such as UPPER(...)


def _column_name(tok: _Tok) -> str:
    return tok.text[1:-1] if tok.kind == "qident" else tok.text.upper()


def _literal_type(tok: _Tok) -> str | None:
    """The type of the constant that starts at ``tok``, or None if no constant starts there."""
    if tok.kind == "number":
        return "NUMBER"
    if tok.kind == "string":
        return "VARCHAR2"
    return _RESULT_TYPE.get(tok.text.upper()) if tok.kind == "ident" else None


def _ends_comparison(tok: _Tok) -> bool:
    word = tok.text.upper()
    return (tok.kind == "ident" and word in ("AND", "OR", "NOT")) or (
        tok.kind in ("ident", "qident") and word not in _SQL_WORDS and word not in _RESULT_TYPE
    )


def _inferred_type(tokens: list[_Tok], i: int) -> str | None:
    """Without a data dictionary a column's type is the type of the constant it is compared with:
    ``region_id=2`` and ``region_id IN (1, 2)`` → NUMBER, ``2=region_id`` too, ``city = 'Roma'``
    and ``UPPER(city)`` → VARCHAR2. None when nothing shows it (``region_id IS NULL``)."""
    if i >= 2 and tokens[i - 1].text == "(" and tokens[i - 2].text.upper() in _STRING_ARGUMENT:
        return "VARCHAR2"
    for step in (1, -1):
        opening, closing = ("(", ")") if step == 1 else (")", "(")
        depth = 0
        j = i + step
        while 0 <= j < len(tokens):
            tok = tokens[j]
            # Rightwards a constant may sit in an IN list; leftwards HEXTORAW('..') reads as RAW
            # only from its name, which comes before its argument.
            if (step == 1 or depth == 0) and (found := _literal_type(tok)):
                return found
            if tok.text == opening:
                depth += 1
            elif tok.text == closing:
                depth -= 1
                if depth < 0:
                    break
            elif depth == 0 and _ends_comparison(tok):
                break
            j += step
    return None


def _get_value(value_type: str, column: str) -> str:
    return f":dml.get_value({_literal(value_type)},{_literal(chr(34) + column + chr(34))})"


@dataclass(frozen=True)
class _SubsetCondition:
    """A dml_condition with its column references located, ready to be written over the OLD or
    NEW values of a row LCR."""

    text: str
    tokens: list[_Tok]
    positions: list[int]  # indexes of the column tokens
    accessors: dict[str, str]  # column → ANYDATA accessor

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(_column_name(self.tokens[i]) for i in self.positions))

    def value(self, value_type: str, column: str) -> str:
        return f"{_get_value(value_type, column)}.{self.accessors[column]}()"

    def _replacements(self, value_type: str) -> dict[int, str]:
        return {i: self.value(value_type, _column_name(self.tokens[i])) for i in self.positions}

    def over(self, value_type: str) -> str:
        """c(x) of §3.5.2: the condition with each column replaced by its OLD or NEW value."""
        return _rewrite(self.text, self.tokens, self._replacements(value_type)).strip()

    def source_position(self, value_type: str, line: int, column: int) -> str:
        """Where in the user's dml_condition a position of ``over(value_type)`` comes from."""
        rewritten = _rewrite(self.text, self.tokens, self._replacements(value_type))
        lead = len(rewritten) - len(rewritten.lstrip())
        starts = [0] + [i + 1 for i, ch in enumerate(rewritten) if ch == "\n"]
        # Only the first line lost the leading blanks that over() strips.
        offset = (lead if line == 1 else 0) + starts[min(line, len(starts)) - 1] + column - 1
        shift = 0
        for i, new in sorted(self._replacements(value_type).items()):
            tok = self.tokens[i]
            if offset < tok.start + shift:
                break
            if offset < tok.start + shift + len(new):
                return _position(self.text, tok.start)  # inside a rewritten column
            shift += len(new) - len(tok.text)
        return _position(self.text, max(0, offset - shift))


def _subset_condition(
    dml_condition: str, column_types: Mapping[str, str] | None
) -> _SubsetCondition:
    if not dml_condition or not dml_condition.strip():
        raise GeneratorError(
            "dml_condition is required for subset rules.", parameter="dml_condition"
        )
    text = dml_condition
    tokens = _tokens(text, "dml_condition")
    declared = {
        _identifier(k, "column_types"): v.strip().upper() for k, v in (column_types or {}).items()
    }
    for col, col_type in declared.items():
        if col_type.split("(")[0].strip() not in _ACCESSORS:
            raise GeneratorError(
                f"column_types: type {col_type!r} of {col} is not supported in subset conditions "
                f"(supported: {', '.join(sorted(_ACCESSORS))}).",
                parameter="column_types",
            )
    inferred: dict[str, str] = {}
    positions: list[int] = []
    for i, tok in enumerate(tokens):
        where = _position(text, tok.start)
        if tok.kind == "bind":
            raise GeneratorError(
                f"dml_condition uses the variable {tok.text} at {where}; a subset condition "
                "names columns only, like a WHERE clause (region_id=2).",
                parameter="dml_condition",
            )
        if tok.text == ".":
            raise GeneratorError(
                f"dml_condition: qualified names are not supported (at {where}); "
                "name the table's columns alone.",
                parameter="dml_condition",
            )
        if not _is_column(tokens, i):
            continue
        positions.append(i)
        col = _column_name(tok)
        found = _inferred_type(tokens, i)
        if col in declared or found is None:
            continue
        if inferred.setdefault(col, found) != found:
            raise GeneratorError(
                f"dml_condition compares column {col} with constants of different types; "
                "give its column type.",
                parameter="dml_condition",
            )
    if not positions:
        raise GeneratorError(
            "dml_condition must test at least one column of the table.", parameter="dml_condition"
        )
    accessors = {}
    for i in positions:
        col = _column_name(tokens[i])
        col_type = declared.get(col) or inferred.get(col)
        if col_type is None:
            raise GeneratorError(
                f"dml_condition: cannot tell the type of column {col} "
                f"(at {_position(text, tokens[i].start)}); give its column type.",
                parameter="dml_condition",
            )
        accessors[col] = _ACCESSORS[col_type.split("(")[0].strip()]
    cond = _SubsetCondition(text, tokens, positions, accessors)
    _check_syntax(
        cond.over("NEW"),
        parameter="dml_condition",
        variables={"DML": "row_lcr"},
        position=lambda line, column: cond.source_position("NEW", line, column),
    )
    return cond


def subset_condition_columns(dml_condition: str) -> list[str]:
    """The columns a dml_condition reads: they need unconditional supplemental logging at the
    source database (§3.5.5)."""
    tokens = _tokens(dml_condition, "dml_condition")
    return list(
        dict.fromkeys(_column_name(tokens[i]) for i in range(len(tokens)) if _is_column(tokens, i))
    )


def subset_rules(
    *,
    table_name: str,
    dml_condition: str,
    include_tagged_lcr: bool = False,
    source_database: str | None = None,
    column_types: Mapping[str, str] | None = None,
    inclusion_rule: bool = True,
    include_ddl: bool = False,
) -> list[GeneratedRule]:
    """ADD_SUBSET_RULES / ADD_SUBSET_PROPAGATION_RULES: always three DML rules, INSERT, UPDATE and
    DELETE, each carrying its row-migration operation in the action context.

    ``column_types`` maps columns to Oracle types (``{"region_id": "NUMBER"}``) where the constant a
    column is compared with does not show it."""
    if not inclusion_rule:
        raise GeneratorError(
            "Subset rules can only be added to a positive rule set (inclusion_rule => TRUE): "
            "row migration makes them unpredictable in a negative rule set.",
            parameter="inclusion_rule",
        )
    if include_ddl:
        raise GeneratorError(
            "Subset rules are DML rules only; add the DDL rule with ADD_TABLE_RULES.",
            parameter="streams_type",
        )
    schema, table = _qualified(table_name, "table_name", "table")
    src = _source_database(source_database)
    cond = _subset_condition(dml_condition, column_types)
    c, columns = cond.over, cond.columns

    prefix = (
        f":dml.get_object_owner()={_literal(schema)} AND "
        f":dml.get_object_name()={_literal(table)} AND "
        + ("" if include_tagged_lcr else ":dml.is_null_tag()='Y' AND ")
        + ("" if src is None else f":dml.get_source_database_name()={_literal(src)} AND ")
    )

    def carried(vt: str) -> str:
        return " AND ".join(f"({_get_value(vt, col)} IS NOT NULL)" for col in columns)

    def not_satisfied(vt: str) -> str:
        # NOT (c) is NULL, not TRUE, when a value is SQL NULL; NOT EXISTS makes NULL count as
        # "does not satisfy" (§3.5.3). Several columns: [INFER] the same shape, one test each.
        present = " AND ".join(f"({cond.value(vt, col)} IS NOT NULL)" for col in columns)
        absent = " OR ".join(f"({cond.value(vt, col)} IS NULL)" for col in columns)
        if len(columns) > 1:
            absent = f"({absent})"
        return (
            f"({present} AND NOT ({c(vt)})) OR "
            f"({absent} AND NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE ({c(vt)})))"
        )

    conditions = {
        SubsettingOperation.INSERT: (
            f"{prefix}:dml.get_command_type() IN ('UPDATE','INSERT') AND {carried('NEW')} AND "
            f"({c('NEW')}) AND (:dml.get_command_type()='INSERT' OR "
            f"({carried('OLD')} AND ({not_satisfied('OLD')})))"
        ),
        SubsettingOperation.UPDATE: (
            f"{prefix}:dml.get_command_type()='UPDATE' AND {carried('NEW')} AND "
            f"{carried('OLD')} AND ({c('OLD')}) AND ({c('NEW')})"
        ),
        SubsettingOperation.DELETE: (
            f"{prefix}:dml.get_command_type() IN ('UPDATE','DELETE') AND {carried('OLD')} AND "
            f"({c('OLD')}) AND (:dml.get_command_type()='DELETE' OR "
            f"({carried('NEW')} AND ({not_satisfied('NEW')})))"
        ),
    }
    out = []
    for operation, condition in conditions.items():
        rule = GeneratedRule(
            condition=condition,
            streams_rule_type=StreamsRuleType.SUBSET,
            rule_type=RuleType.DML,
            schema=schema,
            object=table,
            source_database=src,
            include_tagged_lcr=include_tagged_lcr,
            subsetting_operation=operation,
            dml_condition=cond.text.strip(),
            original_condition=condition,
            action_context={ROW_SUBSET_ACTION: str(operation)},
        )
        _check_syntax(condition, parameter="condition", variables=rule.variables)
        out.append(rule)
    return out


# --- message rules (§3.6) ------------------------------------------------------------------------


def message_rule(
    *,
    message_type: str,
    rule_condition: str,
    variable_number: int,
    inclusion_rule: bool = True,
) -> GeneratedRule:
    """ADD_MESSAGE_RULE / ADD_MESSAGE_PROPAGATION_RULE: one rule on user messages of one type.

    ``:msg`` becomes ``:"VAR$_<variable_number>"``, the variable of the rule's own evaluation
    context (Oracle draws the number from a sequence; the caller does here). The user's text is
    kept, minus leading and trailing blanks: the seed's PL/SQL ends the condition with a blank that
    its generated condition does not have."""
    owner, type_name = _qualified(message_type, "message_type", "type")
    if (
        isinstance(variable_number, bool)
        or not isinstance(variable_number, int)
        or variable_number < 1
    ):
        raise GeneratorError(
            f"variable_number must be a positive whole number, not {variable_number!r}.",
            parameter="variable_number",
        )
    variable = f"VAR$_{variable_number}"
    text, tokens, binds = _bound(rule_condition, parameter="rule_condition", variable="msg")
    _check_syntax(
        rule_condition,
        parameter="rule_condition",
        variables={"MSG": f"user:{owner}.{type_name}"},
    )
    condition = _rewrite(text, tokens, dict.fromkeys(binds, f':"{variable}"')).strip()
    rule = GeneratedRule(
        condition=condition,
        streams_rule_type=StreamsRuleType.MESSAGE,
        rule_type=None,
        message_type=f"{owner}.{type_name}",
        message_rule_variable=variable,
        original_condition=condition,
        inclusion_rule=inclusion_rule,
    )
    _check_syntax(condition, parameter="condition", variables=rule.variables)
    return rule
