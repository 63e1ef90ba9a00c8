"""``/api/user`` and ``/api/userRole``."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from labapp.access.actor import ADMIN
from labapp.users import service
from labapp.users.schemas import (
    RoleChangeSchema,
    RoleSchema,
    UserSchema,
    UserUpdateSchema,
)
from labapp.web.endpoints import endpoint
from labapp.web.loader import current_actor, require_scope

bp = Blueprint("user_api", __name__, url_prefix="/api")


@bp.get("/user")
@endpoint("The calling user.", responses={200: UserSchema})
def current_user() -> Response:
    return jsonify(UserSchema().dump(service.get_user(current_actor().author_id)))


@bp.put("/user")
@endpoint("Update a user: yourself (name, email, initials, settings), or anyone as ADMIN "
          "(also departmentID, isActive, password).", body=UserUpdateSchema,
          responses={200: UserSchema}, problems=(404, 409))
def update_user(body: dict[str, Any]) -> Response:
    user = service.update_user(current_actor(), dict(body))
    data = UserSchema().dump(user)
    return jsonify(data)


@bp.get("/userRole")
@require_scope(ADMIN)
@endpoint("The roles an administrator can assign.", responses={200: RoleSchema(many=True)})
def list_roles() -> Response:
    return jsonify(RoleSchema(many=True).dump(service.list_roles()))


@bp.put("/userRole/assign")
@require_scope(ADMIN)
@endpoint("Give a user a role.", body=RoleChangeSchema, responses={200: UserSchema},
          problems=(404,))
def assign_role(body: dict[str, Any]) -> Response:
    data = UserSchema().dump(service.assign_role(body["name"], body["userID"],
                                                 current_actor()))
    return jsonify(data)


@bp.put("/userRole/revoke")
@require_scope(ADMIN)
@endpoint("Take a role from a user (never the last active administrator's ADMIN).",
          body=RoleChangeSchema, responses={200: UserSchema}, problems=(404, 409))
def revoke_role(body: dict[str, Any]) -> Response:
    data = UserSchema().dump(service.revoke_role(body["name"], body["userID"],
                                                 current_actor()))
    return jsonify(data)


@bp.delete("/user/<user_id>/secondFactor")
@require_scope(ADMIN)
@endpoint("Remove a user's second factor (a lost authenticator): they sign in with their "
          "password alone again, or set up a new one.", responses={204: "Removed"},
          problems=(404,))
def reset_second_factor(user_id: str) -> Response:
    service.reset_second_factor(current_actor(), user_id)
    return Response(status=204)
