"""``$filter``: malformed input, unreachable fields, type errors, injection attempts and caps."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite

from labapp.db import db
from labapp.errors import InvalidInput
from labapp.model import Entity, Sample, User
from labapp.model.registry import find_class
from labapp.query.filter import (
    MAX_DEPTH,
    MAX_FILTER_LENGTH,
    MAX_VALUES,
    FilterError,
    compile_filter,
    entity_fields,
    parse_filter,
)
from tests.query.conftest import ALL, matching

pytestmark = pytest.mark.usefixtures("rows")


def error_of(text: str, model: type[Entity] = Sample, user_id: str | None = "alice") -> str:
    with pytest.raises(FilterError) as caught:
        matching(text, model, user_id)
    return caught.value.detail


@pytest.mark.parametrize(("text", "detail"), [
    ("name eq", "Unexpected end of filter at position 7"),
    ("name eq 'x' and", "Unexpected end of filter at position 15"),
    ("(name eq 'x'", "Unexpected end of filter at position 12"),
    ("name foo 'x'", "Unexpected token 'foo' at position 5"),
    ("name eq 'x')", "Unexpected token ')' at position 11"),
    ("name eq eq 'x'", "Unexpected token 'eq' at position 8"),
    ("eq 'x'", "Unexpected token 'eq' at position 0"),
    ("name eq 'x' name eq 'y'", "Unexpected token 'name' at position 12"),
    ("name in ()", "Unexpected token ')' at position 9"),
    ("name in 'a'", "Unexpected token ''a'' at position 8"),
    ("contains(name)", "Unexpected token ')' at position 13"),
    ("name template 1", "Unexpected token '1' at position 14"),
    ("name eq 'O'Brien'", "Unexpected token 'Brien' at position 11"),
    ("name eq 'abc", "Unterminated string at position 8"),
    ("name eq #", "Unexpected character '#' at position 8"),
    ("name == 'x'", "Unexpected character '=' at position 5"),
    ("name eq 'x' && amount eq 1", "Unexpected character '&' at position 12"),
    ("name", "Expected an operator after 'name' at position 4"),
    ("nmae eq 'x'", "Unknown field 'nmae' at position 0"),
    ("name eq 'x' and nmae eq 'y'", "Unknown field 'nmae' at position 16"),
    ("contains(nmae, 'x')", "Unknown field 'nmae' at position 9"),
    ("startDate eq 2026-01-01", "Unknown field 'startDate' at position 0"),
    ("parent/name eq 'x'", "Unknown field 'parent' at position 0"),
    ("parentID/name eq 'x'",
     "Navigation 'parentID/name' is not supported; only attributes.<key> is at position 0"),
    ("experimentID.name eq 'x'",
     "Navigation 'experimentID.name' is not supported; only attributes.<key> is at position 0"),
    ("attributes.x.y eq 1", "Invalid attribute key 'x.y' at position 0"),
    ("attributes/x/y eq 1", "Invalid attribute key 'x/y' at position 0"),
    ("attributes eq 'x'", "Field 'attributes' holds JSON and cannot be compared; filter on one "
                          "key, as in attributes.<key> at position 0"),
    ("attributes isnull", "Field 'attributes' holds JSON and cannot be compared; filter on one "
                          "key, as in attributes.<key> at position 0"),
    ("name eq 1", "Cannot compare str field 'name' with number 1 at position 8"),
    ("name eq true", "Cannot compare str field 'name' with bool true at position 8"),
    ("name eq 2026-01-01", "Cannot compare str field 'name' with date 2026-01-01 at position 8"),
    ("name eq 'x' and amount gt 'y'",
     "Cannot compare float field 'amount' with string 'y' at position 26"),
    ("amount eq true", "Cannot compare float field 'amount' with bool true at position 10"),
    ("version eq '1'", "Cannot compare int field 'version' with string '1' at position 11"),
    ("amount in (1, 'x')", "Cannot compare float field 'amount' with string 'x' at position 14"),
    ("createdUtc eq 5", "Cannot compare datetime field 'createdUtc' with number 5 at position 14"),
    ("dateTaken eq 2026-01-31T10:00:00Z", "Cannot compare date field 'dateTaken' with datetime "
                                          "2026-01-31T10:00:00Z at position 13"),
    ("dateTaken eq '2026-01-31T10:00:00Z'", "Cannot compare date field 'dateTaken' with "
                                            "string '2026-01-31T10:00:00Z' at position 13"),
    ("dateTaken eq 2026-02-30", "Invalid date '2026-02-30' at position 13"),
    ("dateTaken eq '2026-02-30'", "Invalid date or datetime '2026-02-30' at position 13"),
    ("dateTaken gt 'soon'", "Invalid date or datetime 'soon' at position 13"),
    ("createdUtc eq 2026-01-31T25:00:00Z", "Invalid datetime '2026-01-31T25:00:00Z' at "
                                           "position 14"),
    ("createdUtc eq 0001-01-01T00:00:00+01:00", "Invalid datetime '0001-01-01T00:00:00+01:00' "
                                                "at position 14"),
    ("version eq 99999999999999999999", "Number '99999999999999999999' is out of range at "
                                        "position 11"),
    ("amount eq 1e999", "Number '1e999' is out of range at position 10"),
    ("amount gt null", "null can only be compared with eq or ne, not 'gt' at position 7"),
    ("attributes.flag lt true", "Booleans can only be compared with eq or ne, not 'lt' at "
                                "position 16"),
    ("contains(amount, '1')", "contains() needs a text field; 'amount' is float at position 9"),
    ("startswith(dateTaken, '2026')", "startswith() needs a text field; 'dateTaken' is date at "
                                      "position 11"),
    ("contains(name, 1)", "contains() needs a quoted string, not 1 at position 15"),
    ("endswith(name, null)", "endswith() needs a quoted string, not null at position 15"),
    ("tolower(amount) eq 'x'", "tolower() needs a text field; 'amount' is float at position 8"),
    ("contains(name, 'a') eq 1", "contains() can only be compared with eq/ne true/false at "
                                 "position 20"),
    ("contains(name, 'a') gt true", "contains() can only be compared with eq/ne true/false at "
                                    "position 20"),
    ("createdBy template '!you'", "Unknown template '!you' at position 19"),
])
def test_errors_name_the_token_and_position(text: str, detail: str) -> None:
    assert error_of(text) == detail


@pytest.mark.parametrize(("text", "detail"), [
    ("isActive gt true", "Booleans can only be compared with eq or ne, not 'gt' at position 9"),
    ("isActive eq 1", "Cannot compare bool field 'isActive' with number 1 at position 12"),
    ("isActive eq 'yes'", "Cannot compare bool field 'isActive' with string 'yes' at position 12"),
    ("roles eq 'ADMIN'", "Unknown field 'roles' at position 0"),
    ("passwordHash eq 'x'", "Unknown field 'passwordHash' at position 0"),
    ("password_hash ne null", "Unknown field 'password_hash' at position 0"),
    ("settings isnotnull", "Unknown field 'settings' at position 0"),
])
def test_hidden_and_json_user_fields_are_unreachable(text: str, detail: str) -> None:
    assert error_of(text, User) == detail


def test_template_needs_a_user() -> None:
    assert error_of("createdBy template '!me'", user_id=None) == (
        "Template '!me' needs a signed-in user at position 19")


def test_error_shape() -> None:
    with pytest.raises(FilterError) as caught:
        parse_filter("name foo 'x'")
    error = caught.value
    assert isinstance(error, InvalidInput)
    assert (error.status, error.code, error.position) == (400, "invalid_filter", 5)
    assert error.errors == [{"field": "$filter",
                             "message": "Unexpected token 'foo' at position 5"}]


def _sample_count() -> int:
    return db.session.scalar(select(func.count()).select_from(Sample)
                             .where(func.lower(Sample.id).startswith("tq")))


@pytest.mark.parametrize("text", [
    "name eq 'x'' or 1=1 --'",
    "name eq 'x'' or ''1''=''1'",
    "name eq 'Robert''); DROP TABLE entity;--'",
    "contains(name, ''' or ''1''=''1')",
    "startswith(name, '%')",
    "endswith(name, '_')",
    "attributes.x--y eq 1",
    "attributes.drop_table eq 'x'' or 1=1'",
    "name in ('x'' or 1=1 --', 'y')",
])
def test_injection_attempts_are_bound_values(text: str) -> None:
    assert matching(text) == set()
    assert _sample_count() == len(ALL)


@pytest.mark.parametrize(("text", "detail"), [
    ("name eq 'x'; drop table entity", "Unexpected character ';' at position 11"),
    ("name; drop eq 1", "Unexpected character ';' at position 4"),
    ("attributes.a'b eq 1", "Unterminated string at position 12"),
    ("attributes.a\"b eq 1", "Unexpected character '\"' at position 12"),
    ("name eq 'x' /* c */", "Unexpected character '/' at position 12"),
    ("name eq 'x' -- c", "Unexpected character '-' at position 12"),
    ("1 eq 1", "Unexpected token '1' at position 0"),
    ("(select 1) eq 1", "Unexpected token '1' at position 8"),
    ("(select eq 1)", "Unknown field 'select' at position 1"),
])
def test_injection_attempts_are_rejected(text: str, detail: str) -> None:
    assert error_of(text) == detail
    assert _sample_count() == len(ALL)


@pytest.mark.parametrize("dialect", [sqlite.dialect(), postgresql.psycopg.dialect()])
def test_no_filter_text_reaches_the_sql(dialect) -> None:
    source = entity_fields(find_class("Sample"), dialect.name)
    condition = compile_filter("name eq 'x'' or 1=1 --' or attributes.evil_key eq 'DROP' or "
                               "contains(description, 'UNION') or createdBy template '!me'",
                               source, user_id="mallory")
    sql = str(select(Sample.id).where(condition).compile(dialect=dialect))
    for fragment in ("1=1", "evil_key", "DROP", "UNION", "mallory", "--"):
        assert fragment not in sql


def test_nesting_is_capped() -> None:
    deep = "(" * MAX_DEPTH + "name eq 'Alpha'" + ")" * MAX_DEPTH
    assert matching(deep) == {"TQ1"}
    too_deep = "(" * (MAX_DEPTH + 1) + "name eq 'Alpha'" + ")" * (MAX_DEPTH + 1)
    assert error_of(too_deep) == (
        f"Filter is nested more than {MAX_DEPTH} levels deep at position 32")
    assert matching("not " * MAX_DEPTH + "name eq 'Alpha'") == {"TQ1"}
    assert error_of("not " * (MAX_DEPTH + 1) + "name eq 'Alpha'") == (
        f"Filter is nested more than {MAX_DEPTH} levels deep at position 128")
    functions = "tolower(" * (MAX_DEPTH + 1) + "name" + ")" * (MAX_DEPTH + 1) + " eq 'x'"
    assert error_of(functions) == (
        f"Filter is nested more than {MAX_DEPTH} levels deep at position 256")


def test_very_deep_input_is_an_error_not_a_crash() -> None:
    count = 5000
    assert error_of("(" * count + "name eq 'x'" + ")" * count).startswith(
        "Filter is nested more than")
    assert error_of("not " * count + "name eq 'x'").startswith("Filter is nested more than")


def test_length_is_capped() -> None:
    filler = "name eq '" + "x" * (MAX_FILTER_LENGTH - 10) + "'"
    assert len(filler) == MAX_FILTER_LENGTH
    assert matching(filler) == set()
    assert error_of(filler + " ") == (
        f"Filter is longer than {MAX_FILTER_LENGTH} characters at position {MAX_FILTER_LENGTH}")


def test_values_are_capped() -> None:
    values = ",".join(["1"] * MAX_VALUES)
    assert matching(f"amount in ({values})") == set()
    assert error_of(f"amount in ({values},2)") == (
        f"Filter has more than {MAX_VALUES} values at position {11 + 2 * MAX_VALUES}")
    assert error_of(f"amount in ({values}) or name eq 'x'").startswith(
        f"Filter has more than {MAX_VALUES} values at position")


def test_large_integers_compare_without_overflow() -> None:
    assert matching("version eq 3000000000") == set()
    assert matching("version lt 9223372036854775807") == ALL
    assert matching("amount lt 9223372036854775807") == ALL - {"TQ4"}


def test_parsed_trees_are_cached() -> None:
    assert parse_filter("name eq 'Alpha'") is parse_filter("name eq 'Alpha'")
    long = " or ".join(f"name eq 'n{number}'" for number in range(500))
    assert parse_filter(long) == parse_filter(long)
    assert matching("name eq 'Alpha'") == matching("name eq 'Alpha'") == {"TQ1"}
