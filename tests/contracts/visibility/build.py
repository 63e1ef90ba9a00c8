"""Making the world of :mod:`.world` real: a new database brought up by ``flask init``, then
everything created through the public API as the administrator, committed for real.

A built world is shared by many tests, so it lives for a whole test module; the read paths
run on a world nothing writes to, the write paths on a world of their own.
"""
from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

from flask import Flask
from werkzeug.test import TestResponse

from tests.conftest import (
    ADMIN_PASSWORD,
    ApiClient,
    bearer_header,
    build_app,
    dispose,
    new_database,
    run_init,
)
from tests.contracts.visibility.world import (
    ANONYMOUS,
    ENTITIES,
    ENTITY,
    GRANTS,
    PASSWORD,
    STORED_IN,
    USERS,
    EntityDef,
)
from tests.helpers.directory import PEOPLE, READER_DN, Person, running_directory


def closed(response: TestResponse) -> TestResponse:
    """``response`` read and closed, with its request body (a download streams from a file
    and a multipart upload spools to one; unclosed they are ResourceWarnings)."""
    with response:
        response.get_data()
    response.request.input_stream.close()
    return response


def file_content(key: str) -> bytes:
    return f"content of {key}\n".encode()


@dataclass
class LiveWorld:
    """A built world: the application, the real ids of its keys, and a client per caller.

    ``frozen`` worlds are never written to, so their GET answers may be cached and shared by
    the paths that read the same URL.
    """

    app: Flask
    frozen: bool
    ids: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    callers: dict[str, ApiClient] = field(default_factory=dict)
    _cache: dict[tuple[str, str], tuple[int, Any]] = field(default_factory=dict)
    _unknown: dict[tuple[str, str, bool], Any] = field(default_factory=dict)

    def id(self, key: str) -> str:
        return self.ids[key]

    def key(self, entity_id: str) -> str:
        """The world key of an id; an id the world does not know comes back as ``?<id>``."""
        return self.keys.get(entity_id, f"?{entity_id}")

    def client(self, caller: str) -> ApiClient:
        return self.callers[caller]

    def unknown_answer(self, caller: str, url: str, *, post: bool = False) -> Any:
        """The JSON answer to a GET (or an empty-object POST) of a URL naming an id that never
        exists: the same every time, so cached on every world."""
        cached = self._unknown.get((caller, url, post))
        if cached is None:
            client = self.client(caller)
            response = client.post(url, json={}) if post else closed(client.get(url))
            cached = self._unknown[(caller, url, post)] = response.get_json()
        return cached

    def get_json(self, caller: str, url: str) -> tuple[int, Any]:
        """``(status, JSON body)`` of a GET as ``caller`` (cached on a frozen world)."""
        cached = self._cache.get((caller, url))
        if cached is None:
            response = closed(self.client(caller).get(url))
            cached = (response.status_code, response.get_json(silent=True))
            if self.frozen:
                self._cache[(caller, url)] = cached
        return cached


def _ok(response: TestResponse, status: int) -> Any:
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json()


def _batch_items() -> list[dict[str, Any]]:
    """The admin's one batch: every entity made by ``batch``, with the ``files`` of each."""
    items = {entity.key: {"eClass": entity.eclass, "id": entity.key, **entity.payload}
             for entity in ENTITIES if entity.made_by == "batch"}
    for entity in ENTITIES:
        if entity.made_by == "files":
            items[entity.subject].setdefault("files", []).append({
                "name": entity.key, "mediaType": "text/plain",
                "content": base64.b64encode(file_content(entity.key)).decode()})
    return list(items.values())


def _upload(admin: ApiClient, entity: EntityDef) -> None:
    data: dict[str, Any] = {"file": (BytesIO(file_content(entity.key)), entity.key,
                                     "text/plain")}
    if entity.subject is not None:
        data["subjectID"] = entity.subject
    _ok(closed(admin.post("/api/file", data=data, content_type="multipart/form-data")), 201)


def _grant(admin: ApiClient) -> None:
    for grant in GRANTS:
        if grant.on == "department":
            url = f"/api/department/{grant.target}/access"
            body = {"accessType": grant.access, "userID": grant.user,
                    "accessDepartmentID": grant.department}
        else:
            url = f"/api/project/{grant.target}/rls"
            body = {"accessType": grant.access, "userID": grant.user,
                    "departmentID": grant.department}
        _ok(admin.post(url, json=body), 201)


def _logged_in(app: Flask, username: str, password: str) -> ApiClient:
    tokens = _ok(app.test_client().post("/api/auth/login",
                                        json={"username": username, "password": password}), 200)
    # A client of its own, without the login's cookies: the Bearer token alone authenticates.
    return ApiClient(app.test_client(), bearer_header(tokens["accessToken"]), "bearer")


def populate(app: Flask, frozen: bool) -> LiveWorld:
    """Create the world on an initialised application; returns it with a client per caller."""
    live = LiveWorld(app, frozen)
    admin = _logged_in(app, "admin", ADMIN_PASSWORD)
    _ok(admin.post("/api/entity", json={"entities": _batch_items()}), 201)
    for user in USERS:
        for role in user.roles if user.id != "admin" else ():
            _ok(admin.put("/api/userRole/assign", json={"name": role, "userID": user.id}), 200)
    _grant(admin)
    for entity in ENTITIES:
        if entity.made_by == "upload":
            _upload(admin, entity)
    files = _ok(admin.get("/api/entity/File", query_string={"$top": 500}), 200)["data"]
    file_ids = {row["name"]: row["id"] for row in files}
    for entity in ENTITIES:
        live.ids[entity.key] = file_ids[entity.key] if entity.eclass == "File" else entity.key
        if entity.moved:
            _ok(admin.post("/api/entity", json={"entities": [{
                "eClass": entity.eclass, "id": live.id(entity.key),
                "departmentID": entity.department, "projectID": entity.project}]}), 200)
    for item, location in STORED_IN.items():
        _ok(admin.post(f"/api/storage/location/{location}/checkin",
                       json=[{"eClass": ENTITY[item].eclass, "id": item}]), 200)
    live.keys = {value: key for key, value in live.ids.items()}
    live.callers = {user.id: admin if user.id == "admin" else
                    _logged_in(app, user.id, PASSWORD) for user in USERS}
    live.callers[ANONYMOUS] = ApiClient(app.test_client(), {}, "anonymous")
    for user in USERS:
        if not user.active:  # logged in above: deactivation must stop that login at once
            _ok(admin.put("/api/user", json={"userID": user.id, "isActive": False}), 200)
    return live


def _directory_settings(stack: ExitStack, folder: Path) -> dict[str, str]:
    """A slapd holding the world's directory users (with the world's password), and the
    settings that sign them in (home: ``LDAP_DEFAULT_DEPARTMENT``); none without any."""
    people = tuple(Person(user.id, user.id.title(), f"{user.id}@example.org",
                          password=PASSWORD) for user in USERS if user.source == "ldap")
    if not people:
        return {}
    homes = {user.home for user in USERS if user.source == "ldap"}
    assert len(homes) == 1, "the world's directory places everyone in one department"
    directory = stack.enter_context(running_directory(folder, people))
    return {"LDAP_URL": directory.url, "LDAP_BIND_DN": READER_DN,
            "LDAP_BIND_PASSWORD": directory.reader_password, "LDAP_USER_BASE": PEOPLE,
            "LDAP_DEFAULT_DEPARTMENT": homes.pop()}


@contextmanager
def built_world(directory: Path, *, frozen: bool) -> Iterator[LiveWorld]:
    """A world on a new database of the selected backend, dropped afterwards (passwords
    hashed at the suite's minimal Argon2 cost, ``_cheap_argon2``); its directory users sign
    in with a slapd of its own."""
    with ExitStack() as stack:
        settings = _directory_settings(stack, directory / "slapd")
        url = stack.enter_context(new_database(directory))
        app = build_app(directory, url, **settings)
        try:
            run_init(app)
            yield populate(app, frozen)
        finally:
            dispose(app)
