"""A live server for the real-client tests: a new database, a small lab made through the API,
and a real HTTP server in a thread (the clients speak HTTP, not WSGI).

The lab: department *Interop* with user ``ivy`` (password :data:`PASSWORD`) owns ten samples
``Batch-01`` … ``Batch-10`` and two ``Other-`` samples; the administrator's own department
holds five ``Batch-A`` … samples ivy may not read. Feeds are served four rows a page.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from flask import Flask

from labapp.db import transaction
from labapp.users.service import create_user
from tests.conftest import ADMIN_PASSWORD, ApiClient, basic_header, serving

USERNAME = "ivy"
PASSWORD = "interop password 1"
PAGE_SIZE = 4
IVY_BATCHES = [f"Batch-{number:02d}" for number in range(1, 11)]


@dataclass(frozen=True)
class LiveFeed:
    """The server's base URL, ivy's department, and a PAT of hers."""

    base_url: str
    department: str
    pat: str


def _ok(response: Any, status: int) -> Any:
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json()


def populate(app: Flask) -> tuple[str, str]:
    """Make the lab above; returns ivy's department and a PAT of hers."""
    admin = ApiClient(app.test_client(), basic_header("admin", ADMIN_PASSWORD), "basic")
    department = _ok(admin.post("/api/entity", json={"entities": [
        {"eClass": "Department", "name": "Interop"}]}), 201)["entities"][0]["id"]
    with app.app_context(), transaction():
        create_user(username=USERNAME, name="Ivy Interop", department_id=department,
                    password=PASSWORD, created_by="admin")
    samples = [{"eClass": "Sample", "name": name, "departmentID": department,
                "amount": float(index)} for index, name in enumerate(IVY_BATCHES)]
    samples += [{"eClass": "Sample", "name": f"Other-{n}", "departmentID": department}
                for n in (1, 2)]
    samples += [{"eClass": "Sample", "name": f"Batch-{letter}"} for letter in "ABCDE"]
    _ok(admin.post("/api/entity", json={"entities": samples}), 201)
    ivy = ApiClient(app.test_client(), basic_header(USERNAME, PASSWORD), "basic")
    pat = _ok(ivy.post("/api/user/pat", json={"name": "interop"}), 201)["value"]
    return department, pat


def live_feed(fresh_app: Callable[..., Flask]) -> Iterator[LiveFeed]:
    """Body of the ``live_feed`` fixture: the lab above on a live server."""
    app = fresh_app(initialised=True, ODATA_PAGE_SIZE=PAGE_SIZE)
    department, pat = populate(app)
    with serving(app) as base_url:
        yield LiveFeed(base_url, department, pat)

