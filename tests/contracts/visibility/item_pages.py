"""The storage part of a sample's page (issue 19): whoever may see a stored item sees where it
is, by the location's name path, linked only when the location is visible too; checking it
in and out from the page succeeds exactly where the rule allows, and a hidden item is
answered like one that never existed.

Pages send a visitor who is not signed in to the login page: that redirect is their 401.
Their forms need the browser session's CSRF token, so the write paths post as a browser
that logged in through the login form.
"""
from __future__ import annotations

import re
from html import unescape

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from tests.conftest import ADMIN_PASSWORD, csrf_of
from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld, closed
from tests.contracts.visibility.paths import UNKNOWN_ID, MatrixPath, Outcome
from tests.contracts.visibility.storage import CHECKINS, _access_of_new, _new_sample
from tests.contracts.visibility.world import ENTITY, PASSWORD, STORED_IN
from tests.contracts.visibility.writes import TARGETS

_STORED_IN = re.compile(r'<p class="stored-in" id="stored-in">(.*?)</p>', re.S)


def _page_status(response: TestResponse) -> int:
    """The status of a page's answer, a redirect to the login page counting as 401."""
    if response.status_code == 302 and "/login" in response.headers.get("Location", ""):
        return 401
    return response.status_code


def _hidden_like_unknown(hidden: TestResponse, unknown: TestResponse,
                         entity_id: str) -> Outcome:
    """404, provided the page is the one an id that never existed gets (nothing revealed)."""
    if unknown.status_code != 404 or hidden.get_data(as_text=True) != unknown.get_data(
            as_text=True).replace(UNKNOWN_ID, entity_id):
        return ("404 unlike an unknown id", unknown.status_code)
    return 404


def stored_in(live: LiveWorld, caller: str, key: str) -> Outcome:
    """``GET /entities/Sample/{id}``: whether the stored-in line shows the location's path
    (as the administrator reads it) and whether it links the location."""
    item = live.id(key)
    response = closed(live.client(caller).get(f"/entities/Sample/{item}"))
    status = _page_status(response)
    if status == 404:
        unknown = closed(live.client(caller).get(f"/entities/Sample/{UNKNOWN_ID}"))
        return _hidden_like_unknown(response, unknown, item)
    if status != 200:
        return status
    line = _STORED_IN.search(response.get_data(as_text=True))
    if line is None:
        return "no stored-in line"
    location = live.id(STORED_IN[key])
    _, stored = live.get_json("admin", f"/api/storage/location/{location}")
    shown = " ".join(unescape(re.sub(r"<[^>]+>", " ", line.group(1))).split())
    return shown == f"Stored in {stored['hierarchy']}", f"/storage/locations/{location}" in \
        line.group(1)


def expect_stored_in(caller: str, key: str) -> Outcome:
    """A visible item shows its location's path; the link only when that is visible too."""
    if not oracle.visible(caller, key):
        return 404
    return True, oracle.visible(caller, STORED_IN[key])


def _browser(live: LiveWorld, caller: str) -> FlaskClient:
    """A browser of ``caller`` logged in through the form (a caller who may not log in stays
    a visitor, with the session's CSRF token all the same)."""
    client = live.app.test_client()
    closed(client.get("/login"))
    password = ADMIN_PASSWORD if caller == "admin" else PASSWORD
    closed(client.post("/login", data={"username": caller, "password": password,
                                       "csrf_token": csrf_of(client)}))
    return client


def _post(live: LiveWorld, caller: str, url: str, form: dict[str, str]) -> tuple[
        TestResponse, FlaskClient]:
    client = _browser(live, caller)
    return closed(client.post(url, data={"csrf_token": csrf_of(client), **form})), client


def check_out(live: LiveWorld, caller: str, source: str) -> Outcome:
    """The admin makes a Sample at ``source`` and stores it in L-0; the caller checks it out
    from its page."""
    sample = _new_sample(live, source)
    stored = live.client("admin").post(f"/api/storage/location/{live.id('L-0')}/checkin",
                                       json=[{"eClass": "Sample", "id": sample}])
    assert stored.status_code == 200, stored.get_data(as_text=True)
    response, client = _post(live, caller, f"/storage/items/Sample/{sample}/checkout", {})
    status = _page_status(response)
    if status == 404:
        unknown = closed(client.post(f"/storage/items/Sample/{UNKNOWN_ID}/checkout",
                                     data={"csrf_token": csrf_of(client)}))
        return _hidden_like_unknown(response, unknown, sample)
    return status


def expect_check_out(caller: str, source: str) -> Outcome:
    held = _access_of_new(caller, source)
    return 303 if held == oracle.WRITE else 404 if held is None else 403


def check_in(live: LiveWorld, caller: str, label: str) -> Outcome:
    """The admin makes a Sample at the label's source; the caller checks it into the label's
    world location from the sample's page, naming the location by its id."""
    source, location = label.split(">")
    sample = _new_sample(live, source)
    response, _ = _post(live, caller, f"/storage/items/Sample/{sample}/checkin",
                        {"locationID": live.id(location)})
    return _page_status(response)


def expect_check_in(caller: str, label: str) -> Outcome:
    """The item first (hidden 404); a hidden location is a code that names nothing the
    caller may see (400, as an unknown code); then read-only location or item 403."""
    source, location = label.split(">")
    item = _access_of_new(caller, source)
    if item is None:
        return 404
    if oracle.access(caller, ENTITY[location]) is None:
        return 400
    return 303 if oracle.WRITE == item == oracle.access(caller, ENTITY[location]) else 403


READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("page.stored_in", tuple(STORED_IN), expect_stored_in, stored_in),
)
WRITE_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("page.checkout", tuple(TARGETS), expect_check_out, check_out),
    MatrixPath("page.checkin", CHECKINS, expect_check_in, check_in),
)
