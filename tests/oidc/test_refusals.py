"""Answers that must not sign anyone in, each produced for real: a replayed or foreign
callback, an authorization request whose nonce was stripped or changed on its way to the
provider, ID tokens swapped or altered in transit by a proxy at the token endpoint (another
client's token: the wrong audience; a changed payload: a signature that no longer matches),
and the token of a provider whose clock is behind (expired on arrival)."""
from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import requests
from flask import Flask

from labapp.db import db
from labapp.model import User
from tests.oidc.conftest import APP_ORIGIN, NAME, OidcLab
from tests.oidc.provider_process import (
    authorization_url,
    register_client,
    sign_in_at_provider,
)
from tests.oidc.proxy import TokenProxy, token_proxy

REFUSED = "could not be verified"


def _no_user(app: Flask, user_id: str = "alice") -> bool:
    with app.app_context():
        return db.session.get(User, user_id) is None


def _with_query(url: str, **changes: str | None) -> str:
    parts = urlsplit(url)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    return urlunsplit(parts._replace(query=urlencode(query)))


def _refused(answer: Any, text: str = REFUSED) -> None:
    assert answer.status_code == 401, answer.get_data(as_text=True)
    assert text in answer.get_data(as_text=True)


def test_a_callback_replayed_is_refused(oidc_lab: Callable[..., OidcLab],
        refusals: Callable[[], list[str]]) -> None:
    lab = oidc_lab()
    client = lab.app.test_client()
    start = client.get(f"/login/oidc/{NAME}")
    with requests.Session() as browser:
        back = sign_in_at_provider(browser, authorization_url(start), "alice",
                                   stop_at=APP_ORIGIN)
    callback = back.removeprefix(APP_ORIGIN)
    assert client.get(callback).status_code == 303
    client.post("/logout", data={"csrf_token": _csrf(client)})
    _refused(client.get(callback), "not started in this browser or was already used")
    assert refusals() == ["state_mismatch"]


def test_a_callback_in_another_browser_is_refused(oidc_lab: Callable[..., OidcLab],
        refusals: Callable[[], list[str]]) -> None:
    """The state is bound to the browser that started: a victim's browser given an
    attacker's callback (login CSRF) signs in as nobody."""
    lab = oidc_lab()
    attacker = lab.app.test_client()
    start = attacker.get(f"/login/oidc/{NAME}")
    with requests.Session() as browser:
        back = sign_in_at_provider(browser, authorization_url(start), "alice",
                                   stop_at=APP_ORIGIN)
    victim = lab.app.test_client()
    victim.get("/login")  # a browser with a session of its own
    _refused(victim.get(back.removeprefix(APP_ORIGIN)),
             "not started in this browser or was already used")
    assert victim.get("/api/user").status_code == 401
    assert refusals() == ["state_mismatch"]


def test_an_error_the_provider_sends_back_is_shown(oidc_lab: Callable[..., OidcLab],
        refusals: Callable[[], list[str]]) -> None:
    lab = oidc_lab()
    client = lab.app.test_client()
    start = client.get(f"/login/oidc/{NAME}")
    state = parse_qs(urlsplit(authorization_url(start)).query)["state"][0]
    answer = client.get(f"/login/oidc/{NAME}/callback",
                        query_string={"error": "access_denied", "state": state})
    _refused(answer, "refused the sign-in")
    assert refusals() == ["access_denied"]


def test_an_id_token_without_the_nonce_is_refused(oidc_lab: Callable[..., OidcLab],
        refusals: Callable[[], list[str]]) -> None:
    lab = oidc_lab()
    _refused(lab.sign_in("alice", tamper=lambda url: _with_query(url, nonce=None)))
    assert _no_user(lab.app)
    assert refusals() == ["id_token_missing_claim:nonce"]


def test_an_id_token_with_another_nonce_is_refused(oidc_lab: Callable[..., OidcLab],
        refusals: Callable[[], list[str]]) -> None:
    lab = oidc_lab()
    _refused(lab.sign_in("alice", tamper=lambda url: _with_query(url, nonce="replayed")))
    assert _no_user(lab.app)
    assert refusals() == ["id_token_invalid_claim:nonce"]


def _proxied(oidc_lab: Callable[..., OidcLab], proxy: TokenProxy) -> OidcLab:
    return oidc_lab(discoveryUrl=proxy.discovery_url)


def _id_token_of_another_client(lab: OidcLab, nonce: str) -> str:
    """An ID token the provider issued to another application (its own client), for the
    same account and nonce: everything matches but the audience."""
    redirect = "http://other.example/callback"
    other = register_client(lab.issuer, [redirect])
    verifier = "v" * 50
    challenge = base64.urlsafe_b64encode(
        hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urlencode({"client_id": other.client_id, "response_type": "code",
                       "scope": "openid profile", "redirect_uri": redirect, "state": "s",
                       "nonce": nonce, "code_challenge": challenge,
                       "code_challenge_method": "S256"})
    with requests.Session() as browser:
        back = sign_in_at_provider(browser, f"{lab.issuer}/auth?{query}", "alice",
                                   stop_at=redirect)
    code = parse_qs(urlsplit(back).query)["code"][0]
    token = requests.post(f"{lab.issuer}/token", timeout=10,
                          auth=(other.client_id, other.client_secret),
                          data={"grant_type": "authorization_code", "code": code,
                                "redirect_uri": redirect, "code_verifier": verifier})
    assert token.status_code == 200, token.text
    id_token: str = token.json()["id_token"]
    return id_token


def test_an_id_token_issued_to_another_client_is_refused(
        oidc_lab: Callable[..., OidcLab], issuer: str,
        refusals: Callable[[], list[str]]) -> None:
    with token_proxy(issuer) as proxy:
        lab = _proxied(oidc_lab, proxy)
        client = lab.app.test_client()
        start = authorization_url(client.get(f"/login/oidc/{NAME}"))
        nonce = parse_qs(urlsplit(start).query)["nonce"][0]
        foreign = _id_token_of_another_client(lab, nonce)
        proxy.mutate = lambda token: {**token, "id_token": foreign}
        with requests.Session() as browser:
            back = sign_in_at_provider(browser, start, "alice", stop_at=APP_ORIGIN)
        _refused(client.get(back.removeprefix(APP_ORIGIN)))
    assert _no_user(lab.app)
    assert refusals() == ["id_token_invalid_claim:aud"]


def _with_payload_claim(id_token: str, **claims: Any) -> str:
    """The token with claims changed in its payload and its signature kept."""
    header, payload, signature = id_token.split(".")
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    decoded.update(claims)
    changed = base64.urlsafe_b64encode(json.dumps(decoded).encode()).rstrip(b"=").decode()
    return f"{header}.{changed}.{signature}"


def test_an_id_token_altered_in_transit_is_refused(
        oidc_lab: Callable[..., OidcLab], issuer: str,
        refusals: Callable[[], list[str]]) -> None:
    with token_proxy(issuer) as proxy:
        lab = _proxied(oidc_lab, proxy)
        proxy.mutate = lambda token: {
            **token, "id_token": _with_payload_claim(token["id_token"],
                                                     groups=["lab-managers", "admins"])}
        _refused(lab.sign_in("alice"))
    assert _no_user(lab.app)
    assert refusals() == ["id_token_bad_signature"]


def test_the_proxy_passes_an_untouched_token(
        oidc_lab: Callable[..., OidcLab], issuer: str,
        refusals: Callable[[], list[str]]) -> None:
    """The refusals above are the changes', not the proxy's."""
    with token_proxy(issuer) as proxy:
        lab = _proxied(oidc_lab, proxy)
        assert lab.sign_in("alice").status_code == 303
    assert not _no_user(lab.app)
    assert refusals() == []


def test_an_expired_id_token_is_refused(oidc_lab: Callable[..., OidcLab],
                                        late_issuer: str,
                                        refusals: Callable[[], list[str]]) -> None:
    lab = oidc_lab(issuer_url=late_issuer)
    _refused(lab.sign_in("alice"))
    assert _no_user(lab.app)
    assert refusals() == ["id_token_expired_token:exp"]


def _csrf(client: Any) -> str:
    with client.session_transaction() as session:
        token: str = session["csrf"]
        return token

