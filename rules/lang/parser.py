"""The one parser of rule conditions, its checks, and the printer that turns a tree back into text.

Grammar (keywords and function names case-insensitive; precedence OR < AND < NOT < predicate)::

    condition  := and_cond { OR and_cond }
    and_cond   := not_cond { AND not_cond }
    not_cond   := NOT not_cond | predicate
    predicate  := [NOT] EXISTS '(' SELECT (literal | '*') FROM [SYS '.'] DUAL WHERE condition ')'
                | '(' condition ')'
                | expr ( cmp_op expr
                       | [NOT] IN '(' expr { ',' expr } ')'
                       | IS [NOT] NULL
                       | [NOT] LIKE expr [ESCAPE expr] )
    cmp_op     := '=' | '!=' | '<>' | '^=' | '<' | '<=' | '>' | '>='
    expr       := primary { '.' name [ '(' [ expr { ',' expr } ] ')' ] }
    primary    := string | ['-' | '+'] number | NULL | :name | :"Quoted" | NAME '(' args ')'
                | '(' expr ')'

``parse`` also checks what does not depend on the evaluation context (function and method names,
argument counts, literal arguments); ``validate`` checks the variables against one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from rules.lang import values as v
from rules.lang.ast import (
    And,
    Attr,
    Bind,
    Call,
    Compare,
    Condition,
    Exists,
    Expr,
    InList,
    IsNull,
    Like,
    Literal,
    Node,
    Not,
    Or,
    walk,
)

__all__ = ["ConditionError", "parse", "to_text", "validate"]

# Deeper nesting than this is refused rather than risking Python's recursion limit.
MAX_DEPTH = 64
MAX_CHAIN = 16


class ConditionError(Exception):
    """A condition that cannot be saved: a syntax error or an unknown name, with its position.

    ``str(err)`` reads ``line 1, column 23: expected ')' but found 'AND'``; ``message`` is the part
    after the position, ``expected`` what would have been accepted there (or None).
    """

    def __init__(
        self,
        message: str,
        line: int = 1,
        column: int = 1,
        *,
        expected: str | None = None,
        found: str | None = None,
    ) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.message = message
        self.line = line
        self.column = column
        self.expected = expected
        self.found = found

    def __reduce__(self):  # picklable (Celery, Spark) despite the keyword-only arguments
        return (_rebuild_error, (self.message, self.line, self.column, self.expected, self.found))


def _rebuild_error(message, line, column, expected, found) -> ConditionError:
    return ConditionError(message, line, column, expected=expected, found=found)


def _node_error(node: Node, message: str) -> ConditionError:
    return ConditionError(message, node.line or 1, node.column or 1)


# --- tokens --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # str num bind ident qident op punct arith eof
    text: str  # as written
    value: object  # str value, upper-cased identifier, canonical operator, bind name
    line: int
    column: int

    def describe(self) -> str:
        if self.kind == "eof":
            return "end of input"
        text = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        if self.kind == "str":
            return f"string {text}"
        if self.kind == "num":
            return f"number {text}"
        return f"'{text}'"


_OPS = {"=": "=", "!=": "!=", "<>": "!=", "^=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_IDENT_PART = _IDENT_START | frozenset("0123456789_$#")
_DIGITS = frozenset("0123456789")


def tokenize(text: str) -> list[Token]:
    toks: list[Token] = []
    i, n, line, col0 = 0, len(text), 1, 0  # col0: index of the current line's first character

    def err(msg: str, at: int, expected: str | None = None) -> ConditionError:
        return ConditionError(msg, line, at - col0 + 1, expected=expected)

    while i < n:
        c = text[i]
        if c == "\n":
            i += 1
            line, col0 = line + 1, i
            continue
        if c.isspace():
            i += 1
            continue
        start, col = i, i - col0 + 1
        if c == "-" and text.startswith("--", i):  # comment to the end of the line
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise err("unterminated comment", i, "'*/'")
            for k in range(i, j):
                if text[k] == "\n":
                    line, col0 = line + 1, k + 1
            i = j + 2
            continue
        if c == "'":
            j, parts = i + 1, []
            while True:
                k = text.find("'", j)
                if k < 0:
                    raise err("unterminated string", start, "a closing quote")
                parts.append(text[j:k])
                if text.startswith("''", k):
                    parts.append("'")
                    j = k + 2
                    continue
                break
            raw = text[start : k + 1]
            toks.append(Token("str", raw, "".join(parts), line, col))
            for k2 in range(start, k):
                if text[k2] == "\n":
                    line, col0 = line + 1, k2 + 1
            i = k + 1
            continue
        if c in _DIGITS or (c == "." and i + 1 < n and text[i + 1] in _DIGITS):
            j = i
            while j < n and text[j] in _DIGITS:
                j += 1
            if j < n and text[j] == "." and not text.startswith("..", j):
                j += 1
                while j < n and text[j] in _DIGITS:
                    j += 1
            if j < n and text[j] in "eE":
                k = j + 1
                if k < n and text[k] in "+-":
                    k += 1
                if k < n and text[k] in _DIGITS:
                    while k < n and text[k] in _DIGITS:
                        k += 1
                    j = k
            toks.append(Token("num", text[i:j], text[i:j], line, col))
            i = j
            continue
        if c in _IDENT_START:
            j = i + 1
            while j < n and text[j] in _IDENT_PART:
                j += 1
            word = text[i:j]
            toks.append(Token("ident", word, word.upper(), line, col))
            i = j
            continue
        if c == '"':
            k = text.find('"', i + 1)
            if k < 0:
                raise err("unterminated quoted name", start, "a closing double quote")
            name = text[i + 1 : k]
            if not name:
                raise err("a quoted name cannot be empty", start)
            if "\n" in name:
                raise err("a quoted name cannot span lines", start)
            toks.append(Token("qident", text[i : k + 1], name, line, col))
            i = k + 1
            continue
        if c == ":":
            j = i + 1
            if j < n and text[j] in _IDENT_START:
                k = j + 1
                while k < n and text[k] in _IDENT_PART:
                    k += 1
                toks.append(Token("bind", text[i:k], text[j:k].upper(), line, col))
                i = k
                continue
            if j < n and text[j] == '"':
                k = text.find('"', j + 1)
                name = text[j + 1 : k] if k > 0 else ""
                if k < 0 or not name or "\n" in name:
                    raise err("unterminated or empty quoted variable name", start)
                toks.append(Token("bind", text[i : k + 1], name, line, col))
                i = k + 1
                continue
            raise err("expected a variable name after ':'", i + 1, "a variable name")
        two = text[i : i + 2]
        if two in _OPS:
            toks.append(Token("op", two, _OPS[two], line, col))
            i += 2
            continue
        if c in "=<>":
            toks.append(Token("op", c, c, line, col))
            i += 1
            continue
        if c in "(),.":
            toks.append(Token("punct", c, c, line, col))
            i += 1
            continue
        if two == "||":
            toks.append(Token("arith", two, two, line, col))
            i += 2
            continue
        if c in "+-*/":
            toks.append(Token("arith", c, c, line, col))
            i += 1
            continue
        shown = c if c.isprintable() else f"U+{ord(c):04X}"
        raise err(f"unexpected character '{shown}'", i)
    toks.append(Token("eof", "", None, line, n - col0 + 1))
    return toks


# --- parser --------------------------------------------------------------------------------------

_PREDICATE_KEYWORDS = ("IN", "IS", "LIKE", "NOT")


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = tokenize(text)
        self.i = 0
        self.depth = 0

    # token helpers
    def peek(self, k: int = 0) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "eof":
            self.i += 1
        return t

    def is_kw(self, word: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == "ident" and t.value == word

    def is_punct(self, p: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == "punct" and t.value == p

    def fail(self, expected: str, tok: Token | None = None, note: str = "") -> ConditionError:
        tok = tok or self.peek()
        found = tok.describe()
        return ConditionError(
            f"expected {expected} but found {found}{': ' + note if note else ''}",
            tok.line,
            tok.column,
            expected=expected,
            found=found,
        )

    def expect_punct(self, p: str) -> Token:
        if not self.is_punct(p):
            raise self.fail(f"'{p}'")
        return self.take()

    def expect_kw(self, word: str) -> Token:
        if not self.is_kw(word):
            raise self.fail(word)
        return self.take()

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            t = self.peek()
            raise ConditionError(
                f"the condition is nested more than {MAX_DEPTH} levels deep", t.line, t.column
            )

    # conditions
    def parse(self) -> Condition:
        if self.peek().kind == "eof":
            raise ConditionError("a rule condition cannot be empty", 1, 1, expected="a condition")
        cond = self.condition()
        if self.peek().kind != "eof":
            raise self.fail("AND, OR or end of input")
        return cond

    def condition(self) -> Condition:
        self.enter()
        items = [self.and_cond()]
        first_op = None
        while self.is_kw("OR"):
            op = self.take()
            first_op = first_op or op
            items.append(self.and_cond())
        self.depth -= 1
        if first_op is None:
            return items[0]
        return Or(tuple(items), line=first_op.line, column=first_op.column)

    def and_cond(self) -> Condition:
        items = [self.not_cond()]
        first_op = None
        while self.is_kw("AND"):
            op = self.take()
            first_op = first_op or op
            items.append(self.not_cond())
        if first_op is None:
            return items[0]
        return And(tuple(items), line=first_op.line, column=first_op.column)

    def not_cond(self) -> Condition:
        if self.is_kw("NOT") and not self.is_kw("IN", 1) and not self.is_kw("LIKE", 1):
            tok = self.take()
            self.enter()
            inner = self.not_cond()
            self.depth -= 1
            return Not(inner, line=tok.line, column=tok.column)
        return self.predicate()

    def predicate(self) -> Condition:
        if self.is_kw("EXISTS"):
            return self.exists()
        if self.is_punct("("):
            # '(' opens either a parenthesised condition or a parenthesised expression followed
            # by an operator: try the expression first, and fall back without its error.
            save, depth = self.i, self.depth
            try:
                expr: Expr | None = self.expr()
            except ConditionError:
                expr = None
            if expr is not None and self.starts_predicate_rest():
                return self.predicate_rest(expr)
            self.i, self.depth = save, depth
            self.take()
            cond = self.condition()
            self.expect_punct(")")
            return cond
        return self.predicate_rest(self.expr())

    def starts_predicate_rest(self) -> bool:
        t = self.peek()
        return t.kind == "op" or (t.kind == "ident" and t.value in _PREDICATE_KEYWORDS)

    def exists(self) -> Condition:
        tok = self.take()
        self.expect_punct("(")
        self.expect_kw("SELECT")
        t = self.peek()
        if t.kind in ("num", "str") or (t.kind == "arith" and t.value == "*"):
            self.take()
        else:
            raise self.fail("1", note="EXISTS supports SELECT 1 FROM SYS.DUAL WHERE ... only")
        self.expect_kw("FROM")
        if self.is_kw("SYS") and self.is_punct(".", 1):
            self.take()
            self.take()
        self.expect_kw("DUAL")
        self.expect_kw("WHERE")
        cond = self.condition()
        self.expect_punct(")")
        return Exists(cond, line=tok.line, column=tok.column)

    def predicate_rest(self, left: Expr) -> Condition:
        t = self.peek()
        if t.kind == "op":
            self.take()
            right = self.expr()
            _check_operand(left)
            _check_operand(right)
            return Compare(str(t.value), left, right, line=t.line, column=t.column)
        negated = False
        start = t
        if self.is_kw("NOT") and (self.is_kw("IN", 1) or self.is_kw("LIKE", 1)):
            self.take()
            negated = True
        if self.is_kw("IN"):
            self.take()
            self.expect_punct("(")
            items = self.expr_list()
            for e in (left, *items):
                _check_operand(e)
            return InList(left, tuple(items), negated, line=start.line, column=start.column)
        if self.is_kw("LIKE"):
            self.take()
            pattern = self.expr()
            escape = None
            if self.is_kw("ESCAPE"):
                self.take()
                escape = self.expr()
            node = Like(left, pattern, negated, escape, line=start.line, column=start.column)
            _check_like(node)
            return node
        if self.is_kw("IS"):
            self.take()
            neg = False
            if self.is_kw("NOT"):
                self.take()
                neg = True
            self.expect_kw("NULL")
            return IsNull(left, neg, line=start.line, column=start.column)
        if t.kind == "arith":
            raise self.fail(
                "a comparison operator, IN, IS or LIKE", note="arithmetic is not supported"
            )
        raise self.fail("a comparison operator, IN, IS or LIKE")

    # expressions
    def expr(self) -> Expr:
        node = self.primary()
        links = 0
        while self.is_punct("."):
            self.take()
            t = self.take()
            if t.kind not in ("ident", "qident"):
                raise self.fail("a member function or attribute name", t)
            links += 1
            if links > MAX_CHAIN:
                raise ConditionError(
                    f"more than {MAX_CHAIN} '.' in one expression", t.line, t.column
                )
            name = str(t.value)
            if self.is_punct("("):
                args = self.args()
                node = Call(node, name, args, line=t.line, column=t.column)
                _check_call(node)
            else:
                node = Attr(node, name, t.kind == "qident", line=t.line, column=t.column)
                _check_attr(node)
        return node

    def args(self) -> tuple[Expr, ...]:
        self.expect_punct("(")
        if self.is_punct(")"):
            self.take()
            return ()
        self.enter()
        items = self.expr_list()
        self.depth -= 1
        return tuple(items)

    def expr_list(self) -> list[Expr]:
        """``expr {',' expr} ')'`` (the ``(`` already taken)."""
        items = [self.expr()]
        while self.is_punct(","):
            self.take()
            items.append(self.expr())
        if not self.is_punct(")"):
            raise self.fail("',' or ')'")
        self.take()
        return items

    def primary(self) -> Expr:
        t = self.peek()
        if t.kind == "str":
            self.take()
            return Literal(str(t.value), line=t.line, column=t.column)
        if t.kind == "num" or (
            t.kind == "arith" and t.value in "+-" and self.peek(1).kind == "num"
        ):
            sign = 1
            if t.kind == "arith":
                self.take()
                sign = -1 if t.value == "-" else 1
            num = self.take()
            return Literal(_number(num, sign), line=t.line, column=t.column)
        if t.kind == "bind":
            self.take()
            return Bind(str(t.value), t.text.startswith(':"'), line=t.line, column=t.column)
        if t.kind == "ident" and t.value == "NULL":
            self.take()
            return Literal(None, line=t.line, column=t.column)
        if t.kind == "ident" and self.is_punct("(", 1):
            self.take()
            node = Call(None, str(t.value), self.args(), line=t.line, column=t.column)
            _check_call(node)
            return node
        if self.is_punct("("):
            self.take()
            self.enter()
            e = self.expr()
            self.expect_punct(")")
            self.depth -= 1
            return e
        if t.kind == "ident" and t.value not in _KEYWORDS:
            found = t.describe()
            raise ConditionError(
                f"expected a value but found {found}: variables start with a colon, "
                f"as in :{t.text.lower()}",
                t.line,
                t.column,
                expected="a value",
                found=found,
            )
        raise self.fail("a value", note="a string, a number, NULL, a :variable or a function call")


_KEYWORDS = frozenset(
    ("AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE", "ESCAPE", "EXISTS", "SELECT", "FROM", "WHERE")
)


def _number(tok: Token, sign: int) -> int | Decimal:
    text = tok.text
    n = v.to_number(text)
    if n is None:
        raise ConditionError(
            f"number {text} is out of range (NUMBER holds 1E-130 to 9.99E125)",
            tok.line,
            tok.column,
        )
    return -n if sign < 0 else n


# --- checks that do not depend on the evaluation context -----------------------------------------


def _describe_call(node: Call) -> str:
    return f"{node.name}()"


def _check_call(node: Call) -> None:
    target, name, nargs = node.expr, node.name, len(node.args)
    if target is None:
        if name not in v.BUILTINS:
            raise _node_error(
                node, f"unknown function {name}; the functions are {', '.join(sorted(v.BUILTINS))}"
            )
        arity = v.BUILTINS[name]
    elif isinstance(target, Bind):
        if name not in v.LCR_METHODS:
            if name in v.ANYDATA_ACCESSORS:
                raise _node_error(
                    node, f"{v.ANYDATA_DISPLAY[name]}() reads the result of GET_VALUE(...)"
                )
            raise _node_error(
                node,
                f"unknown member function {name}; change records have "
                f"{', '.join(sorted(v.LCR_METHODS))}",
            )
        arity = v.LCR_METHODS[name]
    elif isinstance(target, Call) and target.name == "GET_VALUE" and target.expr is not None:
        if name not in v.ANYDATA_ACCESSORS:
            raise _node_error(
                node,
                f"unknown ANYDATA function {name}; GET_VALUE(...) is read with "
                f"{', '.join(v.ANYDATA_DISPLAY[a] + '()' for a in v.ANYDATA_ACCESSORS)}",
            )
        arity = (0, 0)
    elif isinstance(target, Call):
        raise _node_error(
            node, f"{name}() cannot be called on {_describe_call(target)}, which is not an object"
        )
    elif isinstance(target, Attr):
        raise _node_error(node, f"{name}(): message attributes have no member functions")
    else:
        raise _node_error(node, f"{name}() cannot be called on a literal")
    lo, hi = arity
    if not lo <= nargs <= hi:
        want = str(lo) if lo == hi else f"{lo} or {hi}" if hi == lo + 1 else f"{lo} to {hi}"
        plural = "" if want == "1" else "s"
        raise _node_error(node, f"{name} takes {want} argument{plural}, not {nargs}")
    for a in node.args:
        _check_operand(a)
    if name == "GET_VALUE":
        _check_get_value(node)
    elif name == "HEXTORAW" and isinstance(node.args[0], Literal):
        arg = node.args[0].value
        if arg is not None and v.hex_to_raw(v.to_text(arg) or "") is None:
            raise _node_error(node.args[0], f"HEXTORAW needs hexadecimal digits, not {arg!r}")


def _check_get_value(node: Call) -> None:
    value_type, column, *rest = node.args
    if isinstance(value_type, Literal) and (
        type(value_type.value) is not str or value_type.value.upper() not in ("OLD", "NEW")
    ):
        raise _node_error(value_type, "GET_VALUE's first argument must be 'OLD' or 'NEW'")
    if isinstance(column, Literal) and (
        type(column.value) is not str or v.column_name(column.value) is None
    ):
        raise _node_error(
            column, "GET_VALUE's second argument must name a column, as in '\"REGION_ID\"'"
        )
    if (
        rest
        and isinstance(rest[0], Literal)
        and (type(rest[0].value) is not str or rest[0].value.upper() not in ("Y", "N"))
    ):
        raise _node_error(rest[0], "GET_VALUE's third argument (use_old) must be 'Y' or 'N'")


def _check_attr(node: Attr) -> None:
    target = node.expr
    if isinstance(target, Call):
        if target.name == "GET_VALUE" and target.expr is not None:
            raise _node_error(
                node,
                "GET_VALUE(...) returns ANYDATA: read it with AccessNumber(), "
                "AccessVarchar2() or AccessDate()",
            )
        raise _node_error(node, f"{_describe_call(target)} returns a value, not an object")
    if isinstance(target, Literal):
        raise _node_error(node, "a literal has no attributes")


def _is_anydata(e: Expr) -> bool:
    return isinstance(e, Call) and e.name == "GET_VALUE" and e.expr is not None


def _check_operand(e: Expr) -> None:
    if _is_anydata(e):
        raise _node_error(
            e,
            "GET_VALUE(...) returns ANYDATA, which can only be tested with IS [NOT] NULL: "
            "compare its AccessNumber(), AccessVarchar2() or AccessDate()",
        )


def _check_like(node: Like) -> None:
    for e in (node.expr, node.pattern, node.escape):
        if e is not None:
            _check_operand(e)
    esc = node.escape
    if not isinstance(esc, Literal) or esc.value is None:
        return
    esc_text = v.to_text(esc.value)
    if esc_text is None or len(esc_text) != 1:
        raise _node_error(esc, "the ESCAPE character must be a single character")
    pattern = node.pattern
    if (
        isinstance(pattern, Literal)
        and pattern.value is not None
        and v.like_tokens(v.to_text(pattern.value) or "", esc_text) is None
    ):
        raise _node_error(
            pattern,
            f"in a LIKE pattern, the escape character {esc_text!r} must be followed "
            "by %, _ or itself",
        )


def parse(text: str) -> Condition:
    """Parse a rule condition into its tree; raise ConditionError naming the position and what
    was expected."""
    if not isinstance(text, str):
        raise TypeError("a condition is text")
    return _Parser(text).parse()


# --- validation against an evaluation context ----------------------------------------------------


def _display_var(name: str) -> str:
    return f":{name.lower()}" if name.isalpha() and name.isupper() else f':"{name}"'


def _infer_kind(name: str) -> str | None:
    if name == "DML":
        return v.ROW_LCR
    if name == "DDL":
        return v.DDL_LCR
    if name == "MSG" or name.startswith("VAR$"):
        return v.USER
    return None


def validate(cond: Condition, *, variables: Mapping[str, str] | None = None) -> None:
    """Check a parsed condition against the variables of its evaluation context.

    ``variables`` maps the allowed variable names (as written in conditions: ``dml``, ``DML`` and
    ``:dml`` are one name, ``"VAR$_52"`` keeps its case) to their kinds: ``row_lcr``, ``ddl_lcr``,
    ``user`` or ``user:<TYPE>``. With None, any variable is allowed and ``:dml``, ``:ddl``,
    ``:msg`` and ``:"VAR$_n"`` have their standard kinds. Raises ConditionError for an unknown
    variable, a member function the variable's kind lacks (GET_OBJECT_TYPE on ``:dml``), an
    attribute of a change record, or a member function of a user message.
    """
    kinds: dict[str, str] | None = None
    if variables is not None:
        kinds = {v.variable_name(k): v.kind_family(kind) for k, kind in variables.items()}
    for node in walk(cond):
        if isinstance(node, Bind):
            if kinds is not None and node.name not in kinds:
                allowed = ", ".join(_display_var(n) for n in sorted(kinds)) or "none"
                raise _node_error(
                    node, f"unknown variable {_display_var(node.name)}; the variables are {allowed}"
                )
            continue
        operands: tuple[Expr, ...] = ()
        if isinstance(node, Call | Attr) and isinstance(node.expr, Bind):
            _check_member(node, _kind(node.expr, kinds))
        if isinstance(node, Compare):
            operands = (node.left, node.right)
        elif isinstance(node, InList):
            operands = (node.expr, *node.items)
        elif isinstance(node, Like):
            operands = (node.expr, node.pattern)
        elif isinstance(node, Call):
            operands = node.args
        for e in operands:
            if isinstance(e, Bind) and _kind(e, kinds) in (v.ROW_LCR, v.DDL_LCR):
                raise _node_error(
                    e,
                    f"{_display_var(e.name)} is a change record: compare one of its member "
                    f"functions, such as {_display_var(e.name)}.get_object_owner()",
                )


def _kind(bind: Bind, kinds: dict[str, str] | None) -> str | None:
    return kinds.get(bind.name) if kinds is not None else _infer_kind(bind.name)


def _check_member(node: Call | Attr, kind: str | None) -> None:
    var = _display_var(node.expr.name)  # type: ignore[union-attr]
    if isinstance(node, Attr):
        if kind in (v.ROW_LCR, v.DDL_LCR):
            raise _node_error(
                node,
                f"{var} is a change record and has no attribute {node.name}: call a member "
                f"function, such as {var}.get_object_owner()",
            )
        return
    if kind == v.USER:
        raise _node_error(
            node,
            f"{var} is a user message: read its attributes ({var}.attribute), it has no "
            f"member function {node.name}",
        )
    if kind == v.ROW_LCR and node.name not in v.ROW_LCR_METHODS:
        raise _node_error(
            node,
            f"{node.name} is a member function of DDL change records only; {var} is a row "
            "change record",
        )
    if kind == v.DDL_LCR and node.name not in v.DDL_LCR_METHODS:
        raise _node_error(
            node,
            f"{node.name} is a member function of row change records only; {var} is a DDL "
            "change record",
        )


# --- back to text --------------------------------------------------------------------------------

_PRECEDENCE = {Or: 1, And: 2, Not: 3}


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _name(name: str) -> str:
    if name and name[0] in _IDENT_START and all(c in _IDENT_PART for c in name) and name.isupper():
        return name
    return f'"{name}"'


def _expr_text(e: Expr) -> str:
    match e:
        case Literal(value=None):
            return "NULL"
        case Literal(value=str() as s):
            return _quote(s)
        case Literal(value=n):
            return str(n)
        case Bind(name=name, quoted=q):
            plain = _name(name)
            return f':"{name}"' if q or plain.startswith('"') else f":{name.lower()}"
        case Attr(expr=inner, name=name, quoted=q):
            shown = f'"{name}"' if q else name.lower()
            return f"{_expr_text(inner)}.{shown}"
        case Call(expr=None, name=name, args=args):
            return f"{name}({', '.join(_expr_text(a) for a in args)})"
        case Call(expr=inner, name=name, args=args):
            shown = v.ANYDATA_DISPLAY.get(name, name.lower() if name in v.LCR_METHODS else name)
            return f"{_expr_text(inner)}.{shown}({', '.join(_expr_text(a) for a in args)})"
    raise TypeError(f"not an expression: {e!r}")


def to_text(cond: Condition) -> str:
    """The condition as canonical text; ``parse(to_text(c)) == c`` for every tree ``parse``
    returns."""
    match cond:
        case Compare(op=op, left=a, right=b):
            return f"{_expr_text(a)} {op} {_expr_text(b)}"
        case InList(expr=e, items=items, negated=neg):
            inner = ", ".join(_expr_text(i) for i in items)
            return f"{_expr_text(e)} {'NOT IN' if neg else 'IN'} ({inner})"
        case IsNull(expr=e, negated=neg):
            return f"{_expr_text(e)} IS {'NOT NULL' if neg else 'NULL'}"
        case Like(expr=e, pattern=p, negated=neg, escape=esc):
            out = f"{_expr_text(e)} {'NOT LIKE' if neg else 'LIKE'} {_expr_text(p)}"
            return out if esc is None else f"{out} ESCAPE {_expr_text(esc)}"
        case Exists(cond=c):
            return f"EXISTS (SELECT 1 FROM SYS.DUAL WHERE {to_text(c)})"
        case Not(cond=c):
            return f"NOT {_wrap(c, 3)}"
        case And(items=items):
            return " AND ".join(_wrap(i, 2, nested=True) for i in items)
        case Or(items=items):
            return " OR ".join(_wrap(i, 1, nested=True) for i in items)
    raise TypeError(f"not a condition: {cond!r}")


def _wrap(c: Condition, level: int, *, nested: bool = False) -> str:
    # Parenthesise a child that binds more loosely, and (so the tree keeps its shape) an AND
    # inside an AND or an OR inside an OR.
    own = _PRECEDENCE.get(type(c), 4)
    text = to_text(c)
    if own < level or (nested and own == level) or (level == 3 and own == 3):
        return f"({text})"
    return text
