"""Concurrent check-ins on a real database with real commits (SQLite and PostgreSQL).

Eight clients race to fill a location of capacity 10: exactly 10 items end up stored, every
refusal is ``location_full``, and the log agrees. Two clients race for one slot, many times:
one wins, the other gets 409 ``slot_taken``. Eight writers take one slot through the entity
API (create and update) and check-in mixed: one tube ends up in it.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from flask import Flask

from tests.conftest import ADMIN_PASSWORD, bearer_header, login

CLIENTS = 8
REQUESTS_PER_CLIENT = 3
CAPACITY = 10
SLOT_ROUNDS = 12
BARRIER_TIMEOUT_S = 60


def _setup(fresh_app: Callable[..., Flask]) -> tuple[Flask, dict[str, str]]:
    app = fresh_app(initialised=True)
    headers = bearer_header(login(app.test_client(), "admin", ADMIN_PASSWORD)["accessToken"])
    return app, headers


def _post(app: Flask, headers: dict[str, str], url: str, body) -> tuple[int, dict]:
    response = app.test_client(use_cookies=False).post(url, headers=headers, json=body)
    return response.status_code, response.get_json()


def _samples(app: Flask, headers: dict[str, str], count: int) -> list[str]:
    status, body = _post(app, headers, "/api/entity",
                         {"entities": [{"eClass": "Sample"}] * count})
    assert status == 201, body
    return [entity["id"] for entity in body["entities"]]


def test_eight_clients_never_overfill_a_location(fresh_app: Callable[..., Flask]) -> None:
    app, headers = _setup(fresh_app)
    status, saved = _post(app, headers, "/api/storage/location",
                          [{"name": "Rack", "capacity": CAPACITY}])
    assert status == 201, saved
    rack = saved[0]["id"]
    samples = _samples(app, headers, CLIENTS * REQUESTS_PER_CLIENT)
    start = threading.Barrier(CLIENTS)

    def client(index: int) -> list[tuple[str, int, str | None]]:
        mine = samples[index * REQUESTS_PER_CLIENT:(index + 1) * REQUESTS_PER_CLIENT]
        start.wait(BARRIER_TIMEOUT_S)
        outcomes = []
        for sample in mine:
            status, body = _post(app, headers, f"/api/storage/location/{rack}/checkin",
                                 [{"eClass": "Sample", "id": sample}])
            outcomes.append((sample, status, body.get("code")))
        return outcomes

    with ThreadPoolExecutor(CLIENTS) as pool:
        futures = [pool.submit(client, index) for index in range(CLIENTS)]
        outcomes = [outcome for future in futures for outcome in future.result()]
    stored = {sample for sample, status, _ in outcomes if status == 200}
    refused = {(status, code) for _, status, code in outcomes if status != 200}
    assert len(stored) == CAPACITY
    assert refused == {(409, "location_full")}
    answer = app.test_client().get(f"/api/storage/location/{rack}", headers=headers)
    assert (answer.get_json()["stored"], answer.get_json()["available"],
            answer.get_json()["checkin"]) == (CAPACITY, 0, CAPACITY)
    listed = app.test_client().get(
        "/api/entity/Sample", headers=headers,
        query_string={"$filter": f"locationID eq '{rack}'", "$select": "id"})
    assert {row["id"] for row in listed.get_json()["data"]} == stored


def test_two_clients_taking_one_slot_one_wins(fresh_app: Callable[..., Flask]) -> None:
    app, headers = _setup(fresh_app)
    status, saved = _post(app, headers, "/api/storage/location",
                          [{"name": "Box", "rows": 4, "columns": 4}])
    assert status == 201, saved
    box = saved[0]["id"]
    samples = _samples(app, headers, 2 * SLOT_ROUNDS)
    for round_number in range(SLOT_ROUNDS):
        position = f"{'ABCD'[round_number // 4]}{round_number % 4 + 1}"
        pair = samples[2 * round_number:2 * round_number + 2]
        start = threading.Barrier(2)

        def take(sample: str, position: str = position,
                 start: threading.Barrier = start) -> tuple[int, str | None]:
            start.wait(BARRIER_TIMEOUT_S)
            status, body = _post(app, headers, f"/api/storage/location/{box}/checkin",
                                 [{"eClass": "Sample", "id": sample, "position": position}])
            return status, body.get("code")

        with ThreadPoolExecutor(2) as pool:
            results = sorted(pool.map(take, pair))
        assert results == [(200, None), (409, "slot_taken")], (position, results)
    answer = app.test_client().get(f"/api/storage/location/{box}", headers=headers)
    assert answer.get_json()["stored"] == SLOT_ROUNDS


def test_two_crossing_moves_never_make_a_cycle(fresh_app: Callable[..., Flask]) -> None:
    """A under B and B under A at the same moment: one wins, the other is 409."""
    app, headers = _setup(fresh_app)
    for _ in range(SLOT_ROUNDS // 2):
        status, saved = _post(app, headers, "/api/storage/location",
                              [{"name": "A"}, {"name": "B"}])
        assert status == 201, saved
        first, second = (location["id"] for location in saved)
        start = threading.Barrier(2)

        def move(location: str, parent: str,
                 start: threading.Barrier = start) -> tuple[int, str | None]:
            start.wait(BARRIER_TIMEOUT_S)
            status, body = _post(app, headers, "/api/entity", {"entities": [
                {"eClass": "Location", "id": location, "parentID": parent}]})
            return status, body.get("code")

        with ThreadPoolExecutor(2) as pool:
            results = sorted(pool.map(move, (first, second), (second, first)))
        assert results == [(200, None), (409, "location_cycle")], results


def test_eight_writers_one_slot_entity_api_and_check_in_mixed(
        fresh_app: Callable[..., Flask]) -> None:
    """Issue 19: creating into a slot, moving into it by update and checking in, all at
    once, leave exactly one tube in it; every other writer is told ``slot_taken``."""
    app, headers = _setup(fresh_app)
    status, saved = _post(app, headers, "/api/storage/location",
                          [{"name": "Box", "rows": 9, "columns": 9}])
    assert status == 201, saved
    box = saved[0]["id"]
    for round_number in range(SLOT_ROUNDS // 4):
        slot = f"C{round_number + 1}"
        stored = _samples(app, headers, CLIENTS)
        start = threading.Barrier(CLIENTS)

        def write(index: int, slot: str = slot, start: threading.Barrier = start,
                  stored: list[str] = stored) -> tuple[int, str | None]:
            kind = index % 3
            if kind == 0:
                url, body = "/api/entity", {"entities": [
                    {"eClass": "Sample", "locationID": box, "position": slot}]}
            elif kind == 1:
                url, body = "/api/entity", {"entities": [
                    {"eClass": "Sample", "id": stored[index], "locationID": box,
                     "position": slot}]}
            else:
                url, body = (f"/api/storage/location/{box}/checkin",
                             [{"eClass": "Sample", "id": stored[index], "position": slot}])
            start.wait(BARRIER_TIMEOUT_S)
            status, answer = _post(app, headers, url, body)
            return status, answer.get("code")

        with ThreadPoolExecutor(CLIENTS) as pool:
            results = list(pool.map(write, range(CLIENTS)))
        won = [status for status, _ in results if status in (200, 201)]
        assert len(won) == 1, (slot, results)
        assert [code for status, code in results if status not in (200, 201)] == [
            "slot_taken"] * (CLIENTS - 1), (slot, results)
        listed = app.test_client().get(
            "/api/entity/Sample", headers=headers,
            query_string={"$filter": f"locationID eq '{box}' and position eq '{slot}'",
                          "$select": "id"})
        assert len(listed.get_json()["data"]) == 1, (slot, results)
    log = app.test_client().get(f"/api/storage/location/{box}/log", headers=headers)
    assert log.get_json()["total"] == SLOT_ROUNDS // 4
