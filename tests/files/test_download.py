"""``GET /api/file/{id}`` and ``/metadata``: exact bytes, safe headers, ranges, streaming, and
files created through the ``files`` property of ``POST /api/entity``."""
from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import update
from werkzeug.http import parse_options_header

from labapp.db import db, transaction
from labapp.model import File
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.files.conftest import (
    closed,
    created,
    fetch,
    save,
    store_files,
    upload,
    upload_base64,
)


def test_download_headers(api: ApiClient) -> None:
    entity = created(upload_base64(api, b"a;b\n1;2\n", "plate.csv", mediaType="text/csv"))

    response = fetch(api, entity["id"])

    assert response.status_code == 200
    assert response.data == b"a;b\n1;2\n"
    assert response.headers["Content-Type"] == "text/csv"
    assert response.headers["Content-Length"] == "8"
    assert parse_options_header(response.headers["Content-Disposition"]) == (
        "attachment", {"filename": "plate.csv"})
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response.headers["Content-Security-Policy"]
    assert response.headers["ETag"] == f'"{entity["sha256"]}"'
    assert "private" in response.headers["Cache-Control"]


@pytest.mark.parametrize(("name", "media_type"), [
    ("page.html", "text/html"),
    ("drawing.svg", "image/svg+xml"),
])
def test_active_content_is_never_served_inline(api: ApiClient, name: str,
                                               media_type: str) -> None:
    script = b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>"
    entity = created(upload(api, script, name, content_type=media_type))

    response = fetch(api, entity["id"])

    assert response.headers["Content-Type"] == media_type
    assert response.headers["Content-Disposition"].startswith("attachment;")
    assert response.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(("name", "sent"), [
    ("résumé final.txt", "résumé final.txt"),
    ("日本語.csv", "日本語.csv"),
    ('say "hi"; filename=evil.exe', 'say "hi"; filename=evil.exe'),
    ("report\r\nSet-Cookie: stolen=1.txt", "reportSet-Cookie: stolen=1.txt"),
    ("../../etc/passwd", "passwd"),
    ("..\\..\\windows\\win.ini", "win.ini"),
    ("a\u202etxt.exe", "atxt.exe"),
], ids=["accents", "cjk", "quotes", "crlf", "slashes", "backslashes", "rtl-override"])
def test_content_disposition_is_safe(api: ApiClient, name: str, sent: str) -> None:
    entity = created(upload_base64(api, b"x", name, mediaType="text/plain"))
    assert entity["name"] == name

    response = fetch(api, entity["id"])

    header = response.headers["Content-Disposition"]
    assert header.isascii() and "\r" not in header and "\n" not in header
    assert parse_options_header(header) == ("attachment", {"filename": sent})
    assert "Set-Cookie" not in response.headers


def test_a_name_with_nothing_usable_downloads_as_the_id(api: ApiClient) -> None:
    entity = created(upload_base64(api, b"x", "..", mediaType="text/csv"))

    response = fetch(api, entity["id"])

    assert parse_options_header(response.headers["Content-Disposition"])[1] == {
        "filename": f"{entity['id']}.csv"}


def test_range_and_conditional_requests(api: ApiClient) -> None:
    content = bytes(range(100))
    entity = created(upload(api, content, "ramp.bin"))

    part = fetch(api, entity["id"], headers={"Range": "bytes=10-19"})
    unchanged = fetch(api, entity["id"], headers={"If-None-Match": f'"{entity["sha256"]}"'})

    assert part.status_code == 206 and part.data == content[10:20]
    assert part.headers["Content-Range"] == "bytes 10-19/100"
    assert unchanged.status_code == 304 and unchanged.data == b""


def test_a_large_file_is_streamed_in_chunks(app: Flask, api: ApiClient) -> None:
    content = os.urandom(5 * 1024 * 1024)
    entity = created(upload(api, content, "scan.tiff"))
    assert entity["size"] == len(content)
    assert entity["sha256"] == hashlib.sha256(content).hexdigest()

    with api.get(f"/api/file/{entity['id']}", buffered=False) as response:
        chunks = list(response.iter_encoded())

    assert response.status_code == 200 and response.headers["Content-Length"] == str(
        len(content))
    assert len(chunks) > 1 and max(map(len, chunks)) < len(content)
    assert b"".join(chunks) == content
    assert not [path for path in store_files(app) if path.name.startswith(".upload-")]


def test_metadata_is_the_file_entity(api: ApiClient) -> None:
    entity = created(upload(api, b"x", "notes.txt", description="first"))

    response = api.get(f"/api/file/{entity['id']}/metadata")

    assert response.status_code == 200 and response.mimetype == "application/json"
    assert response.get_json() == entity
    detail = api.get(f"/api/entity/File/{entity['id']}").get_json()
    assert {key: detail[key] for key in entity} == entity


def test_files_property_of_post_entity_lands_in_the_same_store(app: Flask,
                                                               api: ApiClient) -> None:
    content = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    sample = save(api, {"eClass": "Sample", "name": "S1", "files": [
        {"name": "gel.png", "content": base64.b64encode(content).decode(),
         "mediaType": "image/png"}]})
    file_id = api.get(f"/api/entity/Sample/{sample['id']}").get_json()["files"][0]["id"]

    response = fetch(api, file_id)
    uploaded = created(upload(api, content, "same-gel.png"))

    assert response.status_code == 200 and response.data == content
    assert response.headers["Content-Type"] == "image/png"
    assert uploaded["sha256"] == hashlib.sha256(content).hexdigest()
    assert [path for path in store_files(app) if path.name == uploaded["sha256"]] == [
        Path(app.config["LABAPP"]["INSTANCE_PATH"], "files", uploaded["sha256"][:2],
             uploaded["sha256"][2:4], uploaded["sha256"])]


def test_a_malformed_stored_media_type_is_served_as_octet_stream(app: Flask,
                                                                 api: ApiClient) -> None:
    """No API stores one any more, but rows from older versions or imports might."""
    sample = save(api, {"eClass": "Sample", "files": [
        {"name": "x.txt", "content": "eA==", "mediaType": "text/plain"}]})
    file_id = api.get(f"/api/entity/Sample/{sample['id']}").get_json()["files"][0]["id"]
    with app.app_context(), transaction():
        db.session.execute(update(File).where(File.id == file_id)
                           .values(media_type="text/html\r\nX-Injected: 1"))

    response = fetch(api, file_id)

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/octet-stream"
    assert "X-Injected" not in response.headers


def test_unknown_id_non_file_and_file_without_content_are_404(api: ApiClient) -> None:
    sample = save(api, {"eClass": "Sample"})
    empty = save(api, {"eClass": "File", "name": "placeholder.txt"})

    for file_id in ("FIL99999", sample["id"]):
        assert_problem(closed(api.get(f"/api/file/{file_id}")), 404, "not_found")
        assert_problem(api.get(f"/api/file/{file_id}/metadata"), 404, "not_found")
    assert_problem(closed(api.get(f"/api/file/{empty['id']}")), 404, "not_found")
    assert api.get(f"/api/file/{empty['id']}/metadata").get_json()["sha256"] is None
