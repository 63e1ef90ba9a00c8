"""The Actor: who is calling, with their roles, as every service receives it."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from labapp.errors import NotAuthenticated

ADMIN = "ADMIN"
DATA_MANAGER = "DATA_MANAGER"
DATA_MANAGER_PROJECT_WRITE = "DATA_MANAGER_PROJECT_WRITE"
ADMIN_ON_PREMISES = "ADMIN ON-PREMISES"

BUILT_IN_ROLES: dict[str, str] = {
    ADMIN: "Administers the installation: users, roles, access, synchronisation.",
    DATA_MANAGER: "Manages department access and reads project access.",
    DATA_MANAGER_PROJECT_WRITE: "Manages project access, settings and deletion.",
}


@dataclass(frozen=True)
class Actor:
    """The caller of a request (or of a CLI command).

    ``method`` says how they authenticated: ``cookie``, ``bearer``, ``pat`` or ``basic``;
    None for anonymous callers. ``session_id`` is the login behind a cookie or Bearer token.
    The grant sets hold the departments and projects the actor may read or write (Write
    implies Read, so write sets are subsets of read sets).
    """

    user_id: str | None = None
    name: str | None = None
    department_id: str | None = None
    roles: frozenset[str] = field(default_factory=frozenset)
    method: str | None = None
    session_id: str | None = None
    on_premises: bool = True
    read_departments: frozenset[str] = field(default_factory=frozenset)
    write_departments: frozenset[str] = field(default_factory=frozenset)
    read_projects: frozenset[str] = field(default_factory=frozenset)
    write_projects: frozenset[str] = field(default_factory=frozenset)

    # Flask-Login's user protocol.
    @property
    def is_authenticated(self) -> bool:
        return self.user_id is not None

    @property
    def is_active(self) -> bool:
        return self.user_id is not None

    @property
    def is_anonymous(self) -> bool:
        return self.user_id is None

    def get_id(self) -> str | None:
        return self.user_id

    @property
    def author_id(self) -> str:
        """The id of a signed-in actor, for what only signed-in callers do (writes, audit
        events); NotAuthenticated for an anonymous one."""
        if self.user_id is None:
            raise NotAuthenticated()
        return self.user_id

    @property
    def is_admin(self) -> bool:
        return ADMIN in self.roles

    def holds_any(self, scopes: Iterable[str]) -> bool:
        """True when the actor holds at least one of ``scopes`` (roles; ADMIN ON-PREMISES is
        the ADMIN role on an on-premises installation)."""
        for scope in scopes:
            if scope == ADMIN_ON_PREMISES:
                if self.on_premises and ADMIN in self.roles:
                    return True
            elif scope in self.roles:
                return True
        return False


ANONYMOUS = Actor()
