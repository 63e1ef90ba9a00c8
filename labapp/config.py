"""Settings: every setting declared once, read from ``LABAPP_*`` variables, validated at start.

Precedence, lowest first: the declared default, ``instance/config.py`` (assignments such as
``LABAPP_DATABASE_URL = "..."``), the process environment, and the ``overrides`` mapping that
``create_app`` receives (used by tests). The README's settings table is checked against
:data:`SETTINGS` by a test, so a setting cannot exist without being documented.
"""
from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labapp.setting_values import (
    parse_bool,
    parse_database_url,
    parse_file_store,
    parse_group_mapping,
    parse_http_url,
    parse_key_list,
    parse_ldap_filter,
    parse_ldap_url,
    parse_low_amounts,
    parse_networks,
    parse_non_negative_int,
    parse_oidc_providers,
    parse_positive_int,
    parse_search_backend,
    parse_search_drain,
    parse_second_factor_requirement,
    parse_smtp_url,
    parse_text,
)

PREFIX = "LABAPP_"
# Variables of the test suite (LABAPP_TEST_BACKEND, LABAPP_TEST_POSTGRES_URL), not settings.
TEST_PREFIX = "LABAPP_TEST_"


class ConfigError(Exception):
    """Raised at start-up when one or more settings are invalid; the message lists them all."""


@dataclass(frozen=True)
class Setting:
    """One setting: its name without the prefix, default (None = computed), help and parser."""

    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = parse_text

    @property
    def env_name(self) -> str:
        return PREFIX + self.name


SETTINGS: tuple[Setting, ...] = (
    Setting("INSTANCE_PATH", None,
            "Folder for runtime data (database, secret key, files, search index). "
            "Default: `instance/` in the working directory."),
    Setting("DATABASE_URL", None,
            "SQLAlchemy URL of the database. Default: SQLite file `labapp.db` in the instance "
            "folder. Production: `postgresql+psycopg://user@host/dbname`.",
            parse_database_url),
    Setting("SECRET_KEY", None,
            "Key that signs tokens and cookies. Default: generated once into "
            "`instance/secret_key`."),
    Setting("SECRET_KEY_FALLBACKS", None,
            "Earlier values of `SECRET_KEY`, separated by spaces, that still open the "
            "secrets they sealed (webhook and second-factor secrets) and Flask's own "
            "cookie while they are listed (`flask init` seals those secrets anew under "
            "`SECRET_KEY`, after which an old key may go). Default: none.", parse_key_list),
    Setting("ADMIN_PASSWORD", None,
            "Password given to the `admin` user when `flask --app labapp init` creates it. "
            "Default: a generated password, printed once."),
    Setting("ON_PREMISES", True,
            "Whether this is an on-premises installation (enables the ADMIN ON-PREMISES scope).",
            parse_bool),
    Setting("MAX_UPLOAD_MB", 100,
            "Largest request body or file upload in MiB; larger ones are answered with 413.",
            parse_positive_int),
    Setting("LOGIN_MAX_FAILURES", 10,
            "Failed logins allowed per username from one client address within the window.",
            parse_positive_int),
    Setting("LOGIN_MAX_FAILURES_PER_ADDRESS", 100,
            "Failed logins allowed per client address over all usernames within the window "
            "(a spray); never less than `LOGIN_MAX_FAILURES`.", parse_positive_int),
    Setting("LOGIN_MAX_FAILURES_PER_USERNAME", 50,
            "Failed logins allowed per username over all addresses within the window (a "
            "distributed guess); never less than `LOGIN_MAX_FAILURES`.", parse_positive_int),
    Setting("LOGIN_WINDOW_SECONDS", 300,
            "Length of the failed-login window in seconds.", parse_positive_int),
    Setting("BASIC_AUTH_CACHE_SECONDS", 300,
            "How long a worker remembers a successful Basic `username:password` verification "
            "(0: never).", parse_non_negative_int),
    Setting("RATE_LIMIT_WINDOW_SECONDS", 10,
            "Window of the API rate limits in seconds: each limit below is requests per "
            "window, refilled evenly (a limit of 1000 per 10 s is 100 requests/s sustained, "
            "with bursts of up to 1000). See \"Rate limits\".", parse_positive_int),
    Setting("RATE_LIMIT_PER_TOKEN", 1000,
            "API requests per window for one personal access token or one login's Bearer "
            "tokens (0: no limit per token).", parse_non_negative_int),
    Setting("RATE_LIMIT_PER_USER", 2000,
            "API requests per window for one user over all their tokens, cookie sessions "
            "and Basic passwords (0: no limit per user).", parse_non_negative_int),
    Setting("RATE_LIMIT_PER_ADDRESS", 300,
            "API requests per window from one client address without valid credentials "
            "(logins, anonymous reads, refused credentials; 0: no limit per address).",
            parse_non_negative_int),
    Setting("REQUIRE_SECOND_FACTOR", "none",
            "Which local accounts must sign in with a second factor (TOTP): `none`, `admin` "
            "(holders of the ADMIN role) or `all`. Such a user without one is sent to enrol "
            "after their password on the login page; the API login and Basic passwords refuse "
            "them until they have.", parse_second_factor_requirement),
    Setting("SQLITE_BUSY_TIMEOUT_MS", 5000,
            "How long an SQLite connection waits for a lock before failing, in milliseconds.",
            parse_positive_int),
    Setting("SECURE_COOKIES", False,
            "Mark cookies `Secure` (set to true when served over HTTPS).", parse_bool),
    Setting("PROXY_COUNT", 0,
            "Number of reverse proxies in front of the app whose `X-Forwarded-For`/`-Proto` "
            "headers are trusted (login throttling keys on the real client address).",
            parse_non_negative_int),
    Setting("SEARCH_BACKEND", "whoosh",
            "Where full-text search keeps its documents: `whoosh`, an index folder on this "
            "host fed by the worker (one host), or `postgresql`, a table of the database "
            "written in the transaction of each change (several hosts; only with a "
            "PostgreSQL `DATABASE_URL`). After a change, run `flask --app labapp search "
            "rebuild`.", parse_search_backend),
    Setting("FILE_STORE", "folder",
            "Where file contents live: `folder` (the folder of `LABAPP_FILE_STORE_PATH`) or "
            "`database` (chunked rows in PostgreSQL, for several app hosts; refused on "
            "SQLite). Moving between them: export, then restore into the other.",
            parse_file_store),
    Setting("FILE_STORE_PATH", None,
            "Folder of the file contents when `LABAPP_FILE_STORE=folder`. Default: `files/` in "
            "the instance folder; several hosts may share one folder (it needs working "
            "`flock`, as NFS gives)."),
    Setting("SEARCH_INDEX_PATH", None,
            "Folder of the full-text search index. Default: `search-index/` in the instance "
            "folder. Rebuild it with `flask --app labapp search rebuild`."),
    Setting("SEARCH_WRITER_TIMEOUT", 10,
            "Seconds a worker waits for the search index's write lock (held by another "
            "worker) before leaving its queued changes to the next drain.",
            parse_positive_int),
    Setting("SEARCH_DRAIN", "after-commit",
            "While no worker runs, when a web process indexes the changes requests queued: "
            "`after-commit` (each request indexes its own changes before it answers) or "
            "`next-request` (every request first indexes what is waiting: a script writing "
            "many entities pays one index commit per read instead of one per write, and a "
            "search still finds everything committed before it began) or `before-search` "
            "(only a search request, of the API, the search page or its type-ahead, first "
            "indexes what is waiting: writing pays nothing for search until someone searches; "
            "the test suite runs so).", parse_search_drain),
    Setting("ALERT_TICK_SECONDS", 60,
            "Seconds between two evaluations of the alert rules by the worker (each also "
            "sends the e-mail due).",
            parse_positive_int),
    Setting("SQLITE_STATISTICS_SECONDS", 60,
            "How often the worker looks whether SQLite's planner statistics are due "
            "(`ANALYZE` once the data grew or shrank by a fifth); 0: it never does, and "
            "`flask --app labapp init` gathers them.",
            parse_non_negative_int),
    Setting("ODATA_PAGE_SIZE", 1000,
            "Rows per page of an OData feed; longer feeds continue through `@odata.nextLink`.",
            parse_positive_int),
    Setting("READ_UNITS", True,
            "Run the requests of routes that only read without the write lock (SQLite: a "
            "plain `BEGIN`, not `BEGIN IMMEDIATE`). False makes every request's unit of work "
            "take it, as before issue 20; only `bench/readlock.py` sets it, to compare.",
            parse_bool),
    Setting("LOW_AMOUNT", "µl=10,ml=0.01,µg=1000,mg=1,g=0.001",
            "Per unit, the amount below which a Sample is marked low on lists and widgets "
            "(`unit=amount`, comma-separated; units compared ignoring case, `ul` as `µl`). "
            "A sample's attribute `lowAmount` overrides it; an amount of 0 is always marked "
            "empty.", parse_low_amounts),
    Setting("SMTP_URL", None,
            "Mail server alert e-mails go through: `smtp://host:port` (STARTTLS when the server "
            "offers it) or `smtps://host:port`, with an optional `user:password@`. Unset: "
            "e-mail is off and alerts only ring the bell.", parse_smtp_url),
    Setting("MAIL_FROM", "labapp@localhost",
            "Sender address of alert e-mails."),
    Setting("PUBLIC_URL", "http://localhost:5000",
            "Address users reach labapp at, for the links in e-mails.", parse_http_url),
    Setting("OIDC_PROVIDERS", "[]",
            "OpenID Connect providers users may sign in with: a JSON array of objects "
            "(`name`, `displayName`, `issuer`, `clientId`, `clientSecret`, and optionally "
            "`discoveryUrl`, `scopes`, `usernameClaim`, `nameClaim`, `emailClaim`, "
            "`departmentClaim`, `departments`, `defaultDepartment`, `roleClaim`, `roles`, "
            "`createUsers`); see \"Signing in with OpenID Connect\". Empty: none.",
            parse_oidc_providers),
    Setting("LOGIN_PASSWORD_FORM", True,
            "Whether the login page shows the username and password form beside the "
            "OpenID Connect providers; false hides it (`/login?with=password` still shows "
            "it, for a local administrator). Password sign-in through the API is unchanged.",
            parse_bool),
    Setting("LDAP_URL", None,
            "LDAP / Active Directory server users sign in with: `ldap://host[:port]` (with "
            "`LDAP_START_TLS`) or `ldaps://host[:port]`. Unset: no directory sign-in.",
            parse_ldap_url),
    Setting("LDAP_START_TLS", False,
            "Upgrade an `ldap://` connection with StartTLS before any bind.", parse_bool),
    Setting("LDAP_CA_FILE", None,
            "PEM file of the certificate authorities the directory's TLS certificate is "
            "checked against (StartTLS and `ldaps://`); unset: the system's."),
    Setting("LDAP_BIND_DN", None,
            "DN labapp binds as to search the directory (a reader account); unset: "
            "anonymous."),
    Setting("LDAP_BIND_PASSWORD", None, "Password of `LDAP_BIND_DN`."),
    Setting("LDAP_USER_BASE", None,
            "Where users are searched (`ou=people,dc=example,dc=org`); required with "
            "`LDAP_URL`."),
    Setting("LDAP_USER_FILTER", "(uid={username})",
            "Filter that finds one user; `{username}` is replaced by the escaped username "
            "(Active Directory: `(sAMAccountName={username})`). Accounts it does not find "
            "cannot sign in, so it can leave out locked ones.", parse_ldap_filter),
    Setting("LDAP_USERNAME_ATTRIBUTE", "uid",
            "Attribute holding the username (Active Directory: `sAMAccountName`)."),
    Setting("LDAP_NAME_ATTRIBUTE", "cn", "Attribute holding the user's full name."),
    Setting("LDAP_EMAIL_ATTRIBUTE", "mail", "Attribute holding the user's e-mail address."),
    Setting("LDAP_DEPARTMENT_ATTRIBUTE", None,
            "Attribute naming the user's home department (a department id or name); used "
            "when no group of `LDAP_GROUP_DEPARTMENTS` applies."),
    Setting("LDAP_GROUP_BASE", None,
            "Where groups are searched; unset: group mappings are not used."),
    Setting("LDAP_GROUP_FILTER", "(member={dn})",
            "Filter that finds the groups of a user; `{dn}` is replaced by the user's "
            "escaped DN (groupOfUniqueNames: `(uniqueMember={dn})`)."),
    Setting("LDAP_GROUP_ROLES", None,
            "Roles given by group membership: `group DN=>ROLE` pairs separated by `;`. A "
            "directory user holds exactly the roles their groups map to.",
            parse_group_mapping),
    Setting("LDAP_GROUP_DEPARTMENTS", None,
            "Home department by group membership: `group DN=>department id` pairs "
            "separated by `;`; the first that applies wins.", parse_group_mapping),
    Setting("LDAP_DEFAULT_DEPARTMENT", None,
            "Department id of directory users no mapping places; unset: the first "
            "department."),
    Setting("LDAP_CREATE_USERS", True,
            "Create a directory user on their first sign-in (false: only users the sync or "
            "an administrator made may sign in).", parse_bool),
    Setting("LDAP_TIMEOUT", 5,
            "Seconds to wait for the directory to connect or answer.", parse_positive_int),
    Setting("DIRECTORY_SYNC_MINUTES", 0,
            "Minutes between two directory syncs run by the worker (`flask users sync`); "
            "0 turns the schedule off.", parse_non_negative_int),
    Setting("CHANGE_LOG_RETENTION_DAYS", 90,
            "Days the change log keeps a change (the change feed and webhooks read it); the "
            "worker removes older ones, and a client whose cursor is older gets 410 and "
            "reads the current state again; 0 keeps every change.", parse_non_negative_int),
    Setting("SIGN_IN_LOG_RETENTION_DAYS", 365,
            "Days the sign-in log (Admin › Sign-ins) keeps an attempt, with its username "
            "and address; the worker removes older ones; 0 keeps every attempt.",
            parse_non_negative_int),
    Setting("CHANGES_MAX_WAIT", 60,
            "The longest `wait` (seconds) a client following `GET /api/changes` may ask "
            "for; the request holds a server thread meanwhile (serve with threads: "
            "`make run` does).", parse_non_negative_int),
    Setting("WEBHOOK_TIMEOUT_SECONDS", 10,
            "Seconds one webhook delivery attempt may take, connecting and reading the "
            "answer included; a slower receiver's attempt fails and is retried.",
            parse_positive_int),
    Setting("WEBHOOK_RETRY_FIRST_SECONDS", 60,
            "Seconds before a failed webhook delivery is tried again the first time; each "
            "later wait doubles, up to `WEBHOOK_RETRY_MAX_SECONDS`.", parse_positive_int),
    Setting("WEBHOOK_RETRY_MAX_SECONDS", 86400,
            "Longest wait between two attempts of a webhook delivery, in seconds.",
            parse_positive_int),
    Setting("WEBHOOK_DISABLE_AFTER_DAYS", 5,
            "Days a webhook's deliveries may fail without one success before the worker "
            "switches it off and tells its owner.", parse_positive_int),
    Setting("WEBHOOK_SECRET_OVERLAP_HOURS", 24,
            "Hours a webhook's rotated secret keeps signing beside its new one (each delivery "
            "carries both signatures), so its receiver can take the new secret without "
            "refusing deliveries meanwhile; 0 ends the old secret at once.",
            parse_non_negative_int),
    Setting("WEBHOOK_ALLOWED_NETWORKS", None,
            "Networks webhooks may deliver to although they are loopback, private, "
            "link-local or otherwise not public (comma-separated, such as "
            "`127.0.0.0/8,10.1.0.0/16`); unset: only public addresses.",
            parse_networks),
)

SETTINGS_BY_NAME = {setting.name: setting for setting in SETTINGS}


def _read_instance_file(instance_path: Path) -> dict[str, Any]:
    """Return the ``LABAPP_*`` assignments of ``instance/config.py`` (empty when absent)."""
    config_file = instance_path / "config.py"
    if not config_file.is_file():
        return {}
    namespace: dict[str, Any] = {}
    exec(compile(config_file.read_text(), str(config_file), "exec"), namespace)
    return {key: value for key, value in namespace.items() if key.startswith(PREFIX)}


def _coerce(setting: Setting, value: Any) -> Any:
    """Parse text; check typed values (from ``instance/config.py`` or overrides) just as
    strictly, so ``MAX_UPLOAD_MB = 0`` fails like ``LABAPP_MAX_UPLOAD_MB=0``. None means the
    declared default."""
    if value is None:
        return setting.default
    if isinstance(value, str):
        return setting.parse(value)
    if setting.default is None:
        return value
    # Exact type: a bool is an int to Python but never a valid count, nor an int a flag.
    if type(value) is not type(setting.default):
        raise ValueError(f"expected {type(setting.default).__name__}")
    return setting.parse(str(value))


def load_settings(overrides: Mapping[str, Any] | None = None,
                  environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Resolve every setting and return them by name (without prefix).

    Raises :class:`ConfigError` naming every invalid or unknown setting.
    """
    environ = os.environ if environ is None else environ
    overrides = dict(overrides or {})
    unknown = [key for key in overrides if key not in SETTINGS_BY_NAME]
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")

    instance_raw = overrides.get("INSTANCE_PATH") or environ.get(PREFIX + "INSTANCE_PATH")
    instance_path = Path(instance_raw or Path.cwd() / "instance").resolve()
    sources: dict[str, Any] = _read_instance_file(instance_path)
    sources.update({k: v for k, v in environ.items()
                    if k.startswith(PREFIX) and not k.startswith(TEST_PREFIX)})
    sources.update({PREFIX + k: v for k, v in overrides.items()})

    problems = [f"{key}: no such setting" for key in sorted(sources)
                if key[len(PREFIX):] not in SETTINGS_BY_NAME]
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        raw = sources.get(setting.env_name, setting.default)
        try:
            values[setting.name] = _coerce(setting, raw)
        except ValueError as exc:
            problems.append(f"{setting.env_name}={raw!r}: {exc}")
    if not problems and values["FILE_STORE"] == "database" and _is_sqlite(values["DATABASE_URL"]):
        problems.append(f"{PREFIX}FILE_STORE='database': file contents are kept in the database "
                        "only on PostgreSQL (set LABAPP_DATABASE_URL to a postgresql+psycopg:// "
                        "URL, or keep LABAPP_FILE_STORE=folder)")
    if not problems and values["LDAP_URL"] and not values["LDAP_USER_BASE"]:
        problems.append(f"{PREFIX}LDAP_URL is set but {PREFIX}LDAP_USER_BASE is not: say where "
                        "the directory's users are")
    if problems:
        raise ConfigError("invalid settings:\n  " + "\n  ".join(problems))

    values["INSTANCE_PATH"] = str(instance_path)
    if values["DATABASE_URL"] is None:
        values["DATABASE_URL"] = f"sqlite:///{instance_path / 'labapp.db'}"
    if values["SEARCH_BACKEND"] == "postgresql" and not values["DATABASE_URL"].startswith(
            "postgresql"):
        raise ConfigError("invalid settings:\n  LABAPP_SEARCH_BACKEND='postgresql': needs a "
                          "PostgreSQL database (LABAPP_DATABASE_URL=postgresql+psycopg://...); "
                          "SQLite installs search with 'whoosh'")
    return values


def _is_sqlite(database_url: str | None) -> bool:
    """Whether the database is SQLite (the default, when no URL is set)."""
    from sqlalchemy.engine import make_url

    return database_url is None or make_url(database_url).get_backend_name() == "sqlite"


def ensure_secret_key(instance_path: Path) -> str:
    """Return the instance's generated secret key, creating it (mode 0600) on first use.

    Safe when several workers start at once: the key is written to a private temporary file
    and linked into place, so every process reads the same complete key.
    """
    key_file = instance_path / "secret_key"
    if not key_file.exists():
        instance_path.mkdir(parents=True, exist_ok=True)
        temporary = instance_path / f".secret_key.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(48))
        try:
            os.link(temporary, key_file)
        except FileExistsError:
            pass
        finally:
            temporary.unlink()
    return key_file.read_text().strip()
