"""The read paths: each answers exactly what the caller may see, and a hidden entity is
answered exactly like one that never existed."""
from __future__ import annotations

from typing import Any

from labapp.model.registry import CLASSES
from tests.contracts.visibility import oracle
from tests.contracts.visibility.alerts import ALERT_READ_PATHS
from tests.contracts.visibility.boards import BOARD_READ_PATHS
from tests.contracts.visibility.build import LiveWorld, closed, file_content
from tests.contracts.visibility.changes import CHANGE_READ_PATHS
from tests.contracts.visibility.datamodel import DATAMODEL_READ_PATHS
from tests.contracts.visibility.exports import EXPORT_READ_PATHS
from tests.contracts.visibility.imports import IMPORT_READ_PATHS
from tests.contracts.visibility.item_pages import READ_PATHS as ITEM_PAGE_READ_PATHS
from tests.contracts.visibility.odata import ODATA_READ_PATHS
from tests.contracts.visibility.paths import (
    MatrixPath,
    Outcome,
    entity_url,
    hidden_like_unknown,
    paged_keys,
)
from tests.contracts.visibility.queries import QUERY_READ_PATHS
from tests.contracts.visibility.rate_limits import RATE_LIMIT_READ_PATHS
from tests.contracts.visibility.savedviews import SAVED_VIEW_READ_PATHS
from tests.contracts.visibility.search import SEARCH_READ_PATHS
from tests.contracts.visibility.sign_ins import SIGN_IN_READ_PATHS
from tests.contracts.visibility.storage import READ_PATHS as STORAGE_READ_PATHS
from tests.contracts.visibility.tree_page import READ_PATHS as TREE_PAGE_READ_PATHS
from tests.contracts.visibility.webhooks import WEBHOOK_READ_PATHS
from tests.contracts.visibility.world import ENTITY, FILES, KEYS


def list_ids(live: LiveWorld, caller: str, eclass: str) -> Outcome:
    """Every page of ``GET /api/entity/{eClass}``: the set of keys, ``total`` agreeing."""
    return paged_keys(live, caller, f"/api/entity/{eclass}")


def detail(live: LiveWorld, caller: str, key: str) -> tuple[int, Any]:
    """``GET /api/entity/{eClass}/{id}``; a 404 must be the answer an unknown id gets."""
    url = entity_url(live, key)
    status, body = live.get_json(caller, url)
    if status == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), body), body
    return status, body


def get_access(live: LiveWorld, caller: str, key: str) -> Outcome:
    status, body = detail(live, caller, key)
    if status != 200:
        return status
    if body["id"] != live.id(key) or body["canWrite"] is not (body["accessType"] == "Write"):
        return ("inconsistent", body["id"], body["accessType"], body["canWrite"])
    return body["accessType"]


def expect_access(caller: str, key: str) -> Outcome:
    return oracle.access(caller, ENTITY[key]) or 404


def get_files(live: LiveWorld, caller: str, key: str) -> Outcome:
    status, body = detail(live, caller, key)
    return frozenset(live.key(item["id"]) for item in body["files"]) if status == 200 \
        else status


def expect_files(caller: str, key: str) -> Outcome:
    return oracle.attachments(caller, key, "File") if oracle.visible(caller, key) else 404


def get_event_ids(live: LiveWorld, caller: str, key: str) -> Outcome:
    """The notes and files the entity's ``NoteAdded``/``FileAdded`` events name."""
    status, body = detail(live, caller, key)
    if status != 200:
        return status
    return frozenset(live.key(event["data"]["id"]) for event in body["events"]
                     if event["kind"] in {"NoteAdded", "FileAdded"})


def expect_event_ids(caller: str, key: str) -> Outcome:
    if not oracle.visible(caller, key):
        return 404
    return oracle.attachments(caller, key, "Note") | oracle.attachments(caller, key, "File")


def download(live: LiveWorld, caller: str, key: str) -> Outcome:
    url = f"/api/file/{live.id(key)}"
    response = closed(live.client(caller).get(url))
    if response.status_code == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), response.get_json())
    if response.status_code == 200 and response.data != file_content(key):
        return ("wrong content", response.data)
    return response.status_code


def metadata(live: LiveWorld, caller: str, key: str) -> Outcome:
    url = f"/api/file/{live.id(key)}/metadata"
    status, body = live.get_json(caller, url)
    if status == 404:
        return hidden_like_unknown(live, caller, url, live.id(key), body)
    if status == 200 and body["id"] != live.id(key):
        return ("wrong file", body["id"])
    return status


def expect_visible(caller: str, key: str) -> Outcome:
    return 200 if oracle.visible(caller, key) else 404


READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("list", tuple(CLASSES), oracle.visible_keys, list_ids),
    MatrixPath("get", KEYS, expect_access, get_access),
    MatrixPath("get.files", KEYS, expect_files, get_files),
    MatrixPath("get.events", KEYS, expect_event_ids, get_event_ids),
    MatrixPath("file.download", FILES, expect_visible, download),
    MatrixPath("file.metadata", FILES, expect_visible, metadata),
    *QUERY_READ_PATHS,  # /api/query (issue 5)
    *STORAGE_READ_PATHS,  # /api/storage (issue 11)
    *ITEM_PAGE_READ_PATHS,  # the storage part of a sample's page (issue 19)
    *TREE_PAGE_READ_PATHS,  # the storage tree and the table count fragments (issue 24)
    *BOARD_READ_PATHS,  # /api/dashboard, /api/notification (issue 12)
    *SAVED_VIEW_READ_PATHS,  # /api/saved-view (issue 21)
    *ALERT_READ_PATHS,  # /api/alert-rule (issue 23)
    *WEBHOOK_READ_PATHS,  # /api/webhook (issue 36)
    *DATAMODEL_READ_PATHS,  # /api/datamodel, /api/sync (issue 14)
    *SIGN_IN_READ_PATHS,  # /api/auth/signins, /api/user/{id}/secondFactor (issue 35)
    *RATE_LIMIT_READ_PATHS,  # /api/user/ratelimit (issue 36)
    *SEARCH_READ_PATHS,  # /api/search, /api/query/freetext (issue 10)
    *ODATA_READ_PATHS,  # /odata (issue 13)
    *EXPORT_READ_PATHS,  # /api/sync/files (issue 14)
    *IMPORT_READ_PATHS,  # /api/import (issue 22)
    *CHANGE_READ_PATHS,  # /api/changes (issue 36)
)
