"""The "Sign-in methods" administration page (ADMIN only): what is configured, a test of the
LDAP connection, and the directory sync's latest runs with their changes.

Each method is one section built by a function of :data:`SECTIONS` from the settings: local
passwords, LDAP, OpenID Connect providers.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Response, current_app

from labapp.access.actor import ADMIN
from labapp.auth import ldap
from labapp.oidc_settings import OidcProvider
from labapp.users import directory
from labapp.web.blocks import render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only, require

bp = members_only(Blueprint("signin_views", __name__, url_prefix="/admin/sign-in-methods"))

TEMPLATE = "users/sign_in_methods.html"


@dataclass(frozen=True)
class MethodSection:
    """One sign-in method on the page: its title, whether it is on, and what it is set to."""

    slug: str
    title: str
    enabled: bool
    details: list[tuple[str, str]] = field(default_factory=list)
    note: str = ""
    testable: bool = False


def _local_passwords(settings: dict[str, Any]) -> MethodSection:
    return MethodSection(
        "local", "Local passwords", True,
        [("Failed attempts before a pause", str(settings["LOGIN_MAX_FAILURES"])),
         ("Basic password memory", f"{settings['BASIC_AUTH_CACHE_SECONDS']} s")],
        "Users created here sign in with the password kept here; the local administrator "
        "always can, whatever the directory does.")


def _ldap_directory(settings: dict[str, Any]) -> MethodSection:
    config = ldap.settings()
    if config is None:
        return MethodSection("ldap", "LDAP / Active Directory", False,
                             note="Off: set LABAPP_LDAP_URL and LABAPP_LDAP_USER_BASE.")
    minutes = settings["DIRECTORY_SYNC_MINUTES"]
    return MethodSection(
        "ldap", "LDAP / Active Directory", True,
        [("Server", config.url + (" (StartTLS)" if config.start_tls else "")),
         ("Users", f"{config.user_base} {config.user_filter}"),
         ("Reader account", config.bind_dn or "anonymous"),
         ("Groups", config.group_base or "not used"),
         ("Group → role mappings", str(len(config.group_roles))),
         ("Group → department mappings", str(len(config.group_departments))),
         ("Unknown users", "created on first sign-in" if config.create_users else "refused"),
         ("Sync schedule", f"every {minutes} min" if minutes else "off (flask users sync)")],
        testable=True)


def _openid_connect(settings: dict[str, Any]) -> MethodSection:
    providers: tuple[OidcProvider, ...] = settings["OIDC_PROVIDERS"]
    if not providers:
        return MethodSection("oidc", "OpenID Connect", False,
                             note="Off: set LABAPP_OIDC_PROVIDERS (see the README).")
    return MethodSection(
        "oidc", "OpenID Connect", True,
        [(provider.display_name,
          f"{provider.issuer} · client {provider.client_id} · unknown users "
          f"{'created on first sign-in' if provider.create_users else 'refused'}")
         for provider in providers],
        "The login page offers each provider" + (
            " beside the password form." if settings["LOGIN_PASSWORD_FORM"] else
            "; the password form only at /login?with=password."))


SECTIONS: list[Callable[[dict[str, Any]], MethodSection]] = [
    _local_passwords, _ldap_directory, _openid_connect]


@bp.before_request
def _administrators_only() -> None:
    require(current_actor(), (ADMIN,))


def _page(block: str | None = None, **context: Any) -> Response:
    settings = current_app.config["LABAPP"]
    return render_page(TEMPLATE, block, sections=[section(settings) for section in SECTIONS],
                       runs=directory.recent_runs(), describe=directory.describe, **context)


@bp.get("")
def index() -> Response:
    """The methods, and the latest directory syncs."""
    return _page()


@bp.post("/ldap/test")
def test_ldap() -> Response:
    """Bind as the reader account and count the users: the result, or why it failed."""
    try:
        outcome, failed = ldap.check_connection(), False
    except ldap.DirectoryUnavailable as error:
        outcome, failed = error.detail, True
    return _page("test_result", test_result=outcome, test_failed=failed)
