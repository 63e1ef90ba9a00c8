"""No input makes the API answer 5xx, every answer matches the OpenAPI document, and no
operation refuses most of the requests generated from its own schema (:class:`Rejections`).

schemathesis reads ``/api/openapi.json`` from the application in-process and fuzzes every
operation in it, as the administrator (both passes) with valid and invalid inputs (its
coverage and fuzzing phases) and as an ordinary member (the SQLite pass, fuzzing phase),
running all of its checks on every response. A
route added later joins the test through the document, with nothing to write here.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.config import SchemathesisConfig

from tests.contracts.fuzz_lab import MEMBER, FuzzLab, fuzz_lab
from tests.databases import BACKEND

# Generated examples per operation and caller in the fuzzing phase, on top of the coverage
# phase's cases (boundaries, wrong types, missing parts derived from the document), which
# are most of the requests. Chosen so that a pass stays near a minute on two busy cores.
EXAMPLES = 10

CONFIG = {
    "checks": {
        # A schema-valid request may still be refused with 400 for what JSON Schema cannot
        # say: class and field names, $filter grammar, NUL characters, the current password;
        # 410 for a change feed cursor the log does not serve (a generated number).
        "positive_data_acceptance": {
            "expected-statuses": ["2xx", "400", "401", "403", "404", "409", "410"]},
    },
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzLab]:
    yield from fuzz_lab(tmp_path_factory.mktemp("fuzz"))


def _is_public(context: Any) -> bool:
    return {} in context.operation.definition.raw.get("security", [])


def _known_path_values(known: dict[str, list[str]]) -> Any:
    """A hook: each path parameter with real values takes one of them now and then."""
    def flatmap_path_parameters(context: Any, parameters: dict[str, Any] | None) -> Any:
        if not parameters:
            return st.just(parameters)
        return st.fixed_dictionaries({
            name: st.one_of(st.just(value), st.sampled_from(known[name]))
            if name in known else st.just(value)
            for name, value in parameters.items()})
    return flatmap_path_parameters


# The longest array of items a generated request that should be accepted may carry. The
# coverage phase also sends the documented maximum (10,000 locations or check-ins): each
# such request took seconds, and the entities it left made every later export slower.
# Refusing one item more is still sent (it costs nothing), and tests/storage and
# tests/entities post full batches of their own.
LONGEST_ACCEPTED_ARRAY = 1_000


def _items(body: Any) -> int:
    """The number of items of the request's batch: the body itself or its ``entities``."""
    if isinstance(body, dict):
        body = body.get("entities")
    return len(body) if isinstance(body, list) else 0


def filter_case(context: Any, case: Any) -> bool:
    """A hook: leaves out the accepted-looking requests with more than
    :data:`LONGEST_ACCEPTED_ARRAY` items."""
    negative = case.meta is not None and case.meta.generation.mode.is_negative
    return negative or _items(case.body) <= LONGEST_ACCEPTED_ARRAY


# Callers: the administrator reaches every operation; the member adds what access refuses,
# which the database does not change (the visibility matrix runs on both), so the member
# fuzzes in the SQLite pass only and the PostgreSQL pass keeps to what its types refuse.
CALLERS = ["admin", MEMBER] if BACKEND == "sqlite" else ["admin"]

# What access refuses does not hang on a value's boundaries: the member skips the coverage
# phase (6,755 cases as the administrator, five of every six requests sent, most of them
# refused for their form before access is asked) and keeps the generated examples.
CALLER_PHASES: dict[str, dict[str, Any]] = {MEMBER: {"coverage": {"enabled": False}}}


@pytest.fixture(scope="module", params=CALLERS)
def api_schema(request: pytest.FixtureRequest, lab: FuzzLab) -> Any:
    """The document as schemathesis loads it, calling as the parameter's user.

    Non-public operations carry the user's PAT; should the fuzzer end it (a 401), a new one
    is made and the request replayed. Public operations are called anonymously.
    """
    username = request.param
    config = {**CONFIG, "phases": CALLER_PHASES.get(username, {})}
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", lab.app,
                                            config=SchemathesisConfig.from_dict(config))

    @schema.auth(refresh_interval=3600).skip_for(_is_public)
    class Caller:
        def get(self, case: Any, context: Any) -> str:
            return lab.new_pat(username)[0]

        def set(self, case: Any, data: str, context: Any) -> None:
            case.headers = {**(case.headers or {}), "Authorization": data}

    schema.hook(_known_path_values(lab.known))
    schema.hook(filter_case)
    return schema


schema = schemathesis.pytest.from_fixture("api_schema")


class Rejections:
    """Per operation: the schema-conforming requests sent and those refused as invalid.

    A document looser than the server's checks makes generated clients send what the server
    refuses; an operation refusing more than half of what its own schema generates fails.
    """

    def __init__(self) -> None:
        self.sent: Counter[str] = Counter()
        self.refused: dict[str, list[str]] = {}

    def count(self, case: Any, response: Any) -> None:
        """Count one answered case when all of its parts were generated from the schema."""
        meta = case.meta
        if meta is None or not meta.generation.mode.is_positive or any(
                component.mode.is_negative for component in meta.components.values()):
            return
        # NUL is refused in every string, as the document's description says.
        if "\\u0000" in json.dumps([case.path_parameters, case.query, case.body],
                                    default=str):
            return
        label = case.operation.label
        self.sent[label] += 1
        if response.status_code in _INVALID and not _about_data(response):
            self.refused.setdefault(label, []).append(
                f"{response.status_code} {response.text[:300]}")

    def failures(self) -> list[str]:
        """The operations that refused most of their schema-conforming requests."""
        return [f"{label}: {len(refused)} of {self.sent[label]} refused, e.g. {refused[:2]}"
                for label, refused in sorted(self.refused.items())
                if len(refused) * 2 > self.sent[label] and label not in NOT_YET_DESCRIBED]


# Operations whose document does not yet say all that the server checks, and what it lacks.
# Each one is work to do; none may be added to pass the test.
NOT_YET_DESCRIBED = {
    "POST /api/query/dataset": "the field names and value types a query may use depend on "
                               "its class or view",
}


# Answers that refuse a request as malformed. 404 (an unknown id in the path or body) and
# 409 (a conflict with what is stored) are answers about the data, not about its form.
_INVALID = frozenset({400, 422})
# 400s about the data rather than its form, which no JSON Schema can state: a reference to
# something that does not exist ("unknown Sample 'x'", "unknown entity 'x'", a dashboard
# share's "unknown 'x'"), a current password that is not the caller's, a repetition that
# differs from the new password.
_ABOUT_DATA = re.compile(r"^(?:unknown (?:entity |[A-Z]\w* )?'|is not correct$|does not match$)")


# Problem codes of 400s no JSON Schema can state: a field the class does not have (which
# fields a class has is the data model's, and extension files change it), and a $filter
# that does not parse (its grammar, decisions §7, is beyond a schema's pattern); of an
# import (issue 22): a class the model lacks, a file that is no readable table, a mapping
# naming columns the file lacks; a $skiptoken no page of that class and order gave (issue
# 24: a token is a position, which a pattern cannot tell from any other base64url text).
_DATA_CODES = frozenset({"unknown_field", "invalid_filter", "unknown_class",
                         "import_rejected", "invalid_mapping", "invalid_skiptoken"})


def _about_data(response: Any) -> bool:
    """Whether a 400 refuses the data sent rather than its form (every error says so)."""
    try:
        problem = response.json()
    except ValueError:
        return False
    if isinstance(problem, dict) and problem.get("code") in _DATA_CODES:
        return True
    errors = problem.get("errors") if isinstance(problem, dict) else None
    return bool(errors) and all(_ABOUT_DATA.match(str(error.get("message", "")))
                                for error in errors)


@pytest.fixture
def rejections() -> Iterator[Rejections]:
    """Counts the refusals of every operation the test calls; checks them all at the end
    (schemathesis runs each operation as a subtest of one test)."""
    counted = Rejections()
    yield counted
    failures = counted.failures()
    assert not failures, "generated from the document, refused as invalid:\n" + "\n".join(
        failures)


@pytest.mark.long
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_api(case: Any, rejections: Rejections) -> None:
    response = case.call_and_validate()
    rejections.count(case, response)
