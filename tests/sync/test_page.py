"""The exports page: ADMIN only; Save runs the export in the background and the page polls
its progress until the new export is listed with a download link."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable

from flask import Flask
from flask.testing import FlaskClient

from labapp.exports import progress
from labapp.exports.service import ExportResult, Progress, export_folder
from tests.conftest import ADMIN_PASSWORD
from tests.helpers.pages import page_login, post_form


def _signed_in(app: Flask, username: str, password: str) -> FlaskClient:
    client = app.test_client()
    assert page_login(client, username, password).status_code == 303
    return client


def _wait_for_export() -> None:
    """Wait until the background export thread has ended (the condition, not a time)."""
    for thread in threading.enumerate():
        if thread.name == "labapp-export":
            thread.join(timeout=60)
            assert not thread.is_alive()


def test_save_runs_in_the_background_and_is_listed(lab: Callable[..., Flask]) -> None:
    app = lab()
    admin = _signed_in(app, "admin", ADMIN_PASSWORD)
    page = admin.get("/admin/exports")
    assert page.status_code == 200
    assert page.headers["Cache-Control"] == "no-store"
    assert 'id="no-exports"' in page.get_data(as_text=True)

    started = post_form(admin, "/admin/exports/save", headers={"HX-Request": "true"})
    assert started.status_code == 200
    block = started.get_data(as_text=True)
    assert block.strip().startswith('<section class="card" id="exports"')
    _wait_for_export()
    state = progress.read_state(app.config["LABAPP"]["INSTANCE_PATH"])
    assert state["state"] == "done", state
    polled = admin.get("/admin/exports/progress", headers={"HX-Request": "true"})
    html = polled.get_data(as_text=True)
    assert f"Saved {state['filename']}" in html
    assert f'href="/api/sync/files/{state["filename"]}"' in html
    assert "hx-trigger" not in html  # polling stops once the export is done
    download = admin.get(f"/api/sync/files/{state['filename']}")
    assert download.status_code == 200 and download.data[:2] == b"\x1f\x8b"
    download.close()


def test_while_an_export_runs_the_page_polls_its_progress(lab: Callable[..., Flask]) -> None:
    app = lab()
    instance = app.config["LABAPP"]["INSTANCE_PATH"]
    release = threading.Event()
    entered = threading.Event()

    def work(report: Progress) -> ExportResult:
        report(3, 10)
        entered.set()
        release.wait(timeout=30)
        raise RuntimeError("disk full")

    assert progress.start(instance, work)
    try:
        assert entered.wait(timeout=30)
        assert not progress.start(instance, work)  # one at a time
        admin = _signed_in(app, "admin", ADMIN_PASSWORD)
        html = admin.get("/admin/exports").get_data(as_text=True)
        assert 'hx-trigger="every 1s"' in html
        assert '<progress max="10" value="3">' in html
        assert 'id="save-export" disabled' in html
    finally:
        release.set()
        _wait_for_export()
    html = admin.get("/admin/exports").get_data(as_text=True)
    assert "The export failed: disk full" in html


def test_the_page_is_for_admins_only(app: Flask, make_user: Callable[..., str]) -> None:
    make_user("dm", roles=["DATA_MANAGER"])
    member = _signed_in(app, "dm", "correct horse battery")
    assert member.get("/admin/exports").status_code == 403
    assert post_form(member, "/admin/exports/save").status_code == 403
    anonymous = app.test_client()
    response = anonymous.get("/admin/exports")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


_HOLDER = """
import sys, threading
from labapp.exports import progress
from labapp.exports.service import ExportResult

def work(report):
    sys.stdin.readline()  # until the parent says so
    return ExportResult("held.jsonl.gz", 0, 0)

print("started" if progress.start(sys.argv[1], work) else "refused", flush=True)
for thread in threading.enumerate():
    if thread.name == "labapp-export":
        thread.join()
"""


def test_one_export_at_a_time_across_processes(tmp_path) -> None:
    """The lock is the instance folder's, not the process's: while another process exports,
    this one is refused; once it ends (and releases the lock), this one may start."""
    instance = str(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, instance], text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == "started"
        assert progress.read_state(instance)["state"] == "running"
        # A slow step reports no progress for longer than STALE_SECONDS: the state file
        # looks abandoned, but the lock still says the other export is alive.
        state_file = export_folder(instance) / progress.STATE_FILE
        state_file.write_text(json.dumps({"state": "running", "updated": 0}))
        assert not progress.start(instance, _never_run)
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0
    finally:
        holder.stdin.close()
        holder.stdout.close()
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert progress.read_state(instance)["state"] == "done"
    assert progress.start(instance, lambda report: ExportResult("mine.jsonl.gz", 1, 2))
    _wait_for_export()
    assert progress.read_state(instance)["filename"] == "mine.jsonl.gz"


def _never_run(report: Progress) -> ExportResult:
    raise AssertionError("a second export started while the first held the lock")
