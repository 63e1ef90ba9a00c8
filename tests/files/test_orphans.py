"""A rejected upload or batch leaves nothing in the content store; committed content is never
lost, even when it is shared with a writer that rolls back (labapp/blobs.py).

The suite's database work is rolled back after each test, but the store is a real folder
shared by the whole run: each test stores content of its own (random bytes).
"""
from __future__ import annotations

import base64
import hashlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import TestResponse

from labapp.access.actor import Actor
from labapp.access.grant_sets import actor_for
from labapp.blobs import staged, store_in_transaction
from labapp.db import db, transaction
from labapp.files.service import create_file
from labapp.model import User
from labapp.users.service import create_user
from tests.conftest import PASSWORD, ApiClient, basic_header
from tests.contracts.problem import assert_problem
from tests.files.conftest import closed, created, fetch, save, upload, upload_base64
from tests.sequences.workers import BARRIER_TIMEOUT_S


def unique_content() -> bytes:
    return b"measurement " + os.urandom(24)


def digest_of(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def store(app: Flask) -> Path:
    return Path(app.config["LABAPP"]["INSTANCE_PATH"]) / "files"


def blob(app: Flask, content: bytes) -> Path:
    digest = digest_of(content)
    return store(app) / digest[:2] / digest[2:4] / digest


def in_flight(app: Flask) -> list[str]:
    """Pins and partial uploads: what only an unfinished unit of work may leave."""
    root = store(app)
    pins = [path.name for path in (root / ".pins").glob("*")]
    return pins + [path.name for path in root.glob(".upload-*")]


@pytest.fixture
def read_only_subject(department: Callable[[str], str], member: Callable[..., ApiClient],
                      grant: Callable[..., None]) -> str:
    """A sample of another department that ``lab`` (the ``api`` caller) may only read."""
    other = department("Other")
    owner = member("owner", department_id=other)
    sample = save(owner, {"eClass": "Sample", "name": "theirs"})
    grant(other, "Read", user="lab")
    return sample["id"]


REJECTED = {
    "multipart-unknown-subject": (lambda api, content, _: upload(
        api, content, subjectID="SAM99999"), 400),
    "base64-unknown-subject": (lambda api, content, _: upload_base64(
        api, content, subjectID="SAM99999"), 400),
    "multipart-read-only-subject": (lambda api, content, subject: upload(
        api, content, subjectID=subject), 403),
    "multipart-name-too-long": (lambda api, content, _: upload(
        api, content, name="n" * 256), 400),
}


@pytest.mark.parametrize(("send", "status"), REJECTED.values(), ids=REJECTED.keys())
def test_a_rejected_upload_leaves_nothing(app: Flask, api: ApiClient, read_only_subject: str,
                                          send: Callable[..., TestResponse],
                                          status: int) -> None:
    """The content was stored before the transaction that then refused the File."""
    content = unique_content()

    response = send(api, content, read_only_subject)

    assert response.status_code == status, response.get_data(as_text=True)
    assert not blob(app, content).exists()
    assert in_flight(app) == []


def test_a_rejected_page_upload_leaves_nothing(app: Flask, api_as: Callable[..., ApiClient],
                                               make_user: Callable[..., str]) -> None:
    make_user("carol")
    browser = api_as("carol", "cookie")
    sample = save(browser, {"eClass": "Sample", "name": "S"})
    content = unique_content()

    response = closed(browser.post(
        f"/entities/Sample/{sample['id']}/files", content_type="multipart/form-data",
        data={"file": (BytesIO(content), "n" * 300 + ".csv")}))

    assert response.status_code == 400
    assert not blob(app, content).exists()
    assert in_flight(app) == []


def test_a_rejected_batch_leaves_nothing(app: Flask, api: ApiClient) -> None:
    """The batch stores the content of ``files`` inside its transaction; a later item fails."""
    content, second = unique_content(), unique_content()

    response = api.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "files": [
            {"name": "a.bin", "content": base64.b64encode(content).decode()},
            {"name": "b.bin", "content": base64.b64encode(second).decode()}]},
        {"eClass": "Sample", "parentID": "SAM99999"}]})

    assert_problem(response, 400, "invalid_entity", errors=True)
    assert not blob(app, content).exists() and not blob(app, second).exists()
    assert in_flight(app) == []


def test_rejecting_content_a_file_already_has_keeps_it(app: Flask, api: ApiClient) -> None:
    content = unique_content()
    kept = created(upload(api, content, "kept.bin"))

    assert upload(api, content, subjectID="SAM99999").status_code == 400
    batch = api.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "files": [{"name": "again.bin",
                                        "content": base64.b64encode(content).decode()}]},
        {"eClass": "Sample", "parentID": "SAM99999"}]})
    assert batch.status_code == 400

    assert blob(app, content).read_bytes() == content
    assert fetch(api, kept["id"]).data == content
    assert in_flight(app) == []


def test_a_successful_upload_leaves_only_its_content(app: Flask, api: ApiClient) -> None:
    content, batched = unique_content(), unique_content()

    created(upload(api, content))
    save(api, {"eClass": "Sample", "files": [
        {"name": "b.bin", "content": base64.b64encode(batched).decode()}]})

    assert blob(app, content).read_bytes() == content
    assert blob(app, batched).read_bytes() == batched
    assert in_flight(app) == []


def as_actor(app: Flask, username: str) -> Actor:
    with app.app_context():
        actor = actor_for(db.session.get(User, username), method="basic")
        db.session.remove()
    return actor


def rejected_batch(api: ApiClient, content: bytes) -> TestResponse:
    """A batch storing ``content`` that is refused after the content was stored."""
    return api.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "files": [{"name": "x.bin",
                                        "content": base64.b64encode(content).decode()}]},
        {"eClass": "Sample", "parentID": "SAM99999"}]})


def attach(actor: Actor, held: Any, name: str) -> dict[str, Any]:
    with transaction():
        return create_file(actor, sha256=held.sha256, size=held.size, name=name,
                           media_type="application/octet-stream")


def test_a_rollback_leaves_content_that_an_unfinished_upload_holds(
        app: Flask, api: ApiClient) -> None:
    """An upload has stored its content but not committed its File yet when another request
    stores the same bytes and is rejected: the content must stay for the first one."""
    content = unique_content()
    lab = as_actor(app, "lab")

    with app.app_context():
        with staged(BytesIO(content)) as held:
            assert_problem(rejected_batch(api, content), 400, "invalid_entity", errors=True)
            assert_problem(upload(api, content, subjectID="SAM99999"), 400,
                           "invalid_entity", errors=True)
            assert blob(app, content).read_bytes() == content
            file = attach(lab, held, "held.bin")

    assert fetch(api, file["id"]).data == content
    assert in_flight(app) == []


def test_committed_content_is_put_back_if_it_vanished_meanwhile(app: Flask,
                                                                api: ApiClient) -> None:
    """Nothing in the store removes pinned content; if something outside it does (a
    careless operator), the pin still holds the bytes and the commit puts them back."""
    content = unique_content()
    lab = as_actor(app, "lab")

    with app.app_context():
        with staged(BytesIO(content)) as held:
            blob(app, content).unlink()
            file = attach(lab, held, "vanished.bin")

    assert fetch(api, file["id"]).data == content
    assert in_flight(app) == []


def test_while_a_unit_of_work_runs_its_content_is_pinned(app: Flask) -> None:
    content = unique_content()
    with app.app_context():
        with transaction():
            stored = store_in_transaction(content)
            assert stored.sha256 == digest_of(content) and stored.size == len(content)
            assert len([name for name in in_flight(app) if name.startswith(stored.sha256)]) == 1
        assert in_flight(app) == []
        assert blob(app, content).read_bytes() == content


def test_storing_in_a_transaction_needs_one(app: Flask) -> None:
    content = unique_content()
    with app.app_context(), pytest.raises(RuntimeError, match="transaction"):
        store_in_transaction(content)
    assert not blob(app, content).exists()
    assert in_flight(app) == []


ROUNDS = 12


def test_writers_of_the_same_bytes_racing_never_lose_committed_content(
        fresh_app: Callable[..., Flask]) -> None:
    """Real requests at the same moment, round after round: an upload and a batch store the
    same bytes, one of them is rejected (which one alternates); the committed File's content
    must always be there afterwards, and nothing else left behind."""
    app = fresh_app(initialised=True)
    with app.app_context(), transaction():
        create_user(username="lab", name="Lab", department_id="DEP00001", password=PASSWORD,
                    created_by="tests")
    headers = basic_header("lab", PASSWORD)
    clients = [ApiClient(app.test_client(use_cookies=False), headers, "basic")
               for _ in range(2)]
    start = threading.Barrier(2)

    def file_upload(api: ApiClient, content: bytes, accept: bool) -> TestResponse:
        start.wait(BARRIER_TIMEOUT_S)
        return upload(api, content, **({} if accept else {"subjectID": "SAM99999"}))

    def batch(api: ApiClient, content: bytes, accept: bool) -> TestResponse:
        start.wait(BARRIER_TIMEOUT_S)
        return api.post("/api/entity", json={"entities": [
            {"eClass": "Sample", "files": [
                {"name": "x.bin", "content": base64.b64encode(content).decode()}]},
            {"eClass": "Sample", **({} if accept else {"parentID": "SAM99999"})}]})

    with ThreadPoolExecutor(2) as pool:
        for round_number in range(ROUNDS):
            content = unique_content()
            upload_wins = round_number % 2 == 0
            answers = [pool.submit(file_upload, clients[0], content, upload_wins),
                       pool.submit(batch, clients[1], content, not upload_wins)]
            uploaded, batched = (answer.result() for answer in answers)
            if upload_wins:
                assert (uploaded.status_code, batched.status_code) == (201, 400)
                file_id = uploaded.get_json()["id"]
            else:
                assert (uploaded.status_code, batched.status_code) == (400, 201)
                sample = batched.get_json()["entities"][0]["id"]
                file_id = clients[0].get(f"/api/entity/Sample/{sample}").get_json()[
                    "files"][0]["id"]
            assert fetch(clients[0], file_id).data == content, f"round {round_number}"
            assert in_flight(app) == []
