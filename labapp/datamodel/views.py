"""The administration area of the data model (ADMIN only): the model browser (classes,
fields, statuses as a transition diagram, views), the extension files and their validation
errors, and the diff with a Sync button that shows the sync's report."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app

from labapp.access.actor import ADMIN
from labapp.datamodel import service
from labapp.datamodel.diagram import diagram
from labapp.datamodel.running import extension_folder, extension_problem, reload_model
from labapp.datamodel.synchronise import run_sync
from labapp.errors import AppError
from labapp.model.registry import existing_class
from labapp.web.blocks import render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only, require
from labapp.web.units import opens_own_units

bp = members_only(Blueprint("datamodel_views", __name__, url_prefix="/admin/datamodel"))

MODEL_PAGE = "datamodel/model.html"
DIFF_PAGE = "datamodel/diff.html"


@bp.before_request
def _admins_only() -> None:
    require(current_actor(), (ADMIN,))


@bp.get("")
def model() -> Response:
    """Every class with its fields and status diagram, the views, the extension files."""
    problem = extension_problem(current_app)
    if problem is None:
        reload_model(current_app)
    described = service.describe()
    diagrams = {item["name"]: diagram(existing_class(item["name"]).workflow)
                for item in described["classes"]}
    folder = extension_folder(current_app)
    files = sorted(path.name for path in folder.glob("*.json")) if folder.is_dir() else []
    return render_page(MODEL_PAGE, model=described, diagrams=diagrams, files=files,
                       problem=problem)


def _diff_page(block: str | None = None, report: dict[str, Any] | None = None,
               error: str | None = None) -> Response:
    problem = extension_problem(current_app)
    found = None
    if problem is None:
        reload_model(current_app)
        found = service.diff()
    return render_page(DIFF_PAGE, block=block, diff=found, report=report,
                       problem=problem or error)


@bp.get("/diff")
def diff() -> Response:
    """The expected model against the database, with the Sync button."""
    return _diff_page()


@bp.post("/sync")
@opens_own_units
def sync() -> Response:
    """Run the sync; answer the diff page (block ``diff`` for htmx) with its report."""
    try:
        report = run_sync(current_app)
    except AppError as error:
        return _diff_page("diff", error=error.detail)
    return _diff_page("diff", report=report)
