"""``flask sync restore``: checked first, into an empty database, exactly what was exported —
across the two databases, which is how a lab moves from SQLite to PostgreSQL."""
from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import func, inspect, select, update

from labapp import sealing
from labapp.auth import second_factor
from labapp.db import db, transaction
from labapp.exports import service
from labapp.model import Entity, SecondFactor
from tests.auth.factors import code
from tests.conftest import BACKEND, ApiClient, basic_header
from tests.sync.conftest import admin_api, decoded, populate, restore, save


def _rows(app: Flask) -> dict[str, int]:
    with app.app_context():
        return {table.name: db.session.scalar(select(func.count()).select_from(table))
                for table in service.exported_tables()}


def _foreign_keys(app: Flask) -> set[tuple[str, tuple[str, ...], str]]:
    with app.app_context():
        inspector = inspect(db.engine)
        return {(table.name, tuple(key["constrained_columns"]), key["referred_table"])
                for table in service.exported_tables()
                for key in inspector.get_foreign_keys(table.name)}


def _blobs(app: Flask) -> list[Path]:
    root = Path(app.config["LABAPP"]["INSTANCE_PATH"]) / "files"
    return [path for path in root.rglob("*") if path.is_file() and len(path.name) == 64]


@pytest.mark.parametrize(("source", "target"), [("sqlite", "postgresql"),
                                                ("postgresql", "sqlite")])
def test_export_restore_export_is_identical_across_databases(
        lab: Callable[..., Flask], source: str, target: str) -> None:
    origin = lab(source)
    made = populate(origin)
    first = save(origin)
    moved = lab(target, init=False)
    result = restore(moved, first)
    assert result.exit_code == 0, result.output
    assert "checksums verified" in result.output
    second = save(moved)
    assert decoded(second) == decoded(first)
    assert _foreign_keys(moved) == _foreign_keys(origin)  # re-created after the load

    # The restored installation works: logins, files, id sequences and integer keys go on.
    api = admin_api(moved)
    [file_row] = decoded(second)["tables"]["file"]
    download = api.get(f"/api/file/{file_row['id']}")
    assert download.data == made["content"]
    download.close()
    carol = ApiClient(moved.test_client(), basic_header("carol", "a long password 1"), "basic")
    assert carol.get("/api/notification/unread").status_code == 200
    before = {row["id"] for row in decoded(first)["tables"]["sample"]}
    response = api.post("/api/entity", json={"entities": [{"eClass": "Sample"}]})
    assert response.status_code == 201, response.get_data(as_text=True)
    new_id = response.get_json()["entities"][0]["id"]
    assert new_id not in before and new_id == f"SAM{len(before) + 1:05d}"
    sequences = {item["id"]: item for item in api.get("/api/sequence").get_json()}
    assert sequences["Batch"]["nextValue"] == 42
    assert sequences["Sample"]["nextValue"] == len(before) + 2


def test_a_database_that_is_not_empty_is_refused_unless_forced(
        lab: Callable[..., Flask]) -> None:
    origin = lab()
    populate(origin)
    export = save(origin)
    target = lab()  # `flask init` made the admin, a department, roles and sequences
    before = _rows(target)
    result = restore(target, export)
    assert result.exit_code != 0
    assert "not empty" in result.output and "--force" in result.output
    assert _rows(target) == before

    forced = restore(target, export, "--force")
    assert forced.exit_code == 0, forced.output
    assert decoded(save(target)) == decoded(export)


def _rewritten(export: Path, old: bytes, new: bytes) -> Path:
    data = gzip.decompress(export.read_bytes())
    assert old in data
    changed = export.with_name("changed.jsonl.gz")
    changed.write_bytes(gzip.compress(data.replace(old, new, 1)))
    return changed


@pytest.mark.parametrize(("old", "new", "message"), [
    (b'"Child"', b'"Chilt"', "checksum of table 'entity'"),
    (b'"mL"', b'"uL"', "checksum of table 'audit_event'"),  # the first mL
    (b'"format":"labapp-export"', b'"format":"labapp-export","x":1', "SHA-256 of the export"),
    (b"\n", b"\n[1]\n", "a row outside a table"),
])
def test_a_corrupted_export_is_refused_with_nothing_written(
        lab: Callable[..., Flask], old: bytes, new: bytes, message: str) -> None:
    origin = lab()
    populate(origin)
    export = save(origin)
    target = lab(init=False)
    result = restore(target, _rewritten(export, old, new))
    assert result.exit_code != 0
    assert message in result.output
    assert not any(_rows(target).values())
    assert not _blobs(target)


def test_a_changed_file_content_or_a_cut_export_is_refused(lab: Callable[..., Flask]) -> None:
    origin = lab()
    populate(origin)
    export = save(origin)
    data = gzip.decompress(export.read_bytes())
    lines = data.splitlines(keepends=True)
    blob_line = next(i for i, line in enumerate(lines) if line.startswith(b'{"blob"')) + 1
    changed = list(lines)
    changed[blob_line] = b'"' + b"A" * (len(lines[blob_line]) - 3) + b'"\n'
    target = lab(init=False)
    bad_blob = export.with_name("blob.jsonl.gz")
    bad_blob.write_bytes(gzip.compress(b"".join(changed)))
    result = restore(target, bad_blob)
    assert result.exit_code != 0 and "does not match its SHA-256" in result.output

    cut = export.with_name("cut.jsonl.gz")
    cut.write_bytes(gzip.compress(b"".join(lines[:-1])))
    result = restore(target, cut)
    assert result.exit_code != 0 and "no manifest" in result.output

    truncated = export.with_name("truncated.jsonl.gz")
    truncated.write_bytes(export.read_bytes()[:-40])
    result = restore(target, truncated)
    assert result.exit_code != 0 and "cannot be read" in result.output
    assert not any(_rows(target).values())
    assert not _blobs(target)


def test_a_file_that_is_not_an_export_is_refused(lab: Callable[..., Flask],
                                                 tmp_path: Path) -> None:
    target = lab(init=False)
    other = tmp_path / "other.jsonl.gz"
    other.write_bytes(gzip.compress(b'{"hello": "world"}\n'))
    result = restore(target, other)
    assert result.exit_code != 0 and "not a labapp export" in result.output


def test_sync_save_command_writes_an_export(lab: Callable[..., Flask]) -> None:
    app = lab()
    result = app.test_cli_runner().invoke(args=["sync", "save"])
    assert result.exit_code == 0, result.output
    assert "wrote labapp-export-" in result.output
    with app.app_context():
        entities = db.session.scalar(select(func.count()).select_from(Entity))
    [listed] = service.list_exports(app.config["LABAPP"]["INSTANCE_PATH"])
    assert listed.entities == entities


@pytest.mark.skipif(BACKEND != "postgresql", reason="the database store is PostgreSQL's alone")
@pytest.mark.parametrize(("source", "target"), [("database", "database"),
                                                ("database", "folder"),
                                                ("folder", "database")])
def test_file_contents_of_the_database_store_are_exported_and_restored(
        lab: Callable[..., Flask], source: str, target: str) -> None:
    """An export holds the contents whatever the store (``flask sync save`` and the API write
    the same file); restoring it into the other store is how an install moves between them."""
    origin = lab(FILE_STORE=source)
    made = populate(origin)
    result = origin.test_cli_runner().invoke(args=["sync", "save"])
    assert result.exit_code == 0, result.output
    [first] = sorted((Path(origin.config["LABAPP"]["INSTANCE_PATH"]) / "sync").glob("*.gz"))
    exported = decoded(first)
    [file_row] = exported["tables"]["file"]
    assert exported["blobs"] == {file_row["sha256"]: made["content"]}
    assert "file_content" not in exported["tables"]
    assert "file_content_chunk" not in exported["tables"]
    assert bool(_blobs(origin)) == (source == "folder")

    moved = lab(init=False, FILE_STORE=target)
    restored = restore(moved, first)
    assert restored.exit_code == 0, restored.output
    assert bool(_blobs(moved)) == (target == "folder")
    download = admin_api(moved).get(f"/api/file/{file_row['id']}")
    assert download.status_code == 200 and download.data == made["content"]
    download.close()
    assert decoded(save(moved))["blobs"] == exported["blobs"]


def test_a_second_factor_kept_in_clear_by_an_older_backup_is_sealed_by_the_restore(
        lab: Callable[..., Flask]) -> None:
    origin = lab(BACKEND)
    populate(origin)
    with origin.app_context(), transaction():
        pending = second_factor.begin_enrolment("carol")
        second_factor.confirm_enrolment("carol", code(pending, -1))
        # As labapp kept it before the secrets were sealed.
        db.session.execute(update(SecondFactor).values(secret=pending))
    moved = lab(BACKEND, init=False)
    result = restore(moved, save(origin))
    assert result.exit_code == 0, result.output
    with moved.app_context():
        stored = db.session.scalars(select(SecondFactor.secret)).one()
        assert sealing.is_sealed(stored) and pending not in stored
    with moved.app_context(), transaction():
        assert second_factor.verify("carol", code(pending)) == second_factor.TOTP
