"""The storage browser: the location tree with fill bars (its top levels; a location opens
in place through htmx), a location page (contents, box grid, children, log, check-in and
check-out), moving a location with a confirmation, bench mode (one scan field) and printable
labels.

Every page calls the services the ``/api/storage`` endpoints call. Forms work as plain
requests; htmx posts bench-mode scans and adds each answer to the page in place. A check-in
says where the item was before (a move within a box or from elsewhere); an item whose
workflow is over (Discarded, Canceled) is stored only when the user confirms.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from flask import Blueprint, Response, flash, redirect, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.access.visibility import WRITE, access_type
from labapp.entities.loading import visible_names
from labapp.entities.service import save_batch
from labapp.errors import AppError, Conflict, InvalidInput, NotFound
from labapp.reading.wording import words_of
from labapp.storage import checkin, labels, log, moves, service, slots
from labapp.storage import tree as storage_tree
from labapp.web.blocks import is_htmx, render_block, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only

bp = members_only(Blueprint("storage_views", __name__, url_prefix="/storage"))

LOG_ROWS = 50
LOG_ACTIONS = {"checkin": "Checked in", "checkout": "Checked out", "move": "Moved"}
"""What a log entry's ``action`` says to people."""
TREE_PAGE = "storage/tree.html"
SHORT_LABEL = 12  # characters of a barcode or name a cell of a box grid shows
_CODES = re.compile(r"[\s,;]+")


class NeedsConfirmation(Conflict):
    """409: the item's workflow is over (Discarded, Canceled); it is stored only when the
    user confirms."""

    code = "status_final"


@bp.get("")
def tree() -> Response:
    """The storage tree: the top levels of the visible locations (whole levels, up to
    ``tree.TREE_BUDGET`` locations), each with how full it is and how much lies below it;
    a deeper location opens on demand (:func:`children`) or on its own page."""
    roots = storage_tree.top_levels(current_actor())
    return render_page(TREE_PAGE, roots=roots)


@bp.get("/locations/<location_id>/children")
def children(location_id: str) -> Response:
    """A location's entry of the tree, opened: its visible children with their counts.

    A fragment (the block ``node`` of the tree page) that htmx swaps in when the location
    is opened, also for a plain request; without JavaScript the control that opens a
    location is a link to its own page, which lists its children. 404 when hidden.
    """
    node = storage_tree.opened(current_actor(), location_id)
    return Response(render_block(TREE_PAGE, "node", node=node), mimetype="text/html")


@dataclass(frozen=True)
class Slot:
    """One cell of a box grid: ``state`` is ``taken`` (by ``item``, which the viewer may
    see), ``occupied`` (by an item they may not see: nothing of it is drawn) or ``free``."""

    position: str
    state: str
    item: service.StoredItem | None = None

    @property
    def label(self) -> str:
        """What the cell shows of its item: the barcode, else the name; the end of either
        when long (names in one box tend to differ at their end)."""
        text = (self.item.barcode or self.item.name or self.item.id) if self.item else ""
        return text if len(text) <= SHORT_LABEL else "…" + text[1 - SHORT_LABEL:].lstrip()


@dataclass(frozen=True)
class BoxGrid:
    """The cells of a grid location, row by row, and how many are taken (visible or not).

    ``highlight`` is the slot the address asked for (``?slot=``). The check-in form stores
    into ``chosen``: that slot when it is free, else the first free slot in filling order
    (the one a check-in without a slot would take), so the slot the page highlights as
    chosen is always the one the form really uses. ``shown`` is the asked-for slot when it
    is held (the page says so, and marks it apart from the chosen one)."""

    rows: list[tuple[str, list[Slot]]]
    taken: int
    occupied: int
    highlight: str | None

    def _state(self, position: str | None) -> str | None:
        return next((slot.state for _, cells in self.rows for slot in cells
                     if slot.position == position), None)

    @cached_property
    def chosen(self) -> str | None:
        """The slot the check-in form stores into; None when every slot is held."""
        if self._state(self.highlight) == "free":
            return self.highlight
        return next((slot.position for _, cells in self.rows for slot in cells
                     if slot.state == "free"), None)

    @cached_property
    def shown(self) -> str | None:
        """The asked-for slot when an item holds it (visible to the viewer or not)."""
        return self.highlight if self._state(self.highlight) in ("taken", "occupied") else None

    @cached_property
    def shown_item(self) -> service.StoredItem | None:
        """The visible item in the :attr:`shown` slot, if any."""
        return next((slot.item for _, cells in self.rows for slot in cells
                     if slot.position == self.shown), None)


def _grid(location: dict[str, Any], items: list[service.StoredItem],
          highlight: str) -> BoxGrid:
    """The box grid of a location with rows and columns: the visible items in their slots,
    and the slots of items the viewer may not see drawn as occupied."""
    by_position = {item.position: item for item in items if item.position}
    occupied = checkin.occupied_positions(location["id"])
    rows = []
    for row in range(location["rows"]):
        cells = []
        for column in range(location["columns"]):
            position = slots.label(row, column)
            item = by_position.get(position)
            state = "taken" if item else "occupied" if position in occupied else "free"
            cells.append(Slot(position, state, item))
        rows.append((slots.row_label(row), cells))
    states = [slot.state for _, cells in rows for slot in cells]
    return BoxGrid(rows, len(states) - states.count("free"), states.count("occupied"),
                   slots.canonical(highlight, location["rows"], location["columns"]))


def _location_page(actor: Actor, location_id: str, *, status: int = 200,
                   error: str | None = None, highlight: str | None = None,
                   confirm: dict[str, str] | None = None) -> Response:
    location = service.location_detail(actor, location_id)
    items = service.contents(actor, location_id)
    grid = service.has_grid(location["rows"], location["columns"])
    skip = max(request.args.get("skip", 0, type=int), 0)
    entries = log.page(actor, location_id, top=LOG_ROWS, skip=skip)
    can_write = access_type(actor, "Location", location["departmentID"],
                            location["projectID"]) == WRITE
    children = service.locations_api(service.children(actor, location_id))
    highlight = highlight or request.args.get("slot", "")
    # The log names people and items by the names the viewer may see (ids of the others).
    names = visible_names(actor, {key for entry in entries.data
                                  for key in (entry["userID"], entry["entityID"]) if key})
    return render_page(
        "storage/location.html", status=status, location=location, items=items,
        grid=_grid(location, items, highlight) if grid else None,
        ancestors=service.ancestors(actor, location_id), children=children,
        within={key: below for key, (_, below) in storage_tree.rollup(
            [location_id, *(child["id"] for child in children)]).items()},
        log_entries=entries.data, log_total=entries.total, log_skip=skip, log_rows=LOG_ROWS,
        log_actions=LOG_ACTIONS, names=names, can_write=can_write, error=error,
        confirm=confirm)


@bp.get("/locations/<location_id>")
def location(location_id: str) -> Response:
    """A location: its place in the tree, contents (a grid for a box, ``?slot=C4``
    highlighting one slot), children and log."""
    return _location_page(current_actor(), location_id)


def _scanned(actor: Actor, code: str) -> tuple[str, str, str]:
    code = code.strip()
    if not code:
        raise InvalidInput("Scan or type a code first.")
    found = service.find_scanned(actor, code)
    if found is None:
        raise NotFound(f"Nothing you may see carries the code {code!r}.")
    return found


def _refuse_closed(eclass: str, item_id: str, item: str) -> None:
    """Refuse (until confirmed) to store an item whose workflow is over."""
    status = service.closed_status(eclass, item_id)
    if status is not None:
        raise NeedsConfirmation(f"{item} is {words_of(status)}. Store it anyway?")


def _where(actor: Actor, place: tuple[str | None, str | None]) -> str:
    """A ``(location id, position)`` as the user reads it: the location's path and slot."""
    location_id, position = place
    if location_id is None:
        return "a location you may not see"
    try:
        path = service.get_location(actor, location_id).hierarchy or location_id
    except NotFound:
        path = "a location you may not see"
    return f"{path}, slot {position}" if position else path


def _store(actor: Actor, location_id: str, eclass: str, item_id: str, item: str,
           position: str | None = None) -> tuple[str, str | None]:
    """Check ``item`` into the location (into ``position`` when given). Returns what
    happened, said as a move when the item was stored before, and the slot it took."""
    wanted = {"eClass": eclass, "id": item_id, **({"position": position} if position else {})}
    before = service.position_of(eclass, item_id)
    checkin.check_in(actor, location_id, [wanted])
    after = service.position_of(eclass, item_id)
    if before == after:
        message = f"{item} is already at {_where(actor, after)}."
    elif before[0] == after[0]:
        message = f"{item} moved {before[1] or '(no slot)'} → {after[1]}."
    elif before[0] is None:
        message = f"{item} checked in at {_where(actor, after)}."
    else:
        message = f"{item} moved from {_where(actor, before)} → {_where(actor, after)}."
    return message, after[1]


@bp.post("/locations/<location_id>/checkin")
def check_in(location_id: str) -> BaseResponse:
    """Check the sample or plate with the typed or scanned code into this location (into
    the chosen slot of a box). An item whose workflow is over is stored only with
    ``confirm=yes``; a refused check-in answers the page with the reason."""
    actor = current_actor()
    code, position = request.form.get("code", ""), request.form.get("position") or None
    try:
        eclass, item_id, name = _scanned(actor, code)
        item = f"{eclass} {item_id} ({name})"
        if request.form.get("confirm") != "yes":
            _refuse_closed(eclass, item_id, item)
        message, stored_at = _store(actor, location_id, eclass, item_id, item, position)
    except AppError as error:
        if isinstance(error, NotFound) and not _visible(actor, location_id):
            raise
        confirm = ({"code": code, "position": position or ""}
                   if isinstance(error, NeedsConfirmation) else None)
        return _location_page(actor, location_id, status=error.status, error=error.detail,
                              highlight=position, confirm=confirm)
    flash(message, "success")
    return redirect(url_for("storage_views.location", location_id=location_id, slot=stored_at))


def _visible(actor: Actor, location_id: str) -> bool:
    try:
        service.get_location(actor, location_id)
    except NotFound:
        return False
    return True


@bp.post("/locations/<location_id>/checkout")
def check_out(location_id: str) -> BaseResponse:
    """Check one item out of this location."""
    actor = current_actor()
    service.get_location(actor, location_id)
    item = {"eClass": request.form.get("eClass", ""), "id": request.form.get("id", "")}
    try:
        checkin.check_out(actor, [item])
    except AppError as error:
        return _location_page(actor, location_id, status=error.status, error=error.detail)
    name = visible_names(actor, [item["id"]]).get(item["id"], ("", ""))[1]
    said = f"{item['eClass']} {item['id']}" + (f" ({name})" if name else "")
    flash(f"{said} checked out.", "success")
    return redirect(url_for("storage_views.location", location_id=location_id))


@bp.route("/locations/<location_id>/move", methods=["GET", "POST"])
def move(location_id: str) -> BaseResponse:
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
                       parent_name=names.get(parent or "", "the top level"))
        return render_page("storage/move.html", **context)
    try:
        save_batch(actor, [{"eClass": "Location", "id": location_id, "parentID": parent}],
                   notation=False)
    except AppError as error:
        context["error"] = error.detail
        return render_page("storage/move.html", status=error.status, **context)
    flash(f"{location['name']} moved to {names.get(parent or '', 'the top level')}.",
          "success")
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


def _scan(actor: Actor, code: str, mode: str, target: dict[str, Any] | None,
          confirmed: bool) -> tuple[dict[str, Any] | None, str]:
    """Act on one scan; returns the (new) target location and what happened."""
    eclass, item_id, name = _scanned(actor, code)
    if eclass == "Location":
        return service.location_detail(actor, item_id), f"Now storing into {name}."
    if eclass not in service.STORABLE_CLASSES:
        raise InvalidInput(f"{item_id} is a {eclass}; only samples and plates are stored.")
    item = f"{eclass} {item_id} ({name})"
    if mode == "checkout":
        checkin.check_out(actor, [{"eClass": eclass, "id": item_id}])
        return target, f"{item} checked out."
    if target is None:
        raise InvalidInput("Scan a location first, then the items to store there.")
    if not confirmed:
        _refuse_closed(eclass, item_id, item)
    message, _ = _store(actor, target["id"], eclass, item_id, item)
    return service.location_detail(actor, target["id"]), message


@bp.post("/bench/scan")
def scan() -> Response:
    """One scan: a location becomes the target; an item is checked in there (or out, in
    check-out mode). A refusal is shown in red and changes nothing; one that waits for a
    confirmation (an item whose workflow is over) offers to store it anyway."""
    actor = current_actor()
    mode = "checkout" if request.form.get("mode") == "checkout" else "checkin"
    target = _target_of(actor, request.form.get("target", ""))
    code = request.form.get("code", "")
    status = 200
    try:
        target, message = _scan(actor, code, mode, target,
                                request.form.get("confirm") == "yes")
        result = {"ok": True, "message": message}
    except AppError as error:
        status = error.status
        result = {"ok": False, "message": error.detail,
                  "confirm": code if isinstance(error, NeedsConfirmation) else None}
    return render_page("storage/bench.html", block="scan", status=status, result=result,
                       mode=mode, target=target, oob=is_htmx())


@bp.get("/labels")
def label_sheet() -> Response:
    """Labels of the samples, plates and locations named in ``ids`` by barcode or id
    (separated by spaces, commas or new lines) or by repeated ``id`` parameters, laid out
    in the ``format`` asked for (``sheet``, the default, or ``roll``; any other is 400)."""
    layout = labels.label_format(request.args.get("format"))
    codes = [*request.args.getlist("id"), *_CODES.split(request.args.get("ids", ""))]
    wanted = [code for code in codes if code]
    sheet, skipped = labels.labels_for(current_actor(), wanted, layout)
    return render_page("storage/labels.html", labels=sheet, skipped=skipped,
                       ids="\n".join(dict.fromkeys(wanted)), layout=layout,
                       formats=labels.FORMATS.values())
