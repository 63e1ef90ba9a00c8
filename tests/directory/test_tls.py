"""StartTLS and ldaps://: the directory's certificate is checked (against ``LDAP_CA_FILE``,
else the system's authorities; its name too) before any password is sent; a slapd with a
throwaway authority."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.auth.checks import problem
from tests.directory.conftest import Settings, directory_settings
from tests.helpers.directory import Certificates, make_certificates, running_directory


@pytest.fixture
def certificates(tmp_path: Path) -> Certificates:
    folder = tmp_path / "certificates"
    folder.mkdir()
    return make_certificates(folder)


@pytest.fixture
def tls_directory(app: Flask, tmp_path: Path, settings: Settings, chemistry: str,
                  certificates: Certificates) -> Iterator[str]:
    """A slapd offering StartTLS; the application uses it with StartTLS; ada's password."""
    with running_directory(tmp_path / "slapd", certificates=certificates) as directory:
        settings.set(**directory_settings(directory, chemistry), LDAP_START_TLS=True)
        yield directory.people["ada"].password


def login(client: FlaskClient, password: str):
    return client.post("/api/auth/login", json={"username": "ada", "password": password})


def test_start_tls_with_the_directory_s_authority(client: FlaskClient, settings: Settings,
                                                  certificates: Certificates,
                                                  tls_directory: str) -> None:
    settings.set(LDAP_CA_FILE=str(certificates.authority))

    assert login(client, tls_directory).status_code == 200


def test_start_tls_refuses_a_certificate_no_trusted_authority_signed(
        client: FlaskClient, tls_directory: str) -> None:
    problem(login(client, tls_directory), 503, "directory_unavailable")


def test_start_tls_refuses_a_certificate_for_another_host(
        app: Flask, tmp_path: Path, settings: Settings, chemistry: str) -> None:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere = make_certificates(folder, names="DNS:ldap.elsewhere.example")
    with running_directory(tmp_path / "slapd", certificates=elsewhere) as directory:
        settings.set(**directory_settings(directory, chemistry), LDAP_START_TLS=True,
                     LDAP_CA_FILE=str(elsewhere.authority))

        problem(login(app.test_client(), directory.people["ada"].password), 503,
                "directory_unavailable")


def test_ldaps_with_the_directory_s_authority(app: Flask, tmp_path: Path, settings: Settings,
                                              chemistry: str,
                                              certificates: Certificates) -> None:
    with running_directory(tmp_path / "slapd", certificates=certificates,
                           scheme="ldaps") as directory:
        settings.set(**directory_settings(directory, chemistry),
                     LDAP_CA_FILE=str(certificates.authority))
        password = directory.people["ada"].password

        assert login(app.test_client(), password).status_code == 200
        settings.set(LDAP_CA_FILE=None)
        problem(login(app.test_client(), password), 503, "directory_unavailable")
