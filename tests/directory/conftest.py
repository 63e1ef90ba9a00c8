"""Fixtures of the LDAP sign-in and directory sync tests: a real slapd for the whole test
process (``tests/helpers/directory.py``) and the shared application pointed at it."""
from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask

from tests.entities.conftest import admin, department  # noqa: F401
from tests.helpers.directory import (
    GROUPS,
    PEOPLE,
    READER_DN,
    Directory,
    Person,
    group_dn,
    running_directory,
)


@pytest.fixture(scope="session")
def slapd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Directory]:
    with running_directory(tmp_path_factory.mktemp("slapd")) as directory:
        yield directory


def directory_settings(directory: Directory, chemistry: str) -> dict[str, Any]:
    """The settings of an application signing in with ``directory``: lab-admins → ADMIN,
    data-managers → DATA_MANAGER, chemistry → the department ``chemistry``."""
    return {"LDAP_URL": directory.url, "LDAP_BIND_DN": READER_DN,
            "LDAP_BIND_PASSWORD": directory.reader_password, "LDAP_USER_BASE": PEOPLE,
            "LDAP_GROUP_BASE": GROUPS, "LDAP_DEPARTMENT_ATTRIBUTE": "departmentNumber",
            "LDAP_GROUP_ROLES": {group_dn("lab-admins"): "ADMIN",
                                 group_dn("data-managers"): "DATA_MANAGER"},
            "LDAP_GROUP_DEPARTMENTS": {group_dn("chemistry"): chemistry}}


class Settings:
    """Changes the shared application's settings for one test, put back afterwards."""

    def __init__(self, app: Flask) -> None:
        self.values = app.config["LABAPP"]
        self.saved: dict[str, Any] = {}

    def set(self, **changes: Any) -> None:
        for name, value in changes.items():
            self.saved.setdefault(name, self.values[name])
            self.values[name] = value

    def restore(self) -> None:
        self.values.update(self.saved)


@pytest.fixture
def settings(app: Flask) -> Iterator[Settings]:
    changed = Settings(app)
    try:
        yield changed
    finally:
        changed.restore()


@pytest.fixture
def chemistry(department: Callable[..., str]) -> str:  # noqa: F811
    return department("Chemistry")


@pytest.fixture
def ldap_on(slapd: Directory, settings: Settings, chemistry: str) -> Directory:
    """The shared application signs in with the test directory for the length of the test."""
    settings.set(**directory_settings(slapd, chemistry))
    return slapd


@pytest.fixture
def directory_person(slapd: Directory) -> Iterator[Callable[..., Person]]:
    """Factory: ``directory_person(groups=("lab-admins",))`` adds a new person to the
    directory (with a unique uid) and removes them after the test. No application is
    involved, so a test on an application of its own (``fresh_app``) can use it."""
    added: list[str] = []

    def make(groups: tuple[str, ...] = (), name: str = "") -> Person:
        uid = f"p{secrets.token_hex(4)}"
        added.append(uid)
        return slapd.add_person(Person(uid, name or f"Person {uid}", f"{uid}@example.org",
                                       "", groups))

    yield make
    for uid in added:
        if uid in slapd.people:
            slapd.remove_person(uid)


@pytest.fixture
def person(ldap_on: Directory, directory_person: Callable[..., Person]
           ) -> Callable[..., Person]:
    """:func:`directory_person`, with the shared application signing in with the directory."""
    return directory_person
