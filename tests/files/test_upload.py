"""``POST /api/file``: both encodings, defaults, deduplicated storage and every bad input.

A rejected upload writes no row (and leaves no content in the store: test_orphans.py).
"""
from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from labapp.db import transaction
from labapp.files.service import clean_filename
from labapp.users.service import create_user
from tests.conftest import PASSWORD, ApiClient, basic_header, csrf_of, login
from tests.contracts.problem import assert_problem
from tests.files.conftest import (
    created,
    fetch,
    row_counts,
    save,
    store_files,
    upload,
    upload_base64,
)

BINARY = bytes(range(256)) * 64 + b"\r\n\x00\xff"
FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize("content", [BINARY, b""], ids=["binary", "empty"])
@pytest.mark.parametrize("send", [upload, upload_base64], ids=["multipart", "base64"])
def test_upload_round_trips_the_exact_bytes(api: ApiClient, send: Callable[..., TestResponse],
                                            content: bytes) -> None:
    entity = created(send(api, content, "data.bin"))

    assert entity["eClass"] == "File" and entity["id"].startswith("FIL")
    assert entity["name"] == "data.bin"
    assert entity["size"] == len(content)
    assert entity["sha256"] == hashlib.sha256(content).hexdigest()
    assert entity["mediaType"] == "application/octet-stream"
    assert entity["departmentID"] == "DEP00001" and entity["subjectID"] is None
    assert fetch(api, entity["id"]).data == content


def test_identical_content_is_stored_once(app: Flask, api: ApiClient) -> None:
    content = b"the same measurement, uploaded twice " + BINARY

    first = created(upload(api, content, "first.bin"))
    second = created(upload_base64(api, content, "second.bin"))

    assert first["id"] != second["id"]
    assert first["sha256"] == second["sha256"]
    blobs = [path for path in store_files(app) if path.name == first["sha256"]]
    assert len(blobs) == 1 and blobs[0].read_bytes() == content
    assert blobs[0].parent.name == first["sha256"][2:4]
    assert blobs[0].parent.parent.name == first["sha256"][:2]
    assert not [path for path in store_files(app) if path.name.startswith(".upload-")]


def test_optional_fields_are_stored_and_the_subject_lends_its_department(
        api: ApiClient) -> None:
    sample = save(api, {"eClass": "Sample", "name": "S1"})

    entity = created(upload(api, b"a,b\n1,2\n", "raw.csv", name="Plate 1 results",
                            description="Reader export", type="Raw data",
                            mediaType="text/csv; charset=utf-8", subjectID=sample["id"]))

    assert entity["name"] == "Plate 1 results"
    assert entity["description"] == "Reader export" and entity["type"] == "Raw data"
    assert entity["mediaType"] == "text/csv; charset=utf-8"
    assert (entity["subjectClass"], entity["subjectID"]) == ("Sample", sample["id"])
    assert entity["departmentID"] == sample["departmentID"]
    detail = api.get(f"/api/entity/Sample/{sample['id']}").get_json()
    assert [file["id"] for file in detail["files"]] == [entity["id"]]
    assert "FileAdded" in {event["kind"] for event in detail["events"]}


def test_blank_optional_fields_count_as_absent(api: ApiClient) -> None:
    entity = created(upload(api, b"x", "notes.txt", name="", mediaType="", subjectID="",
                            type="", description=""))

    assert entity["name"] == "notes.txt" and entity["mediaType"] == "text/plain"
    assert entity["subjectID"] is None and entity["description"] is None
    assert entity["type"] == "Other"


@pytest.mark.parametrize(("filename", "part_type", "fields", "expected"), [
    ("plate.dat", "text/csv", {}, "text/csv"),
    ("image.png", "application/octet-stream", {}, "image/png"),
    ("blob.unknown-extension", "application/octet-stream", {}, "application/octet-stream"),
    ("data.csv", "text/plain", {"mediaType": "application/json"}, "application/json"),
    ("page.html", "text/html", {}, "text/html"),
], ids=["part-type", "guessed", "unknown", "explicit", "html-is-kept"])
def test_multipart_media_type(api: ApiClient, filename: str, part_type: str,
                              fields: dict[str, str], expected: str) -> None:
    entity = created(upload(api, b"x", filename, content_type=part_type, **fields))

    assert entity["mediaType"] == expected


def test_base64_media_type_is_given_or_guessed_from_the_name(api: ApiClient) -> None:
    assert created(upload_base64(api, b"x", "a.csv"))["mediaType"] == "text/csv"
    assert created(upload_base64(api, b"x", "a.csv", mediaType="text/plain")
                   )["mediaType"] == "text/plain"


@pytest.mark.parametrize(("filename", "expected"), [
    ("../../etc/passwd", "passwd"),
    ("dir/sub/résumé final.txt", "résumé final.txt"),
    ("  spaced.txt  ", "spaced.txt"),
])
def test_default_name_is_the_cleaned_file_name(api: ApiClient, filename: str,
                                               expected: str) -> None:
    assert created(upload(api, b"x", filename))["name"] == expected


@pytest.mark.parametrize(("raw", "expected"), [
    ("C:\\Users\\me\\report.pdf", "report.pdf"),
    ("a\r\nSet-Cookie: x=1.txt", "aSet-Cookie: x=1.txt"),
    ("invoice\u202egpj.exe", "invoicegpj.exe"),
    ("nul\x00and\ttab\u2028.txt", "nulandtab.txt"),
    ("..", ""), ("...", ""), ("dir/", ""), ("\r\n", ""),
    ("日本語 ファイル.csv", "日本語 ファイル.csv"),
])
def test_clean_filename(raw: str, expected: str) -> None:
    assert clean_filename(raw) == expected


def _multipart_without_file(api: ApiClient) -> TestResponse:
    return api.post("/api/file", data={"name": "x"}, content_type="multipart/form-data")


def _file_as_text(api: ApiClient) -> TestResponse:
    return api.post("/api/file", data={"file": "not a part"}, content_type="multipart/form-data")


def _no_file_chosen(api: ApiClient) -> TestResponse:
    """What a browser sends for an empty file input: a part with an empty file name."""
    return upload(api, b"", "")


def _raw_form(body: str) -> Callable[[ApiClient], TestResponse]:
    return lambda api: api.post("/api/file", data=body, content_type=FORM)


BAD_INPUT = {
    "multipart-no-file": (_multipart_without_file, "validation_failed", "file"),
    "multipart-file-as-text": (_file_as_text, "validation_failed", "file"),
    "multipart-no-file-chosen": (_no_file_chosen, "validation_failed", "file"),
    "multipart-unusable-file-name": (lambda api: upload(api, b"x", ".."),
                                     "validation_failed", "name"),
    "multipart-unknown-field": (lambda api: upload(api, b"x", subjectId="SAM00001"),
                                "validation_failed", "subjectId"),
    "multipart-bad-media-type": (lambda api: upload(api, b"x", mediaType="text"),
                                 "validation_failed", "mediaType"),
    "multipart-name-too-long": (lambda api: upload(api, b"x", name="n" * 256),
                                "invalid_entity", "name"),
    "multipart-type-too-long": (lambda api: upload(api, b"x", type="t" * 65),
                                "invalid_entity", "type"),
    "multipart-unknown-subject": (lambda api: upload(api, b"x", subjectID="SAM99999"),
                                  "invalid_entity", "subjectID"),
    "base64-no-name": (_raw_form("content=eA%3D%3D"), "validation_failed", "name"),
    "base64-blank-name": (_raw_form("name=+&content=eA%3D%3D"), "validation_failed", "name"),
    "base64-no-content": (_raw_form("name=a.txt"), "validation_failed", "content"),
    "base64-bad-content": (_raw_form("name=a.txt&content=not*base64"),
                           "validation_failed", "content"),
    "base64-bad-padding": (_raw_form("name=a.txt&content=eA"), "validation_failed", "content"),
    "base64-unescaped-plus": (_raw_form("name=a.txt&content=ab+/"),
                              "validation_failed", "content"),
    "base64-header-in-media-type": (
        _raw_form("name=a.txt&content=eA%3D%3D&mediaType=text/html%0D%0AX-Evil:%201"),
        "validation_failed", "mediaType"),
    "base64-twice": (_raw_form("name=a.txt&name=b.txt&content=eA%3D%3D"),
                     "validation_failed", "name"),
    "base64-name-too-long": (lambda api: upload_base64(api, b"x", "n" * 256),
                             "invalid_entity", "name"),
    "base64-unknown-subject": (lambda api: upload_base64(api, b"x", subjectID="nope"),
                               "invalid_entity", "subjectID"),
}


@pytest.mark.parametrize(("send", "code", "field"), BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_is_400_naming_the_field_and_writes_no_row(
        app: Flask, api: ApiClient, send: Callable[[ApiClient], TestResponse], code: str,
        field: str) -> None:
    before = row_counts(app)

    body = assert_problem(send(api), 400, code, errors=True)

    assert field in {entry["field"] for entry in body["errors"]}, body
    assert "entities" not in body["detail"]
    assert row_counts(app) == before


def test_unescaped_plus_gets_a_hint(api: ApiClient) -> None:
    body = assert_problem(_raw_form("name=a.txt&content=ab+/")(api), 400,
                          "validation_failed", errors=True)

    assert "%2B" in body["errors"][0]["message"]


def test_base64_may_be_wrapped_in_lines(api: ApiClient) -> None:
    content = BINARY[:300]
    encoded = base64.encodebytes(content).decode()
    assert "\n" in encoded

    entity = created(api.post("/api/file", data={"name": "wrapped.bin", "content": encoded},
                                content_type=FORM))

    assert fetch(api, entity["id"]).data == content


@pytest.mark.parametrize(("data", "content_type"), [
    ('{"name": "a.txt", "content": "eA=="}', "application/json"),
    ("just text", "text/plain"),
    ("", None),
], ids=["json", "text", "no-body"])
def test_other_content_types_are_415(app: Flask, api: ApiClient, data: str,
                                     content_type: str | None) -> None:
    before = row_counts(app)

    body = assert_problem(api.post("/api/file", data=data, content_type=content_type), 415,
                          "unsupported_media_type")

    assert "multipart/form-data" in body["detail"]
    assert row_counts(app) == before


def test_anonymous_upload_is_401(client: FlaskClient) -> None:
    response = client.post("/api/file", data={"name": "a.txt", "content": "eA=="},
                           content_type=FORM)

    assert_problem(response, 401, "not_authenticated")


def test_cookie_upload_needs_the_csrf_token_as_a_field_or_header(
        app: Flask, client: FlaskClient, make_user: Callable[..., str]) -> None:
    make_user("carol")
    login(client, "carol")
    fields = {"name": "a.txt", "content": "eA=="}
    before = row_counts(app)

    assert_problem(client.post("/api/file", data=fields, content_type=FORM), 403, "csrf_failed")
    assert row_counts(app) == before
    with_field = client.post("/api/file", data={**fields, "csrf_token": csrf_of(client)},
                             content_type=FORM)
    with_header = client.post("/api/file", data=fields, content_type=FORM,
                              headers={"X-CSRF-Token": csrf_of(client)})

    assert created(with_field)["createdBy"] == "carol"
    assert created(with_header)["createdBy"] == "carol"


def test_upload_over_the_limit_is_413_and_stores_nothing(
        fresh_app: Callable[..., Flask]) -> None:
    application = fresh_app(initialised=True, MAX_UPLOAD_MB=1)
    with application.app_context(), transaction():
        create_user(username="plain", name="Plain", department_id="DEP00001",
                    password=PASSWORD, created_by="tests")
    api = ApiClient(application.test_client(), basic_header("plain", PASSWORD), "basic")
    oversized = b"x" * (1024 * 1024)

    multipart = upload(api, oversized, "big.bin")
    base64_form = upload_base64(api, oversized, "big.bin")
    fitting = created(upload(api, oversized[:512 * 1024], "half.bin"))

    assert_problem(multipart, 413, "payload_too_large")
    assert_problem(base64_form, 413, "payload_too_large")
    assert fitting["size"] == 512 * 1024
    assert row_counts(application)["file"] == 1
    assert [path.name for path in store_files(application)] == [fitting["sha256"]]


@pytest.mark.parametrize("name", ["#1 plate.csv", "#notes.txt", "!Sample"])
def test_any_file_name_is_kept_as_given(api: ApiClient, name: str) -> None:
    assert created(upload_base64(api, b"x", name))["name"] == name
