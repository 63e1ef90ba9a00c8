"""After a sync made by one worker, every worker serves the new model (extension classes
listed, created, read) from its next request, without a restart: workers that served
requests before the sync and workers whose first request comes after it, in one process
(several applications on one instance) and as two real gunicorn workers."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from flask import Flask

from bench.server import Server, free_port
from tests.conftest import SECRET_KEY, build_app, dispose
from tests.datamodel.conftest import LAB_EXTENSION, admin_client
from tests.helpers.processes import call, wait_for

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 24


def classes(server: Server) -> set[str]:
    status, body = call(server, "GET", "/api/datamodel")
    assert status == 200, body
    return {item["name"] for item in body["classes"]}


def test_workers_started_before_a_sync_serve_its_model_next(
        fresh_app: Callable[..., Flask]) -> None:
    syncing = fresh_app(initialised=True)
    settings = syncing.config["LABAPP"]
    # Two more workers on the same instance and database, started before the files exist.
    served_before, first_request_after = (
        build_app(Path(settings["INSTANCE_PATH"]), settings["DATABASE_URL"]) for _ in range(2))
    try:
        early = admin_client(served_before)
        assert early.get("/api/datamodel").status_code == 200
        folder = Path(settings["INSTANCE_PATH"]) / "datamodel"
        folder.mkdir()
        (folder / "lab.json").write_text(json.dumps(LAB_EXTENSION))
        assert admin_client(syncing).post("/api/sync").status_code == 200

        for client in (early, admin_client(first_request_after)):
            response = client.post("/api/entity", json={"entities": [
                {"eClass": "Genome", "name": "followed", "sizeMb": 1.5}]})
            assert response.status_code == 201, response.get_json()
    finally:
        dispose(served_before)
        dispose(first_request_after)


def test_every_worker_follows_a_sync(fresh_app: Callable[..., Flask], tmp_path: Path) -> None:
    application = fresh_app(initialised=True)
    settings = application.config["LABAPP"]
    access_log = tmp_path / "access.log"
    port = free_port()
    env = {**os.environ, "LABAPP_INSTANCE_PATH": settings["INSTANCE_PATH"],
           "LABAPP_DATABASE_URL": settings["DATABASE_URL"], "LABAPP_SECRET_KEY": SECRET_KEY}
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "2",
         "--timeout", "300", "--log-level", "warning", "--access-logfile", str(access_log),
         "--access-logformat", "%(p)s %(U)s", "labapp:create_app()"],
        env=env, cwd=ROOT, start_new_session=True)
    server = Server("127.0.0.1", port)

    def answering() -> bool:
        try:
            return call(server, "GET", "/api/datamodel")[0] == 200
        except OSError:
            assert process.poll() is None, "gunicorn exited"
            return False

    try:
        wait_for(answering, "gunicorn to answer")
        assert all("Genome" not in classes(server) for _ in range(ROUNDS))

        folder = Path(settings["INSTANCE_PATH"]) / "datamodel"
        folder.mkdir()
        (folder / "lab.json").write_text(json.dumps(LAB_EXTENSION))
        status, report = call(server, "POST", "/api/sync")
        assert status == 200, report
        assert report["tables"] == ["x_taxonomy_item", "x_genome"]

        # The sync has returned: every worker serves the new model from its next request.
        assert all("Genome" in classes(server) for _ in range(ROUNDS))
        numbers = iter(range(10_000))

        def a_genome_round_trip() -> None:
            number = next(numbers)
            status, body = call(server, "POST", "/api/entity", {"entities": [
                {"eClass": "Genome", "name": f"genome {number}", "sizeMb": number}]})
            assert status == 201, body
            status, body = call(server, "GET", f"/api/entity/Genome/{body['entities'][0]['id']}")
            assert status == 200 and body["sizeMb"] == number

        def workers_that_served_genomes() -> set[str]:
            return {line.split()[0] for line in access_log.read_text().splitlines()
                    if "/api/entity" in line}

        # Which worker accepts a connection is the kernel's choice: create and read Genomes
        # until both workers have served some (each round checks what it got).
        for _ in range(ROUNDS):
            a_genome_round_trip()
        wait_for(lambda: a_genome_round_trip() or len(workers_that_served_genomes()) == 2,
                 "both workers to serve the new class", timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
