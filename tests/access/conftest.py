"""Fixtures of the access tests: the entity tests' callers, departments, projects, grants."""
from __future__ import annotations

from tests.entities.conftest import admin, department, grant, member, project  # noqa: F401
