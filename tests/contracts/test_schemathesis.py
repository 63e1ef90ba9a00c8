"""No input makes the API answer 5xx, and every answer matches the OpenAPI document.

schemathesis reads ``/api/openapi.json`` from the application in-process and fuzzes every
operation in it, as the administrator and as an ordinary member, with valid and invalid
inputs (its coverage and fuzzing phases), running all of its checks on every response. A
route added later joins the test through the document, with nothing to write here.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.config import SchemathesisConfig

from tests.contracts.fuzz_lab import MEMBER, FuzzLab, fuzz_lab

# Generated examples per operation and caller in the fuzzing phase, on top of the coverage
# phase's cases (boundaries, wrong types, missing parts derived from the document). Chosen
# so that a pass stays under two minutes on two busy cores.
EXAMPLES = 20

CONFIG = {
    "checks": {
        # A schema-valid request may still be refused with 400 for what JSON Schema cannot
        # say: class and field names, $filter grammar, NUL characters, the current password.
        "positive_data_acceptance": {
            "expected-statuses": ["2xx", "400", "401", "403", "404", "409"]},
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


@pytest.fixture(scope="module", params=["admin", MEMBER])
def api_schema(request: pytest.FixtureRequest, lab: FuzzLab) -> Any:
    """The document as schemathesis loads it, calling as the parameter's user.

    Non-public operations carry the user's PAT; should the fuzzer end it (a 401), a new one
    is made and the request replayed. Public operations are called anonymously.
    """
    username = request.param
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", lab.app,
                                            config=SchemathesisConfig.from_dict(CONFIG))

    @schema.auth(refresh_interval=3600).skip_for(_is_public)
    class Caller:
        def get(self, case: Any, context: Any) -> str:
            return lab.new_pat(username)[0]

        def set(self, case: Any, data: str, context: Any) -> None:
            case.headers = {**(case.headers or {}), "Authorization": data}

    schema.hook(_known_path_values(lab.known))
    return schema


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_api(case: Any) -> None:
    case.call_and_validate()
