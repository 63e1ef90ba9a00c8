"""``flask --app labapp files gc``: what it removes from the content store and what never.

Each test has a database of its own with real commits (the garbage check reads committed File
rows) and a store of its own, into which it plants what crashes and older versions leave:
blobs nobody references, pins of dead processes, partial uploads.
"""
from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from collections.abc import Callable
from io import BytesIO
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner

from labapp.blobs import staged
from labapp.db import transaction
from labapp.users.service import create_user
from tests.conftest import PASSWORD, ApiClient, basic_header
from tests.files.conftest import created, fetch, upload

HOUR = 3600
SUMMARY = re.compile(r"(would remove|removed) (\d+) unreferenced blob\(s\), (\d+) bytes, of "
                     r"(\d+) checked; (\d+) stale pin\(s\); (\d+) abandoned partial upload\(s\)")


class Store:
    """The content store of one application, seen from outside."""

    def __init__(self, app: Flask) -> None:
        self.root = Path(app.config["LABAPP"]["INSTANCE_PATH"]) / "files"

    def path(self, content: bytes) -> Path:
        digest = hashlib.sha256(content).hexdigest()
        return self.root / digest[:2] / digest[2:4] / digest

    def plant(self, content: bytes, age_s: float = 0) -> Path:
        """Content as a crash or an earlier version leaves it: a blob no File names."""
        path = self.path(content)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        age(path, age_s)
        return path

    def plant_dead_pin(self, content: bytes) -> Path:
        """A pin (and its owner file) of a unit of work whose process died: no lock held."""
        token = secrets.token_hex(16)
        pins = self.root / ".pins"
        pins.mkdir(exist_ok=True)
        (pins / f"{token}.owner").touch()
        pin = pins / f"{self.path(content).name}.{token}"
        os.link(self.path(content), pin)
        return pin

    def plant_partial(self, age_s: float) -> Path:
        path = self.root / f".upload-{secrets.token_hex(4)}"
        path.write_bytes(b"half a file")
        age(path, age_s)
        return path

    def pins(self) -> list[str]:
        return sorted(path.name for path in (self.root / ".pins").glob("*"))


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def gc(runner: FlaskCliRunner, *args: str) -> tuple[list[str], tuple[str, ...]]:
    """Run the command; its ``would remove <digest>`` lines and its summary."""
    result = runner.invoke(args=["files", "gc", *args])
    assert result.exit_code == 0, result.output
    summary = SUMMARY.search(result.output)
    assert summary, result.output
    listed = re.findall(r"^would remove ([0-9a-f]{64}) \((\d+) bytes\)$", result.output,
                        re.MULTILINE)
    return sorted(digest for digest, _ in listed), summary.groups()


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


@pytest.fixture
def lab(fresh_app: Callable[..., Flask]) -> tuple[Flask, ApiClient]:
    """A new installation with one plain user, and a client of theirs."""
    app = fresh_app(initialised=True)
    with app.app_context(), transaction():
        create_user(username="lab", name="Lab", department_id="DEP00001", password=PASSWORD,
                    created_by="tests")
    return app, ApiClient(app.test_client(), basic_header("lab", PASSWORD), "basic")


def test_gc_removes_only_old_unreferenced_unpinned_content(
        lab: tuple[Flask, ApiClient]) -> None:
    app, api = lab
    store, runner = Store(app), app.test_cli_runner()
    referenced = created(upload(api, b"kept: a File names it"))
    age(store.path(b"kept: a File names it"), 2 * HOUR)
    old, dead_pinned, young, held = (b"old orphan", b"pinned by a dead process",
                                     b"young orphan", b"an upload in flight")
    store.plant(old, 2 * HOUR)
    store.plant(dead_pinned, 2 * HOUR)
    dead_pin = store.plant_dead_pin(dead_pinned)
    store.plant(young)
    old_partial, fresh_partial = store.plant_partial(2 * HOUR), store.plant_partial(0)
    garbage = sorted([digest(old), digest(dead_pinned)])
    garbage_bytes = str(len(old) + len(dead_pinned))

    dead_pins = store.pins()
    with app.app_context(), staged(BytesIO(held)):
        age(store.path(held), 2 * HOUR)
        live_pins = set(store.pins()) - set(dead_pins)  # the pin and its unit's owner file
        assert len(live_pins) == 2 and len(dead_pins) == 2

        listed, summary = gc(runner, "--dry-run")
        assert listed == garbage
        assert summary == ("would remove", "2", garbage_bytes, "5", "1", "1")
        assert all(store.path(content).exists() for content in (old, dead_pinned, young))
        assert dead_pin.exists() and old_partial.exists()

        listed, summary = gc(runner)
        assert listed == []
        assert summary == ("removed", "2", garbage_bytes, "5", "1", "1")
        assert not store.path(old).exists() and not store.path(dead_pinned).exists()
        assert store.path(young).exists() and store.path(held).exists()
        assert not dead_pin.exists() and set(store.pins()) == live_pins
        assert not old_partial.exists() and fresh_partial.exists()

        # With no grace at all, young content goes too, but never what is in flight.
        _, summary = gc(runner, "--grace-minutes", "0")
        assert summary == ("removed", "1", str(len(young)), "3", "0", "1")
        assert not store.path(young).exists() and store.path(held).exists()

    assert fetch(api, referenced["id"]).data == b"kept: a File names it"
    assert store.path(held).exists()  # the block ended without error: kept, as a commit is
    assert store.pins() == []
    assert not store.path(old).parent.exists()  # emptied folders go with their last blob
    _, summary = gc(runner, "--grace-minutes", "0")
    assert summary == ("removed", "1", str(len(held)), "2", "0", "0")
    _, summary = gc(runner)
    assert summary == ("removed", "0", "0", "1", "0", "0")


def test_gc_of_an_empty_store(lab: tuple[Flask, ApiClient]) -> None:
    app, _ = lab
    for args in (["--dry-run"], []):
        listed, summary = gc(app.test_cli_runner(), *args)
        assert listed == [] and summary[1:] == ("0", "0", "0", "0", "0")


def test_gc_rejects_a_negative_grace(lab: tuple[Flask, ApiClient]) -> None:
    app, _ = lab
    result = app.test_cli_runner().invoke(args=["files", "gc", "--grace-minutes", "-1"])
    assert result.exit_code == 2
    assert "--grace-minutes" in result.output
