"""``LABAPP_OIDC_PROVIDERS`` is checked at start-up: a mistake stops the start with a message
naming it, and a correct entry gets its defaults."""
from __future__ import annotations

import json
from typing import Any

import pytest

from labapp.config import ConfigError, load_settings
from labapp.oidc_settings import OidcProvider

ENTRY = {"name": "entra", "issuer": "https://login.example.org/tenant/v2.0/",
         "clientId": "labapp", "clientSecret": "s3cret"}


def _providers(*entries: Any) -> tuple[OidcProvider, ...]:
    settings = load_settings({"OIDC_PROVIDERS": json.dumps(list(entries))}, environ={})
    providers: tuple[OidcProvider, ...] = settings["OIDC_PROVIDERS"]
    return providers


def test_none_by_default() -> None:
    assert load_settings(environ={})["OIDC_PROVIDERS"] == ()
    assert load_settings(environ={})["LOGIN_PASSWORD_FORM"] is True


def test_an_entry_gets_its_defaults() -> None:
    (provider,) = _providers(ENTRY)
    assert provider.display_name == "entra"
    assert provider.issuer == "https://login.example.org/tenant/v2.0/"  # exactly as given
    assert provider.discovery_url == \
        "https://login.example.org/tenant/v2.0/.well-known/openid-configuration"
    assert provider.scopes == ("openid", "profile", "email")
    assert provider.username_claim == "preferred_username"
    assert provider.create_users is False
    assert provider.auth_source == "oidc:entra"
    assert "s3cret" not in repr(provider)


def test_roles_may_be_one_name_or_a_list() -> None:
    (provider,) = _providers({**ENTRY, "roleClaim": "groups",
                              "roles": {"a": "ADMIN", "b": ["DATA_MANAGER", "ADMIN"]}})
    assert provider.roles == {"a": ("ADMIN",), "b": ("DATA_MANAGER", "ADMIN")}


@pytest.mark.parametrize(("raw", "message"), [
    ("{not json", "not JSON"),
    ('{"name": "x"}', "expected a JSON array"),
    (json.dumps([{**ENTRY, "clientid": "typo"}]), "unknown key(s) clientid"),
    (json.dumps([{k: v for k, v in ENTRY.items() if k != "clientSecret"}]),
     "'clientSecret' must be a non-empty string"),
    (json.dumps([{**ENTRY, "name": "Entra ID"}]), "lowercase letters"),
    (json.dumps([{**ENTRY, "issuer": "login.example.org"}]), "http:// or https://"),
    (json.dumps([{**ENTRY, "scopes": ["profile"]}]), "holding 'openid'"),
    (json.dumps([{**ENTRY, "createUsers": True}]), "needs a 'defaultDepartment'"),
    (json.dumps([{**ENTRY, "createUsers": "yes"}]), "'createUsers' must be true or false"),
    (json.dumps([{**ENTRY, "roles": {"a": 1}}]), "'roles' must map claim values"),
    (json.dumps([{**ENTRY, "departments": ["x"]}]), "'departments' must map"),
    (json.dumps([ENTRY, ENTRY]), "given twice: entra"),
])
def test_a_mistake_stops_the_start(raw: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_settings({"OIDC_PROVIDERS": raw}, environ={})
    assert "LABAPP_OIDC_PROVIDERS=" in str(error.value)
    assert message in str(error.value)
