"""``/api/webhook``: made, read, changed and deleted by its owner and ADMIN, 404 for anyone
else; checked whole (URL, classes, kinds, filter) before anything is written; its secret
shown once and kept sealed."""
from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from flask import Flask
from sqlalchemy import func, select

from labapp import sealing
from labapp.db import db
from labapp.model import WebhookSubscription
from labapp.webhooks import keys
from labapp.webhooks.addresses import URL_PATTERN, AddressRefused, parse_url
from tests.conftest import ApiClient
from tests.webhooks.conftest import body_of, hook_body, made

URL = "https://receiver.example.org/labapp"


def count(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(WebhookSubscription)) or 0


def test_made_with_its_secret_shown_once_and_sealed(app: Flask, admin: ApiClient) -> None:
    hook = made(admin, hook_body(URL, eClasses=["sample"], kinds=["update", "create"]))
    assert hook["secret"].startswith("whsec_")
    assert hook["eClasses"] == ["Sample"] and hook["kinds"] == ["create", "update"]
    assert hook["state"] == "active" and hook["ownerID"] == "admin" and hook["canWrite"]
    again = body_of(admin.get(f"/api/webhook/{hook['id']}"), 200)
    assert "secret" not in again
    assert [item["id"] for item in body_of(admin.get("/api/webhook"), 200)] == [hook["id"]]
    with app.app_context():
        sealed = db.session.get(WebhookSubscription, hook["id"]).secret
        assert hook["secret"] not in sealed
        assert keys.unseal(sealed, (app.config["SECRET_KEY"],)) == hook["secret"]


def test_rotated_secret_is_new_and_shown_once(app: Flask, admin: ApiClient) -> None:
    hook = made(admin, hook_body(URL))
    rotated = body_of(admin.post(f"/api/webhook/{hook['id']}/secret"), 200)
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != hook["secret"]
    with app.app_context():
        sealed = db.session.get(WebhookSubscription, hook["id"]).secret
        assert keys.unseal(sealed, (app.config["SECRET_KEY"],)) == rotated["secret"]


def test_a_sealed_secret_does_not_open_under_another_key() -> None:
    sealed = keys.seal(keys.new_secret(), "one key")
    with pytest.raises(sealing.Unreadable):
        keys.unseal(sealed, ("another key",))


def test_updated_and_deleted(admin: ApiClient, app: Flask) -> None:
    hook = made(admin, hook_body(URL))
    changed = body_of(admin.put(f"/api/webhook/{hook['id']}", json={
        **hook, "name": "Renamed", "active": False, "eClasses": ["Sample"],
        "filter": "amount le 5"}), 200)
    assert (changed["name"], changed["active"], changed["state"], changed["filter"]) == (
        "Renamed", False, "disabled", "amount le 5")
    assert admin.delete(f"/api/webhook/{hook['id']}").status_code == 204
    assert admin.get(f"/api/webhook/{hook['id']}").status_code == 404
    assert count(app) == 0


def test_someone_elses_webhook_is_404_like_an_unknown_one(
        admin: ApiClient, member: Callable[..., ApiClient]) -> None:
    alice, bob = member("alice"), member("bob")
    hook = made(alice, hook_body(URL))
    unknown = bob.get("/api/webhook/nosuchhook").get_json()
    for method, path in (("GET", ""), ("PUT", ""), ("DELETE", ""), ("POST", "/ping"),
                         ("POST", "/secret"), ("GET", "/deliveries"),
                         ("POST", "/deliveries/1/redeliver")):
        response = bob.open(method, f"/api/webhook/{hook['id']}{path}",
                            json=hook_body(URL) if method == "PUT" else None)
        assert response.status_code == 404, (method, path)
        if path == "" and method == "GET":
            assert response.get_json()["detail"] == unknown["detail"].replace(
                "nosuchhook", hook["id"])
    assert body_of(bob.get("/api/webhook"), 200) == []
    assert [item["id"] for item in body_of(admin.get("/api/webhook"), 200)] == [hook["id"]]
    assert body_of(admin.get(f"/api/webhook/{hook['id']}"), 200)["canWrite"] is True


def test_a_delivery_of_another_webhook_is_404(member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    first, second = made(alice, hook_body(URL)), made(alice, hook_body(URL, "Other"))
    ping = body_of(alice.post(f"/api/webhook/{first['id']}/ping"), 202)
    response = alice.post(f"/api/webhook/{second['id']}/deliveries/{ping['id']}/redeliver")
    assert response.status_code == 404


@pytest.mark.parametrize(("url", "why"), [
    ("ftp://receiver.example.org/x", "only http:// and https://"),
    ("file:///etc/passwd", "only http:// and https://"),
    ("javascript:alert(1)", "only http:// and https://"),
    ("https://user:secret@receiver.example.org/", "user names and passwords"),
    ("http://127.0.0.1:8080/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://10.1.2.3/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://169.254.169.254/latest/meta-data", "link-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://0.0.0.0/", "private"),
    ("http://224.0.0.1/", "not a public address"),
    ("http://100.64.0.1/", "not a public address"),
    ("http:///nohost", "no host"),
    ("https://receiver.example.org/caf\u00e9", "only ASCII"),
    ("https://b\u00fccher.example/", "only ASCII"),
])
def test_urls_refused(app: Flask, admin: ApiClient, url: str, why: str) -> None:
    response = admin.post("/api/webhook", json=hook_body(url))
    assert response.status_code == 400, response.get_json()
    problem = response.get_json()
    assert any(error["field"] == "url" and why in error["message"]
               for error in problem["errors"]), problem
    assert count(app) == 0


@pytest.mark.parametrize(("url", "in_form"), [
    ("https://receiver.example.org/labapp", True),
    ("HTTP://receiver.example.org:8080/x?y=1#z", True),
    ("https://[2001:db8::1]/hook", True),
    ("http://receiver", True),
    ("ftp://receiver.example.org/x", False),
    ("javascript:alert(1)", False),
    ("https://user:secret@receiver.example.org/", False),
    ("http:///nohost", False),
    ("https://receiver.example.org/caf\u00e9", False),
    ("https://receiver.example.org/a b", False),
    ("https://receiver.example.org:1/x", True),
    ("https://receiver.example.org:65535/x", True),
    ("https://receiver.example.org:0065535/x", True),
    ("https://receiver.example.org:/x", True),
    ("https://receiver.example.org:0/x", False),
    ("https://receiver.example.org:000/x", False),
    ("https://receiver.example.org:65536/x", False),
    ("https://receiver.example.org:70000/x", False),
    ("https://receiver.example.org:123456/x", False),
])
def test_the_documented_pattern_agrees_with_the_check(url: str, in_form: bool) -> None:
    """The API document's pattern for a URL (what generated clients send) accepts what the
    server's check of its form accepts, and refuses what it refuses."""
    assert bool(re.match(URL_PATTERN, url)) is in_form
    try:
        parse_url(url)
    except AddressRefused:
        accepted = False
    else:
        accepted = True
    assert accepted is in_form


@pytest.mark.parametrize("body", [
    hook_body("https://receiver.example.org/\r\nX-Injected: 1"),
    hook_body(URL, name="Line\nbreak"),
    hook_body(URL, name="Nul\x00"),
    hook_body("https://receiver.example.org/" + "a" * 2001),
    hook_body(URL, name="n" * 256),
    hook_body(URL, eClasses=["NoSuchClass"]),
    hook_body(URL, kinds=["exploded"]),
    hook_body(URL, filter="amount le 5"),  # a filter needs one class
    hook_body(URL, eClasses=["Sample"], filter="nosuchfield eq 1"),
    hook_body(URL, eClasses=["Sample"] * 101),
    hook_body(URL, active="yes"),
    {**hook_body(URL), "unknown": 1},
])
def test_bad_bodies_are_refused_whole(app: Flask, admin: ApiClient, body: dict) -> None:
    response = admin.post("/api/webhook", json=body)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["code"] in {"validation_failed", "invalid_input",
                                           "invalid_filter", "invalid_json", "invalid_value"}
    assert count(app) == 0


def test_an_update_refused_changes_nothing(admin: ApiClient) -> None:
    hook = made(admin, hook_body(URL))
    response = admin.put(f"/api/webhook/{hook['id']}", json=hook_body("http://10.0.0.1/"))
    assert response.status_code == 400
    assert body_of(admin.get(f"/api/webhook/{hook['id']}"), 200)["url"] == URL


def test_anonymous_is_refused(client) -> None:
    assert client.get("/api/webhook").status_code == 401
    assert client.post("/api/webhook", json=hook_body(URL)).status_code == 401
