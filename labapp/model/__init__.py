"""The SQLAlchemy models; importing this package registers every table on ``db.metadata``."""
from labapp.model.access import DepartmentAccess, ProjectAccess
from labapp.model.alerts import AlertRule, AlertState, MailMessage, MailMessageRule
from labapp.model.auth import (
    LoginFailure,
    LoginSession,
    PersonalAccessToken,
    RateLimitBucket,
    RecoveryCode,
    RefreshToken,
    SecondFactor,
    SignInEvent,
)
from labapp.model.base import Entity
from labapp.model.boards import (
    Dashboard,
    DashboardShare,
    Notification,
    SavedView,
    SavedViewShare,
)
from labapp.model.content import File, FileContent, FileContentChunk, Note
from labapp.model.directory import DirectorySync
from labapp.model.feed import ChangeLogEntry, ChangeLogHorizon, ChangeLogPending
from labapp.model.imports import ImportJob, ImportPending, ImportRow, SavedMapping
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
from labapp.model.search import SearchQueue
from labapp.model.storage import Location, LocationCount, LocationCountChange, StorageLogEntry
from labapp.model.system import AuditEvent, EntityEvent, ModelState, Sequence, WorkerProcess
from labapp.model.tallies import EntityCount, EntityCountChange
from labapp.model.webhooks import WebhookDelivery, WebhookSubscription

__all__ = [
    "AlertRule", "AlertState", "AuditEvent", "ChangeLogEntry", "ChangeLogHorizon",
    "ChangeLogPending", "Dashboard", "DashboardShare", "Department",
    "DepartmentAccess", "DirectorySync", "Entity",
    "EntityCount", "EntityCountChange", "EntityEvent", "Experiment",
    "Fermentation", "File", "FileContent", "FileContentChunk", "ImportJob", "ImportPending",
    "ImportRow",
    "Location", "LocationCount",
    "LocationCountChange", "LoginFailure", "LoginSession",
    "MailMessage", "MailMessageRule", "ModelState", "Note", "Notification",
    "PersonalAccessToken", "Plate", "Project", "ProjectAccess", "ProjectSetting",
    "RateLimitBucket", "RecoveryCode",
    "RefreshToken",
    "Request", "Role", "Sample", "SavedMapping", "SavedView", "SavedViewShare", "SearchQueue",
    "SecondFactor", "Sequence", "SignInEvent", "Step", "StepInput",
    "StorageLogEntry", "User", "UserRole", "WebhookDelivery", "WebhookSubscription",
    "WorkerProcess",
]
