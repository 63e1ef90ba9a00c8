"""The webhook pages through the test client: made with the form (the secret on the page
that follows, never again), refused with the API's messages and nothing written, changed,
pinged and deleted; someone else's webhook is the 404 of an unknown one."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask import Flask
from sqlalchemy import func, select

from labapp.db import db
from labapp.model import WebhookDelivery, WebhookSubscription
from labapp.webhooks import keys
from labapp.webhooks.settings import WebhookSettings
from tests.conftest import ApiClient
from tests.helpers.pages import post_form, signed_in
from tests.webhooks.conftest import hook_body, made

URL = "https://receiver.example.org/labapp"


def _form(**values: Any) -> dict[str, Any]:
    return {"name": "Mirror", "url": URL, "eClasses": ["Sample"], "kinds": ["create"],
            "filter": "", "active": "true", **values}


def _hooks(app: Flask) -> list[WebhookSubscription]:
    with app.app_context():
        return list(db.session.scalars(select(WebhookSubscription)))


def test_made_and_its_secret_shown_once(app: Flask, member: Callable[..., ApiClient]) -> None:
    """The form's answer redirects to the webhook's page, which shows the secret that once:
    reloading it makes no second webhook and shows no secret; another session never sees
    it; a new secret is shown the same way."""
    member("alice")
    page = signed_in(app, "alice")
    assert "No webhooks yet." in page.get("/webhooks").get_data(as_text=True)
    made_page = post_form(page, "/webhooks/new", _form())
    assert made_page.status_code == 303
    [hook] = _hooks(app)
    assert made_page.headers["Location"] == f"/webhooks/{hook.id}"
    assert (hook.name, hook.events) == ("Mirror", {"eClasses": ["Sample"], "kinds": ["create"]})
    other_session = signed_in(app, "alice")
    assert "secret-value" not in other_session.get(f"/webhooks/{hook.id}").get_data(as_text=True)
    first = _secret_on(page.get(made_page.headers["Location"]).get_data(as_text=True))
    with app.app_context():
        assert first == keys.unseal(db.session.get(WebhookSubscription, hook.id).secret,
                                    WebhookSettings.current().secret_keys)
    again = page.get(f"/webhooks/{hook.id}").get_data(as_text=True)
    assert "secret-value" not in again and "Nothing delivered yet." in again
    assert len(_hooks(app)) == 1
    listed = page.get("/webhooks").get_data(as_text=True)
    assert "Mirror" in listed and URL in listed

    rotated = post_form(page, f"/webhooks/{hook.id}/secret")
    assert (rotated.status_code, rotated.headers["Location"]) == (303, f"/webhooks/{hook.id}")
    rotated_page = page.get(rotated.headers["Location"]).get_data(as_text=True)
    second = _secret_on(rotated_page)
    assert second != first
    assert 'id="previous-secret"' in rotated_page and "signs beside the new one" in rotated_page
    assert "secret-value" not in page.get(f"/webhooks/{hook.id}").get_data(as_text=True)


def _secret_on(html: str) -> str:
    found = re.search(r'id="secret-value">(whsec_[^<]+)<', html)
    assert found, "no secret on the page"
    return found.group(1)


def test_refused_with_the_apis_messages_and_nothing_written(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    member("alice")
    page = signed_in(app, "alice")
    for values, message in (({"url": "http://192.168.0.9/"}, "private address"),
                            ({"name": "Two\nlines"}, "control characters"),
                            ({"url": "gopher://x.example/"}, "only http:// and https://"),
                            ({"eClasses": [], "filter": "amount le 5"}, "exactly one class")):
        answer = post_form(page, "/webhooks/new", _form(**values))
        assert answer.status_code == 400, values
        assert message in answer.get_data(as_text=True), values
    assert _hooks(app) == []


def test_changed_pinged_and_deleted(app: Flask, member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    hook = made(alice, hook_body(URL))
    page = signed_in(app, "alice")
    saved = post_form(page, f"/webhooks/{hook['id']}", _form(name="Renamed", active=""))
    assert saved.status_code == 303
    [stored] = _hooks(app)
    assert (stored.name, stored.active) == ("Renamed", False)
    pinged = post_form(page, f"/webhooks/{hook['id']}/ping")
    assert pinged.status_code == 303
    shown = page.get(pinged.headers["Location"]).get_data(as_text=True)
    assert "webhook.ping" in shown and "ping-queued" in shown
    assert post_form(page, f"/webhooks/{hook['id']}/delete").status_code == 303
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(WebhookDelivery)) == 0
    assert _hooks(app) == []


def test_someone_elses_webhook_is_not_found(app: Flask,
                                            member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    member("bob")
    hook = made(alice, hook_body(URL))
    page = signed_in(app, "bob")
    assert page.get(f"/webhooks/{hook['id']}").status_code == 404
    for tail in ("", "/ping", "/secret", "/delete", "/deliveries/1/redeliver"):
        assert post_form(page, f"/webhooks/{hook['id']}{tail}", _form()).status_code == 404
    assert "Mirror" not in page.get("/webhooks").get_data(as_text=True)
    assert len(_hooks(app)) == 1
