"""Two hosts over one PostgreSQL database, through HTTP (issue 34 §3): each a gunicorn and a
worker with an instance folder and a port of its own (:mod:`tests.helpers.hosts`), with
``LABAPP_SEARCH_BACKEND=postgresql`` and ``LABAPP_FILE_STORE=database`` as docs/deploying.md
recommends. A session made on A works on B; an entity written on A is found by search on B;
a file uploaded on A downloads on B; an import started on A is run once by whichever worker
claims it; an alert tells each recipient once with both workers ticking; a data-model sync on
A is followed by B; an export on A refuses a second one on B.

The hosts are started once for the module (it stays under a minute); each test leaves the
data it makes under names of its own."""
from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from sqlalchemy import select, text

from labapp.auth import secrets as password_secrets
from labapp.db import db, transaction
from labapp.exports import progress
from labapp.model import Entity
from labapp.search.indexer import index_path
from labapp.users.service import create_user
from tests.alerts.conftest import rule_body
from tests.conftest import ADMIN_PASSWORD as PASSWORD
from tests.conftest import (
    BACKEND,
    DEFAULT_DEPARTMENT,
    build_app,
    cheap_hasher,
    dispose,
    new_database,
    run_init,
)
from tests.conftest import PASSWORD as BOB_PASSWORD
from tests.datamodel.conftest import LAB_EXTENSION
from tests.helpers.hosts import Host, two_hosts
from tests.helpers.processes import wait_for

# One xdist worker runs the module (``--dist loadgroup``): the hosts start once.
pytestmark = [pytest.mark.skipif(BACKEND != "postgresql",
                                 reason="hosts share a PostgreSQL database (issue 34)"),
              pytest.mark.xdist_group("two_hosts")]
ADMIN = ("admin", PASSWORD)
CSRF = re.compile(r'"X-CSRF-Token": "([^"]+)"')
BELL = re.compile(r'aria-label="(\d+) unread notifications"')


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Host, Host]]:
    instance = tmp_path_factory.mktemp("host-a")
    with new_database(instance) as url, pytest.MonkeyPatch.context() as patch:
        patch.setattr(password_secrets, "hasher", cheap_hasher())
        first = build_app(instance, url, SEARCH_BACKEND="postgresql", FILE_STORE="database")
        run_init(first)
        try:
            with two_hosts(first, tmp_path_factory.mktemp("host-b")) as pair:
                yield pair
        finally:
            dispose(first)


def _signed_in(host: Host) -> requests.Session:
    """A browser signed in as the admin through ``host``'s login form."""
    browser = requests.Session()
    form = browser.get(host.url("/login"))
    token = CSRF.search(html.unescape(form.text))
    assert token is not None, "the login page carries its CSRF token"
    signed_in = browser.post(host.url("/login"), allow_redirects=False,
                             data={"username": "admin", "password": PASSWORD,
                                   "csrf_token": token[1]})
    assert signed_in.status_code == 303, signed_in.text
    return browser


def test_a_session_made_on_a_works_on_b(hosts: tuple[Host, Host]) -> None:
    first, second = hosts
    browser = _signed_in(first)
    on_second = requests.Session()
    on_second.cookies.update(browser.cookies)
    assert _caller(on_second.get(second.url("/api/auth/user"))) == ("admin", True)

    tokens = requests.post(first.url("/api/auth/login"),
                           json={"username": "admin", "password": PASSWORD})
    assert tokens.status_code == 200, tokens.text
    bearer = {"Authorization": f"Bearer {tokens.json()['accessToken']}"}
    assert _caller(requests.get(second.url("/api/auth/user"), headers=bearer)) == (
        "admin", True)
    assert _caller(requests.get(second.url("/api/auth/user"))) == (None, False)


def _caller(answer: requests.Response) -> tuple[str | None, bool]:
    """Who ``GET /api/auth/user`` says called (anonymous callers get 200 as well)."""
    assert answer.status_code == 200, answer.text
    context = answer.json()["contextUser"]
    return context["name"], context["isAuthenticated"]


def test_an_entity_written_on_a_is_found_by_search_on_b(hosts: tuple[Host, Host]) -> None:
    first, second = hosts
    made = requests.post(first.url("/api/entity"), auth=ADMIN, json={"entities": [
        {"eClass": "Sample", "name": "Quokka-7781 from A"}]})
    assert made.status_code == 201, made.text

    def found() -> list[str]:
        answer = requests.get(second.url("/api/search/fulltext/Quokka-7781"), auth=ADMIN)
        assert answer.status_code == 200, answer.text
        return [item["name"] for item in answer.json()["data"]]

    # Written in the transaction of the change: found at once, the deadline is only a bound.
    assert wait_for(found, "B's search to find what A wrote", timeout=2) == [
        "Quokka-7781 from A"]
    assert not any(list(index_path(host.app).glob("*.toc")) for host in hosts), (
        "no host keeps a Whoosh index")


def test_a_file_uploaded_on_a_downloads_on_b(hosts: tuple[Host, Host]) -> None:
    first, second = hosts
    content = bytes(range(256)) * 4099  # over one 1 MiB piece of the database store
    uploaded = requests.post(first.url("/api/file"), auth=ADMIN,
                             files={"file": ("plate.bin", content)})
    assert uploaded.status_code == 201, uploaded.text
    downloaded = requests.get(second.url(f"/api/file/{uploaded.json()['id']}"), auth=ADMIN)
    assert downloaded.status_code == 200, downloaded.text
    assert downloaded.content == content
    assert not any(host.instance.joinpath("files").exists() for host in hosts), (
        "no host keeps contents in its instance folder")


def _bell(host: Host, user: tuple[str, str]) -> int:
    """The unread count ``host``'s bell shows ``user``."""
    answer = requests.get(host.url("/notifications/bell"), auth=user)
    assert answer.status_code == 200, answer.text
    count = BELL.search(answer.text)
    assert count is not None, answer.text
    return int(count[1])


def test_an_alert_tells_each_recipient_once_with_both_workers_ticking(
        hosts: tuple[Host, Host]) -> None:
    first, second = hosts
    with first.app.app_context(), transaction():
        create_user(username="bob", name="Bob", department_id=DEFAULT_DEPARTMENT,
                    password=BOB_PASSWORD, roles=(), created_by="admin")
    bob = ("bob", BOB_PASSWORD)
    rule = requests.post(first.url("/api/alert-rule"), auth=ADMIN, json=rule_body(
        "Hosted low", users=["admin", "bob"], filter="startswith(name, 'Hosted low')"))
    assert rule.status_code == 201, rule.text
    told = {"admin": 0, "bob": 0}
    for round_ in (1, 2):  # one item per round: one bell line each, whichever worker tells
        made = requests.post(second.url("/api/entity"), auth=ADMIN, json={"entities": [
            {"eClass": "Sample", "name": f"Hosted low {round_}", "amount": 1.0}]})
        assert made.status_code == 201, made.text
        wait_for(lambda round_=round_: all(
            _bell(host, user) >= round_ for host in hosts for user in (ADMIN, bob)),
            "both recipients to be told on both hosts")
        told = {name: len(_alerts(first, (name, password)))
                for name, password in (ADMIN, bob)}
        # the second round's line came from a later tick: the first was not told again
        assert told == {"admin": round_, "bob": round_}
    assert _alerts(second, bob) == _alerts(first, bob)


def _alerts(host: Host, user: tuple[str, str]) -> list[str]:
    """The ids of ``user``'s unread alert lines, as ``host`` lists them."""
    answer = requests.get(host.url("/api/notification/unread"), auth=user)
    assert answer.status_code == 200, answer.text
    return sorted(item["id"] for item in answer.json() if item["kind"] == "Alert")


def _entities_named(app: Flask, prefix: str) -> list[str]:
    with app.app_context():
        names = list(db.session.scalars(select(Entity.name).where(
            Entity.name.like(f"{prefix}%"))))
        db.session.remove()
    return sorted(names)


def test_an_import_started_on_a_is_run_once(hosts: tuple[Host, Host]) -> None:
    first, second = hosts
    content = "Name;Volume (mL)\nHosted-1;1\nHosted-2;2\n"
    started = requests.post(first.url("/api/import"), auth=ADMIN,
                            data={"eClass": "Sample", "dryRun": "false"},
                            files={"file": ("hosted.csv", content.encode())})
    assert started.status_code == 202, started.text
    job = started.json()["id"]

    def ended() -> dict[str, Any] | None:
        answer = requests.get(second.url(f"/api/import/{job}"), auth=ADMIN)
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body if body["status"] not in ("queued", "running") else None

    assert wait_for(ended, "a worker of either host to run the import")["status"] == "done"
    assert _entities_named(first.app, "Hosted-") == ["Hosted-1", "Hosted-2"]


def _classes(host: Host) -> set[str]:
    answer = requests.get(host.url("/api/datamodel"), auth=ADMIN)
    assert answer.status_code == 200, answer.text
    return {item["name"] for item in answer.json()["classes"]}


def test_a_data_model_sync_on_a_is_followed_by_b(hosts: tuple[Host, Host]) -> None:
    first, second = hosts
    for host in hosts:  # the operator deploys the same extension files to every host
        folder = host.instance / "datamodel"
        folder.mkdir(exist_ok=True)
        (folder / "lab.json").write_text(json.dumps(LAB_EXTENSION))
    assert "Genome" not in _classes(second), "files alone change nothing before a sync"
    synced = requests.post(first.url("/api/sync"), auth=ADMIN)
    assert synced.status_code == 200, synced.text
    wait_for(lambda: "Genome" in _classes(second), "B to follow the sync made on A")
    made = requests.post(second.url("/api/entity"), auth=ADMIN, json={"entities": [
        {"eClass": "Genome", "name": "followed on B", "sizeMb": 1.5}]})
    assert made.status_code == 201, made.text


def test_an_export_on_a_refuses_a_second_one_on_b(hosts: tuple[Host, Host]) -> None:
    first, second = hosts
    answers: list[requests.Response] = []
    with first.app.app_context():
        engine = db.engine
        blocker = engine.connect()
        try:
            # A's export waits on this lock while it holds the export lock.
            blocker.execute(text("LOCK TABLE alert_rule IN ACCESS EXCLUSIVE MODE"))
            exporting = threading.Thread(target=lambda: answers.append(requests.post(
                first.url("/api/sync/save"), auth=ADMIN, timeout=120)))
            exporting.start()
            wait_for(lambda: progress.locked(engine), "A's export to hold the export lock")
            refused = requests.post(second.url("/api/sync/save"), auth=ADMIN)
            assert refused.status_code == 409, refused.text
            assert refused.json()["code"] == "export_running"
            browser = _signed_in(second)
            page = browser.get(second.url("/admin/exports"))
            assert page.status_code == 200, page.text
            assert 'id="save-export" disabled' in page.text, "B shows A's export running"
        finally:
            blocker.rollback()
            blocker.close()
        exporting.join(timeout=120)
        assert [answer.status_code for answer in answers] == [201]
        assert not progress.locked(engine)
    written = answers[0].json()["filename"]
    assert (Path(first.instance) / "sync" / written).exists()
