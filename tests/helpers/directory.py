"""A real OpenLDAP server (Debian's ``slapd``) for the directory tests.

:func:`running_directory` makes a temporary ``cn=config`` with ``slapadd -n 0``, loads a small
directory (people with passwords, groups) with ``slapadd -n 1``, starts ``slapd`` on a free
port of 127.0.0.1 as a child process, waits until a bind succeeds and stops it at the end.
The passwords (of the people, the reader account and the root) are made at run time.

Without ``slapd`` the tests that need it are skipped, except under ``CI=true``, where they
fail: CI installs it (``.ci/run``).
"""
from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import ldap3
import pytest
from ldap3.core.exceptions import LDAPException

from bench.server import free_port
from labapp.auth.ldap import close

SLAPD = shutil.which("slapd") or "/usr/sbin/slapd"
SLAPADD = shutil.which("slapadd") or "/usr/sbin/slapadd"
SCHEMAS = Path("/etc/ldap/schema")
MODULES = Path("/usr/lib/ldap")
BASE = "dc=example,dc=org"
PEOPLE = f"ou=people,{BASE}"
GROUPS = f"ou=groups,{BASE}"
ROOT_DN = f"cn=root,{BASE}"
READER_DN = f"cn=labapp,ou=services,{BASE}"
START_TIMEOUT = 30.0
START_ATTEMPTS = 3


def group_dn(name: str) -> str:
    return f"cn={name},{GROUPS}"


def person_dn(uid: str) -> str:
    return f"uid={uid},{PEOPLE}"


@dataclass(frozen=True)
class Person:
    """A person of the test directory: ``uid``, full name, e-mail, department number."""

    uid: str
    name: str
    email: str
    department: str = ""
    groups: tuple[str, ...] = ()
    password: str = field(default_factory=lambda: secrets.token_urlsafe(12))

    @property
    def dn(self) -> str:
        return person_dn(self.uid)


# The directory every test starts from. Groups: lab-admins → ADMIN, chemistry → the
# chemistry department, data-managers → DATA_MANAGER (the mappings of tests/directory).
PEOPLE_AT_START = (
    Person("ada", "Ada Lovelace", "ada@example.org", "CHEM", ("lab-admins", "chemistry")),
    Person("grace", "Grace Hopper", "grace@example.org", "", ("data-managers",)),
    Person("linus", "Linus Pauling", "linus@example.org", "", ()),
)
GROUP_NAMES = ("lab-admins", "chemistry", "data-managers", "biology")


def slapd_available() -> bool:
    return Path(SLAPD).is_file() and Path(SLAPADD).is_file()


def directory_runs() -> bool:
    """Whether the tests that need slapd run: it is installed, or CI requires it."""
    return slapd_available() or os.environ.get("CI", "").lower() == "true"


def require_slapd() -> None:
    """Skip (or, under CI, fail) when Debian's slapd is not installed."""
    if slapd_available():
        return
    message = "slapd is not installed (apt-get install -y --no-install-recommends slapd ldap-utils)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + "; CI must run the directory tests")
    pytest.skip(message)


@dataclass(frozen=True)
class Certificates:
    """A certificate authority made for one test directory, and the server's key pair."""

    authority: Path
    certificate: Path
    key: Path


def make_certificates(folder: Path,
                      names: str = "IP:127.0.0.1,DNS:localhost") -> Certificates:
    """A throwaway CA and a server certificate for ``names`` (subjectAltName) signed by it
    (openssl)."""
    authority, authority_key = folder / "ca.pem", folder / "ca.key"
    certificate, key, request = folder / "server.pem", folder / "server.key", folder / "server.csr"
    extensions = folder / "server.ext"
    extensions.write_text(f"subjectAltName={names}\n")
    _run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
          "-keyout", str(authority_key), "-out", str(authority), "-subj", "/CN=labapp test CA"])
    _run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
          "-out", str(request), "-subj", "/CN=127.0.0.1"])
    _run(["openssl", "x509", "-req", "-in", str(request), "-CA", str(authority),
          "-CAkey", str(authority_key), "-CAcreateserial", "-days", "1",
          "-extfile", str(extensions), "-out", str(certificate)])
    return Certificates(authority, certificate, key)


def _config_ldif(folder: Path, root_password: str,
                 certificates: Certificates | None = None) -> str:
    schemas = "".join(f"include: file://{SCHEMAS / name}.ldif\n\n"
                      for name in ("core", "cosine", "inetorgperson"))
    tls = (f"olcTLSCACertificateFile: {certificates.authority}\n"
           f"olcTLSCertificateFile: {certificates.certificate}\n"
           f"olcTLSCertificateKeyFile: {certificates.key}\n") if certificates else ""
    return f"""dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: {folder / 'slapd.pid'}
{tls}
dn: cn=module{{0}},cn=config
objectClass: olcModuleList
cn: module{{0}}
olcModulePath: {MODULES}
olcModuleLoad: back_mdb

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

{schemas}dn: olcDatabase={{-1}}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {{-1}}frontend

dn: olcDatabase={{0}}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {{0}}config
olcAccess: {{0}}to * by * none

dn: olcDatabase={{1}}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {{1}}mdb
olcSuffix: {BASE}
olcDbDirectory: {folder / 'data'}
olcDbMaxSize: 16777216
olcRootDN: {ROOT_DN}
olcRootPW: {root_password}
olcAccess: {{0}}to attrs=userPassword by self write by anonymous auth by * none
olcAccess: {{1}}to * by users read by * none
"""


def _entry(dn: str, attributes: dict[str, list[str]]) -> str:
    lines = [f"dn: {dn}"]
    for name, values in attributes.items():
        lines.extend(f"{name}: {value}" for value in values)
    return "\n".join(lines) + "\n\n"


def person_attributes(person: Person) -> dict[str, list[str]]:
    surname = person.name.split()[-1]
    attributes = {"objectClass": ["inetOrgPerson"], "uid": [person.uid], "cn": [person.name],
                  "sn": [surname], "mail": [person.email],
                  "userPassword": [person.password]}
    if person.department:
        attributes["departmentNumber"] = [person.department]
    return attributes


def _data_ldif(people: tuple[Person, ...], reader_password: str) -> str:
    text = _entry(BASE, {"objectClass": ["dcObject", "organization"], "dc": ["example"],
                         "o": ["Example Lab"]})
    for unit in ("people", "groups", "services"):
        text += _entry(f"ou={unit},{BASE}", {"objectClass": ["organizationalUnit"],
                                             "ou": [unit]})
    text += _entry(READER_DN, {"objectClass": ["organizationalRole", "simpleSecurityObject"],
                               "cn": ["labapp"], "userPassword": [reader_password]})
    for person in people:
        text += _entry(person.dn, person_attributes(person))
    for name in GROUP_NAMES:
        members = [person.dn for person in people if name in person.groups]
        # groupOfNames needs a member: the reader stands in for an empty group.
        text += _entry(group_dn(name), {"objectClass": ["groupOfNames"], "cn": [name],
                                        "member": members or [READER_DN]})
    return text


@dataclass
class Directory:
    """A running slapd: its URL, the reader account and the root account to change it."""

    url: str
    reader_password: str
    root_password: str
    people: dict[str, Person]
    process: subprocess.Popen[bytes] | None  # None until it is started

    @contextmanager
    def root(self) -> Iterator[ldap3.Connection]:
        """A connection bound as the directory's root, to change it in a test."""
        connection = ldap3.Connection(ldap3.Server(self.url, get_info=ldap3.NONE), ROOT_DN,
                                      self.root_password, receive_timeout=10)
        try:
            connection.open()
            assert connection.bind(), connection.result
            yield connection
        finally:
            close(connection)

    def add_person(self, person: Person) -> Person:
        """Add ``person`` and make them a member of their groups."""
        with self.root() as connection:
            attributes = person_attributes(person)
            classes = attributes.pop("objectClass")
            assert connection.add(person.dn, classes, attributes), connection.result
            for name in person.groups:
                assert connection.modify(group_dn(name), {"member": [
                    (ldap3.MODIFY_ADD, [person.dn])]}), connection.result
        self.people[person.uid] = person
        return person

    def remove_person(self, uid: str) -> None:
        """Delete the person and their group memberships."""
        person = self.people.pop(uid)
        with self.root() as connection:
            for name in person.groups:
                connection.modify(group_dn(name), {"member": [(ldap3.MODIFY_DELETE,
                                                               [person.dn])]})
            assert connection.delete(person.dn), connection.result

    def modify_person(self, uid: str, changes: dict[str, list[str]]) -> None:
        """Replace attributes of a person (``{"cn": ["New Name"]}``)."""
        with self.root() as connection:
            assert connection.modify(person_dn(uid), {
                name: [(ldap3.MODIFY_REPLACE, values)] for name, values in changes.items()
            }), connection.result

    def set_groups(self, uid: str, groups: tuple[str, ...]) -> None:
        """Make the person a member of exactly ``groups``."""
        person = self.people[uid]
        with self.root() as connection:
            for name in set(person.groups) - set(groups):
                connection.modify(group_dn(name), {"member": [(ldap3.MODIFY_DELETE,
                                                               [person.dn])]})
            for name in set(groups) - set(person.groups):
                connection.modify(group_dn(name), {"member": [(ldap3.MODIFY_ADD,
                                                               [person.dn])]})
        self.people[uid] = Person(person.uid, person.name, person.email, person.department,
                                  groups, person.password)

    def stop(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def answers(self) -> bool:
        """Whether the reader account can bind."""
        connection = ldap3.Connection(ldap3.Server(self.url, connect_timeout=2,
                                                   get_info=ldap3.NONE),
                                      READER_DN, self.reader_password, receive_timeout=2)
        try:
            connection.open()
            return bool(connection.bind())
        except LDAPException:
            return False
        finally:
            close(connection)


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {result.stderr or result.stdout}")


@contextmanager
def running_directory(folder: Path, people: tuple[Person, ...] | None = None,
                      certificates: Certificates | None = None,
                      scheme: str = "ldap") -> Iterator[Directory]:
    """Start slapd with ``people`` (default: :data:`PEOPLE_AT_START` with fresh passwords)
    under ``folder``, offering StartTLS with ``certificates`` (or TLS from the first byte
    with ``scheme="ldaps"``); stop it after."""
    require_slapd()
    root_password = secrets.token_urlsafe(16)
    reader_password = secrets.token_urlsafe(16)
    config, data = folder / "slapd.d", folder / "data"
    config.mkdir(parents=True)
    data.mkdir()
    (folder / "config.ldif").write_text(_config_ldif(folder, root_password, certificates))
    if people is None:
        people = tuple(Person(p.uid, p.name, p.email, p.department, p.groups)
                       for p in PEOPLE_AT_START)
    (folder / "data.ldif").write_text(_data_ldif(people, reader_password))
    _run([SLAPADD, "-n", "0", "-F", str(config), "-l", str(folder / "config.ldif")])
    _run([SLAPADD, "-n", "1", "-F", str(config), "-l", str(folder / "data.ldif")])
    directory = Directory("", reader_password, root_password,
                          {person.uid: person for person in people}, None)
    try:
        _start(folder, scheme, directory)
        yield directory
    finally:
        directory.stop()


def _start(folder: Path, scheme: str, directory: Directory) -> None:
    """Serve ``directory`` by a slapd on a free port, and return once it answers. A port
    found free can be taken before slapd binds it (by any connection's ephemeral port), and
    slapd then exits at once: it is started again on another port, up to
    :data:`START_ATTEMPTS` times."""
    log_path = folder / "slapd.log"
    deadline = time.monotonic() + START_TIMEOUT
    status = None
    for _attempt in range(START_ATTEMPTS):
        directory.url = f"{scheme}://127.0.0.1:{free_port()}"
        with log_path.open("wb") as log:
            process = directory.process = subprocess.Popen(
                [SLAPD, "-h", f"{directory.url}/", "-F", str(folder / "slapd.d"), "-d", "0"],
                stdout=log, stderr=subprocess.STDOUT)
        while process.poll() is None and time.monotonic() < deadline:
            if directory.answers():
                return
            time.sleep(0.05)  # polling for the server another process brings up
        status = process.poll()
        if status is None:  # running, but not answering in time
            break
    raise RuntimeError(f"slapd did not start (exit status {status}, at most "
                       f"{START_ATTEMPTS} ports tried): {log_path.read_text()}")
