"""What a setting's text may be: the parsers that turn a ``LABAPP_*`` value into the setting
(a number, a URL, an LDAP filter, networks...), each raising ValueError with what was
expected. :mod:`labapp.config` declares which setting takes which parser."""
from __future__ import annotations

from typing import Any

# When a web process indexes the changes it queued while no worker runs (SEARCH_DRAIN).
SEARCH_DRAINS = ("after-commit", "next-request", "before-search")
# Who must sign in with a second factor (docs/decisions/second-factor.md).
SECOND_FACTOR_REQUIREMENTS = ("none", "admin", "all")
# Where file contents live (docs/decisions/file-store-setting.md).
FILE_STORES = ("folder", "database")


def parse_bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ValueError("expected true or false")


def parse_positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise ValueError("expected a whole number greater than zero")
    return value


def parse_non_negative_int(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise ValueError("expected a whole number, zero or more")
    return value


def parse_search_drain(raw: str) -> str:
    value = raw.strip().lower()
    if value not in SEARCH_DRAINS:
        raise ValueError(f"expected one of {', '.join(SEARCH_DRAINS)}")
    return value


def parse_second_factor_requirement(raw: str) -> str:
    value = raw.strip().lower()
    if value not in SECOND_FACTOR_REQUIREMENTS:
        raise ValueError(f"expected one of {', '.join(SECOND_FACTOR_REQUIREMENTS)}")
    return value


def parse_database_url(raw: str) -> str:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(raw)
    except ArgumentError as exc:
        raise ValueError(f"not a database URL ({exc})") from None
    if url.get_backend_name() not in {"sqlite", "postgresql"}:
        raise ValueError("only sqlite:/// and postgresql+psycopg:// URLs are supported")
    return raw


SEARCH_BACKENDS = ("whoosh", "postgresql")


def parse_search_backend(raw: str) -> str:
    if raw not in SEARCH_BACKENDS:
        raise ValueError(f"expected one of {', '.join(SEARCH_BACKENDS)}")
    return raw


def parse_text(raw: str) -> str:
    if not raw.strip():
        raise ValueError("must not be empty")
    return raw


def parse_key_list(raw: str) -> tuple[str, ...]:
    """Keys separated by whitespace (a generated key holds none); empty: none."""
    return tuple(raw.split())


def parse_low_amounts(raw: str) -> dict[str, float]:
    """``unit=amount`` pairs separated by commas (``µl=10,ml=0.01``); empty for none."""
    thresholds: dict[str, float] = {}
    for part in raw.split(","):
        if not part.strip():
            continue
        unit, equals, amount = part.partition("=")
        if not equals or not unit.strip():
            raise ValueError(f"expected unit=amount, got {part.strip()!r}")
        value = float(amount)
        if not value >= 0 or value == float("inf"):
            raise ValueError(f"expected an amount of zero or more for {unit.strip()!r}")
        thresholds[unit.strip()] = value
    return thresholds


def parse_file_store(raw: str) -> str:
    value = raw.strip().lower()
    if value not in FILE_STORES:
        raise ValueError("expected folder or database")
    return value


def parse_smtp_url(raw: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(raw)
    if parts.scheme not in {"smtp", "smtps"} or not parts.hostname:
        raise ValueError("expected smtp://[user:password@]host[:port] or smtps://...")
    try:
        parts.port  # noqa: B018  (a port that is not a number raises here)
    except ValueError:
        raise ValueError("the port must be a number") from None
    return raw


def parse_http_url(raw: str) -> str:
    if not raw.startswith(("http://", "https://")):
        raise ValueError("expected an http:// or https:// address")
    return raw.rstrip("/")


def parse_oidc_providers(raw: str) -> tuple[Any, ...]:
    from labapp.oidc_settings import parse_providers

    return parse_providers(raw)
def parse_ldap_url(raw: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(raw.strip())
    if parts.scheme not in {"ldap", "ldaps"} or not parts.hostname:
        raise ValueError("expected ldap://host[:port] or ldaps://host[:port]")
    try:
        parts.port  # noqa: B018  (a port that is not a number raises here)
    except ValueError:
        raise ValueError("the port must be a number") from None
    return raw.strip().rstrip("/")


def parse_ldap_filter(raw: str) -> str:
    text = raw.strip()
    if not (text.startswith("(") and text.endswith(")")) or "{username}" not in text:
        raise ValueError("expected an LDAP filter in parentheses holding {username}, "
                         "such as (uid={username})")
    return text


def parse_group_mapping(raw: str) -> dict[str, str]:
    """``group DN=>value`` pairs separated by ``;`` (empty for none); group DNs lower-cased."""
    mapping: dict[str, str] = {}
    for part in raw.split(";"):
        if not part.strip():
            continue
        group, arrow, value = part.partition("=>")
        if not arrow or not group.strip() or not value.strip():
            raise ValueError(f"expected group DN=>value, got {part.strip()!r}")
        mapping[" ".join(group.split()).lower()] = value.strip()
    return mapping


def parse_networks(raw: str) -> tuple[Any, ...]:
    """Comma-separated networks (``10.0.0.0/8``, ``::1/128``, a bare address); empty: none."""
    import ipaddress

    networks = []
    for part in raw.split(","):
        if not part.strip():
            continue
        try:
            networks.append(ipaddress.ip_network(part.strip(), strict=False))
        except ValueError:
            raise ValueError(f"not a network: {part.strip()!r}") from None
    return tuple(networks)
