"""``LABAPP_FILE_STORE=database``: file contents as chunked rows of PostgreSQL.

Each test has a database of its own with real commits (downloads read the rows on
connections of their own, and the collector reads committed File rows). The same uploads,
downloads, Range requests and visibility as the folder store; streamed both ways with
bounded memory; nothing left by an upload that fails halfway; ``files gc``; and two "hosts"
(two applications, two instance folders) over one database.
"""
from __future__ import annotations

import hashlib
import queue
import re
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from io import BytesIO
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import func, insert, select, text, update

from labapp import content_rows
from labapp.blobs import content_of, store_in_transaction, stored
from labapp.config import ConfigError, load_settings
from labapp.db import db, transaction
from labapp.model import File, FileContent, FileContentChunk
from labapp.users.service import create_user
from tests.conftest import BACKEND, PASSWORD, ApiClient, basic_header, build_app, dispose
from tests.files.conftest import created, fetch, upload, upload_base64
from tests.helpers.streams import Pieces

MIB = 1024 * 1024
needs_postgresql = pytest.mark.skipif(BACKEND != "postgresql",
                                      reason="the database store is PostgreSQL's alone")


def test_the_database_store_is_refused_on_sqlite(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="FILE_STORE='database'.*only on PostgreSQL"):
        load_settings({"INSTANCE_PATH": str(tmp_path), "FILE_STORE": "database"}, environ={})
    with pytest.raises(ConfigError, match="LABAPP_FILE_STORE='disk': expected folder or"):
        load_settings({"INSTANCE_PATH": str(tmp_path), "FILE_STORE": "disk"}, environ={})
    settings = load_settings({"INSTANCE_PATH": str(tmp_path), "FILE_STORE": "database",
                        "DATABASE_URL": "postgresql+psycopg://lab@db/lab"}, environ={})
    assert settings["FILE_STORE"] == "database"


def rows(app: Flask) -> tuple[int, int]:
    """How many contents and pieces the database store holds."""
    with app.app_context(), db.engine.connect() as connection:
        return (connection.scalar(select(func.count()).select_from(FileContent)) or 0,
                connection.scalar(select(func.count()).select_from(FileContentChunk)) or 0)


def make_lab_user(app: Flask, username: str = "lab", department_id: str = "DEP00001",
                  roles: tuple[str, ...] = ()) -> ApiClient:
    with app.app_context(), transaction():
        create_user(username=username, name=username.title(), department_id=department_id,
                    password=PASSWORD, roles=roles, created_by="tests")
    return ApiClient(app.test_client(), basic_header(username, PASSWORD), "basic")


@pytest.fixture
def lab(fresh_app: Callable[..., Flask]) -> tuple[Flask, ApiClient]:
    """A new installation keeping contents in the database, and a plain user's client."""
    app = fresh_app(initialised=True, FILE_STORE="database")
    return app, make_lab_user(app)


@needs_postgresql
def test_upload_download_and_range_from_the_database(lab: tuple[Flask, ApiClient]) -> None:
    app, api = lab
    content = bytes(range(256)) * 40
    entity = created(upload(api, content, "data.bin"))
    again = created(upload_base64(api, content, "copy.bin"))
    assert entity["sha256"] == again["sha256"] == hashlib.sha256(content).hexdigest()
    assert rows(app) == (1, 1)  # stored once
    assert not (Path(app.config["LABAPP"]["INSTANCE_PATH"]) / "files").exists()

    whole = fetch(api, entity["id"])
    assert whole.status_code == 200 and whole.data == content
    assert whole.headers["Content-Length"] == str(len(content))
    assert whole.headers["Accept-Ranges"] == "bytes"
    assert whole.headers["Content-Type"] == "application/octet-stream"
    assert whole.headers["X-Content-Type-Options"] == "nosniff"
    assert whole.headers["Content-Disposition"] == "attachment; filename=data.bin"
    part = fetch(api, entity["id"], headers={"Range": "bytes=1000-1999"})
    assert part.status_code == 206 and part.data == content[1000:2000]
    assert part.headers["Content-Range"] == f"bytes 1000-1999/{len(content)}"
    assert fetch(api, entity["id"], headers={"If-None-Match": whole.headers["ETag"]}
                 ).status_code == 304
    empty = created(upload(api, b"", "empty.txt"))
    assert empty["size"] == 0 and fetch(api, empty["id"]).data == b""


@needs_postgresql
def test_a_range_across_pieces_reads_only_what_it_asks(lab: tuple[Flask, ApiClient]) -> None:
    app, api = lab
    stream = Pieces(3 * content_rows.CHUNK + 5)
    with app.app_context():
        with stored(stream) as blob:
            pass
        reader = content_of(blob.sha256)
    assert reader is not None and reader.size == stream.size and rows(app) == (1, 4)
    start = content_rows.CHUNK - 10
    with app.app_context(), reader.open() as file:
        file.seek(start)
        across = file.read(20)
        file.seek(-3, 2)
        tail = file.read()
    expected = Pieces(stream.size)
    whole = b"".join(iter(lambda: expected.read(MIB), b""))
    assert across == whole[start:start + 20] and tail == whole[-3:]


@needs_postgresql
def test_the_files_property_of_a_batch_stores_in_the_database(
        lab: tuple[Flask, ApiClient]) -> None:
    app, api = lab
    response = api.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "name": "S", "files": [
            {"name": "a.txt", "content": "aGVsbG8=", "mediaType": "text/plain"}]}]})
    assert response.status_code == 201, response.get_data(as_text=True)
    assert rows(app) == (1, 1)
    with app.app_context():
        digest = db.session.scalar(select(func.min(FileContent.sha256)))
    assert digest == hashlib.sha256(b"hello").hexdigest()
    # A batch that fails rolls its content back with it.
    failed = api.post("/api/entity", json={"entities": [
        {"eClass": "Sample", "name": "S2", "files": [{"name": "b.txt", "content": "Ynll"}]},
        {"eClass": "Sample", "name": "bad", "parentID": "SAM99999"}]})
    assert failed.status_code == 400
    assert rows(app) == (1, 1)
    with app.app_context(), pytest.raises(RuntimeError):
        store_in_transaction(b"outside")


@needs_postgresql
def test_an_upload_that_fails_halfway_leaves_nothing(lab: tuple[Flask, ApiClient]) -> None:
    app, api = lab
    with app.app_context(), pytest.raises(OSError, match="went away"):
        with stored(Pieces(5 * MIB, fail_after=3 * MIB)):
            pass
    assert rows(app) == (0, 0)
    # A File refused after the whole content arrived takes it back too.
    refused = upload(api, b"refused content", subjectID="SAM99999")
    assert refused.status_code == 400
    assert rows(app) == (0, 0)


@needs_postgresql
def test_memory_stays_bounded_for_a_large_file(lab: tuple[Flask, ApiClient]) -> None:
    app, api = lab
    size = 48 * MIB
    stream = Pieces(size)
    tracemalloc.start()
    try:
        with app.app_context():
            with stored(stream) as blob:
                pass
        _, stored_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        with app.app_context():
            found = content_of(blob.sha256)
            assert found is not None
            digest = hashlib.sha256()
            with found.open() as file:
                while block := file.read(64 * 1024):
                    digest.update(block)
        _, read_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert blob.size == size and digest.hexdigest() == stream.digest.hexdigest() == blob.sha256
    assert stored_peak < 8 * MIB, stored_peak
    assert read_peak < 4 * MIB, read_peak

    # Through HTTP: a File naming that content (its row pointed at it, as an upload of
    # 48 MiB would leave it), downloaded piece by piece.
    entity = created(upload(api, b"small"))
    with app.app_context(), transaction():
        db.session.execute(update(File).where(File.id == entity["id"])
                           .values(sha256=blob.sha256, size=blob.size))
    tracemalloc.start()
    try:
        response = api.get(f"/api/file/{entity['id']}", buffered=False)
        digest = hashlib.sha256()
        for block in response.response:
            digest.update(block)
        response.close()
        _, download_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert digest.hexdigest() == blob.sha256
    assert download_peak < 4 * MIB, download_peak


@needs_postgresql
def test_visibility_is_unchanged(lab: tuple[Flask, ApiClient]) -> None:
    app, api = lab
    entity = created(upload(api, b"department 1 only"))
    manager = make_lab_user(app, "manager", roles=("DATA_MANAGER",))
    made = manager.post("/api/entity", json={"entities": [
        {"eClass": "Department", "name": "Other"}]})
    assert made.status_code == 201, made.get_data(as_text=True)
    department = made.get_json()["entities"][0]["id"]
    outsider = make_lab_user(app, "bob", department)
    assert fetch(outsider, entity["id"]).status_code == 404
    assert fetch(api, entity["id"]).data == b"department 1 only"


SUMMARY = re.compile(r"(would remove|removed) (\d+) unreferenced blob\(s\), (\d+) bytes, of "
                     r"(\d+) checked; (\d+) stale pin\(s\); (\d+) abandoned partial upload\(s\)")


def gc(app: Flask, *args: str) -> tuple[str, ...]:
    result = app.test_cli_runner().invoke(args=["files", "gc", *args])
    assert result.exit_code == 0, result.output
    summary = SUMMARY.search(result.output)
    assert summary, result.output
    return summary.groups()


def plant(app: Flask, content: bytes, age: timedelta = timedelta(0)) -> str:
    """A content no File names, stored ``age`` ago (as a crash or a deleted File leaves)."""
    with app.app_context(), db.engine.begin() as connection:
        sha256, _ = content_rows.write(connection, BytesIO(content))
        connection.execute(update(FileContent).where(FileContent.sha256 == sha256)
                           .values(stored_utc=datetime.now(UTC) - age))
    return sha256


@needs_postgresql
def test_gc_removes_only_old_unreferenced_unheld_contents(
        lab: tuple[Flask, ApiClient]) -> None:
    app, api = lab
    referenced = created(upload(api, b"kept: a File names it"))
    with app.app_context(), transaction():
        db.session.execute(update(FileContent).values(
            stored_utc=datetime.now(UTC) - timedelta(hours=2)))
    old = plant(app, b"old orphan", timedelta(hours=2))
    plant(app, b"young orphan")
    held = plant(app, b"an upload of the same bytes in flight", timedelta(hours=2))
    with app.app_context(), db.engine.begin() as connection:  # pieces no content names
        connection.execute(insert(FileContentChunk).values(content_id=-1, seq=0, data=b"x"))

    assert gc(app, "--dry-run") == ("would remove", "2", str(10 + 37), "4", "0", "1")
    assert rows(app) == (4, 5)
    # A writer storing the held bytes again holds that content until its transaction ends:
    # the collector passes it by.
    with app.app_context(), db.engine.connect() as writer:
        with writer.begin():
            assert content_rows.write(writer, BytesIO(b"an upload of the same bytes in flight")
                                      )[0] == held
            assert gc(app) == ("removed", "1", "10", "4", "0", "1")
    assert rows(app) == (3, 3)
    with app.app_context():
        assert content_of(old) is None and content_of(held) is not None
    assert gc(app, "--grace-minutes", "0") == ("removed", "2", str(12 + 37), "3", "0", "0")
    assert rows(app) == (1, 1)
    assert fetch(api, referenced["id"]).data == b"kept: a File names it"


@needs_postgresql
def test_content_collected_is_stored_again_by_a_later_upload(
        lab: tuple[Flask, ApiClient]) -> None:
    app, api = lab
    plant(app, b"collected, then uploaded again", timedelta(hours=2))
    with app.app_context(), db.engine.connect() as collector:
        with collector.begin():
            assert content_rows.collect_garbage(
                collector, [hashlib.sha256(b"collected, then uploaded again").hexdigest()],
                60, dry_run=False)
        entity = created(upload(api, b"collected, then uploaded again"))
    assert fetch(api, entity["id"]).data == b"collected, then uploaded again"
    assert rows(app) == (1, 1)


@pytest.fixture
def two_hosts(tmp_path: Path, fresh_app: Callable[..., Flask]
              ) -> Iterator[Callable[..., tuple[Flask, Flask]]]:
    """Factory: two applications with instance folders of their own over one database,
    with the given settings (two app hosts behind a load balancer)."""
    others: list[Flask] = []

    def make(**overrides: str) -> tuple[Flask, Flask]:
        first = fresh_app(initialised=True, **overrides)
        url = first.config["LABAPP"]["DATABASE_URL"]
        second = build_app(tmp_path / "host-b", url, **overrides)
        others.append(second)
        return first, second

    yield make
    for app in others:
        dispose(app)


@pytest.mark.parametrize("store", [
    pytest.param("folder", id="shared-folder"),
    pytest.param("database", id="database", marks=needs_postgresql)])
def test_a_file_uploaded_on_one_host_downloads_on_the_other(
        two_hosts: Callable[..., tuple[Flask, Flask]], tmp_path: Path, store: str) -> None:
    settings = {"FILE_STORE": store}
    if store == "folder":
        settings["FILE_STORE_PATH"] = str(tmp_path / "shared-files")
    host_a, host_b = two_hosts(**settings)
    on_a = make_lab_user(host_a)
    on_b = ApiClient(host_b.test_client(), basic_header("lab", PASSWORD), "basic")
    entity = created(upload(on_a, b"written on A"))
    assert fetch(on_b, entity["id"]).data == b"written on A"
    for app in (host_a, host_b):
        assert not (Path(app.config["LABAPP"]["INSTANCE_PATH"]) / "files").exists()
    if store == "folder":
        assert any(path.is_file() for path in (tmp_path / "shared-files").rglob("*"))


WAIT_S = 30


def wait_until_waiting_on_a_lock(app: Flask, pid: int) -> None:
    """Return once the session ``pid`` waits on a lock, as PostgreSQL itself shows it
    (polled: PostgreSQL cannot notify it)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        with app.app_context(), db.engine.connect() as watcher:
            if watcher.scalar(text("SELECT wait_event_type = 'Lock' FROM pg_stat_activity "
                                   "WHERE pid = :pid"), {"pid": pid}):
                return
        time.sleep(0.01)
    raise AssertionError(f"session {pid} did not wait on a lock within {WAIT_S} s")


def write_in_thread(app: Flask, content: bytes) -> tuple[threading.Thread, queue.Queue[object]]:
    """A writer storing ``content`` on a connection of its own in another thread, which it
    commits; the queue receives its backend's pid, then its result (or its exception)."""
    results: queue.Queue[object] = queue.Queue()

    def run() -> None:
        try:
            with app.app_context(), db.engine.connect() as writer:
                with writer.begin():
                    results.put(writer.scalar(select(func.pg_backend_pid())))
                    results.put(content_rows.write(writer, BytesIO(content)))
        except Exception as error:  # handed to the test thread
            results.put(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, results


@needs_postgresql
def test_a_writer_waiting_on_the_collector_keeps_its_own_copy(
        lab: tuple[Flask, ApiClient]) -> None:
    app, _ = lab
    content = b"collected while uploaded again" * 50_000  # two pieces
    sha256 = plant(app, content, timedelta(hours=2))
    with app.app_context(), db.engine.connect() as collector:
        with collector.begin():
            assert content_rows.collect_garbage(collector, [sha256], 60, dry_run=False) \
                == [(sha256, len(content))]
            thread, results = write_in_thread(app, content)
            pid = results.get(timeout=WAIT_S)
            assert isinstance(pid, int)
            wait_until_waiting_on_a_lock(app, pid)  # on the row the collector deletes
        thread.join(WAIT_S)
    assert results.get_nowait() == (sha256, len(content))
    assert rows(app) == (1, 2)
    with app.app_context():
        found = content_of(sha256)
        assert found is not None
        with found.open() as file:
            assert file.read() == content


@needs_postgresql
def test_two_writers_of_the_same_bytes_at_once_store_them_once(
        lab: tuple[Flask, ApiClient]) -> None:
    app, _ = lab
    content = b"written twice at once" * 100_000  # three pieces
    with app.app_context(), db.engine.connect() as first:
        with first.begin():
            sha256, _ = content_rows.write(first, BytesIO(content))
            thread, results = write_in_thread(app, content)
            pid = results.get(timeout=WAIT_S)
            assert isinstance(pid, int)
            wait_until_waiting_on_a_lock(app, pid)  # on the first writer's new row
        thread.join(WAIT_S)
    assert results.get_nowait() == (sha256, len(content))
    assert rows(app) == (1, 3)  # the second writer dropped its own pieces


class MultipartBody:
    """A ``multipart/form-data`` body with one file part of ``Pieces(size)``, read as a
    stream (never whole in memory)."""

    BOUNDARY = "labapp-test-boundary"

    def __init__(self, size: int) -> None:
        self.pieces = Pieces(size)
        self.head = BytesIO(f"--{self.BOUNDARY}\r\nContent-Disposition: form-data; "
                            'name="file"; filename="large.bin"\r\nContent-Type: '
                            "application/octet-stream\r\n\r\n".encode())
        self.tail = BytesIO(f"\r\n--{self.BOUNDARY}--\r\n".encode())
        self.length = len(self.head.getvalue()) + size + len(self.tail.getvalue())

        self.position = 0  # only as Werkzeug's test client measures the body, before reading

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = 0) -> int:
        self.position = self.length + offset if whence == 2 else offset
        return self.position

    def read(self, size: int = -1, /) -> bytes:
        for part in (self.head, self.pieces, self.tail):
            block = part.read(size)
            if block:
                return block
        return b""


@needs_postgresql
def test_an_http_upload_of_a_large_file_streams_into_the_database(
        lab: tuple[Flask, ApiClient]) -> None:
    app, api = lab
    size = 32 * MIB
    body = MultipartBody(size)
    tracemalloc.start()
    try:
        response = api.post("/api/file", input_stream=body,
                            content_type=f"multipart/form-data; boundary={body.BOUNDARY}")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    entity = created(response)
    assert entity["size"] == size and entity["sha256"] == body.pieces.digest.hexdigest()
    assert peak < 8 * MIB, peak
    assert rows(app) == (1, 32)
