"""The storage browser: the location tree with fill bars, a location page (contents, box
grid, children, log, check-in and check-out), moving a location with a confirmation, bench
mode (one scan field) and printable labels.

Every page calls the services the ``/api/storage`` endpoints call. Forms work as plain
requests; htmx posts bench-mode scans and adds each answer to the page in place.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, flash, redirect, request, url_for

from labapp.access.actor import Actor
from labapp.access.visibility import WRITE, access_type
from labapp.db import transaction
from labapp.entities.service import save_batch
from labapp.errors import AppError, InvalidInput, NotFound
from labapp.storage import checkin, labels, log, moves, service, slots
from labapp.web.blocks import is_htmx, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only

bp = members_only(Blueprint("storage_views", __name__, url_prefix="/storage"))

LOG_ROWS = 50
_CODES = re.compile(r"[\s,;]+")


@dataclass
class TreeNode:
    """One location of the tree with its visible children."""

    usage: dict[str, Any]
    children: list[TreeNode]


def _tree(actor: Actor) -> list[TreeNode]:
    usage = service.storage_usage(actor)
    nodes = {row["id"]: TreeNode(row, []) for row in usage}
    roots = []
    for row in usage:
        parent = nodes.get(row["parentID"])
        (parent.children if parent else roots).append(nodes[row["id"]])
    return roots


@bp.get("")
def tree() -> Response:
    """Every visible location as a tree, each with how full it is."""
    return render_page("storage/tree.html", roots=_tree(current_actor()))


def _grid(location: dict[str, Any], items: list[service.StoredItem]) -> list[Any]:
    """``(row letters, [(position, item or None)])`` per row of a grid location."""
    by_position = {item.position: item for item in items if item.position}
    return [(slots.row_label(row),
             [(slots.label(row, column), by_position.get(slots.label(row, column)))
              for column in range(location["columns"])]) for row in range(location["rows"])]


def _location_page(actor: Actor, location_id: str, *, status: int = 200,
                   error: str | None = None, **extra: Any) -> Response:
    location = service.location_detail(actor, location_id)
    items = service.contents(actor, location_id)
    grid = service.has_grid(location["rows"], location["columns"])
    skip = max(request.args.get("skip", 0, type=int), 0)
    entries = log.page(actor, location_id, top=LOG_ROWS, skip=skip)
    can_write = access_type(actor, "Location", location["departmentID"],
                            location["projectID"]) == WRITE
    return render_page(
        "storage/location.html", status=status, location=location, items=items,
        grid=_grid(location, items) if grid else None,
        ancestors=service.ancestors(actor, location_id),
        children=service.locations_api(service.children(actor, location_id)),
        log_entries=entries.data, log_total=entries.total, log_skip=skip, log_rows=LOG_ROWS,
        can_write=can_write, error=error, **extra)


@bp.get("/locations/<location_id>")
def location(location_id: str) -> Response:
    """A location: its place in the tree, contents (a grid for a box), children and log."""
    return _location_page(current_actor(), location_id)


def _scanned(actor: Actor, code: str) -> tuple[str, str, str]:
    code = code.strip()
    if not code:
        raise InvalidInput("Scan or type a code first.")
    found = service.find_scanned(actor, code)
    if found is None:
        raise NotFound(f"Nothing you may see carries the code {code!r}.")
    return found


@bp.post("/locations/<location_id>/checkin")
def check_in(location_id: str) -> Response:
    """Check the sample or plate with the typed or scanned code into this location (into
    the chosen slot of a box)."""
    actor = current_actor()
    try:
        eclass, item_id, _ = _scanned(actor, request.form.get("code", ""))
        item: dict[str, Any] = {"eClass": eclass, "id": item_id}
        if request.form.get("position"):
            item["position"] = request.form["position"]
        with transaction():
            checkin.check_in(actor, location_id, [item])
    except AppError as error:
        if isinstance(error, NotFound) and not _visible(actor, location_id):
            raise
        return _location_page(actor, location_id, status=error.status, error=error.detail)
    flash(f"{eclass} {item_id} checked in.", "success")
    return redirect(url_for("storage_views.location", location_id=location_id))


def _visible(actor: Actor, location_id: str) -> bool:
    try:
        service.get_location(actor, location_id)
    except NotFound:
        return False
    return True


@bp.post("/locations/<location_id>/checkout")
def check_out(location_id: str) -> Response:
    """Check one item out of this location."""
    actor = current_actor()
    service.get_location(actor, location_id)
    item = {"eClass": request.form.get("eClass", ""), "id": request.form.get("id", "")}
    try:
        with transaction():
            checkin.check_out(actor, [item])
    except AppError as error:
        return _location_page(actor, location_id, status=error.status, error=error.detail)
    flash(f"{item['eClass']} {item['id']} checked out.", "success")
    return redirect(url_for("storage_views.location", location_id=location_id))


@bp.route("/locations/<location_id>/move", methods=["GET", "POST"])
def move(location_id: str) -> Response:
    """Choose a new parent; confirm, being told how much moves along; move."""
    actor = current_actor()
    location = service.location_detail(actor, location_id)
    targets = moves.move_targets(actor, location_id)
    context: dict[str, Any] = {"location": location, "targets": targets, "error": None,
                               "confirm": False, "parent": location["parentID"] or ""}
    if request.method == "GET":
        return render_page("storage/move.html", **context)
    parent = request.form.get("parentID", "").strip() or None
    context["parent"] = parent or ""
    names = dict(targets)
    if parent is not None and parent not in names:
        context["error"] = "Choose one of the listed locations."
        return render_page("storage/move.html", status=400, **context)
    if request.form.get("confirmed") != "yes":
        context.update(confirm=True, moving=moves.items_below(location_id),
                       parent_name=names.get(parent, "the top level"))
        return render_page("storage/move.html", **context)
    try:
        with transaction():
            save_batch(actor, [{"eClass": "Location", "id": location_id, "parentID": parent}],
                       notation=False)
    except AppError as error:
        context["error"] = error.detail
        return render_page("storage/move.html", status=error.status, **context)
    flash(f"{location['name']} moved to {names.get(parent, 'the top level')}.", "success")
    return redirect(url_for("storage_views.location", location_id=location_id))


@bp.get("/bench")
def bench() -> Response:
    """Bench mode: one scan field for a USB barcode scanner."""
    return render_page("storage/bench.html", result=None, mode="checkin", target=None,
                       oob=False)


def _target_of(actor: Actor, target_id: str) -> dict[str, Any] | None:
    if not target_id:
        return None
    try:
        return service.location_detail(actor, target_id)
    except NotFound:
        return None


def _scan(actor: Actor, code: str, mode: str,
          target: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
    """Act on one scan; returns the (new) target location and what happened."""
    eclass, item_id, name = _scanned(actor, code)
    if eclass == "Location":
        return service.location_detail(actor, item_id), f"Now storing into {name}."
    if eclass not in service.STORABLE_CLASSES:
        raise InvalidInput(f"{item_id} is a {eclass}; only samples and plates are stored.")
    if mode == "checkout":
        with transaction():
            checkin.check_out(actor, [{"eClass": eclass, "id": item_id}])
        return target, f"{eclass} {item_id} ({name}) checked out."
    if target is None:
        raise InvalidInput("Scan a location first, then the items to store there.")
    with transaction():
        checkin.check_in(actor, target["id"], [{"eClass": eclass, "id": item_id}])
    _, position = service.position_of(eclass, item_id)
    slot = f", slot {position}" if position else ""
    return (service.location_detail(actor, target["id"]),
            f"{eclass} {item_id} ({name}) → {target['hierarchy']}{slot}.")


@bp.post("/bench/scan")
def scan() -> Response:
    """One scan: a location becomes the target; an item is checked in there (or out, in
    check-out mode). A refusal is shown in red and changes nothing."""
    actor = current_actor()
    mode = "checkout" if request.form.get("mode") == "checkout" else "checkin"
    target = _target_of(actor, request.form.get("target", ""))
    status = 200
    try:
        target, message = _scan(actor, request.form.get("code", ""), mode, target)
        result = {"ok": True, "message": message}
    except AppError as error:
        status = error.status
        result = {"ok": False, "message": error.detail}
    return render_page("storage/bench.html", block="scan", status=status, result=result,
                       mode=mode, target=target, oob=is_htmx())


@bp.get("/labels")
def label_sheet() -> Response:
    """Labels of the samples, plates and locations named in ``ids`` (separated by spaces,
    commas or new lines) or by repeated ``id`` parameters, laid out for label sheets."""
    codes = [*request.args.getlist("id"), *_CODES.split(request.args.get("ids", ""))]
    wanted = [code for code in codes if code]
    sheet, skipped = labels.labels_for(current_actor(), wanted)
    return render_page("storage/labels.html", labels=sheet, skipped=skipped,
                       ids="\n".join(dict.fromkeys(wanted)))
