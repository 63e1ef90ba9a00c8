"""Two "hosts" on one machine over one PostgreSQL database (issue 34 §3): each a gunicorn
and a worker of its own (:mod:`tests.helpers.processes`), with an instance folder of its own
and a port of its own, the settings every host must share equal (``LABAPP_SECRET_KEY``, the
database URL, the search backend and the file store) and the import uploads folder shared, as
docs/deploying.md asks. With ``LABAPP_SEARCH_BACKEND=postgresql`` and
``LABAPP_FILE_STORE=database`` (what docs/deploying.md recommends for several hosts) no
host keeps a search index or file contents of its own."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from flask import Flask

from bench.server import Server
from tests.conftest import build_app, dispose
from tests.helpers.processes import served, worker_process

SHARED_FOLDERS = ("imports",)  # instance subfolders every host must share
# Settings every host must have equal besides the database and the secret key.
HOST_SETTINGS = ("SEARCH_BACKEND", "FILE_STORE", "FILE_STORE_PATH")


@dataclass(frozen=True)
class Host:
    """One host: its application (for reading its settings and the database in the test),
    its gunicorn and the base URL of it."""

    name: str
    app: Flask
    server: Server

    @property
    def instance(self) -> Path:
        return Path(self.app.config["LABAPP"]["INSTANCE_PATH"])

    def url(self, path: str) -> str:
        return f"http://{self.server.host}:{self.server.port}{path}"


def second_host(first: Flask, instance: Path) -> Flask:
    """An application of another host over ``first``'s database: its own instance folder,
    the folders of :data:`SHARED_FOLDERS` linked to ``first``'s (a shared mount)."""
    instance.mkdir(parents=True, exist_ok=True)
    for name in SHARED_FOLDERS:
        shared = Path(first.config["LABAPP"]["INSTANCE_PATH"]) / name
        shared.mkdir(parents=True, exist_ok=True)
        (instance / name).symlink_to(shared, target_is_directory=True)
    settings = first.config["LABAPP"]
    return build_app(instance, settings["DATABASE_URL"], **{
        name: settings[name] for name in HOST_SETTINGS})


@contextmanager
def two_hosts(first: Flask, instance: Path) -> Iterator[tuple[Host, Host]]:
    """Hosts A (``first``'s instance) and B (a new instance folder at ``instance``), each
    serving with one gunicorn worker and running a worker, all started before the block and
    stopped after it."""
    with ExitStack() as stack:
        second = second_host(first, instance)
        stack.callback(dispose, second)
        hosts = []
        for name, app in (("A", first), ("B", second)):
            server, _process = stack.enter_context(served(app, workers=1))
            hosts.append(Host(name, app, server))
        for app in (first, second):  # both tick the alert rules every second
            stack.enter_context(worker_process(app, ALERT_TICK_SECONDS="1"))
        yield hosts[0], hosts[1]
