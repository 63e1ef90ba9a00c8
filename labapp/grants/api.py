"""``/api/department/…/access`` and ``/api/project/…/rls``: managing who may see what."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from labapp.access.actor import ADMIN, DATA_MANAGER, DATA_MANAGER_PROJECT_WRITE
from labapp.grants import service
from labapp.grants.schemas import (
    SETTINGS_NAME_PATH,
    DeleteQuerySchema,
    DepartmentAccessEntrySchema,
    DepartmentGrantSchema,
    ProjectAccessEntrySchema,
    ProjectGrantSchema,
    ProjectSettingSchema,
)
from labapp.web.endpoints import endpoint
from labapp.web.loader import current_actor, require_scope

bp = Blueprint("grant_api", __name__, url_prefix="/api")

_DEPARTMENT_SCOPES = (ADMIN, DATA_MANAGER)
_PROJECT_WRITE_SCOPES = (ADMIN, DATA_MANAGER_PROJECT_WRITE)


@bp.get("/department/<department_id>/access")
@require_scope(*_DEPARTMENT_SCOPES)
@endpoint("Members and grants of a department.",
          responses={200: DepartmentAccessEntrySchema(many=True)})
def department_access(department_id: str) -> Response:
    return jsonify(service.department_access(department_id))


@bp.post("/department/<department_id>/access")
@require_scope(*_DEPARTMENT_SCOPES)
@endpoint("Add or update Read/Write access of a user or a department to a department.",
          body=DepartmentGrantSchema,
          responses={200: DepartmentAccessEntrySchema, 201: DepartmentAccessEntrySchema})
def grant_department(department_id: str, body: dict[str, Any]) -> tuple[Response, int]:
    entry, created = service.grant_department(department_id, body["accessType"],
                                              body["userID"], body["accessDepartmentID"],
                                              actor=current_actor())
    return jsonify(entry), 201 if created else 200


@bp.delete("/department/<department_id>/access/user/<user_id>")
@require_scope(*_DEPARTMENT_SCOPES)
@endpoint("Remove a user's access to a department.", responses={204: "Removed"})
def revoke_department_user(department_id: str, user_id: str) -> Response:
    service.revoke_department(department_id, user_id=user_id)
    return Response(status=204)


@bp.delete("/department/<department_id>/access/department/<access_department_id>")
@require_scope(*_DEPARTMENT_SCOPES)
@endpoint("Remove a department's access to a department.", responses={204: "Removed"})
def revoke_department_department(department_id: str, access_department_id: str) -> Response:
    service.revoke_department(department_id, access_department_id=access_department_id)
    return Response(status=204)


@bp.delete("/department/<department_id>")
@require_scope(*_DEPARTMENT_SCOPES)
@endpoint("Delete a department (409 while it owns entities, unless force=true as ADMIN).",
          query=DeleteQuerySchema, responses={204: "Deleted"}, problems=(409,))
def delete_department(department_id: str, query: dict[str, Any]) -> Response:
    service.delete_department(current_actor(), department_id, query["force"])
    return Response(status=204)


@bp.get("/project/<project_id>/rls")
@require_scope(ADMIN, DATA_MANAGER)
@endpoint("Grants on a project.", responses={200: ProjectAccessEntrySchema(many=True)})
def project_access(project_id: str) -> Response:
    return jsonify(service.project_access(project_id))


@bp.post("/project/<project_id>/rls")
@require_scope(*_PROJECT_WRITE_SCOPES)
@endpoint("Add or update Read/Write access of a user or a department to a project.",
          body=ProjectGrantSchema,
          responses={200: ProjectAccessEntrySchema, 201: ProjectAccessEntrySchema})
def grant_project(project_id: str, body: dict[str, Any]) -> tuple[Response, int]:
    entry, created = service.grant_project(project_id, body["accessType"], body["userID"],
                                           body["departmentID"], actor=current_actor())
    return jsonify(entry), 201 if created else 200


@bp.delete("/project/<project_id>/rls/<grantee_id>")
@require_scope(*_PROJECT_WRITE_SCOPES)
@endpoint("Remove the access of a user or a department to a project.",
          responses={204: "Removed"})
def revoke_project(project_id: str, grantee_id: str) -> Response:
    service.revoke_project(project_id, grantee_id)
    return Response(status=204)


@bp.delete("/project/<project_id>")
@require_scope(*_PROJECT_WRITE_SCOPES)
@endpoint("Delete a project (409 while it owns entities, unless force=true as ADMIN).",
          query=DeleteQuerySchema, responses={204: "Deleted"}, problems=(409,))
def delete_project(project_id: str, query: dict[str, Any]) -> Response:
    service.delete_project(current_actor(), project_id, query["force"])
    return Response(status=204)


@bp.get("/project/<project_id>/settings/<settings_name>")
@require_scope(*_PROJECT_WRITE_SCOPES)
@endpoint("The named settings object of a project ({} while never saved).",
          responses={200: ProjectSettingSchema}, path=SETTINGS_NAME_PATH)
def project_setting(project_id: str, settings_name: str) -> Response:
    return jsonify(service.project_setting(project_id, settings_name))


@bp.post("/project/<project_id>/settings/<settings_name>")
@require_scope(*_PROJECT_WRITE_SCOPES)
@endpoint("Insert or replace the named settings object of a project.",
          body=ProjectSettingSchema, responses={200: ProjectSettingSchema},
          path=SETTINGS_NAME_PATH)
def save_project_setting(project_id: str, settings_name: str,
                         body: dict[str, Any]) -> Response:
    stored = service.save_project_setting(current_actor(), project_id, settings_name, body)
    return jsonify(stored)
