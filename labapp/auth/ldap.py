"""LDAP / Active Directory: a directory user's password is checked by binding as them.

labapp searches the directory as its reader account (``LDAP_BIND_DN``, or anonymously) for the
one entry ``LDAP_USER_FILTER`` finds, binds as that entry's DN with the password typed, and
reads the entry's name, e-mail, department and groups. It never reads a password hash. What
the directory says is applied to the local user by the provisioner the application registers
(:func:`init_app`; :mod:`labapp.users.directory`), which lives above this floor.

A directory user's row holds :data:`NO_LOCAL_PASSWORD` as its password hash: no password
matches it, and it is what the login and the Basic memory (:mod:`labapp.auth.basic_cache`)
compare against, so a directory user's Basic password is remembered as a local one is.
"""
from __future__ import annotations

import re
import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import ldap3
from flask import Flask, current_app
from ldap3.core.exceptions import LDAPException
from ldap3.utils.conv import escape_filter_chars

from labapp.errors import AppError, NotAuthenticated

SOURCE = "ldap"  # the auth_source of directory users
# The password hash of a user who signs in elsewhere: not a hash, so no password matches it.
NO_LOCAL_PASSWORD = "!directory"
# What a directory username may be before it goes into a filter (escaped even so): a
# username of labapp (labapp.users.service.USERNAME_PATTERN); ``*``, ``(``, ``\`` and NUL
# never reach the directory.
USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
PAGE_SIZE = 500
_PROVISIONER = "labapp.directory.provision"


class DirectoryUnavailable(AppError):
    """503: the directory does not answer, or refuses labapp's own bind."""

    status, code, title = 503, "directory_unavailable", "Directory unavailable"


class DirectoryRefused(NotAuthenticated):
    """The directory does not know this username and password (same answer as a local
    wrong password; :class:`labapp.auth.sessions.InvalidCredentials` derives the code)."""

    code = "invalid_credentials"

    def __init__(self) -> None:
        super().__init__("Invalid username or password.")


@dataclass(frozen=True)
class DirectorySettings:
    """The ``LDAP_*`` settings (see the README's settings table)."""

    url: str
    start_tls: bool
    ca_file: str | None
    bind_dn: str | None
    bind_password: str | None
    user_base: str
    user_filter: str
    username_attribute: str
    name_attribute: str
    email_attribute: str
    department_attribute: str | None
    group_base: str | None
    group_filter: str
    group_roles: dict[str, str]
    group_departments: dict[str, str]
    default_department: str | None
    create_users: bool
    timeout: int


def settings() -> DirectorySettings | None:
    """The directory settings of the current application, or None when LDAP is off."""
    values = current_app.config["LABAPP"]
    if not values.get("LDAP_URL"):
        return None
    return DirectorySettings(
        url=values["LDAP_URL"], start_tls=values["LDAP_START_TLS"],
        ca_file=values["LDAP_CA_FILE"], bind_dn=values["LDAP_BIND_DN"],
        bind_password=values["LDAP_BIND_PASSWORD"], user_base=values["LDAP_USER_BASE"],
        user_filter=values["LDAP_USER_FILTER"],
        username_attribute=values["LDAP_USERNAME_ATTRIBUTE"],
        name_attribute=values["LDAP_NAME_ATTRIBUTE"],
        email_attribute=values["LDAP_EMAIL_ATTRIBUTE"],
        department_attribute=values["LDAP_DEPARTMENT_ATTRIBUTE"],
        group_base=values["LDAP_GROUP_BASE"], group_filter=values["LDAP_GROUP_FILTER"],
        group_roles=values["LDAP_GROUP_ROLES"] or {},
        group_departments=values["LDAP_GROUP_DEPARTMENTS"] or {},
        default_department=values["LDAP_DEFAULT_DEPARTMENT"],
        create_users=values["LDAP_CREATE_USERS"], timeout=values["LDAP_TIMEOUT"])


def normal_dn(dn: str) -> str:
    """A DN compared as directories do for the mappings: lower case, no blanks around commas."""
    return ",".join(part.strip() for part in dn.split(",")).lower()


@dataclass(frozen=True)
class DirectoryEntry:
    """A user as the directory describes them; ``groups`` are normalised DNs."""

    dn: str
    username: str
    name: str
    email: str | None
    department: str | None
    groups: frozenset[str]

    def roles(self, config: DirectorySettings) -> list[str]:
        """The roles the user's groups map to, sorted."""
        mapped = {normal_dn(group): role for group, role in config.group_roles.items()}
        return sorted({mapped[group] for group in self.groups if group in mapped})

    def mapped_department(self, config: DirectorySettings) -> str | None:
        """The department id of the first group of ``LDAP_GROUP_DEPARTMENTS`` that applies."""
        for group, department in config.group_departments.items():
            if normal_dn(group) in self.groups:
                return department
        return None


def enabled() -> bool:
    return settings() is not None


def handles(auth_source: str | None) -> bool:
    """Whether the directory checks the password of a user of ``auth_source`` (None: a
    username labapp does not know yet, who may be in the directory)."""
    return enabled() and auth_source in {None, SOURCE}


def _unavailable(config: DirectorySettings) -> DirectoryUnavailable:
    return DirectoryUnavailable(
        f"The directory at {config.url} does not answer; try again later or ask an "
        "administrator. Local accounts can still sign in.")


class _CheckedTls(ldap3.Tls):  # type: ignore[misc]  # ldap3 has no type information
    """TLS whose certificate, name included, Python's ssl checks during the handshake.

    ldap3's own checks the name after it, with the deprecated ``ssl.match_hostname``, and
    leaves the socket open when the name does not match."""

    def wrap_socket(self, connection: ldap3.Connection, do_handshake: bool = False) -> None:
        context = ssl.create_default_context(cafile=self.ca_certs_file)
        wrapped = context.wrap_socket(connection.socket, server_hostname=connection.server.host,
                                      do_handshake_on_connect=False)
        if do_handshake:
            try:
                wrapped.do_handshake()
            except OSError:
                wrapped.close()
                raise
        connection.socket = wrapped


def _server(config: DirectorySettings) -> ldap3.Server:
    tls = _CheckedTls(validate=ssl.CERT_REQUIRED, ca_certs_file=config.ca_file)
    return ldap3.Server(config.url, connect_timeout=config.timeout, tls=tls,
                        get_info=ldap3.NONE)


@contextmanager
def _connection(config: DirectorySettings, dn: str | None,
                password: str | None) -> Iterator[ldap3.Connection | None]:
    """A connection bound as ``dn`` (anonymous when None), or None when the directory
    refused that bind; :class:`DirectoryUnavailable` when it does not answer."""
    connection = ldap3.Connection(_server(config), user=dn, password=password,
                                  receive_timeout=config.timeout, read_only=True)
    try:
        connection.open()
        if config.start_tls and not config.url.startswith("ldaps:"):
            connection.start_tls()
        bound = connection.bind()
    except LDAPException:
        close(connection)
        raise _unavailable(config) from None
    try:
        yield connection if bound else None
    except LDAPException:
        raise _unavailable(config) from None
    finally:
        close(connection)


def close(connection: ldap3.Connection) -> None:
    """Unbind and close the socket, which ldap3 leaves open when connecting failed."""
    try:
        connection.unbind()
    except LDAPException:
        pass
    if connection.socket is not None:
        connection.socket.close()


@contextmanager
def _reader(config: DirectorySettings) -> Iterator[ldap3.Connection]:
    """A connection bound as labapp's reader account (or anonymous)."""
    with _connection(config, config.bind_dn, config.bind_password) as connection:
        if connection is None:
            raise DirectoryUnavailable(
                f"The directory at {config.url} refused labapp's own bind "
                "(LABAPP_LDAP_BIND_DN); ask an administrator.")
        yield connection


def _values(attributes: dict[str, Any], name: str | None) -> list[str]:
    if not name:
        return []
    found: Any = next((value for key, value in attributes.items()
                       if key.lower() == name.lower()), [])
    values = found if isinstance(found, list) else [found]
    return [value.decode() if isinstance(value, bytes) else str(value) for value in values]


def _first(attributes: dict[str, Any], name: str | None) -> str | None:
    values = _values(attributes, name)
    return values[0] if values and values[0] else None


def _attribute_names(config: DirectorySettings) -> list[str]:
    names = [config.username_attribute, config.name_attribute, config.email_attribute,
             config.department_attribute]
    return [name for name in names if name]


def _groups(connection: ldap3.Connection, config: DirectorySettings, dn: str) -> frozenset[str]:
    if not config.group_base:
        return frozenset()
    search = config.group_filter.replace("{dn}", escape_filter_chars(dn))
    connection.search(config.group_base, search, attributes=[])
    return frozenset(normal_dn(item["dn"]) for item in connection.response or []
                     if item.get("type") == "searchResEntry")


def _entry(connection: ldap3.Connection, config: DirectorySettings,
           item: dict[str, Any]) -> DirectoryEntry | None:
    attributes = item.get("attributes") or {}
    username = _first(attributes, config.username_attribute)
    if username is None:
        return None
    return DirectoryEntry(
        dn=item["dn"], username=username,
        name=_first(attributes, config.name_attribute) or username,
        email=_first(attributes, config.email_attribute),
        department=_first(attributes, config.department_attribute),
        groups=_groups(connection, config, item["dn"]))


def _search_filter(config: DirectorySettings, username: str) -> str:
    return config.user_filter.replace("{username}", escape_filter_chars(username))


def authenticate(username: str, password: str) -> DirectoryEntry:
    """The directory's entry of ``username`` when ``password`` binds as it.

    Raises :class:`DirectoryRefused` for a username labapp would not accept (filter
    characters, NUL), an empty password (an "unauthenticated bind" many servers accept),
    no or several entries, or a failed bind; :class:`DirectoryUnavailable` when the
    directory does not answer.
    """
    config = settings()
    if config is None or not USERNAME.match(username) or not password:
        raise DirectoryRefused()
    with _reader(config) as reader:
        reader.search(config.user_base, _search_filter(config, username),
                      attributes=_attribute_names(config), size_limit=2)
        found = [item for item in reader.response or [] if item.get("type") == "searchResEntry"]
        if len(found) != 1:
            raise DirectoryRefused()
        with _connection(config, found[0]["dn"], password) as as_user:
            if as_user is None:
                raise DirectoryRefused()
        entry = _entry(reader, config, found[0])
    if entry is None:
        raise DirectoryRefused()
    return entry


def entries() -> list[DirectoryEntry]:
    """Every user ``LDAP_USER_FILTER`` finds (``{username}`` as ``*``), for the sync."""
    config = settings()
    if config is None:
        return []
    search = config.user_filter.replace("{username}", "*")
    with _reader(config) as reader:
        found = reader.extend.standard.paged_search(
            config.user_base, search, attributes=_attribute_names(config),
            paged_size=PAGE_SIZE, generator=False)
        people = [_entry(reader, config, item) for item in found
                  if item.get("type") == "searchResEntry"]
    return [person for person in people if person is not None]


def check_connection() -> str:
    """Bind as the reader and count the users: "bind succeeded, 124 users found".

    Raises :class:`DirectoryUnavailable` with the reason when it cannot."""
    config = settings()
    if config is None:
        raise DirectoryUnavailable("LDAP sign-in is not configured (LABAPP_LDAP_URL).")
    search = config.user_filter.replace("{username}", "*")
    with _reader(config) as reader:
        found = reader.extend.standard.paged_search(config.user_base, search, attributes=[],
                                                    paged_size=PAGE_SIZE, generator=False)
        count = sum(1 for item in found if item.get("type") == "searchResEntry")
    return f"bind succeeded, {count} user{'s' if count != 1 else ''} found"


Provisioner = Callable[[DirectoryEntry], str]


def init_app(app: Flask, provision: Provisioner) -> None:
    """Register what applies a directory entry to the local user at sign-in (returning the
    user's id, raising :class:`DirectoryRefused` when that user may not sign in)."""
    app.extensions[_PROVISIONER] = provision


def sign_in(username: str, password: str) -> str:
    """Check the password against the directory and bring the local user in line with
    their entry (created on first sign-in when ``LDAP_CREATE_USERS``); the user's id."""
    entry = authenticate(username, password)
    provision: Provisioner = current_app.extensions[_PROVISIONER]
    return provision(entry)
