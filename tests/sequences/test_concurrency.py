"""Concurrent writers never receive the same sequence value (decisions §12).

Each test runs on a new database with real commits: threads drawing through the service,
separate processes with applications of their own, and threads creating entities over HTTP.
Every committed value must be unique, together they must be exactly the contiguous range from
the first value on (rolled-back draws leave no gap), and the stored ``nextValue`` must be the
count plus one. Two more tests race an administrator raising ``nextValue`` against draws,
and requests creating the same sequence against each other.
"""
from __future__ import annotations

import multiprocessing
import re
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

from flask import Flask
from sqlalchemy import select

from labapp.db import db, transaction
from labapp.errors import Conflict
from labapp.model import Sequence
from labapp.sequences.service import next_ids, save_sequence
from tests.conftest import ADMIN_PASSWORD, bearer_header, login
from tests.sequences.workers import BARRIER_TIMEOUT_S, draw_in_process

THREADS = 8
DRAWS_PER_THREAD = 25
PROCESSES = 3
DRAWS_PER_PROCESS = 40
HTTP_THREADS = 6
REQUESTS_PER_THREAD = 5
RESULT_TIMEOUT_S = 120


class Abandoned(Exception):
    """Raised inside a unit of work to roll its draw back."""


def initialised(fresh_app: Callable[..., Flask]) -> Flask:
    """A new application whose database ``flask init`` has set up, with sequence ``T``."""
    app = fresh_app(initialised=True)
    with app.app_context(), transaction():
        save_sequence("T", {"prefix": "T", "min_digits": 1})
    return app


def blocks(total: int, offset: int) -> list[int]:
    """Block sizes 1, 2, 3, 1, ... (started at ``offset``) adding up to ``total``."""
    sizes: list[int] = []
    while sum(sizes) < total:
        sizes.append(min(1 + (len(sizes) + offset) % 3, total - sum(sizes)))
    return sizes


def stored_next_value(app: Flask, sequence_id: str) -> int:
    with app.app_context():
        value = db.session.get(Sequence, sequence_id).next_value
        db.session.remove()
    return value


def assert_contiguous(values: Iterable[str], prefix: str, first: int, count: int) -> None:
    """``values`` are ``prefix`` + each number of ``first .. first + count - 1``, once each."""
    values = list(values)
    assert len(values) == len(set(values)), "a value was handed out twice"
    numbers = sorted(int(re.fullmatch(rf"{re.escape(prefix)}(\d+)", value)[1])
                     for value in values)
    assert numbers == list(range(first, first + count))


def test_threads_never_share_a_value(fresh_app: Callable[..., Flask]) -> None:
    app = initialised(fresh_app)
    start = threading.Barrier(THREADS)

    def work(index: int) -> list[str]:
        committed: list[str] = []
        start.wait(BARRIER_TIMEOUT_S)
        for attempt, count in enumerate(blocks(DRAWS_PER_THREAD, index)):
            if attempt % 4 == 3:
                try:
                    with app.app_context(), transaction():
                        next_ids("T", count)
                        raise Abandoned()
                except Abandoned:
                    pass
            with app.app_context(), transaction():
                committed.extend(next_ids("T", count))
        return committed

    with ThreadPoolExecutor(THREADS) as pool:
        drawn = [pool.submit(work, index) for index in range(THREADS)]
        values = [value for future in drawn for value in future.result()]
    assert_contiguous(values, "T", 1, THREADS * DRAWS_PER_THREAD)
    assert stored_next_value(app, "T") == THREADS * DRAWS_PER_THREAD + 1


def test_raising_next_value_while_others_draw_never_goes_back(
        fresh_app: Callable[..., Flask]) -> None:
    """An administrator raising nextValue by one over and over while threads draw: the save
    locks the row, so a draw committed between reading and saving makes it a 409 instead of
    setting the sequence back. Raises leave gaps; values must still never repeat."""
    app = initialised(fresh_app)
    drawers = THREADS - 1
    start = threading.Barrier(drawers + 1)
    drawing = threading.Event()

    def draw(index: int) -> list[str]:
        committed: list[str] = []
        start.wait(BARRIER_TIMEOUT_S)
        for count in blocks(DRAWS_PER_THREAD, index):
            with app.app_context(), transaction():
                committed.extend(next_ids("T", count))
        return committed

    def raise_by_one() -> None:
        while drawing.is_set():
            with app.app_context():
                try:
                    with transaction():
                        seen = db.session.scalar(
                            select(Sequence.next_value).where(Sequence.id == "T"))
                        save_sequence("T", {"next_value": seen + 1})
                except Conflict:
                    pass
                db.session.remove()

    drawing.set()
    with ThreadPoolExecutor(drawers + 1) as pool:
        saver = pool.submit(raise_by_one)
        drawn = [pool.submit(draw, index) for index in range(drawers)]
        start.wait(BARRIER_TIMEOUT_S)
        try:
            values = [value for future in drawn for value in future.result()]
        finally:
            drawing.clear()
        saver.result()
    assert len(values) == len(set(values)) == drawers * DRAWS_PER_THREAD
    assert max(int(value[1:]) for value in values) < stored_next_value(app, "T")


def test_processes_never_share_a_value(fresh_app: Callable[..., Flask]) -> None:
    app = initialised(fresh_app)
    settings = {name: app.config["LABAPP"][name]
                for name in ("INSTANCE_PATH", "DATABASE_URL", "SECRET_KEY")}
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(PROCESSES)
    results = context.Queue()
    processes = [context.Process(target=draw_in_process,
                                 args=(settings, "T", blocks(DRAWS_PER_PROCESS, index), start,
                                       results))
                 for index in range(PROCESSES)]
    for process in processes:
        process.start()
    try:
        outcomes = [results.get(timeout=RESULT_TIMEOUT_S) for _ in processes]
    finally:
        for process in processes:
            process.join(RESULT_TIMEOUT_S)
        results.close()
        results.join_thread()
    failures = [detail for status, detail in outcomes if status != "ok"]
    assert not failures, "\n".join(failures)
    assert [process.exitcode for process in processes] == [0] * PROCESSES
    values = [value for _, drawn in outcomes for value in drawn]
    assert_contiguous(values, "T", 1, PROCESSES * DRAWS_PER_PROCESS)
    assert stored_next_value(app, "T") == PROCESSES * DRAWS_PER_PROCESS + 1


def test_concurrent_entity_requests_never_share_an_id(
        fresh_app: Callable[..., Flask]) -> None:
    app = initialised(fresh_app)
    first = stored_next_value(app, "Sample")
    headers = bearer_header(login(app.test_client(), "admin", ADMIN_PASSWORD)["accessToken"])
    start = threading.Barrier(HTTP_THREADS)

    def work(index: int) -> list[str]:
        client = app.test_client(use_cookies=False)
        created: list[str] = []
        start.wait(BARRIER_TIMEOUT_S)
        for request_number in range(REQUESTS_PER_THREAD):
            count = 1 + (index + request_number) % 3
            response = client.post("/api/entity", headers=headers,
                                   json={"entities": [{"eClass": "Sample"}] * count})
            assert response.status_code == 201, response.get_json()
            created.extend(entity["id"] for entity in response.get_json()["entities"])
        return created

    with ThreadPoolExecutor(HTTP_THREADS) as pool:
        drawn = [pool.submit(work, index) for index in range(HTTP_THREADS)]
        ids = [entity_id for future in drawn for entity_id in future.result()]
    requested = sum(1 + (index + request_number) % 3 for index in range(HTTP_THREADS)
                    for request_number in range(REQUESTS_PER_THREAD))
    assert_contiguous(ids, "SAM", first, requested)
    assert stored_next_value(app, "Sample") == first + requested
    listed = app.test_client().get("/api/entity/Sample?$select=id", headers=headers)
    assert sorted(entity["id"] for entity in listed.get_json()["data"]) == sorted(ids)


def test_concurrent_creates_of_one_sequence_make_it_once(
        fresh_app: Callable[..., Flask]) -> None:
    """Requests racing to add the same new sequence: one creates it; each other one updates
    it after that (200) or, having missed it when it looked, is refused with a 409."""
    app = initialised(fresh_app)
    headers = bearer_header(login(app.test_client(), "admin", ADMIN_PASSWORD)["accessToken"])
    start = threading.Barrier(HTTP_THREADS)

    def create() -> tuple[int, str | None]:
        client = app.test_client(use_cookies=False)
        start.wait(BARRIER_TIMEOUT_S)
        response = client.post("/api/sequence", headers=headers,
                               json={"id": "RACE", "prefix": "R", "minDigits": 3})
        return response.status_code, response.get_json().get("code")

    with ThreadPoolExecutor(HTTP_THREADS) as pool:
        answers = [future.result() for future in
                   [pool.submit(create) for _ in range(HTTP_THREADS)]]
    assert [status for status, _ in answers].count(201) == 1, answers
    assert set(answers) - {(201, None), (200, None)} <= {(409, "duplicate_id")}, answers
    assert stored_next_value(app, "RACE") == 1
