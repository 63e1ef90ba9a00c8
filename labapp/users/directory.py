"""Directory users kept in step with the directory: at sign-in and by the sync.

A directory user (``auth_source`` ``ldap``, ``external_id`` their DN) takes their name,
e-mail, home department and roles from the directory. At sign-in only that user is brought in
line (:func:`provision`, created on first sign-in when ``LDAP_CREATE_USERS``); the sync
(:func:`synchronise`: ``flask users sync`` and the worker's schedule) brings every one in
line, creates those it does not know and deactivates (never deletes, decisions §19) those the
directory no longer lists, which ends their logins; their personal access tokens stop with
them, as every inactive user's do. A local user is never taken over by a directory entry of
the same username: that entry is skipped. Neither sign-in nor the sync reactivates a user:
that is an administrator's decision (docs/decisions/ldap-sign-in.md).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import func, select

from labapp.access.actor import ADMIN
from labapp.auth import ldap
from labapp.auth.ldap import DirectoryEntry, DirectoryRefused, DirectorySettings
from labapp.changes import assign, diff
from labapp.db import db, transaction
from labapp.entities.audit import SYSTEM_ACTOR, json_value, record_updated
from labapp.errors import Conflict
from labapp.model import Department, DirectorySync, Entity, Role, User, UserRole
from labapp.model.types import utc_now
from labapp.users.service import USERNAME_PATTERN, create_user, end_logins, guard_last_admin

DIRECTORY_ACTOR = SYSTEM_ACTOR
_ATTRIBUTES = {"name": "name", "email": "email", "departmentID": "department_id",
               "externalID": "external_id"}
SHOWN_RUNS = 10  # runs the administration page lists
LAST_ADMIN = ("the last active administrator: make another user ADMIN first, then sync "
              "again")
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Wanted:
    """What the directory says a user should be."""

    values: dict[str, Any]
    roles: list[str]


def _department_id(entry: DirectoryEntry, config: DirectorySettings) -> str | None:
    """Home department: the group mapping, else the department attribute (an id or a name),
    else ``LDAP_DEFAULT_DEPARTMENT``, else the first department."""
    mapped = entry.mapped_department(config)
    if mapped and db.session.get(Department, mapped) is not None:
        return mapped
    if entry.department:
        found = db.session.get(Department, entry.department) or db.session.scalar(
            select(Department).where(func.lower(Department.name) == entry.department.lower())
            .order_by(Department.id).limit(1))
        if found is not None:
            return found.id
    if config.default_department and db.session.get(Department,
                                                    config.default_department) is not None:
        return config.default_department
    return db.session.scalar(select(Department.id).order_by(Department.created_utc).limit(1))


def _wanted(entry: DirectoryEntry, config: DirectorySettings) -> Wanted:
    known = set(db.session.scalars(select(Role.name)))
    return Wanted({"name": entry.name, "email": entry.email,
                   "departmentID": _department_id(entry, config), "externalID": entry.dn},
                  [role for role in entry.roles(config) if role in known])


def _local_user(entry: DirectoryEntry) -> User | None:
    """The directory user of ``entry``: by DN, else by username (the entry moved)."""
    found = db.session.scalar(select(User).where(User.auth_source == ldap.SOURCE,
                                                 User.external_id == entry.dn))
    if found is not None:
        return found
    user = db.session.get(User, entry.username)
    return user if user is not None and user.auth_source == ldap.SOURCE else None


def _taken(username: str) -> str | None:
    """Why ``username`` cannot become a directory user here, or None."""
    if not USERNAME_PATTERN.match(username):
        return "the username is not one labapp accepts"
    if db.session.get(Entity, username) is not None:
        return "the username belongs to a local user or another record"
    return None


def _is_last_admin(user: User) -> bool:
    """Whether ``user`` is the last active administrator (:func:`guard_last_admin`)."""
    try:
        guard_last_admin(user)
    except Conflict:
        return True
    return False


def _keeping_admin(user: User, wanted: Wanted) -> Wanted | None:
    """``wanted`` with ADMIN kept, when it takes ADMIN from the last active administrator;
    else None. The directory never leaves labapp without an administrator: its groups may
    be mapped wrongly, or the one administrator's group emptied by mistake."""
    if ADMIN in user.roles and ADMIN not in wanted.roles and _is_last_admin(user):
        return replace(wanted, roles=sorted([*wanted.roles, ADMIN]))
    return None


def _differences(user: User, wanted: Wanted) -> dict[str, tuple[Any, Any]]:
    changes = diff(user, wanted.values, _ATTRIBUTES)
    if user.roles != wanted.roles:
        changes["roles"] = (user.roles, wanted.roles)
    return changes


def _apply(user: User, wanted: Wanted, changes: dict[str, tuple[Any, Any]]) -> None:
    """Write ``changes`` (from :func:`_differences`) and their audit event."""
    assign(user, {name: change for name, change in changes.items() if name in _ATTRIBUTES},
           _ATTRIBUTES)
    if "roles" in changes:
        user.role_links = [UserRole(role_name=role) for role in wanted.roles]
    user.password_hash = ldap.NO_LOCAL_PASSWORD
    audited = {name: change for name, change in changes.items() if name != "externalID"}
    user.version += 1
    user.modified_by = DIRECTORY_ACTOR
    user.modified_utc = utc_now()
    if audited:
        record_updated(user, DIRECTORY_ACTOR, audited)
    db.session.flush()


def _create(entry: DirectoryEntry, wanted: Wanted) -> User:
    department_id = wanted.values["departmentID"]
    if department_id is None:
        raise DirectoryRefused()
    return create_user(username=entry.username, name=entry.name, department_id=department_id,
                       password=None, roles=wanted.roles, created_by=DIRECTORY_ACTOR,
                       email=entry.email, auth_source=ldap.SOURCE, external_id=entry.dn)


def provision(entry: DirectoryEntry) -> str:
    """Bring the user of ``entry`` in line at sign-in (a short write of its own); their id.

    Raises :class:`DirectoryRefused` when they may not sign in: deactivated here, not known
    while ``LDAP_CREATE_USERS`` is off, or their username taken by a local user."""
    config = ldap.settings()
    if config is None:
        raise DirectoryRefused()
    with transaction(write=True):
        user = _local_user(entry)
        wanted = _wanted(entry, config)
        if user is None:
            if not config.create_users or _taken(entry.username):
                raise DirectoryRefused()
            return _create(entry, wanted).id
        if not user.is_active:
            raise DirectoryRefused()
        kept = _keeping_admin(user, wanted)
        if kept is not None:
            logger.warning("directory sign-in of %s: keeps ADMIN, %s", user.id, LAST_ADMIN)
            wanted = kept
        changes = _differences(user, wanted)
        if changes:
            _apply(user, wanted, changes)
        # A password an administrator set here is not theirs: the directory's is.
        user.password_hash = ldap.NO_LOCAL_PASSWORD
        return user.id


@dataclass
class SyncReport:
    """What one run did (or, in a dry run, would do)."""

    dry_run: bool
    changes: list[dict[str, Any]] = field(default_factory=list)
    unchanged: int = 0

    def note(self, action: str, username: str, detail: Any) -> None:
        self.changes.append({"action": action, "username": username, "detail": detail})

    def count(self, action: str) -> int:
        return sum(1 for change in self.changes if change["action"] == action)


def _change_detail(changes: dict[str, tuple[Any, Any]]) -> dict[str, list[Any]]:
    return {name: [json_value(old), json_value(new)] for name, (old, new) in changes.items()}


def _deactivate(user: User) -> None:
    user.is_active = False
    user.status = "Inactive"
    user.version += 1
    user.modified_by = DIRECTORY_ACTOR
    user.modified_utc = utc_now()
    record_updated(user, DIRECTORY_ACTOR, {"isActive": (True, False),
                                           "status": ("Active", "Inactive")})
    end_logins(user.id)
    db.session.flush()


def _sync_entry(entry: DirectoryEntry, config: DirectorySettings, report: SyncReport) -> None:
    user = _local_user(entry)
    wanted = _wanted(entry, config)
    if user is None:
        reason = _taken(entry.username) or (
            None if wanted.values["departmentID"] else "there is no department to put them in")
        if reason:
            report.note("skip", entry.username, reason)
            return
        report.note("create", entry.username, {
            "name": entry.name, "email": entry.email,
            "departmentID": wanted.values["departmentID"], "roles": wanted.roles})
        if not report.dry_run:
            _create(entry, wanted)
        return
    kept = _keeping_admin(user, wanted)
    if kept is not None:
        report.note("keep", user.id, f"keeps ADMIN, {LAST_ADMIN}")
        wanted = kept
    changes = _differences(user, wanted)
    if not changes:
        report.unchanged += 1
        return
    report.note("update", user.id, _change_detail(changes))
    if not report.dry_run:
        _apply(user, wanted, changes)


def _record(report: SyncReport, started: Any, error: str | None = None) -> DirectorySync:
    run = DirectorySync(started_utc=started, finished_utc=utc_now(), dry_run=report.dry_run,
                        created=report.count("create"), updated=report.count("update"),
                        deactivated=report.count("deactivate"), skipped=report.count("skip"),
                        unchanged=report.unchanged, changes=report.changes, error=error)
    db.session.add(run)
    db.session.flush()
    return run


Progress = Callable[[list[DirectoryEntry]], Iterable[DirectoryEntry]]


def synchronise(*, dry_run: bool = False, progress: Progress | None = None) -> DirectorySync:
    """Bring every directory user in line with the directory and record the run (one unit
    of work); ``dry_run`` records what it would do and changes nothing else.

    ``progress`` wraps the list of entries (the CLI's progress bar). Raises
    :class:`~labapp.auth.ldap.DirectoryUnavailable` (the failed run recorded) when the
    directory does not answer, and when LDAP is off."""
    started = utc_now()
    config = ldap.settings()
    if config is None:
        raise ldap.DirectoryUnavailable("LDAP is not configured (LABAPP_LDAP_URL).")
    report = SyncReport(dry_run)
    try:
        found = sorted(ldap.entries(), key=lambda entry: entry.username)
    except ldap.DirectoryUnavailable as error:
        with transaction(write=True):
            _record(report, started, error.detail)
        raise
    with transaction(write=True):
        listed_dns = {entry.dn for entry in found}
        listed_names = {entry.username for entry in found}
        for entry in progress(found) if progress else found:
            _sync_entry(entry, config, report)
        gone = db.session.scalars(
            select(User).where(User.auth_source == ldap.SOURCE, User.is_active.is_(True))
            .order_by(User.id))
        for user in list(gone):
            if user.external_id in listed_dns or user.id in listed_names:
                continue
            if _is_last_admin(user):
                report.note("keep", user.id, f"no longer in the directory but kept active, "
                                             f"{LAST_ADMIN}")
                continue
            report.note("deactivate", user.id, "no longer in the directory")
            if not dry_run:
                _deactivate(user)
        return _record(report, started)


def scheduled_sync() -> bool:
    """The worker's job (every ``DIRECTORY_SYNC_MINUTES``): one sync; whether it changed
    anything. A directory that does not answer is recorded and waited for."""
    try:
        run = synchronise()
    except ldap.DirectoryUnavailable as error:
        logger.warning("directory sync: %s", error.detail)
        return False
    return bool(run.created or run.updated or run.deactivated)


def recent_runs(limit: int = SHOWN_RUNS) -> list[DirectorySync]:
    """The latest runs, newest first."""
    return list(db.session.scalars(select(DirectorySync)
                                   .order_by(DirectorySync.started_utc.desc(),
                                             DirectorySync.id.desc()).limit(limit)))


def describe(detail: Any) -> str:
    """A change's detail as one line: ``name: 'A' → 'B'; roles: [] → ['ADMIN']``."""
    if isinstance(detail, dict):
        return "; ".join(f"{name}: {value[0]!r} → {value[1]!r}"
                         if isinstance(value, list) and len(value) == 2 else f"{name}: {value!r}"
                         for name, value in detail.items())
    return str(detail)
