"""Fixtures shared by the whole suite.

The backend comes from ``LABAPP_TEST_BACKEND`` (``sqlite``, the default, or ``postgresql`` at
``LABAPP_TEST_POSTGRES_URL``); ``tests/databases.py`` makes the databases, for the suite and
the benchmarks alike. One database per run is created and brought up with the real
``flask --app labapp init``; every test then runs inside an outer transaction that is rolled
back afterwards, while the code under test commits to savepoints as it would in production.

A test that needs a database of its own asks ``fresh_app`` for one: empty, for tests of
``flask init`` itself, or ``initialised=True``, a copy of a template that each test process
initialises once with the real ``flask init`` (an SQLite file copy, ``CREATE DATABASE …
TEMPLATE`` on PostgreSQL, and the search index folder beside it).
"""
from __future__ import annotations

import base64
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from argon2 import PasswordHasher
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from flask_sqlalchemy.session import _app_ctx_id
from sqlalchemy.orm import scoped_session, sessionmaker
from werkzeug.serving import WSGIRequestHandler, make_server

from labapp import create_app
from labapp.auth import ratelimits
from labapp.auth import secrets as password_secrets
from labapp.db import db, transaction
from labapp.search.indexer import index_path
from labapp.users.service import create_user

# BACKEND is imported from here by many tests.
from tests.databases import BACKEND, new_database, settle  # noqa: F401
from tests.helpers.database_marker import mark_database_tests
from tests.helpers.serving import serving_in_thread

ADMIN_PASSWORD = "admin-password-for-tests"
PASSWORD = "correct horse battery"
SECRET_KEY = "test-secret-key-not-for-production"
DEFAULT_DEPARTMENT = "DEP00001"
# The suite's applications run without API rate limits: tests send requests far faster than
# any script, and share users. tests/web/test_rate_limits.py turns them on.
RATE_LIMITS_OFF = {"RATE_LIMIT_PER_TOKEN": 0, "RATE_LIMIT_PER_USER": 0,
                   "RATE_LIMIT_PER_ADDRESS": 0}


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist, keep the tests of one ``xdist_group`` on one worker (the two-host
    harness starts its processes once per module): ``load`` becomes ``loadgroup``, which
    spreads every other test alike."""
    if getattr(config.option, "dist", None) == "load":
        config.option.dist = "loadgroup"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that touch a database ``db`` (see ``tests/helpers/database_marker.py``)
    and run those marked ``long`` first: xdist hands out tests in collection order, and a
    test of a minute started near the end kept one worker busy while the other was done."""
    mark_database_tests(items)
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


# Flask-SQLAlchemy's session, which ``_rolled_back`` swaps for the shared application's
# rolled-back connection for the length of a test.
PRODUCTION_SESSION = db.session


def build_app(instance: Path, database_url: str, **overrides: Any) -> Flask:
    """An application on ``database_url`` with test settings. Refused in a test on the shared
    application (fixture ``app``): there ``db.session`` is that database's rolled-back
    connection, so what the new application writes (``flask init``'s admin and department,
    the template's) would go there and vanish, while its own database stayed empty."""
    if db.session is not PRODUCTION_SESSION:
        raise pytest.UsageError("a test on the shared application (fixture app) cannot make "
                                "an application of its own (fresh_app, build_app)")
    settings = {"INSTANCE_PATH": str(instance), "DATABASE_URL": database_url,
                "SECRET_KEY": SECRET_KEY, "ADMIN_PASSWORD": ADMIN_PASSWORD, **RATE_LIMITS_OFF}
    settings.update(overrides)
    app = create_app(settings)
    app.config["TESTING"] = True
    return app


def dispose(app: Flask) -> None:
    """Close every connection of ``app`` (else PostgreSQL runs raise ResourceWarning)."""
    with app.app_context():
        db.session.remove()
        db.engine.dispose()
    ratelimits.limiter(app).dispose()


def run_init(app: Flask) -> str:
    result = app.test_cli_runner().invoke(args=["init"])
    assert result.exit_code == 0, result.output
    return result.output


def cheap_hasher() -> PasswordHasher:
    """Argon2id at minimal cost: at production cost (50-150 ms a hash) hashing would be most
    of the suite's run time. ``tests/auth/test_storage.py`` checks the production parameters."""
    return PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


@pytest.fixture(scope="session", autouse=True)
def _cheap_argon2() -> Iterator[None]:
    """Cheap hashing for the whole test process, session fixtures included: when it lasted
    one test function, the shared application's ``flask init`` (made before it) hashed the
    admin's password at production cost, and every test signing in as admin paid
    50-250 ms to verify it, a fifth of the suite's time."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(password_secrets, "hasher", cheap_hasher())
        yield


@dataclass(frozen=True)
class InitialisedTemplate:
    """A database and instance folder brought up by ``flask init``, idle, to be copied."""

    instance: Path
    url: str
    search_index: Path


# Settings ``flask init`` reads: a copy of the template made with other values would not be
# what init makes of them, so applications with these overrides run the real init.
SETTINGS_INIT_READS = frozenset({"ADMIN_PASSWORD", "DATABASE_URL", "INSTANCE_PATH"})


@pytest.fixture(scope="session")
def initialised_template(tmp_path_factory: pytest.TempPathFactory
                         ) -> Iterator[InitialisedTemplate]:
    """This test process's template for ``fresh_app(initialised=True)``: made on first use."""
    instance = tmp_path_factory.mktemp("template-instance")
    with new_database(instance, prefix="labapp_template") as url:
        application = build_app(instance, url)
        run_init(application)
        with application.app_context():
            search_index = index_path()
        dispose(application)
        settle(url)
        yield InitialisedTemplate(instance, url, search_index)


@pytest.fixture(scope="session")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flask]:
    """The application on a database initialised once per run by ``flask init``.

    It indexes for search at the start of the next search request (``SEARCH_DRAIN =
    before-search``), not after every commit: most tests write and never search (indexing
    at the start of every request after a write was 40% of tests/entities' time), and a
    search request still finds everything written before it. Tests of indexing itself
    switch back with :func:`drain_after_commit`."""
    instance = tmp_path_factory.mktemp("instance")
    with new_database(instance) as url:
        application = build_app(instance, url, SEARCH_DRAIN="before-search")
        run_init(application)
        yield application
        dispose(application)


@pytest.fixture(autouse=True)
def _rolled_back(request: pytest.FixtureRequest) -> Iterator[None]:
    """Run the test inside a transaction that is rolled back, so tests never see each other.

    Tests that bring their own application (``fresh_app``) or a live server skip this.
    """
    if "app" not in request.fixturenames:
        yield
        return
    application: Flask = request.getfixturevalue("app")
    with application.app_context():
        engine = db.engine
    connection = engine.connect()
    outer = connection.begin()
    # Flask-SQLAlchemy's session class always picks the engine, so the test session is a
    # plain SQLAlchemy one bound to the connection, scoped per app context as in production.
    db.session = scoped_session(
        sessionmaker(bind=connection, expire_on_commit=False,
                     join_transaction_mode="create_savepoint"),
        scopefunc=_app_ctx_id)
    try:
        yield
    finally:
        with application.app_context():
            db.session.remove()
        db.session = PRODUCTION_SESSION
        outer.rollback()
        connection.close()


@pytest.fixture
def drain_after_commit(app: Flask) -> Iterator[None]:
    """The shared application indexes each unit of work's changes after its commit, as a
    production install without a worker does, for the length of the test."""
    settings = app.config["LABAPP"]
    before = settings["SEARCH_DRAIN"]
    settings["SEARCH_DRAIN"] = "after-commit"
    try:
        yield
    finally:
        settings["SEARCH_DRAIN"] = before


@pytest.fixture
def fresh_app(tmp_path: Path, request: pytest.FixtureRequest
              ) -> Iterator[Callable[..., Flask]]:
    """Factory of applications on new databases of their own: empty (un-initialised), or with
    ``initialised=True`` as ``flask init`` leaves them (a copy of the process's template, for
    tests not about init itself)."""
    with ExitStack() as cleanup:

        def make(*, initialised: bool = False, **overrides: Any) -> Flask:
            instance = tmp_path / f"instance-{secrets.token_hex(4)}"
            if not initialised:
                url = cleanup.enter_context(new_database(instance))
                application = build_app(instance, url, **overrides)
                cleanup.callback(dispose, application)
                return application
            refused = SETTINGS_INIT_READS & overrides.keys()
            if refused:
                raise ValueError(f"init reads {sorted(refused)}: run the real init instead")
            return app_from_template(request.getfixturevalue("initialised_template"),
                                     instance, cleanup, **overrides)

        yield make


def app_from_template(template: InitialisedTemplate, instance: Path, cleanup: ExitStack,
                      **overrides: Any) -> Flask:
    """An application on a new copy of ``template`` (as ``flask init`` leaves a database),
    disposed of and its database dropped when ``cleanup`` closes."""
    url = cleanup.enter_context(new_database(instance, template=template.url))
    application = build_app(instance, url, **overrides)
    cleanup.callback(dispose, application)
    if template.search_index.exists():  # none with LABAPP_SEARCH_BACKEND=postgresql
        with application.app_context():
            shutil.copytree(template.search_index, index_path())
    return application


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def runner(app: Flask) -> FlaskCliRunner:
    return app.test_cli_runner()


@pytest.fixture
def make_user(app: Flask) -> Callable[..., str]:
    """Factory: ``make_user("alice", roles=["DATA_MANAGER"])`` creates an active user."""

    def make(username: str, *, roles: tuple[str, ...] | list[str] = (),
             department_id: str = DEFAULT_DEPARTMENT, password: str = PASSWORD,
             name: str | None = None) -> str:
        with app.app_context(), transaction():
            create_user(username=username, name=name or username.title(),
                        department_id=department_id, password=password, roles=roles,
                        created_by="admin")
        return username

    return make


def basic_header(username: str, secret: str) -> dict[str, str]:
    """``Authorization: Basic`` for ``username:secret`` (a password or a PAT)."""
    token = base64.b64encode(f"{username}:{secret}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def bearer_header(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def login(client: FlaskClient, username: str, password: str = PASSWORD,
          **extra: Any) -> dict[str, Any]:
    """Log in through the API and return the token pair (asserting success)."""
    response = client.post("/api/auth/login",
                           json={"username": username, "password": password, **extra})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def csrf_of(client: FlaskClient) -> str:
    """The CSRF token the browser session of ``client`` holds."""
    with client.session_transaction() as session:
        return session["csrf"]


class ApiClient:
    """A test client that sends one authentication method's credentials on every request."""

    def __init__(self, client: FlaskClient, headers: dict[str, str], method: str) -> None:
        self.client = client
        self.headers = headers
        self.method = method

    def open(self, method: str, path: str, **kwargs: Any):
        headers = {**self.headers, **kwargs.pop("headers", {})}
        if self.method == "cookie" and method not in {"GET", "HEAD", "OPTIONS"}:
            headers.setdefault("X-CSRF-Token", csrf_of(self.client))
        return self.client.open(path, method=method, headers=headers, **kwargs)

    def get(self, path: str, **kwargs: Any):
        return self.open("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any):
        return self.open("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any):
        return self.open("PUT", path, **kwargs)

    def delete(self, path: str, **kwargs: Any):
        return self.open("DELETE", path, **kwargs)


AUTH_METHODS = ("bearer", "basic", "pat", "cookie")


@pytest.fixture
def api_as(app: Flask) -> Callable[..., ApiClient]:
    """Factory: ``api_as("alice", "pat")`` is a client authenticated as alice by that method."""

    def make(username: str, method: str = "bearer", password: str = PASSWORD) -> ApiClient:
        client = app.test_client()
        if method == "basic":
            return ApiClient(client, basic_header(username, password), method)
        tokens = login(client, username, password)
        if method == "bearer":
            client.delete_cookie("labapp_session")
            return ApiClient(client, bearer_header(tokens["accessToken"]), method)
        if method == "cookie":
            return ApiClient(client, {}, method)
        if method == "pat":
            created = client.post("/api/user/pat", json={"name": "tests"},
                                  headers=bearer_header(tokens["accessToken"]))
            assert created.status_code == 201, created.get_json()
            fresh = app.test_client()
            return ApiClient(fresh, basic_header(username, created.get_json()["value"]), method)
        raise ValueError(f"unknown auth method {method!r}")

    return make


_RESPONSE = "tests.live_server.response"


class ClosingRequestHandler(WSGIRequestHandler):
    """Werkzeug's request handler, closing the response when the client drops the connection.

    Werkzeug 3.1 drains the socket before it closes the response iterable; when the client has
    reset the connection (Chromium cancelling a favicon it no longer wants) that drain raises,
    the close is skipped and the open static file is left to the garbage collector: a
    ResourceWarning, which ``filterwarnings = error`` turns into a failure of whichever test is
    running when the collector runs.
    """

    def connection_dropped(self, error: BaseException,
                           environ: dict[str, Any] | None = None) -> None:
        response = (environ or {}).pop(_RESPONSE, None)
        if response is not None and hasattr(response, "close"):
            response.close()


def remembering_responses(app: Flask) -> Callable[..., Any]:
    """``app`` as a WSGI callable that keeps its response iterable in the environ, where
    :class:`ClosingRequestHandler` finds it to close."""

    def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        response = app(environ, start_response)
        environ[_RESPONSE] = response
        return response

    return wsgi


@contextmanager
def serving(app: Flask, port: int = 0) -> Iterator[str]:
    """The base URL of a threaded HTTP server running ``app`` (browsers and real clients), on
    ``port`` (0: any free one)."""
    server = make_server("127.0.0.1", port, remembering_responses(app), threaded=True,
                         request_handler=ClosingRequestHandler)
    with serving_in_thread(server, "live-server"):
        yield f"http://127.0.0.1:{server.server_port}"
