"""Row-level security on storage: hidden is 404, read-only is 403, counts stay true."""
from __future__ import annotations

from collections.abc import Callable

from tests.conftest import ApiClient
from tests.entities.conftest import Grants
from tests.storage.conftest import body_of, check_in, make_items, make_locations, refs


def test_hidden_location_is_404_and_read_only_is_403(admin: ApiClient,
                                                     department: Callable[..., str],
                                                     member: Callable[..., ApiClient],
                                                     grant: Grants) -> None:
    other = department("Other")
    hidden, shared = make_locations(admin, {"name": "Hidden", "departmentID": other},
                                    {"name": "Shared", "departmentID": "DEP00001"})
    readonly_dep = department("Read only")
    readonly, = make_locations(admin, {"name": "Read only", "departmentID": readonly_dep})
    alice = member("alice")
    grant.department(readonly_dep, "Read", user="alice")
    sample, = make_items(alice, "Sample", 1)
    for suffix in ("", "/parents", "/children", "/log"):
        url = f"/api/storage/location/{hidden['id']}{suffix}"
        unknown = body_of(alice.get(f"/api/storage/location/NO-SUCH{suffix}"), 404)
        assert body_of(alice.get(url), 404)["detail"] == unknown["detail"].replace(
            "NO-SUCH", hidden["id"])
    assert alice.post(f"/api/storage/location/{hidden['id']}/checkin",
                      json=refs("Sample", [sample])).status_code == 404
    assert alice.post(f"/api/storage/location/{readonly['id']}/checkin",
                      json=refs("Sample", [sample])).status_code == 403
    assert check_in(alice, shared["id"], refs("Sample", [sample]))["stored"] == 1
    listed = body_of(alice.get("/api/storage/location"), 200)
    assert {loc["id"] for loc in listed["data"]} == {shared["id"], readonly["id"]}


def test_hidden_items_are_not_listed_but_counted(admin: ApiClient,
                                                 department: Callable[..., str],
                                                 member: Callable[..., ApiClient]) -> None:
    other = department("Other")
    shared, = make_locations(admin, {"name": "Shared"})
    alice = member("alice")
    mine, = make_items(alice, "Sample", 1)
    theirs, = make_items(admin, "Sample", 1, departmentID=other)
    check_in(admin, shared["id"], refs("Sample", [mine, theirs]))
    seen = body_of(alice.get(f"/api/storage/location/{shared['id']}"), 200)
    assert (seen["stored"], seen["checkin"]) == (2, 2)
    log = body_of(alice.get(f"/api/storage/location/{shared['id']}/log"), 200)
    assert [entry["entityID"] for entry in log["data"]] == [mine] and log["total"] == 1
    for url, items in ((f"/api/storage/location/{shared['id']}/checkin",
                        refs("Sample", [theirs])),
                       ("/api/storage/location/checkout", refs("Sample", [mine, theirs]))):
        problem = body_of(alice.post(url, json=items), 404)
        assert theirs in problem["detail"]


def test_items_read_only_to_the_caller_are_403(admin: ApiClient,
                                               department: Callable[..., str],
                                               member: Callable[..., ApiClient],
                                               grant: Grants) -> None:
    other = department("Other")
    shared, = make_locations(admin, {"name": "Shared"})
    readable, = make_items(admin, "Sample", 1, departmentID=other)
    alice = member("alice")
    grant.department(other, "Read", user="alice")
    problem = body_of(alice.post(f"/api/storage/location/{shared['id']}/checkin",
                                 json=refs("Sample", [readable])), 403)
    assert "[0]" in problem["detail"]


def test_anonymous_is_401(client) -> None:
    assert client.get("/api/storage/location").status_code == 401
    assert client.post("/api/storage/location/checkout", json=[]).status_code == 401
