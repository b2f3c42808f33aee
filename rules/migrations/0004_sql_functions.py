"""SQL helper functions for conditions compiled to PostgreSQL (``rules.lang.compile_sql``).

Each function is the SQL twin of one function of ``rules.lang.values`` and returns NULL wherever
the Python side returns None; none of them ever raises, so one odd message cannot stop a dequeue.
JSON numbers follow the engine's read path: psycopg loads jsonb with ``json.loads``, so a number
written with a fraction becomes a Python float (``Decimal(repr(f))`` in the value domain) while an
integral one stays an exact int.

The one-expression SQL functions are not STRICT, so that the planner inlines them (a STRICT
function whose body is not strict, a CASE, is called instead: three times slower in a dequeue);
they return NULL for NULL all the same.

Case mapping uses the ICU root collation ``und-x-icu``, which maps every code point exactly as
Python's ``str.upper``/``str.lower`` do (checked over the whole code space).
"""

import re
from fractions import Fraction

from django.db import migrations

# Python's str.strip() whitespace, for GET_VALUE column names.
_WHITESPACE = "||".join(f"chr({c})" for c in range(0x110000) if chr(c).isspace())


def _exact(f: Fraction, digits: int) -> str:
    """A Fraction with a terminating decimal expansion as exact numeric text."""
    q, r = divmod(f.numerator * 10**digits, f.denominator)
    assert r == 0
    s = str(q).rjust(digits + 1, "0")
    return f"{s[:-digits]}.{s[-digits:]}" if digits else s


# Magnitudes from which float() overflows to inf (half an ulp above DBL_MAX: ties go to even,
# which is 2**1024) and up to which it underflows to 0.0 (half the smallest subnormal).
FLOAT_INF = str(2**1024 - 2**970)
FLOAT_ZERO = _exact(Fraction(1, 2**1075), 1075)

FUNCTIONS = rf"""
CREATE FUNCTION aq_rule_upper(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN upper(t COLLATE "und-x-icu");

CREATE FUNCTION aq_rule_lower(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN lower(t COLLATE "und-x-icu");

-- values.to_number: Oracle TO_NUMBER, NULL when not a number or outside 1E-130 .. 9.99E125.
CREATE FUNCTION aq_rule_to_number(t text) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    m text[];
    digits text;
    sig text;
    lead int;
    e numeric;
    adj numeric;
BEGIN
    m := regexp_match(t, '^ *([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))? *$');
    IF m IS NULL OR (m[2] = '' AND coalesce(m[3], '') = '') THEN
        RETURN NULL;
    END IF;
    digits := m[2] || coalesce(m[3], '');
    e := coalesce(m[4], '0')::numeric;
    sig := ltrim(digits, '0');
    IF sig = '' THEN
        -- Zero; Python's Decimal still refuses exponents beyond its own limits.
        e := e - length(coalesce(m[3], ''));
        IF e < -1999999999999999997 OR e > 999999999999999999 THEN
            RETURN NULL;
        END IF;
        RETURN 0;
    END IF;
    lead := length(digits) - length(sig);
    adj := e + length(m[2]) - 1 - lead;
    IF adj < -130 OR adj > 125 THEN
        RETURN NULL;
    END IF;
    sig := rtrim(sig, '0');
    IF length(sig) - adj - 1 > 16383 THEN  -- beyond numeric's scale: never raise
        RETURN NULL;
    END IF;
    RETURN (m[1] || '0.' || sig || 'e' || (adj + 1)::text)::numeric;
END $$;

-- values.hex_to_raw: HEXTORAW, an odd number of digits gets a leading zero, '' is NULL.
CREATE FUNCTION aq_rule_hextoraw(t text) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN t ~ '^[0-9A-Fa-f]+$'
            THEN decode(CASE WHEN mod(length(t), 2) = 1 THEN '0' || t ELSE t END, 'hex') END;

-- values.to_date: ISO 8601 date or timestamp, offsets converted to UTC.
CREATE FUNCTION aq_rule_to_date(t text) RETURNS timestamp
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    m text[];
    y int; mo int; d int; h int; mi int; s int; us int;
    off int;
    v timestamp;
BEGIN
    m := regexp_match(t, '^ *([0-9]{{4}})-([0-9]{{2}})-([0-9]{{2}})'
        '(?:[T ]([0-9]{{2}}):([0-9]{{2}})(?::([0-9]{{2}})(?:\.([0-9]{{1,6}}))?)?)?'
        '(Z|[+-][0-9]{{2}}:?[0-9]{{2}})? *$');
    IF m IS NULL THEN
        RETURN NULL;
    END IF;
    y := m[1]::int; mo := m[2]::int; d := m[3]::int;
    h := coalesce(m[4], '0')::int; mi := coalesce(m[5], '0')::int;
    s := coalesce(m[6], '0')::int; us := rpad(coalesce(m[7], '0'), 6, '0')::int;
    IF y < 1 OR mo < 1 OR mo > 12 OR d < 1 OR h > 23 OR mi > 59 OR s > 59 THEN
        RETURN NULL;
    END IF;
    IF d > extract(day FROM make_date(y, mo, 1) + interval '1 month' - interval '1 day') THEN
        RETURN NULL;
    END IF;
    v := make_timestamp(y, mo, d, h, mi, 0) + (s * 1000000 + us) * interval '1 microsecond';
    IF m[8] IS NOT NULL AND m[8] <> 'Z' THEN
        off := substr(m[8], 2, 2)::int * 60 + right(m[8], 2)::int;
        IF off >= 1440 THEN  -- datetime.timezone needs less than a day
            RETURN NULL;
        END IF;
        IF left(m[8], 1) = '-' THEN
            off := -off;
        END IF;
        v := v - off * interval '1 minute';
        -- Python raises OverflowError here; NULL is what it should return.
        IF v < '0001-01-01' OR v >= '10000-01-01' THEN
            RETURN NULL;
        END IF;
    END IF;
    RETURN v;
END $$;

-- values.date_to_text
CREATE FUNCTION aq_rule_date_text(v timestamp) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN v = date_trunc('second', v) THEN to_char(v, 'YYYY-MM-DD HH24:MI:SS')
            ELSE to_char(v, 'YYYY-MM-DD HH24:MI:SS.US') END;

-- values.number_to_text for an exact NUMBER (a literal, TO_NUMBER, a JSON integer).
CREATE FUNCTION aq_rule_num_text(n numeric) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN trim_scale(n)::text;

-- float(text) then repr(): shortest round-trip digits need extra_float_digits > 0.
CREATE FUNCTION aq_rule_float_repr(n numeric) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET extra_float_digits = 1
RETURN n::text::float8::text;

-- A jsonb number as the engine's Python reads it (see the module docstring).
CREATE FUNCTION aq_rule_json_number(j jsonb) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    n numeric;
    a numeric;
BEGIN
    IF jsonb_typeof(j) <> 'number' THEN
        RETURN NULL;
    END IF;
    n := j::numeric;
    IF scale(n) = 0 THEN
        RETURN n;
    END IF;
    a := abs(n);
    IF a >= {FLOAT_INF} THEN
        RETURN NULL;
    END IF;
    IF a <= {FLOAT_ZERO} THEN
        RETURN 0;
    END IF;
    RETURN aq_rule_float_repr(n)::numeric;
END $$;

-- values.to_text of a jsonb value: strings, 'true'/'false', numbers as number_to_text prints
-- them (an out-of-range float-born Decimal in scientific notation).
CREATE FUNCTION aq_rule_json_text(j jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    n numeric;
    a numeric;
    f text;
    x numeric;
BEGIN
    CASE jsonb_typeof(j)
        WHEN 'string', 'boolean' THEN
            RETURN j #>> '{{}}';
        WHEN 'number' THEN
            n := j::numeric;
            IF scale(n) = 0 THEN
                RETURN n::text;
            END IF;
            a := abs(n);
            IF a >= {FLOAT_INF} THEN
                RETURN NULL;
            END IF;
            IF a <= {FLOAT_ZERO} THEN
                RETURN '0';
            END IF;
            f := aq_rule_float_repr(n);
            x := abs(f::numeric);
            IF x >= 1e-130 AND x < 1e126 THEN
                RETURN trim_scale(f::numeric)::text;
            END IF;
            RETURN replace(f, 'e', 'E');
        ELSE
            RETURN NULL;
    END CASE;
END $$;

-- A jsonb value as NUMBER where Oracle converts implicitly (and AccessNumber).
CREATE FUNCTION aq_rule_json_to_number(j jsonb) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE jsonb_typeof(j) WHEN 'number' THEN aq_rule_json_number(j)
                            WHEN 'string' THEN aq_rule_to_number(j #>> '{{}}') END;

-- The text of AccessNumber() of a jsonb value.
CREATE FUNCTION aq_rule_json_number_text(j jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE jsonb_typeof(j) WHEN 'number' THEN aq_rule_json_text(j)
                            WHEN 'string' THEN trim_scale(aq_rule_to_number(j #>> '{{}}'))::text END;

-- A jsonb value that is SQL NULL in the engine (JSON null, a number that overflows a float).
CREATE FUNCTION aq_rule_json_is_null(j jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN j IS NULL OR jsonb_typeof(j) = 'null'
       OR (jsonb_typeof(j) = 'number' AND aq_rule_json_number(j) IS NULL);

-- values.Struct.attrs: an unquoted attribute name matches keys case-insensitively; the key
-- already in upper case wins, else the first key in the order psycopg reads them back, which
-- is jsonb's own order (shorter keys first, then bytewise).
CREATE FUNCTION aq_rule_attr(p jsonb, name text) RETURNS jsonb
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT CASE WHEN jsonb_typeof(p) = 'object' THEN coalesce(p -> name, (
    SELECT e.value FROM jsonb_each(p) e
    WHERE upper(e.key COLLATE "und-x-icu") = name
    ORDER BY octet_length(e.key), e.key COLLATE "C" LIMIT 1)) END
$$;

-- The tag of an LCR payload (hex text) as RAW; '' and NULL are NULL.
CREATE FUNCTION aq_rule_tag(p jsonb) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN p ->> 'tag' ~ '^([0-9A-Fa-f]{{2}})+$' THEN decode(p ->> 'tag', 'hex') END;

-- values.column_name: '"Col"' names a column exactly, 'col' upper-cased.
CREATE FUNCTION aq_rule_column_name(t text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    s text := btrim(t, {_WHITESPACE});
BEGIN
    IF length(s) >= 2 AND left(s, 1) = '"' AND right(s, 1) = '"'
       AND strpos(substr(s, 2, length(s) - 2), '"') = 0 THEN
        RETURN substr(s, 2, length(s) - 2);
    END IF;
    IF strpos(s, '"') > 0 OR s = '' THEN
        RETURN NULL;
    END IF;
    RETURN aq_rule_upper(s);
END $$;

-- values.get_value with arguments known only at run time: the carried jsonb value (JSON null
-- when the column is carried as NULL) or SQL NULL when the LCR does not carry the column.
CREATE FUNCTION aq_rule_get_value(p jsonb, value_type text, col text, use_old text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    c text := aq_rule_column_name(col);
    vt text := aq_rule_upper(value_type);
    uo text := aq_rule_upper(use_old);
BEGIN
    IF c IS NULL OR uo NOT IN ('Y', 'N') THEN
        RETURN NULL;
    END IF;
    IF vt = 'NEW' THEN
        IF jsonb_typeof(p -> 'new_values') = 'object' AND (p -> 'new_values') ? c THEN
            RETURN p -> 'new_values' -> c;
        END IF;
        IF uo = 'N' THEN
            RETURN NULL;
        END IF;
    ELSIF vt <> 'OLD' THEN
        RETURN NULL;
    END IF;
    RETURN p -> 'old_values' -> c;
END $$;

-- LIKE with an escape character known only at run time: NULL (Oracle raises) unless it is one
-- character and every occurrence in the pattern is followed by %, _ or itself.
CREATE FUNCTION aq_rule_like_escape(t text, p text, e text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE
    WHEN char_length(e) <> 1 THEN NULL
    WHEN strpos(replace(replace(replace(p, e || e, ''), e || '%', ''), e || '_', ''), e) > 0
        THEN NULL
    ELSE t LIKE p ESCAPE e END;

-- Comparisons of a jsonb value (a message attribute, a carried column value) with a value of a
-- known family: the sign of the comparison (-1, 0, 1) or NULL, with Oracle's implicit
-- conversion (values.coerce). JSON true/false are the strings 'true'/'false'.
CREATE FUNCTION aq_rule_cmp_json_text(j jsonb, s text, sn numeric) RETURNS int
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    t text;
    n numeric;
BEGIN
    IF j IS NULL OR s IS NULL THEN
        RETURN NULL;
    END IF;
    CASE jsonb_typeof(j)
        WHEN 'string', 'boolean' THEN
            t := j #>> '{{}}';
            RETURN CASE WHEN t = s THEN 0 WHEN t COLLATE "C" < s COLLATE "C" THEN -1 ELSE 1 END;
        WHEN 'number' THEN
            n := aq_rule_json_number(j);
            RETURN CASE WHEN n = sn THEN 0 WHEN n < sn THEN -1 WHEN n > sn THEN 1 END;
        ELSE
            RETURN NULL;
    END CASE;
END $$;

CREATE FUNCTION aq_rule_cmp_json_num(j jsonb, x numeric) RETURNS int
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    n numeric := aq_rule_json_to_number(j);
BEGIN
    RETURN CASE WHEN n = x THEN 0 WHEN n < x THEN -1 WHEN n > x THEN 1 END;
END $$;

CREATE FUNCTION aq_rule_cmp_json_raw(j jsonb, x bytea) RETURNS int
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    r bytea;
BEGIN
    IF jsonb_typeof(j) <> 'string' THEN
        RETURN NULL;
    END IF;
    r := aq_rule_hextoraw(j #>> '{{}}');
    RETURN CASE WHEN r = x THEN 0 WHEN r < x THEN -1 WHEN r > x THEN 1 END;
END $$;

CREATE FUNCTION aq_rule_cmp_json_date(j jsonb, x timestamp) RETURNS int
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    d timestamp;
BEGIN
    IF jsonb_typeof(j) <> 'string' THEN
        RETURN NULL;
    END IF;
    d := aq_rule_to_date(j #>> '{{}}');
    RETURN CASE WHEN d = x THEN 0 WHEN d < x THEN -1 WHEN d > x THEN 1 END;
END $$;

CREATE FUNCTION aq_rule_cmp_json_json(a jsonb, b jsonb) RETURNS int
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    ta text := jsonb_typeof(a);
    tb text := jsonb_typeof(b);
    x numeric;
    y numeric;
BEGIN
    IF ta IN ('string', 'boolean') AND tb IN ('string', 'boolean') THEN
        RETURN aq_rule_cmp_json_text(a, b #>> '{{}}', NULL);
    END IF;
    IF ta IN ('string', 'boolean', 'number') AND tb IN ('string', 'boolean', 'number') THEN
        x := aq_rule_json_to_number(a);
        y := aq_rule_json_to_number(b);
        RETURN CASE WHEN x = y THEN 0 WHEN x < y THEN -1 WHEN x > y THEN 1 END;
    END IF;
    RETURN NULL;
END $$;
"""

FUNCTION_SIGNATURES = (
    "aq_rule_cmp_json_json(jsonb, jsonb)",
    "aq_rule_cmp_json_date(jsonb, timestamp)",
    "aq_rule_cmp_json_raw(jsonb, bytea)",
    "aq_rule_cmp_json_num(jsonb, numeric)",
    "aq_rule_cmp_json_text(jsonb, text, numeric)",
    "aq_rule_like_escape(text, text, text)",
    "aq_rule_get_value(jsonb, text, text, text)",
    "aq_rule_column_name(text)",
    "aq_rule_tag(jsonb)",
    "aq_rule_attr(jsonb, text)",
    "aq_rule_json_is_null(jsonb)",
    "aq_rule_json_number_text(jsonb)",
    "aq_rule_json_to_number(jsonb)",
    "aq_rule_json_text(jsonb)",
    "aq_rule_json_number(jsonb)",
    "aq_rule_float_repr(numeric)",
    "aq_rule_num_text(numeric)",
    "aq_rule_date_text(timestamp)",
    "aq_rule_to_date(text)",
    "aq_rule_hextoraw(text)",
    "aq_rule_to_number(text)",
    "aq_rule_lower(text)",
    "aq_rule_upper(text)",
)
# One statement per function, each with the comment above it: no SQL splitting on our side.
STATEMENTS = re.split(r"\n\n(?=(?:--[^\n]*\n)*CREATE FUNCTION)", FUNCTIONS.strip())
DROP = [f"DROP FUNCTION IF EXISTS {sig}" for sig in FUNCTION_SIGNATURES]


def create_functions(apps, schema_editor) -> None:
    """Create the functions, with ICU case mapping where the server has ICU. A PostgreSQL built
    without it (the embedded pgserver wheel) falls back to the database's default collation,
    which maps ASCII exactly as Python does but may leave other letters unchanged: UPPER/LOWER of
    non-ASCII text can then differ from the Python evaluator (docs/RULES_LANGUAGE.md)."""
    with schema_editor.connection.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu'")
        has_icu = cur.fetchone() is not None
        for statement in STATEMENTS:
            if not has_icu:
                statement = statement.replace(' COLLATE "und-x-icu"', "")
            cur.execute(statement)


def drop_functions(apps, schema_editor) -> None:
    with schema_editor.connection.cursor() as cur:
        for statement in DROP:
            cur.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("rules", "0003_status_view_models")]

    operations = [migrations.RunPython(create_functions, drop_functions)]
