"""The wizard's pages without a browser: each step answers, refuses bad input on the page,
and keeps an upload to its owner (the browser test drives the whole wizard)."""
from __future__ import annotations

import re
from collections.abc import Callable
from io import BytesIO
from typing import Any

from flask import Flask
from sqlalchemy import select, update

from labapp import liveness
from labapp.db import db, transaction
from labapp.imports import jobs, uploads
from labapp.model import ImportJob, Sample, SavedMapping
from tests.conftest import ApiClient
from tests.helpers.processes import held_lock, killed
from tests.imports.uploading import BAD_CSV, GOOD_CSV, run_queued, upload_files


def _upload(client: ApiClient, content: str, eclass: str = "Sample") -> Any:
    part = (BytesIO(content.encode()), "plates 2026-11-25.csv")
    return client.post("/import", data={"eClass": eclass, "file": part},
                       content_type="multipart/form-data")


def _cookie_admin(admin: ApiClient, api_as: Callable[..., ApiClient]) -> ApiClient:
    return api_as("admin", "cookie", password="admin-password-for-tests")


def test_the_wizard_walks_from_upload_to_commit(app: Flask, admin: ApiClient,
                                                api_as: Callable[..., ApiClient]) -> None:
    browser = _cookie_admin(admin, api_as)
    first = browser.get("/import?eClass=sample")
    assert first.status_code == 200 and b'value="Sample" selected' in first.data
    uploaded = _upload(browser, GOOD_CSV)
    assert uploaded.status_code == 303, uploaded.data
    mapping_url = uploaded.headers["Location"]
    page = browser.get(mapping_url)
    assert page.status_code == 200
    html = page.data.decode()
    assert re.search(r'<option value="name" selected>', html)
    assert 'value="plates"' in html  # the mapping is proposed under the source name
    started = browser.post(mapping_url, data={"column-0": "name", "column-1": "amount",
                                              "column-2": "", "save": "on",
                                              "saveAs": "plates"})
    assert started.status_code == 303, started.data
    job_url = started.headers["Location"]
    waiting = browser.get(job_url)
    assert b'hx-trigger="every 500ms"' in waiting.data and b"Waiting for the worker" in waiting.data
    run_queued(app)
    done = browser.get(job_url).data.decode()
    assert 'id="count-create">3<' in done and "every 500ms" not in done
    assert 'id="commit-import">' in done
    committed = browser.post(f"{job_url}/commit")
    assert committed.status_code == 303
    run_queued(app)
    final = browser.get(committed.headers["Location"]).data.decode()
    assert 'id="import-done"' in final and 'id="written-list"' in final
    with app.app_context():
        assert sorted(db.session.scalars(select(Sample.name))) == ["S-1", "S-2", "S-3"]
        saved = db.session.scalars(select(SavedMapping)).one()
        assert saved.source == "plates" and saved.mapping == {"Name": "name",
                                                              "Volume (mL)": "amount"}
    # The next file from the same source is offered the saved mapping.
    again = browser.get(_upload(browser, "Name,Volume (mL),Expiry\nX,1,\n").headers["Location"])
    assert re.search(r'<select id="column-2"[^>]*>\s*<option value="" selected>',
                     again.data.decode())


def test_errors_disable_commit_and_filter(app: Flask, admin: ApiClient,
                                          api_as: Callable[..., ApiClient]) -> None:
    browser = _cookie_admin(admin, api_as)
    mapping_url = _upload(browser, BAD_CSV).headers["Location"]
    job_url = browser.post(mapping_url, data={"column-0": "name",
                                              "column-1": "amount"}).headers["Location"]
    run_queued(app)
    page = browser.get(job_url).data.decode()
    assert 'id="commit-import" disabled' in page
    errors_only = browser.get(f"{job_url}?outcome=error",
                              headers={"HX-Request": "true"}).data.decode()
    assert errors_only.lstrip().startswith('<section id="import-job"')
    assert errors_only.count('class="import-row') == 1 and "Volume (mL)" in errors_only


def test_bad_input_is_said_on_the_page(app: Flask, admin: ApiClient,
                                       api_as: Callable[..., ApiClient],
                                       member: Callable[..., ApiClient]) -> None:
    browser = _cookie_admin(admin, api_as)
    files = upload_files(app)
    empty = _upload(browser, "")
    assert empty.status_code == 400 and b'id="import-error"' in empty.data
    unknown = _upload(browser, GOOD_CSV, eclass="Nothing")
    assert unknown.status_code == 400
    no_file = browser.post("/import", data={"eClass": "Sample"},
                           content_type="multipart/form-data")
    assert no_file.status_code == 400 and b"Choose a CSV or XLSX file" in no_file.data
    assert upload_files(app) == files
    mapping_url = _upload(browser, GOOD_CSV).headers["Location"]
    twice = browser.post(mapping_url, data={"column-0": "name", "column-1": "name"})
    assert twice.status_code == 400 and b'id="import-error"' in twice.data
    member("alice")
    alice = api_as("alice", "cookie")
    assert alice.get(mapping_url).status_code == 404
    assert alice.get("/import/not-a-job").status_code == 404


def test_a_failed_job_says_why_and_offers_no_rows(app: Flask, admin: ApiClient,
                                                  api_as: Callable[..., ApiClient]) -> None:
    browser = _cookie_admin(admin, api_as)
    job_url = browser.post(_upload(browser, GOOD_CSV).headers["Location"],
                           data={"column-0": "name"}).headers["Location"]
    with app.app_context():
        job = db.session.get(ImportJob, job_url.rsplit("/", 1)[1])
        assert job is not None
        uploads.discard(job.upload)
    run_queued(app)
    page = browser.get(job_url).data.decode()
    assert 'id="import-failed"' in page and "no longer stored" in page
    assert 'id="annotated-csv"' not in page and 'id="import-counts"' not in page


def test_the_job_page_says_when_no_worker_will_run_it(
        app: Flask, admin: ApiClient, api_as: Callable[..., ApiClient]) -> None:
    browser = _cookie_admin(admin, api_as)
    job_url = browser.post(_upload(browser, GOOD_CSV).headers["Location"],
                           data={"column-0": "name"}).headers["Location"]
    job_id = job_url.rsplit("/", 1)[1]
    waiting = browser.get(job_url, headers={"HX-Request": "true"}).data.decode()
    assert 'id="import-worker"' in waiting and "flash-warning" in waiting
    assert "<code>flask --app labapp worker</code>" in waiting and "`" not in waiting
    assert 'hx-trigger="every 500ms"' in waiting, "it still looks for a worker"
    with app.app_context():
        with liveness.holding():
            assert 'id="import-worker"' not in browser.get(job_url).data.decode()
    with held_lock(app) as (dead, process):
        with app.app_context():
            assert jobs.claim(job_id) == job_id
        with app.app_context(), transaction():
            db.session.execute(update(ImportJob).where(ImportJob.id == job_id)
                               .values(worker=dead))
        assert 'id="import-worker"' not in browser.get(job_url).data.decode()
        killed(process)
    stranded = browser.get(job_url).data.decode()
    assert 'id="import-worker"' in stranded and "flash-error" in stranded
    assert "The worker stopped while it ran this import; nothing was written." in stranded
    assert "<code>flask --app labapp worker</code>" in stranded
