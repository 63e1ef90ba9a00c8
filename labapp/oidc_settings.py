"""The OpenID Connect providers of ``LABAPP_OIDC_PROVIDERS``: parsed and checked at start-up.

The setting is a JSON array with one object per provider (README, "Signing in with OpenID
Connect"). Only the shape is checked here; whether the issuer answers is found out at the
first sign-in, so the application starts while a provider is down.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
DEFAULT_SCOPES = ("openid", "profile", "email")


@dataclass(frozen=True)
class OidcProvider:
    """One provider: how to reach it and how its claims become a labapp user."""

    name: str
    display_name: str
    issuer: str
    client_id: str
    client_secret: str = field(repr=False)
    discovery_url: str
    scopes: tuple[str, ...] = DEFAULT_SCOPES
    username_claim: str = "preferred_username"
    name_claim: str = "name"
    email_claim: str = "email"
    department_claim: str | None = None
    departments: Mapping[str, str] = field(default_factory=dict)
    default_department: str | None = None
    role_claim: str | None = None
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    create_users: bool = False

    @property
    def auth_source(self) -> str:
        """The ``authSource`` of the users who sign in here."""
        return f"oidc:{self.name}"


_KEYS = {"name", "displayName", "issuer", "discoveryUrl", "clientId", "clientSecret", "scopes",
         "usernameClaim", "nameClaim", "emailClaim", "departmentClaim", "departments",
         "defaultDepartment", "roleClaim", "roles", "createUsers"}


def _text(entry: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = entry.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key!r} must be a non-empty string")
    return value


def _optional_text(entry: Mapping[str, Any], key: str) -> str | None:
    return _text(entry, key) if entry.get(key) is not None else None


def _http_url(entry: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = _text(entry, key, default)
    if not value.startswith(("https://", "http://")):
        raise ValueError(f"{key!r} must be an http:// or https:// address")
    return value


def _text_map(entry: Mapping[str, Any], key: str) -> dict[str, str]:
    value = entry.get(key, {})
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"{key!r} must map claim values to department ids")
    return value


def _role_map(entry: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    value = entry.get("roles", {})
    problem = ValueError("'roles' must map claim values to lists of role names")
    if not isinstance(value, dict):
        raise problem
    roles: dict[str, tuple[str, ...]] = {}
    for claim_value, names in value.items():
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise problem
        roles[claim_value] = tuple(names)
    return roles


def _provider(entry: Any) -> OidcProvider:
    if not isinstance(entry, dict):
        raise ValueError("each provider must be a JSON object")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}")
    name = _text(entry, "name")
    if not NAME_PATTERN.match(name):
        raise ValueError(f"name {name!r}: 1 to 32 lowercase letters, digits or -")
    # Kept exactly: it must equal the discovery document's issuer and the tokens' iss.
    issuer = _http_url(entry, "issuer")
    scopes = entry.get("scopes", list(DEFAULT_SCOPES))
    if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes) \
            or "openid" not in scopes:
        raise ValueError(f"{name}: 'scopes' must be a list of strings holding 'openid'")
    create_users = entry.get("createUsers", False)
    if not isinstance(create_users, bool):
        raise ValueError(f"{name}: 'createUsers' must be true or false")
    default_department = _optional_text(entry, "defaultDepartment")
    if create_users and default_department is None:
        raise ValueError(f"{name}: 'createUsers' needs a 'defaultDepartment' (a department id)")
    return OidcProvider(
        name=name, display_name=_text(entry, "displayName", name), issuer=issuer,
        discovery_url=_http_url(entry, "discoveryUrl",
                                f"{issuer.rstrip('/')}/.well-known/openid-configuration"),
        client_id=_text(entry, "clientId"), client_secret=_text(entry, "clientSecret"),
        scopes=tuple(scopes),
        username_claim=_text(entry, "usernameClaim", "preferred_username"),
        name_claim=_text(entry, "nameClaim", "name"),
        email_claim=_text(entry, "emailClaim", "email"),
        department_claim=_optional_text(entry, "departmentClaim"),
        departments=_text_map(entry, "departments"), default_department=default_department,
        role_claim=_optional_text(entry, "roleClaim"), roles=_role_map(entry),
        create_users=create_users)


def parse_providers(raw: str) -> tuple[OidcProvider, ...]:
    """The providers of the JSON text ``raw``; ValueError naming the first problem."""
    try:
        entries = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(entries, list):
        raise ValueError("expected a JSON array of provider objects")
    providers = tuple(_provider(entry) for entry in entries)
    names = [provider.name for provider in providers]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"provider name(s) given twice: {', '.join(duplicates)}")
    return providers
