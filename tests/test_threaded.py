"""One application under a threaded server (as ``flask run`` and gunicorn's gthread serve it):
several clients read and write over real HTTP while an administrator's sync brings in an
extension model. No request fails, and every answer shows one whole model, the new one
from the moment the sync returned."""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask

from tests.conftest import ADMIN_PASSWORD, serving
from tests.datamodel.conftest import LAB_EXTENSION

CLIENTS = 4
ROUNDS = 3  # rounds each client makes before the sync and again after it returned


def _model(body: dict[str, Any]) -> str:
    """``"old"`` or ``"new"`` for a whole model; anything else names what is torn."""
    classes = {spec["name"]: spec for spec in body["classes"]}
    sample_fields = {field["apiName"] for field in classes["Sample"]["fields"]}
    seen = ("TaxonomyItem" in classes, "Genome" in classes, "genomeID" in sample_fields,
            classes.get("Genome", {}).get("parentLinks") == ["taxonomyID"])
    return {(False,) * 4: "old", (True,) * 4: "new"}.get(seen, f"torn {seen}")


class Client(threading.Thread):
    """Rounds of reads and writes until told to stop; what went wrong, and the model
    seen by each round."""

    def __init__(self, base: str, token: str, number: int) -> None:
        super().__init__(name=f"client-{number}")
        self.base, self.number = base, number
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.stop = threading.Event()
        self.rounds: list[str] = []
        self.errors: list[str] = []
        self.done = threading.Condition()

    def _call(self, method: str, path: str, expected: int, **options: Any) -> Any:
        response = self.session.request(method, self.base + path, timeout=120, **options)
        if response.status_code != expected:
            self.errors.append(f"{method} {path}: {response.status_code} {response.text[:300]}")
        return response

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                model = _model(self._call("GET", "/api/datamodel", 200).json())
                self._call("POST", "/api/entity", 201, json={"entities": [
                    {"eClass": "Sample", "name": f"c{self.number} r{len(self.rounds)}"}]})
                self._call("GET", "/api/entity/Sample?$top=5", 200)
                self._call("GET", "/static/app.css", 200)
                with self.done:
                    self.rounds.append(model)
                    self.done.notify_all()
        except Exception as error:  # noqa: BLE001  (reported by the test, not lost in a thread)
            self.errors.append(repr(error))
        finally:
            self.session.close()

    def wait_rounds(self, count: int) -> None:
        """Block until this client has made ``count`` rounds (or failed)."""
        with self.done:
            finished = self.done.wait_for(
                lambda: len(self.rounds) >= count or self.errors or not self.is_alive(),
                timeout=120)
        assert finished, f"{self.name} made {len(self.rounds)} rounds in 120 s"


def test_concurrent_requests_across_a_sync(fresh_app: Callable[..., Flask],
                                           caplog: pytest.LogCaptureFixture) -> None:
    app = fresh_app(initialised=True)
    with serving(app) as base:
        token = requests.post(f"{base}/api/auth/login", timeout=60, json={
            "username": "admin", "password": ADMIN_PASSWORD}).json()["accessToken"]
        clients = [Client(base, token, number) for number in range(CLIENTS)]
        for client in clients:
            client.start()
        try:
            for client in clients:
                client.wait_rounds(ROUNDS)
            folder = Path(app.instance_path) / "datamodel"
            folder.mkdir()
            (folder / "lab.json").write_text(json.dumps(LAB_EXTENSION))
            synced = requests.post(f"{base}/api/sync", timeout=300,
                                   headers={"Authorization": f"Bearer {token}"})
            assert synced.status_code == 200, synced.text
            assert synced.json()["tables"] == ["x_taxonomy_item", "x_genome"]
            after = [len(client.rounds) for client in clients]
            for client, count in zip(clients, after, strict=True):
                client.wait_rounds(count + ROUNDS + 1)  # +1: a round in flight at the return
            genome = requests.post(f"{base}/api/entity", timeout=60, headers={
                "Authorization": f"Bearer {token}"}, json={"entities": [
                    {"eClass": "Genome", "name": "after the sync", "sizeMb": 2.5}]})
            assert genome.status_code == 201, genome.text
        finally:
            for client in clients:
                client.stop.set()
            for client in clients:
                client.join(timeout=120)
    assert "unhandled error" not in caplog.text, caplog.text
    for client, count in zip(clients, after, strict=True):
        assert client.errors == [], client.errors
        assert set(client.rounds) <= {"old", "new"}, client.rounds
        assert client.rounds[:ROUNDS] == ["old"] * ROUNDS
        # A round that began before the sync returned may show either model; every later
        # one shows the new model, and once a client has seen it, it never sees the old.
        assert client.rounds[count + 1:] == ["new"] * (len(client.rounds) - count - 1)
        assert "old" not in client.rounds[client.rounds.index("new"):]
