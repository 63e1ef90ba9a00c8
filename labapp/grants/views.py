"""The administration pages of access: the ``/admin`` overview, departments and projects with
their grants, and the suggest box that finds users and departments to grant.

The pages call the services behind ``/api/department/…/access`` and ``/api/project/…/rls``
with the same scopes: departments need ADMIN or DATA_MANAGER to read and to change; project
grants need ADMIN or DATA_MANAGER to read and ADMIN or DATA_MANAGER_PROJECT_WRITE to change.
A page shows only what its reader's scopes allow: a DATA_MANAGER sees project grants without
forms, a DATA_MANAGER_PROJECT_WRITE alone changes them without the list. The lists of
departments and projects and the suggestions come from :func:`loading.list_entities`, so the
one visibility rule decides what they show. Forms work as plain posts; htmx swaps the
``access`` block of the page in place.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, current_app, flash, redirect, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import ADMIN, DATA_MANAGER, DATA_MANAGER_PROJECT_WRITE, Actor
from labapp.access.visibility import NONE, access_type
from labapp.db import db
from labapp.entities import loading
from labapp.errors import Conflict, InvalidInput, NotFound
from labapp.grants import service
from labapp.model import Entity, User
from labapp.model.registry import existing_class
from labapp.web.blocks import is_htmx, render_block, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only, require

bp = members_only(Blueprint("grant_views", __name__, url_prefix="/admin"))

ACCESS_TEMPLATE = "grants/access.html"
ACCESS_BLOCK = "access"
# The scopes that open the administration area at all (each page then asks for its own).
ADMIN_AREA_SCOPES = (ADMIN, DATA_MANAGER, DATA_MANAGER_PROJECT_WRITE)
LIST_LIMIT = 500  # the largest page loading.list_entities returns
SUGGESTIONS = 8  # of each kind: users and departments
_AREA = "<any(departments, projects):area_slug>"


@bp.app_template_global()
def may_administer(actor: Actor) -> bool:
    """Whether the navigation offers ``actor`` the administration area."""
    return actor.holds_any(ADMIN_AREA_SCOPES)


# ---- Departments and projects -----------------------------------------------------------------

def _revoke_department(target_id: str, user_id: str | None, department_id: str | None) -> None:
    service.revoke_department(target_id, user_id=user_id, access_department_id=department_id)


def _revoke_project(target_id: str, user_id: str | None, department_id: str | None) -> None:
    grantee = user_id or department_id
    if grantee is None:
        raise InvalidInput("Name the user or the department whose grant to remove.")
    service.revoke_project(target_id, grantee)


@dataclass(frozen=True)
class Area:
    """Departments or projects: their names, the API's scopes and the service calls."""

    slug: str
    eclass: str
    read_scopes: tuple[str, ...]
    change_scopes: tuple[str, ...]
    department_key: str  # how the service's entries name a department grantee
    load: Callable[[str], Entity]
    entries: Callable[[str], list[dict[str, Any]]]
    grant: Callable[..., tuple[dict[str, Any], bool]]
    revoke: Callable[[str, str | None, str | None], None]
    delete: Callable[[Actor, str, bool], None]

    @property
    def page_scopes(self) -> tuple[str, ...]:
        """Who may open the pages: readers and changers."""
        return tuple(dict.fromkeys(self.read_scopes + self.change_scopes))

    @property
    def title(self) -> str:
        return self.slug.capitalize()

    @property
    def noun(self) -> str:
        return self.eclass.lower()


AREAS = {area.slug: area for area in (
    Area("departments", "Department", (ADMIN, DATA_MANAGER), (ADMIN, DATA_MANAGER),
         "accessDepartmentID", service.get_department, service.department_access,
         service.grant_department, _revoke_department, service.delete_department),
    Area("projects", "Project", (ADMIN, DATA_MANAGER), (ADMIN, DATA_MANAGER_PROJECT_WRITE),
         "departmentID", service.get_project, service.project_access, service.grant_project,
         _revoke_project, service.delete_project),
)}


@dataclass(frozen=True)
class Entry:
    """A row of the access table: a user or a department, Read or Write, member or grant."""

    grantee_id: str
    name: str
    kind: str
    access_type: str
    is_member: bool


def _entries(area: Area, target_id: str) -> list[Entry]:
    """The service's entries, users and departments alike."""
    rows = []
    for entry in area.entries(target_id):
        kind, key, brief = (("User", "userID", "user") if entry["userID"]
                            else ("Department", area.department_key, "department"))
        grantee_id = entry[key]
        rows.append(Entry(grantee_id, (entry[brief] or {}).get("name") or grantee_id, kind,
                          entry["accessType"], entry.get("isMember", False)))
    return rows


def _grantee(grantee_id: str) -> tuple[str | None, str | None]:
    """``(user id, None)`` when the id is a user's, else ``(None, department id)``: ids are
    unique across all entities, so one field names either (the service checks the rest)."""
    if db.session.get(User, grantee_id) is not None:
        return grantee_id, None
    return None, grantee_id


def _access_page(actor: Actor, area: Area, target_id: str, *, block: str | None = None,
                 status: int = 200, **extra: Any) -> Response:
    """The access page of a department or project (or its ``access`` block); 404 if none."""
    target = area.load(target_id)
    visible = access_type(actor, target.eclass, target.department_id,
                          target.project_id) != NONE
    context: dict[str, Any] = {
        "area": area, "target_id": target.id, "target_name": target.name if visible else None,
        "entries": _entries(area, target.id) if actor.holds_any(area.read_scopes) else None,
        "can_change": actor.holds_any(area.change_scopes), "can_force": actor.is_admin,
        "form": {}, "errors": {}, "notice": None, "access_error": None, "delete_error": None,
        "suggestions": []}
    context.update(extra)
    return render_page(ACCESS_TEMPLATE, block=block, status=status, **context)


def _done(actor: Actor, area: Area, target_id: str, notice: str) -> BaseResponse:
    """After a change: the block again for htmx, else back to the page with a flash."""
    if is_htmx():
        return _access_page(actor, area, target_id, block=ACCESS_BLOCK, notice=notice)
    flash(notice, "success")
    return redirect(url_for("grant_views.access", area_slug=area.slug, target_id=target_id),
                    303)


@bp.get("")
def overview() -> Response:
    """Links to the administration pages the actor's scopes open."""
    actor = current_actor()
    require(actor, ADMIN_AREA_SCOPES)
    return render_page("grants/index.html", areas=[area for area in AREAS.values()
                                                   if actor.holds_any(area.page_scopes)],
                       manage_users=actor.is_admin)


@bp.get(f"/{_AREA}")
def targets(area_slug: str) -> Response:
    """The departments or the projects the actor may see, each linked to its access page."""
    actor = current_actor()
    area = AREAS[area_slug]
    require(actor, area.page_scopes)
    page = loading.list_entities(actor, existing_class(area.eclass), orderby="name",
                                 select_text="id,name,status", top=str(LIST_LIMIT))
    return render_page("grants/list.html", area=area, rows=page.data, total=page.total)


@bp.get(f"/{_AREA}/<path:target_id>/access")
def access(area_slug: str, target_id: str) -> Response:
    """Who may read and write a department or project, with the forms to change it."""
    actor = current_actor()
    area = AREAS[area_slug]
    require(actor, area.page_scopes)
    return _access_page(actor, area, target_id)


def _grant_errors(error: InvalidInput, grantee_id: str) -> dict[str, str]:
    """The service's complaints about a grant, keyed by form field."""
    errors = {}
    for problem in error.errors or [{"field": "", "message": error.detail}]:
        if problem["field"] == "accessType":
            errors["access_type"] = "Choose Read or Write."
        else:
            errors["grantee"] = f"No user or department has the id “{grantee_id}”."
    return errors


@bp.post(f"/{_AREA}/<path:target_id>/access")
def grant(area_slug: str, target_id: str) -> BaseResponse:
    """Grant Read or Write to a user or department, or change the grant they have."""
    actor = current_actor()
    area = AREAS[area_slug]
    require(actor, area.change_scopes)
    grantee_id = request.form.get("grantee", "").strip()
    kind = request.form.get("access_type", "")
    errors = {} if grantee_id else {"grantee": "Choose a user or a department."}
    if not errors:
        try:
            _, created = area.grant(target_id, kind, *_grantee(grantee_id), actor=actor)
        except InvalidInput as error:
            errors = _grant_errors(error, grantee_id)
    if errors:
        return _access_page(actor, area, target_id, block=ACCESS_BLOCK, status=400,
                            form={"grantee": grantee_id, "access_type": kind}, errors=errors)
    notice = (f"{grantee_id} was granted {kind} access." if created
              else f"The access of {grantee_id} is now {kind}.")
    return _done(actor, area, target_id, notice)


@bp.post(f"/{_AREA}/<path:target_id>/access/remove")
def revoke(area_slug: str, target_id: str) -> BaseResponse:
    """Remove the grant of a user or department (membership is not a grant)."""
    actor = current_actor()
    area = AREAS[area_slug]
    require(actor, area.change_scopes)
    area.load(target_id)  # an unknown department or project is the 404 page
    grantee_id = request.form.get("grantee", "").strip()
    try:
        area.revoke(target_id, *_grantee(grantee_id))
    except NotFound as error:
        return _access_page(actor, area, target_id, block=ACCESS_BLOCK, status=400,
                            access_error=error.detail)
    return _done(actor, area, target_id, f"The access of {grantee_id} was removed.")


@bp.post(f"/{_AREA}/<path:target_id>/delete")
def delete(area_slug: str, target_id: str) -> BaseResponse:
    """Delete a department or project; one still in use is refused (409) unless an ADMIN
    forces it, which clears the references."""
    actor = current_actor()
    area = AREAS[area_slug]
    require(actor, area.change_scopes)
    try:
        area.delete(actor, target_id, request.form.get("force") == "true")
    except Conflict as error:
        return _access_page(actor, area, target_id, status=409, delete_error=error.detail)
    flash(f"{area.eclass} {target_id} was deleted.", "success")
    return redirect(url_for("grant_views.targets", area_slug=area.slug), 303)


# ---- Suggestions ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Suggestion:
    """A user or department the suggest box offers."""

    id: str
    name: str
    kind: str


@bp.get("/grantees")
def grantees() -> Response:
    """The active users and the departments whose id or name contains ``?grantee=``: the
    directory every signed-in user may read, as the suggestion list of the access pages."""
    actor = current_actor()
    text = request.args.get("grantee", "").strip()[:64]
    suggestions = []
    if text:
        quoted = text.replace("'", "''")
        matches = f"(contains(id, '{quoted}') or contains(name, '{quoted}'))"
        for eclass, extra in (("User", " and isActive eq true"), ("Department", "")):
            page = loading.list_entities(actor, existing_class(eclass), filter_text=matches + extra,
                                         orderby="name", select_text="id,name",
                                         top=str(SUGGESTIONS))
            suggestions += [Suggestion(row["id"], row["name"] or row["id"], eclass)
                            for row in page.data]
    # Only ever a fragment: the suggest box asks for it as the user types.
    return current_app.make_response(render_block(ACCESS_TEMPLATE, "suggestions",
                                                  suggestions=suggestions))
