"""Saved view pages (issue 21 §2): the "Views" menu of an entity list, saving the list's
filter, columns and sort under a name, and a view's page where its owner renames, shares or
deletes it and anyone who sees it adds it to one of their dashboards as a saved list.

The entity list does not import this module: its header includes
``entities/_saved_views.html``, which calls :func:`saved_views_of` (a template global) and
refreshes the menu from :func:`menu` with the list's current query when it is opened.
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, flash, redirect, request, url_for
from marshmallow import ValidationError
from werkzeug.datastructures import MultiDict
from werkzeug.wrappers import Response as BaseResponse

from labapp.access import sharing
from labapp.access.actor import Actor
from labapp.entities.loading import visible_names
from labapp.errors import InvalidInput, flatten_messages
from labapp.model.registry import find_class
from labapp.savedviews import service
from labapp.savedviews.schemas import SavedViewInputSchema
from labapp.web.blocks import render_block, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only

bp = members_only(Blueprint("saved_view_views", __name__, url_prefix="/saved-views"))

MENU = "entities/_saved_views.html"
PAGE = "savedviews/page.html"
FORM = "savedviews/form.html"
# The form's name of each share list (a multiple select).
PICKERS = {"userIDs": "share_users", "departmentIDs": "share_departments",
           "projectIDs": "share_projects", "userRoles": "share_roles"}


def _query(args: MultiDict[str, str]) -> dict[str, str]:
    """The list's query as its URL or its query form says it: filter, columns, orderby."""
    columns = [part.strip() for value in args.getlist("columns") for part in value.split(",")]
    if args.get("attribute", "").strip():
        columns.append(f"attributes.{args['attribute'].strip()}")
    return {"filter": args.get("filter", "").strip(),
            "columns": ",".join(name for name in dict.fromkeys(columns) if name),
            "orderby": args.get("orderby", "").strip()}


@bp.app_template_global()
def saved_views_of(eclass: str) -> list[dict[str, Any]]:
    """The saved views of ``eclass`` the signed-in user may see, as the API shows them."""
    actor = current_actor()
    return [service.to_api(actor, view) for view in service.list_views(actor, eclass)]


@bp.get("/menu/<eclass>")
def menu(eclass: str) -> Response:
    """The menu's content for the list's current query (htmx asks when it is opened)."""
    return Response(render_block(MENU, "menu_body", eclass=eclass,
                                 views=saved_views_of(eclass), query=_query(request.args)),
                    mimetype="text/html")


def _body(form: MultiDict[str, str], eclass: str) -> dict[str, Any]:
    """The ``POST``/``PUT /api/saved-view`` body the form describes."""
    return {"name": form.get("name", "").strip(), "eClass": eclass,
            "filter": form.get("filter", ""),
            "columns": [name.strip() for name in form.get("columns", "").split(",")
                        if name.strip()],
            "orderby": form.get("orderby", ""),
            "shares": {field: form.getlist(name) for field, name in PICKERS.items()}}


def _form(actor: Actor, view: dict[str, Any] | None, form: dict[str, Any],
          errors: list[dict[str, str]], status: int = 200) -> Response:
    choices = sharing.share_choices(actor)
    return render_page(FORM, status=status, view=view, form=form, errors=errors,
                       choices=choices, pickers=PICKERS)


def _save(actor: Actor, view_id: str | None, eclass: str) -> BaseResponse:
    body = _body(request.form, eclass)
    try:
        loaded = SavedViewInputSchema().load(body)
        saved = (service.update(actor, view_id, loaded) if view_id
                 else service.create(actor, loaded))
        saved_id = saved.id
    except ValidationError as error:
        errors = flatten_messages(error.messages)
    except InvalidInput as error:
        errors = error.errors or [{"field": "", "message": error.detail}]
    else:
        flash("View saved.", "success")
        return redirect(url_for("saved_view_views.show", view_id=saved_id), 303)
    return _form(actor, {"id": view_id} if view_id else None,
                 {**body, "columns": ",".join(body["columns"])}, errors, 400)


@bp.route("/new", methods=["GET", "POST"])
def create() -> BaseResponse:
    """Save a list's query (``?eClass=&filter=&columns=&orderby=``) under a name."""
    actor = current_actor()
    source = request.form if request.method == "POST" else request.args
    spec = find_class(source.get("eClass", ""))
    if spec is None:
        raise InvalidInput(f"Unknown entity class {source.get('eClass', '')!r}.")
    if request.method == "POST":
        return _save(actor, None, spec.name)
    return _form(actor, None, {"name": "", "eClass": spec.name, **_query(request.args),
                               "shares": {}}, [])


def _visible(actor: Actor, view_id: str) -> dict[str, Any]:
    return service.to_api(actor, service.get_visible(actor, view_id))


@bp.get("/<view_id>")
def show(view_id: str) -> Response:
    """A view: what it lists, where to open and export it, adding it to a dashboard and,
    for its owner or ADMIN, renaming, sharing and deleting it."""
    actor = current_actor()
    view = _visible(actor, view_id)
    boards = service.editable_dashboards(actor)
    choices = sharing.share_choices(actor) if view["canWrite"] else {}
    # The owner and the parties shared with, by the names the reader may see.
    names = visible_names(actor, [view["userID"], *(
        party for field in ("userIDs", "departmentIDs", "projectIDs")
        for party in view["shares"].get(field, ()))])
    return render_page(PAGE, view=view, boards=boards, choices=choices, pickers=PICKERS,
                       form=view, errors=[], names=names)


@bp.post("/<view_id>")
def update(view_id: str) -> BaseResponse:
    """Rename, re-share or redefine a view (its owner or ADMIN)."""
    actor = current_actor()
    return _save(actor, view_id, _visible(actor, view_id)["eClass"])


@bp.post("/<view_id>/delete")
def delete(view_id: str) -> BaseResponse:
    """Delete a view (its owner; the page asks for confirmation first)."""
    actor = current_actor()
    eclass = service.get_visible(actor, view_id).eclass
    service.delete(actor, view_id)
    flash("View deleted.", "success")
    return redirect(url_for("entity_views.browse", eclass=eclass), 303)


@bp.post("/<view_id>/add-to-dashboard")
def add_to_dashboard(view_id: str) -> BaseResponse:
    """Append the view as a saved-list widget to a dashboard the user may change."""
    actor = current_actor()
    dashboard_id = request.form.get("dashboard_id", "")
    index = service.add_to_dashboard(actor, view_id, dashboard_id)
    flash("Added to the dashboard.", "success")
    return redirect(url_for("dashboard_views.show", dashboard_id=dashboard_id,
                            _anchor=f"widget-{index}"), 303)
