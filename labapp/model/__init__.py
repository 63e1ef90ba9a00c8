"""The SQLAlchemy models; importing this package registers every table on ``db.metadata``."""
from labapp.model.access import DepartmentAccess, ProjectAccess
from labapp.model.auth import (
    LoginFailure,
    LoginSession,
    PersonalAccessToken,
    RefreshToken,
)
from labapp.model.base import Entity
from labapp.model.content import File, Note
from labapp.model.lab import (
    Experiment,
    Fermentation,
    Plate,
    Request,
    Sample,
    Step,
    StepInput,
)
from labapp.model.org import Department, Project, ProjectSetting, Role, User, UserRole
from labapp.model.storage import Location
from labapp.model.system import AuditEvent, EntityEvent, Sequence

__all__ = [
    "AuditEvent", "Department", "DepartmentAccess", "Entity", "EntityEvent", "Experiment",
    "Fermentation", "File", "Location", "LoginFailure", "LoginSession", "Note",
    "PersonalAccessToken", "Plate", "Project", "ProjectAccess", "ProjectSetting", "RefreshToken",
    "Request", "Role", "Sample", "Sequence", "Step", "StepInput", "User", "UserRole",
]
