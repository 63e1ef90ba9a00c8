"""``GET /api/query/unique/field/{eClass}/{field}/{value}``: the one read that counts rows the
caller cannot see (decisions §5), answering only ``{unique: boolean}``."""
from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest

from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import body_of, save


@pytest.fixture
def alice(admin: ApiClient, department: Callable[..., str],
          member: Callable[..., ApiClient]) -> ApiClient:
    """A member of DEP00001; the sample ``UQ-AWAY`` of another department is hidden from her."""
    away = department("Away")
    save(admin,
         {"eClass": "Sample", "id": "UQ-1", "name": "Culture A", "barcode": "BC-1",
          "well": "A01", "amount": 2},
         {"eClass": "Sample", "id": "rack 1/UQ 2", "name": "50% a_b"},
         {"eClass": "Experiment", "id": "UQ-EXP", "name": "Shared name"},
         {"eClass": "Sample", "id": "UQ-AWAY", "name": "Secret name", "barcode": "BC-SECRET",
          "departmentID": away})
    return member("alice")


def unique(api: ApiClient, path: str) -> bool:
    body = body_of(api.get(f"/api/query/unique/field/{path}"), 200)
    assert set(body) == {"unique"}
    return body["unique"]


@pytest.mark.parametrize(("path", "expected"), [
    ("Sample/name/Culture A", False),
    ("Sample/name/culture a", True),
    ("Sample/name/Culture", True),
    ("sample/NAME/Culture A", False),
    ("Sample/name/Shared name", True),
    ("Experiment/name/Shared name", False),
    ("Sample/well/A01", False),
    ("Sample/well/A02", True),
    ("Sample/status/Initial", False),
])
def test_a_value_is_unique_when_no_entity_of_the_class_holds_it(
        alice: ApiClient, path: str, expected: bool) -> None:
    assert unique(alice, path) is expected


@pytest.mark.parametrize(("path", "expected"), [
    ("Experiment/id/UQ-1", False),
    ("Plate/barcode/BC-1", False),
    ("Plate/barcode/BC-2", True),
    ("User/id/admin", False),
    ("Sample/id/UQ-NEW", True),
])
def test_ids_and_barcodes_are_unique_across_all_classes(alice: ApiClient, path: str,
                                                        expected: bool) -> None:
    assert unique(alice, path) is expected


@pytest.mark.parametrize("path", ["Sample/name/Secret name", "Sample/id/UQ-AWAY",
                                  "Location/barcode/BC-SECRET"])
def test_values_of_invisible_entities_are_taken_too(alice: ApiClient, path: str) -> None:
    """The database refuses a duplicate whoever holds the value, so the check says so, and
    nothing more: the body is the same as for a visible holder."""
    assert unique(alice, path) is False
    assert_problem(alice.get("/api/entity/Sample/UQ-AWAY"), 404, "not_found")


@pytest.mark.parametrize(("value", "expected"), [
    ("rack 1/UQ 2", False), ("rack 1/UQ", True), ("rack 1%", True),
])
def test_ids_with_slashes_and_spaces(alice: ApiClient, value: str, expected: bool) -> None:
    assert unique(alice, "Sample/id/" + quote(value)) is expected
    assert unique(alice, "Sample/id/" + quote(value, safe="")) is expected


@pytest.mark.parametrize(("value", "expected"), [
    ("50% a_b", False), ("50% axb", True), ("50%", True), ("5_% a_b", True),
])
def test_wildcards_are_literal(alice: ApiClient, value: str, expected: bool) -> None:
    assert unique(alice, "Sample/name/" + quote(value)) is expected


@pytest.mark.parametrize(("path", "code"), [
    ("Sample/volume/1", "unknown_field"),
    ("Sample/amount/2", "unsupported_field"),
    ("Sample/stepID/UQ-1", "unsupported_field"),
    ("Sample/attributes/x", "unsupported_field"),
    ("Sample/description/x", "unsupported_field"),
    ("User/roles/ADMIN", "unsupported_field"),
])
def test_fields_that_cannot_be_checked_are_400(alice: ApiClient, path: str,
                                               code: str) -> None:
    assert_problem(alice.get(f"/api/query/unique/field/{path}"), 400, code)


def test_unknown_classes_and_anonymous_callers(admin: ApiClient, client) -> None:
    assert_problem(admin.get("/api/query/unique/field/Gadget/name/x"), 404, "unknown_class")
    assert_problem(client.get("/api/query/unique/field/Sample/name/x"), 401,
                   "not_authenticated")
