"""Mirror one class of a labapp installation into a SQLite file, and keep it up to date by
following the change feed (``GET /api/changes``). Python's standard library only.

    python mirror_changes.py --url https://lims.example.org --user alice \\
        --token "$LABAPP_PAT" --eclass Sample --database samples.sqlite

The first run copies what the user may read of the class (the entity list, page after page),
having first noted the feed's cursor, so no change made during the copy is lost: the changes
after that cursor are then applied on top, newest version wins. Later runs go on from the
cursor kept in the file. Each page of changes is applied with its cursor in one transaction:
stopped at any moment, the mirror never skips or half-applies a change. A cursor the server
no longer serves (410: older than its retention) starts the copy over.

``--once`` stops once caught up; otherwise the script follows the feed with long polls.
"""
from __future__ import annotations

import argparse
import base64
import json
import sqlite3
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

WAIT_SECONDS = 30
PAGE = 500
GONE = ("delete", "hidden")


class CursorExpired(Exception):
    """The server no longer holds the changes after the mirror's cursor."""


class Client:
    def __init__(self, url: str, user: str, token: str) -> None:
        self.url = url.rstrip("/")
        credentials = base64.b64encode(f"{user}:{token}".encode()).decode()
        self.headers = {"Authorization": f"Basic {credentials}", "Accept": "application/json"}

    def get(self, path: str, **query: str) -> Any:
        address = f"{self.url}{path}?{urllib.parse.urlencode(query)}"
        request = urllib.request.Request(address, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=WAIT_SECONDS + 30) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            if error.code == 410:
                raise CursorExpired(json.load(error).get("detail", "")) from error
            raise


def open_mirror(path: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("CREATE TABLE IF NOT EXISTS entity "
                       "(id TEXT PRIMARY KEY, version INTEGER NOT NULL, body TEXT NOT NULL)")
    connection.execute("CREATE TABLE IF NOT EXISTS mirror_state "
                       "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    return connection


def stored_cursor(mirror: sqlite3.Connection) -> str | None:
    row = mirror.execute("SELECT value FROM mirror_state WHERE key = 'cursor'").fetchone()
    return row[0] if row else None


def save(mirror: sqlite3.Connection, entity: dict[str, Any]) -> None:
    """Store ``entity`` unless the mirror already holds a newer version of it."""
    mirror.execute(
        "INSERT INTO entity (id, version, body) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE "
        "SET version = excluded.version, body = excluded.body "
        "WHERE excluded.version >= entity.version",
        (entity["id"], entity["version"], json.dumps(entity)))


def set_cursor(mirror: sqlite3.Connection, cursor: str) -> None:
    mirror.execute("INSERT INTO mirror_state (key, value) VALUES ('cursor', ?) "
                   "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (cursor,))


def copy_all(client: Client, mirror: sqlite3.Connection, eclass: str) -> None:
    """Note the feed's cursor, then copy every readable entity of ``eclass``."""
    cursor = client.get("/api/changes")["next"]
    mirror.execute("BEGIN")
    mirror.execute("DELETE FROM entity")
    query = {"$top": str(PAGE)}
    while True:
        page = client.get(f"/api/entity/{eclass}", **query)
        for entity in page["data"]:
            save(mirror, entity)
        if not page.get("nextSkipToken"):
            break
        query["$skiptoken"] = page["nextSkipToken"]
    set_cursor(mirror, cursor)
    mirror.execute("COMMIT")


def apply_changes(client: Client, mirror: sqlite3.Connection, eclass: str,
                  follow: bool) -> None:
    """Apply the feed's pages until caught up (or for ever with ``follow``)."""
    while True:
        cursor = stored_cursor(mirror) or "0"
        page = client.get("/api/changes", after=cursor, **{
            "$top": str(PAGE), "$expand": "entity", "wait": str(WAIT_SECONDS if follow else 0)})
        mirror.execute("BEGIN")
        for change in page["data"]:
            if change["eClass"] != eclass:
                continue
            if change["kind"] in GONE or change.get("entity") is None:
                mirror.execute("DELETE FROM entity WHERE id = ?", (change["entityID"],))
            else:
                save(mirror, change["entity"])
        set_cursor(mirror, page["next"])
        mirror.execute("COMMIT")
        if not page["data"] and not follow:
            return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--token", required=True, help="a personal access token")
    parser.add_argument("--eclass", required=True, help="the class to mirror, e.g. Sample")
    parser.add_argument("--database", required=True, help="the SQLite file of the mirror")
    parser.add_argument("--once", action="store_true", help="stop once caught up")
    options = parser.parse_args(argv)
    client = Client(options.url, options.user, options.token)
    mirror = open_mirror(options.database)
    while True:
        try:
            if stored_cursor(mirror) is None:
                copy_all(client, mirror, options.eclass)
            apply_changes(client, mirror, options.eclass, follow=not options.once)
            return 0
        except CursorExpired as expired:
            print(f"starting over: {expired}", file=sys.stderr)
            mirror.execute("DELETE FROM mirror_state")


if __name__ == "__main__":
    sys.exit(main())
