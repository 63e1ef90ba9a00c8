"""OpenID Connect with Authlib: the authorization code flow with PKCE, and ID tokens verified
against the provider's JWKS (signature, issuer, audience, expiry, nonce).

The providers come from ``LABAPP_OIDC_PROVIDERS`` (:mod:`labapp.oidc_settings`); their
Authlib clients are bound to the application by :func:`init_app`. ``state``, ``nonce`` and the
PKCE verifier of a sign-in in progress live in this browser's signed session cookie and are
used once: a callback whose ``state`` this browser did not start, or that comes a second
time, is refused. The discovery document and the JWKS are fetched at the first sign-in (and
the JWKS again when a token names a key it does not hold), so the application starts while a
provider is down.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import requests
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.flask_client import OAuth
from flask import Flask, current_app
from joserfc.errors import ClaimError, JoseError
from werkzeug.wrappers import Response

from labapp.oidc_settings import OidcProvider

EXTENSION = "labapp.oidc"
# Seconds the provider and this host's clocks may differ when expiry is checked.
CLOCK_LEEWAY = 60
HTTP_TIMEOUT = 10


class SignInRefused(Exception):
    """The provider's answer was refused; ``reason`` is a short code for the sign-in log,
    ``message`` what the person signing in is told."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class VerifiedIdentity:
    """The claims of an ID token that passed every check, and its provider."""

    provider: OidcProvider
    subject: str
    claims: dict[str, Any]


def init_app(app: Flask) -> None:
    """Bind one Authlib client per configured provider to ``app``."""
    providers: tuple[OidcProvider, ...] = app.config["LABAPP"]["OIDC_PROVIDERS"]
    registry = OAuth(app)
    for provider in providers:
        registry.register(
            name=provider.name, client_id=provider.client_id,
            client_secret=provider.client_secret, server_metadata_url=provider.discovery_url,
            client_kwargs={"scope": " ".join(provider.scopes), "code_challenge_method": "S256",
                           "default_timeout": HTTP_TIMEOUT})
    app.extensions[EXTENSION] = {provider.name: provider for provider in providers}
    app.extensions[EXTENSION + ".clients"] = registry


def providers() -> list[OidcProvider]:
    """The configured providers, in the order of the setting."""
    return list(current_app.extensions[EXTENSION].values())


def provider(name: str) -> OidcProvider | None:
    """The provider called ``name``, or None."""
    found: OidcProvider | None = current_app.extensions[EXTENSION].get(name)
    return found


def _client(name: str) -> Any:
    return current_app.extensions[EXTENSION + ".clients"].create_client(name)


UNREACHABLE = "The sign-in service cannot be reached; try again later."


def _checked_metadata(found: OidcProvider) -> dict[str, Any]:
    """The provider's discovery document, once its ``issuer`` is the configured one (OpenID
    Connect Discovery 4.3). Raises :class:`SignInRefused`."""
    try:
        metadata: dict[str, Any] = _client(found.name).load_server_metadata()
    except (requests.RequestException, ValueError) as exc:
        raise SignInRefused("provider_unreachable", UNREACHABLE) from exc
    if metadata.get("issuer") != found.issuer:
        raise SignInRefused("issuer_mismatch", "The sign-in service is not configured "
                            "correctly here (its issuer differs); tell an administrator.")
    return metadata


def authorization_redirect(found: OidcProvider, redirect_uri: str) -> Response:
    """The redirect to the provider's authorization endpoint, with ``state``, ``nonce`` and a
    PKCE challenge kept for this browser. Raises :class:`SignInRefused` when the provider's
    discovery document cannot be read or names another issuer."""
    _checked_metadata(found)
    try:
        response: Response = _client(found.name).authorize_redirect(redirect_uri)
    except (requests.RequestException, ValueError) as exc:
        raise SignInRefused("provider_unreachable", UNREACHABLE) from exc
    return response


def verify_callback(found: OidcProvider) -> VerifiedIdentity:
    """Exchange the code of this callback request for tokens and verify the ID token.

    Raises :class:`SignInRefused` for an error the provider sent back, a ``state`` this
    browser did not start (or already used), a failed token exchange, and an ID token that is
    missing or fails any check.
    """
    _checked_metadata(found)
    # Authlib alone accepts another client's token when it names this client as ``azp``;
    # OpenID Connect Core 3.1.3.7 wants this client among the audiences.
    claims_options = {"iss": {"essential": True, "value": found.issuer},
                      "aud": {"essential": True, "value": found.client_id}}
    try:
        token = _client(found.name).authorize_access_token(leeway=CLOCK_LEEWAY,
                                                           claims_options=claims_options)
    except (requests.RequestException, ValueError) as exc:
        raise SignInRefused("provider_unreachable", UNREACHABLE) from exc
    except ClaimError as exc:
        raise SignInRefused(f"id_token_{exc.error}:{exc.claim}",
                            "The sign-in service's answer could not be verified.") from exc
    except JoseError as exc:
        raise SignInRefused(f"id_token_{exc.error}",
                            "The sign-in service's answer could not be verified.") from exc
    except AuthlibBaseError as exc:
        reason = "state_mismatch" if exc.error == "mismatching_state" else exc.error
        message = ("This sign-in was not started in this browser or was already used; start "
                   "again." if reason == "state_mismatch"
                   else "The sign-in service refused the sign-in.")
        raise SignInRefused(reason, message) from exc
    userinfo = token.get("userinfo")
    if not userinfo or not userinfo.get("sub"):
        # Authlib verifies an ID token only when the token response holds one.
        raise SignInRefused("id_token_missing",
                            "The sign-in service's answer could not be verified.")
    return VerifiedIdentity(found, str(userinfo["sub"]), dict(userinfo))


def end_session_url(name: str, post_logout_redirect_uri: str) -> str | None:
    """The provider's RP-initiated logout address (its ``end_session_endpoint``) returning to
    ``post_logout_redirect_uri``, or None when it has none or cannot be reached."""
    found = provider(name)
    if found is None:
        return None
    try:
        metadata = _client(name).load_server_metadata()
    except (requests.RequestException, ValueError):
        return None
    endpoint = metadata.get("end_session_endpoint")
    if not endpoint:
        return None
    query = urlencode({"client_id": found.client_id,
                       "post_logout_redirect_uri": post_logout_redirect_uri})
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"
