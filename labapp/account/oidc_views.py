"""The OpenID Connect sign-in routes (issue 35 §1): to the provider and back, with every
sign-in or refusal in the sign-in log. The login page that lists the providers, the logout
that offers a provider's own, and the profile stay in :mod:`labapp.account.views`."""
from __future__ import annotations

from flask import Blueprint, Response, redirect, request, session, url_for
from werkzeug.wrappers import Response as BaseResponse

from labapp.account import oidc as oidc_sign_in
from labapp.account.views import local_path, login_page
from labapp.auth import oidc
from labapp.errors import NotFound
from labapp.oidc_settings import OidcProvider
from labapp.web.loader import client_address, rotate_csrf_token, set_login_cookies
from labapp.web.pages import no_store
from labapp.web.units import opens_own_units, writes

bp = Blueprint("oidc_views", __name__)
bp.after_request(no_store)

# Where this browser goes after an OpenID Connect sign-in.
NEXT_KEY = "oidc_next"
# Refusals that are no fault of the person signing in.
SERVICE_PROBLEMS = frozenset({"provider_unreachable", "issuer_mismatch", "misconfigured"})


def _provider_or_404(name: str) -> OidcProvider:
    found = oidc.provider(name)
    if found is None:
        raise NotFound(f"No sign-in service is called {name!r}.")
    return found


def _refused(name: str, refusal: oidc.SignInRefused) -> Response:
    oidc_sign_in.record_sign_in(name, succeeded=False, address=client_address(),
                                reason=refusal.reason)
    status = 503 if refusal.reason in SERVICE_PROBLEMS else 401
    return login_page(status=status, error=refusal.message)


@bp.get("/login/oidc/<name>")
@writes
@opens_own_units
def oidc_start(name: str) -> BaseResponse:
    """Send the browser to the provider's sign-in; ``next`` is kept for the callback. A
    provider that cannot be reached is a refusal the sign-in log records (a write)."""
    provider = _provider_or_404(name)
    session[NEXT_KEY] = local_path(request.args.get("next"))
    try:
        return oidc.authorization_redirect(
            provider, url_for("oidc_views.oidc_callback", name=name, _external=True))
    except oidc.SignInRefused as refusal:
        return _refused(name, refusal)


@bp.get("/login/oidc/<name>/callback")
@writes
@opens_own_units
def oidc_callback(name: str) -> BaseResponse:
    """The provider's answer: the ID token is verified (no database work meanwhile), then the
    user is found or created and logged in, in one short write."""
    provider = _provider_or_404(name)
    next_path = local_path(session.pop(NEXT_KEY, None))
    try:
        identity = oidc.verify_callback(provider)
        pair = oidc_sign_in.sign_in(identity)
    except oidc.SignInRefused as refusal:
        return _refused(name, refusal)
    oidc_sign_in.record_sign_in(name, succeeded=True, address=client_address(),
                                username=pair.user_id)
    rotate_csrf_token()
    response = redirect(next_path or url_for("web.home"), 303)
    set_login_cookies(response, pair)
    return response
