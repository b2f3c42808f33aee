"""``to_text`` prints a tree as canonical text that parses back to the same tree: for generated
trees and for the seed's conditions (positions aside)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from rules.lang import parse, to_text
from tests.rules import lang_seed
from tests.rules.lang_strategies import conditions

SEED = lang_seed.ALL_CONDITIONS


@settings(max_examples=300, deadline=None)
@given(conditions)
def test_a_generated_tree_survives_printing_and_parsing(cond) -> None:
    assert parse(to_text(cond)) == cond


@pytest.mark.parametrize("name", sorted(SEED))
def test_a_seed_condition_survives_printing_and_parsing(name) -> None:
    cond = parse(SEED[name])
    text = to_text(cond)
    assert parse(text) == cond
    assert to_text(parse(text)) == text


def test_the_printed_form_is_readable() -> None:
    cond = parse(lang_seed.G10)
    assert to_text(cond) == (
        "((:dml.get_object_owner() = 'HR' AND :dml.get_object_name() = 'DEPARTMENTS') AND "
        ":dml.get_source_database_name() = 'DBS1.EXAMPLE.COM') AND "
        ":dml.get_tag() = HEXTORAW('02')"
    )
    assert to_text(parse(lang_seed.G15)) == (
        ":\"VAR$_52\".region = 'EUROPE' AND :\"VAR$_52\".priority = '1'"
    )
