"""``python manage.py rules generate|eval|decide``: the rule generators and the condition language
from the command line.

- ``generate KIND [options]`` prints the condition(s) DBMS_STREAMS_ADM would generate, one per
  line (DML before DDL; subset rules INSERT, UPDATE, DELETE). The options are Oracle's parameter
  names. Leaving out ``--streams-type`` generates both the DML and the DDL rule.
- ``eval --condition TEXT --message JSON`` prints TRUE, FALSE or NULL.
- ``decide --positive JSON --negative JSON --message JSON`` prints PERFORM or DISCARD; each rule
  set is a JSON list of conditions, or ``null`` for no rule set.

Bad input exits with code 2 and a message naming the option.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rules.lang import (
    ConditionError,
    RuleSetSpec,
    compile_rule,
    decide,
    message_from_json,
)
from rules.lang import generators as gen

KINDS = ("global", "schema", "table", "subset", "message")

# Which options each kind takes (Oracle's parameters of the matching ADD_*_RULES procedure).
_LCR_OPTIONS = {
    "streams_type",
    "include_tagged_lcr",
    "source_database",
    "inclusion_rule",
    "and_condition",
}
_ALLOWED = {
    "global": _LCR_OPTIONS,
    "schema": _LCR_OPTIONS | {"schema_name"},
    "table": _LCR_OPTIONS | {"table_name"},
    # ADD_SUBSET_RULES has no inclusion_rule or and_condition; both are refused with a reason.
    "subset": {
        "table_name",
        "dml_condition",
        "include_tagged_lcr",
        "source_database",
        "column_type",
        "streams_type",
        "inclusion_rule",
    },
    "message": {"message_type", "rule_condition", "inclusion_rule", "variable_number"},
}
_REQUIRED = {
    "schema": ("schema_name",),
    "table": ("table_name",),
    "subset": ("table_name", "dml_condition"),
    "message": ("message_type", "rule_condition", "variable_number"),
}
_GENERATE_OPTIONS = (
    "table_name",
    "schema_name",
    "streams_type",
    "include_tagged_lcr",
    "source_database",
    "and_condition",
    "dml_condition",
    "column_type",
    "message_type",
    "rule_condition",
    "inclusion_rule",
    "variable_number",
)


def _flag(parameter: str) -> str:
    if parameter == "column_types":
        parameter = "column_type"
    return "--" + parameter.replace("_", "-")


def _bad(message: str) -> CommandError:
    return CommandError(message, returncode=2)


def _boolean(text: str) -> bool:
    value = text.strip().upper()
    if value in ("TRUE", "T", "YES", "Y", "1"):
        return True
    if value in ("FALSE", "F", "NO", "N", "0"):
        return False
    raise ValueError(text)


class _Parser(CommandParser):
    """Argument errors of the subcommands exit with 2 under call_command too, as on the shell."""

    def error(self, message: str) -> Any:
        if self.called_from_command_line:
            super().error(message)
        raise CommandError(f"Error: {message}", returncode=2)


class Command(BaseCommand):
    help = "Generate system-created rule conditions, evaluate a condition, or decide a rule set."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, parser_class=_Parser)

        g = sub.add_parser("generate", help="Print the condition(s) DBMS_STREAMS_ADM generates.")
        g.add_argument("kind", choices=KINDS)
        g.add_argument("--table-name", help="schema.table (table and subset rules)")
        g.add_argument("--schema-name", help="schema (schema rules)")
        g.add_argument(
            "--streams-type",
            choices=("dml", "ddl"),
            type=str.lower,
            help="dml or ddl; leave out for both (include_dml and include_ddl)",
        )
        g.add_argument(
            "--include-tagged-lcr",
            nargs="?",
            const="true",
            metavar="true|false",
            help="include LCRs with a non-NULL tag (no is_null_tag test); default false",
        )
        g.add_argument("--source-database", help="global name of the source database")
        g.add_argument("--and-condition", help="condition ANDed to the rule, written with :lcr")
        g.add_argument("--dml-condition", help="subset condition, like region_id=2")
        g.add_argument(
            "--column-type",
            action="append",
            metavar="COLUMN=TYPE",
            help="type of a subset column when its constant does not show it (repeatable)",
        )
        g.add_argument("--message-type", help="owner.type of the user messages")
        g.add_argument("--rule-condition", help="message rule condition, written with :msg")
        g.add_argument(
            "--inclusion-rule",
            metavar="true|false",
            help="true: positive rule set (default); false: negative rule set",
        )
        g.add_argument("--variable-number", metavar="N", help='n of the message rule\'s :"VAR$_n"')

        e = sub.add_parser("eval", help="Evaluate a condition for one message.")
        e.add_argument("--condition", required=True)
        e.add_argument("--message", required=True, help='JSON: {"kind": "row_lcr", ...}')

        d = sub.add_parser("decide", help="Decide PERFORM or DISCARD for one message.")
        d.add_argument("--positive", required=True, help="JSON list of conditions, or null")
        d.add_argument("--negative", required=True, help="JSON list of conditions, or null")
        d.add_argument("--message", required=True, help='JSON: {"kind": "row_lcr", ...}')

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "generate":
            for rule in self._generate(options):
                self.stdout.write(rule.condition)
        elif action == "eval":
            self.stdout.write(self._eval(options))
        else:
            self.stdout.write(self._decide(options))

    # --- generate --------------------------------------------------------------------------------

    def _generate(self, options: dict[str, Any]) -> list[gen.GeneratedRule]:
        kind: str = options["kind"]
        given = {name for name in _GENERATE_OPTIONS if options.get(name) is not None}
        for name in sorted(given - _ALLOWED[kind]):
            raise _bad(f"{_flag(name)} does not apply to {kind} rules.")
        for name in _REQUIRED.get(kind, ()):
            if name not in given:
                raise _bad(f"{kind} rules need {_flag(name)}.")

        tagged = self._boolean(options, "include_tagged_lcr", default=False)
        inclusion = self._boolean(options, "inclusion_rule", default=True)
        streams_type = options.get("streams_type")
        include_dml = streams_type in (None, "dml")
        include_ddl = streams_type in (None, "ddl")
        try:
            if kind == "message":
                rules = [
                    gen.message_rule(
                        message_type=options["message_type"],
                        rule_condition=options["rule_condition"],
                        variable_number=self._number(options["variable_number"]),
                        inclusion_rule=inclusion,
                    )
                ]
            elif kind == "subset":
                rules = gen.subset_rules(
                    table_name=options["table_name"],
                    dml_condition=options["dml_condition"],
                    include_tagged_lcr=tagged,
                    source_database=options.get("source_database"),
                    column_types=self._column_types(options.get("column_type") or []),
                    inclusion_rule=inclusion,
                    include_ddl=streams_type == "ddl",
                )
            else:
                common = {
                    "include_dml": include_dml,
                    "include_ddl": include_ddl,
                    "include_tagged_lcr": tagged,
                    "source_database": options.get("source_database"),
                    "inclusion_rule": inclusion,
                    "and_condition": options.get("and_condition"),
                }
                if kind == "global":
                    rules = gen.global_rules(**common)
                elif kind == "schema":
                    rules = gen.schema_rules(schema_name=options["schema_name"], **common)
                else:
                    rules = gen.table_rules(table_name=options["table_name"], **common)
        except gen.GeneratorError as exc:
            message = str(exc).removeprefix(f"{exc.parameter}: ")
            raise _bad(f"{_flag(exc.parameter)}: {message}") from exc
        if kind != "message" and not inclusion and not tagged:
            # The seed's advice (§3.4.4): otherwise tagged changes escape the negative rule set.
            self.stderr.write(
                "Note: a negative rule usually wants --include-tagged-lcr, or tagged LCRs "
                "are not discarded."
            )
        return rules

    @staticmethod
    def _boolean(options: dict[str, Any], name: str, *, default: bool) -> bool:
        value = options.get(name)
        if value is None:
            return default
        try:
            return _boolean(value)
        except ValueError:
            raise _bad(f"{_flag(name)} takes true or false, not {value!r}.") from None

    @staticmethod
    def _number(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            number = 0
        if number < 1:
            raise _bad(f"--variable-number takes a positive whole number, not {text!r}.")
        return number

    @staticmethod
    def _column_types(items: list[str]) -> dict[str, str]:
        out = {}
        for item in items:
            column, sep, col_type = item.partition("=")
            if not sep or not column.strip() or not col_type.strip():
                raise _bad(f"--column-type takes COLUMN=TYPE (region_id=NUMBER), not {item!r}.")
            out[column.strip()] = col_type.strip()
        return out

    # --- eval and decide: thin wrappers over the condition language -------------------------------

    def _eval(self, options: dict[str, Any]) -> str:
        message = self._message(options["message"])
        try:
            # As in a rule set: :dml reads row LCRs, :ddl DDL LCRs, :msg and :"VAR$_n" user messages.
            rule = compile_rule("eval", options["condition"])
        except ConditionError as exc:
            raise _bad(f"--condition: {exc}") from exc
        return _truth(rule.evaluate(message))

    def _decide(self, options: dict[str, Any]) -> str:
        message = self._message(options["message"])
        sets: dict[str, Any] = {}
        for name in ("positive", "negative"):
            value = self._json(options[name], f"--{name}")
            if value is not None and (
                not isinstance(value, list) or not all(isinstance(c, str) for c in value)
            ):
                raise _bad(f"--{name} takes a JSON list of conditions, or null.")
            if value is None:
                sets[name] = None  # no rule set at all, which Table 5-1 tells from an empty one
                continue
            compiled = []
            for i, text in enumerate(value, 1):
                try:
                    compiled.append(compile_rule(f"R{i}", text))
                except ConditionError as exc:
                    raise _bad(f"--{name}: condition {i}: {exc}") from exc
            sets[name] = RuleSetSpec(compiled, name=name)
        return decide(message, positive=sets["positive"], negative=sets["negative"]).action

    def _message(self, text: str) -> Any:
        value = self._json(text, "--message")
        try:
            return message_from_json(value)
        except (ValueError, TypeError, KeyError) as exc:
            raise _bad(f"--message: {exc}") from exc

    @staticmethod
    def _json(text: str, flag: str) -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise _bad(f"{flag} is not valid JSON: {exc}") from exc


def _truth(value: bool | None) -> str:
    return "NULL" if value is None else ("TRUE" if value else "FALSE")
