"""Search is permission-trimmed: every mode answers only what the caller may read, and a
grant or a revocation counts from the caller's next request, with nothing to re-index."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from sqlalchemy import delete

from labapp.db import transaction
from labapp.model.access import DepartmentAccess
from tests.conftest import ApiClient
from tests.entities.conftest import Grants, save
from tests.search.conftest import found

# Each test runs on every search backend of the pass (tests/search/conftest.py).
pytestmark = pytest.mark.usefixtures("search_backend")

MODES = ("", "exact/", "like/", "fulltext/")


def test_an_entity_of_another_department_is_found_only_with_a_grant(
        app: Flask, admin: ApiClient, department: Callable[..., str],
        member: Callable[..., ApiClient], grant: Grants) -> None:
    chemistry, biology = department("Chemistry"), department("Biology")
    (secret,) = save(admin, {"eClass": "Sample", "name": "Zebrafish", "barcode": "ZF-1",
                             "departmentID": chemistry})
    (own,) = save(admin, {"eClass": "Sample", "name": "Zebrafish feed",
                          "departmentID": biology})
    bob = member("bob", department_id=biology)

    for mode in MODES:  # the secret is named exactly so; bob's own only contains it
        assert found(bob, f"{mode}Zebrafish") == ([] if mode == "exact/" else [own["id"]])
    assert found(bob, "exact/ZF-1") == []
    assert found(bob, f"fulltext/{secret['id']}") == []

    grant.department(chemistry, "Read", user="bob")
    assert set(found(bob, "fulltext/Zebrafish")) == {secret["id"], own["id"]}
    assert found(bob, "exact/ZF-1") == [secret["id"]]

    with app.app_context(), transaction() as session:
        session.execute(delete(DepartmentAccess).where(DepartmentAccess.user_id == "bob"))
    for mode in MODES:
        assert secret["id"] not in found(bob, f"{mode}Zebrafish")


def test_project_grants_and_the_directory(admin: ApiClient, department: Callable[..., str],
                                          project: Callable[..., str],
                                          member: Callable[..., ApiClient],
                                          grant: Grants) -> None:
    chemistry, biology = department("Chemistry"), department("Biology")
    vaccine = project("Vaccine", departmentID=chemistry)
    (in_project,) = save(admin, {"eClass": "Sample", "name": "Adjuvant",
                                 "departmentID": chemistry, "projectID": vaccine})
    carol = member("carol", department_id=biology, name="Carol Quillfeather")
    assert found(carol, "fulltext/Adjuvant") == []
    grant.project(vaccine, "Read", user="carol")
    assert found(carol, "fulltext/Adjuvant") == [in_project["id"]]
    # Users and departments are the directory: every authenticated user finds them.
    assert found(carol, "fulltext/Chemistry") == [chemistry]
    assert "carol" in found(admin, "fulltext/Quillfeather")


def test_a_class_filter_leaving_nothing_visible_finds_nothing(
        admin: ApiClient, department: Callable[..., str],
        member: Callable[..., ApiClient]) -> None:
    # Whoosh reads an empty filter as none: the caller's visible documents of the class
    # (here none) must not be handed to it as one.
    chemistry, biology = department("Chemistry"), department("Biology")
    save(admin, {"eClass": "Sample", "name": "Quokka lysate", "departmentID": chemistry})
    dave = member("dave", department_id=biology)
    assert found(dave, "fulltext/Quokka", filter="eClass eq 'Sample'") == []
    assert found(dave, "Quokka", filter="eClass eq 'Sample'") == []
    assert found(admin, "fulltext/Quokka", filter="eClass eq 'Sample'") != []
