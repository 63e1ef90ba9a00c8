"""The entity browser: classes, a table per class, detail pages, notes, files and cloning.

Every page calls the same service functions as ``/api/entity``: lists through
:func:`loading.list_entities`, details through :func:`loading.entity_detail`, every write
through :func:`service.save_batch`, :func:`service.clone` or, for uploads,
:func:`labapp.files.service.create_file` (routed by :mod:`labapp.files.views`). Forms work
as plain requests; htmx swaps the table (paging, sorting, filtering), the notes section and
the hierarchy tree in place. The create
and edit pages live in :mod:`labapp.entities.editing`, the tree, suggestion and uniqueness
fragments in :mod:`labapp.entities.navigation`; both are routed here, behind the same login
check. The storage part of a sample's or plate's page posts its check-in and check-out to
:mod:`labapp.storage.item_views`, which answers a refusal with this page.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from flask import Blueprint, Response, flash, redirect, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.entities import (
    display,
    editing,
    filter_builder,
    filter_chips,
    loading,
    navigation,
    service,
)
from labapp.entities.detail import back_to, render_detail
from labapp.entities.editing import may_create
from labapp.entities.forms import label_of
from labapp.entities.navigation import PAGE_SIZE
from labapp.errors import Conflict, InvalidInput
from labapp.model.registry import ClassSpec, classes
from labapp.query.fields import entity_fields
from labapp.query.filter import FilterError
from labapp.query.listing import Page, parse_select
from labapp.query.paging import INVALID_SKIPTOKEN
from labapp.reading import column_fit, marks
from labapp.reading.lookup import class_named, load_visible
from labapp.reading.wording import words_of
from labapp.web.blocks import is_htmx, render_block, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only

bp = members_only(Blueprint("entity_views", __name__, url_prefix="/entities"))
bp.add_url_rule("/<eclass>/new", view_func=editing.create, methods=["GET", "POST"])
bp.add_url_rule("/<eclass>/new/slots", view_func=editing.free_slots)
bp.add_url_rule("/<eclass>/<path:entity_id>/edit", view_func=editing.edit,
                methods=["GET", "POST"])
bp.add_url_rule("/<eclass>/<path:entity_id>/children", view_func=navigation.children)
bp.add_url_rule("/suggest/<eclass>/<field>", view_func=navigation.suggest)
bp.add_url_rule("/unique/<eclass>/<field>", view_func=navigation.unique)
bp.add_app_template_filter(display.text, "entity_text")
bp.add_app_template_filter(display.show, "show")
bp.add_app_template_filter(display.moment, "moment")
bp.add_app_template_filter(display.person, "person")
bp.add_app_template_filter(display.named, "named")
bp.add_app_template_filter(words_of, "words")

LIST_TEMPLATE = "entities/list.html"
# Columns every table starts with, before a few of the class's own fields.
COMMON_COLUMNS = ("name", "status", "type", "modifiedUtc")
OWN_COLUMNS = 3
# What a lab member reads first of the classes they list most (issue 21 §2): a number's
# unit and a stored item's slot are folded into its cell, so they are not columns here.
CLASS_COLUMNS = {
    "Sample": ("name", "barcode", "status", "amount", "locationID", "expiryDate"),
    "Request": ("name", "assigneeID", "status", "dueDate", "priority"),
}


# ---- Classes ----------------------------------------------------------------------------------

@bp.get("")
def index() -> Response:
    """One card per class with the number of entities the user may see."""
    actor = current_actor()
    counts = loading.visible_counts(actor)
    cards = [(spec, counts.get(spec.name, 0), may_create(actor, spec)) for spec in classes()]
    return render_page("entities/index.html", cards=cards)


# ---- One class: the table ---------------------------------------------------------------------

def default_columns(spec: ClassSpec) -> tuple[str, ...]:
    """The columns a class's table starts with: :data:`CLASS_COLUMNS` for a Sample or a
    Request (those of its fields the model has), else the common columns and the first few
    own fields of the class (plain values first; where a sample or plate is stored counts as
    one, its slot shown inside it)."""
    chosen = tuple(name for name in CLASS_COLUMNS.get(spec.name, ()) if name in spec.fields)
    if chosen:
        return chosen
    folded = {display.companion_field(spec, name) for name in spec.fields}
    own = [field for field in spec.fields.values()
           if not field.common and field.attr is not None and field.type != "json"
           and field.name not in folded]
    own.sort(key=lambda field: field.type == "ref" and not display.is_place(spec, field.name))
    return COMMON_COLUMNS + tuple(field.name for field in own[:OWN_COLUMNS])


@dataclass(frozen=True)
class TableState:
    """What the URL says about a table:
    ``?filter=&orderby=&skip=&skiptoken=&columns=&count=``.

    ``skiptoken`` is the keyset position the page starts after (the list's
    ``nextSkipToken``): the Next link carries it, so a deep page costs what the first does;
    ``skip`` then only numbers the rows. A filtered table counts its matches after its rows
    are shown (:func:`count`), unless ``counted`` (``count=1``, the link shown in its place
    without JavaScript)."""

    spec: ClassSpec
    filter: str
    orderby: str
    skip: int
    columns: tuple[str, ...]
    skiptoken: str = ""
    counted: bool = False

    def url(self, **changes: Any) -> str:
        """The table's URL with ``changes`` applied (defaults and empty values left out).
        A change of page, filter or order drops the position unless it names one."""
        if changes.keys() & {"skip", "filter", "orderby"}:
            changes.setdefault("skiptoken", "")
        state = replace(self, **changes)
        args: dict[str, Any] = {
            "filter": state.filter, "orderby": state.orderby, "skip": state.skip,
            "skiptoken": state.skiptoken, "columns": ",".join(state.columns)
            if state.columns != default_columns(state.spec) else "",
            "count": 1 if state.counted else ""}
        return url_for("entity_views.browse", eclass=state.spec.name,
                       **{name: value for name, value in args.items() if value})

    def sort_of(self, column: str) -> str | None:
        """``ascending``/``descending`` when the table is sorted by ``column`` first."""
        first = self.orderby.split(",")[0].split()
        if not first or first[0].lower() != column.lower():
            return None
        return "descending" if first[-1].lower() == "desc" else "ascending"

    def sort_url(self, column: str) -> str:
        """Sort by ``column``: ascending first, toggled when already sorted by it."""
        direction = "desc" if self.sort_of(column) == "ascending" else "asc"
        return self.url(orderby=f"{column} {direction}", skip=0)


def _requested_columns(spec: ClassSpec) -> tuple[str, ...]:
    names = [part.strip() for value in request.args.getlist("columns")
             for part in value.split(",")]
    key = request.args.get("attribute", "").strip()
    if key:
        names.append(f"attributes.{key}")
    chosen = tuple(name for name in dict.fromkeys(names) if name and name.lower() != "id")
    return chosen or default_columns(spec)


@dataclass(frozen=True)
class Column:
    """A column of the table: field name, header, whether the header sorts, whether it
    holds numbers (aligned right), and how it fits the table's width (``fit``: the width
    below which it is left out, whether its text may break; :mod:`labapp.reading.column_fit`)."""

    name: str
    label: str
    sortable: bool
    numeric: bool = False
    fit: column_fit.Fit | None = None


def _page(actor: Actor, state: TableState, select_text: str) -> tuple[Page, bool]:
    """The table's page of rows, and whether it fell back to the first page: a ``skiptoken``
    that is not one of this order's (cut short, or from an older release) shows the first
    page rather than an error."""
    def read(skip: str | None, skiptoken: str | None) -> Page:
        return loading.list_entities(actor, state.spec, filter_text=state.filter or None,
                                     orderby=state.orderby or None, select_text=select_text,
                                     top=str(PAGE_SIZE), skip=skip, skiptoken=skiptoken,
                                     count=None if state.counted or not state.filter
                                     else "false")
    try:
        return read(request.args.get("skip"), state.skiptoken or None), False
    except InvalidInput as error:
        if error.code != INVALID_SKIPTOKEN:
            raise
    return read(None, None), True


def _table(actor: Actor, state: TableState) -> dict[str, Any]:
    """The context of the table block: columns, rows, and any error of the query."""
    spec = state.spec
    context: dict[str, Any] = {"state": state, "rows": [], "total": 0, "columns": [],
                               "next_token": None, "filter_error": None, "error": None,
                               "notice": None}
    try:
        names = parse_select(",".join(state.columns), entity_fields(spec), always=())
        # The unit of a number column is shown beside it, the slot beside the location; a
        # mark (expired, low) reads the status and the attributes too.
        companions = [extra for name in names if (extra := display.companion_field(spec, name))]
        wanted = list(dict.fromkeys(["id", *names, *companions, *marks.inputs(spec, names)]))
        page, fell_back = _page(actor, state, ",".join(wanted))
    except FilterError as error:
        context["filter_error"] = error.detail
        return context
    except InvalidInput as error:
        context["error"] = error.detail
        return context
    if fell_back:
        state = replace(state, skip=0, skiptoken="")
        context["notice"] = ("The page position in the address no longer fits this list; "
                             "showing the first page.")
    fields = spec.fields
    context["state"] = replace(state, columns=tuple(names))
    columns = [Column("id", "ID", True)] + [
        Column(name, label_of(name), name not in fields or fields[name].type != "json",
               name in fields and fields[name].type in ("int", "float"))
        for name in names]
    context["columns"] = [replace(column, fit=fit) for column, fit in zip(
        columns, column_fit.fits(spec, [column.name for column in columns],
                                 [column.label for column in columns], state.orderby),
        strict=True)]
    known = loading.visible_names(actor, display.referenced_ids(spec, page.data, names))
    places = navigation.stored_places(actor, display.place_ids(spec, page.data, names))
    context["rows"] = [
        [display.Cell(row["id"], display.detail_url(spec.name, row["id"]))]
        + [display.cell(spec, name, row.get(name), row, known, places, brief=True)
           for name in names]
        for row in page.data]
    # A filtered page's total is counted by its own request (:func:`count`) unless it is the
    # last page, whose rows end the count.
    context["total"] = (page.total if page.total is not None or page.next_token
                        else state.skip + len(page.data))
    context["next_token"] = page.next_token
    return context


def _column_choices(state: TableState) -> list[tuple[str, str]]:
    """The picker's columns: every stored field but the id, and the chosen attributes."""
    names = [name for name, field in state.spec.fields.items()
             if field.attr is not None and name != "id"]
    names += [name for name in state.columns if name not in names]
    return [(name, label_of(name)) for name in names]


def _builder_condition() -> filter_builder.Condition | None:
    """The filter builder's condition when ``Add condition`` sent one (a field chosen)."""
    args = request.args
    if args.get("add") != "1" or not args.get("add_field", "").strip():
        return None
    return filter_builder.Condition(args.get("add_field", ""), args.get("add_op", ""),
                                  args.get("add_ref") or args.get("add_value", ""))


@bp.get("/<eclass>")
def browse(eclass: str) -> BaseResponse:
    """The visible entities of a class: filter, sort, choose columns, page through them.

    ``?add=1`` with ``add_field``, ``add_op`` and ``add_value`` (or ``add_ref``, the id a
    reference picker chose) joins the filter builder's condition to the filter; a plain
    request is then sent to the table's own address."""
    actor = current_actor()
    spec = class_named(eclass)
    skip = request.args.get("skip", "")
    state = TableState(spec, request.args.get("filter", "").strip(),
                       request.args.get("orderby", "").strip(),
                       int(skip) if skip.isdigit() else 0, _requested_columns(spec),
                       request.args.get("skiptoken", "").strip(),
                       request.args.get("count") == "1")
    chosen, builder_error = _builder_condition(), None
    if chosen is not None:
        try:
            if not request.args.get("add_ref"):  # a reference typed, not picked
                chosen = filter_builder.resolve_reference(actor, spec, chosen)
            state = replace(state, skip=0, skiptoken="",
                            filter=filter_builder.add_condition(spec, state.filter, chosen))
        except filter_builder.ConditionError as error:
            builder_error = str(error)
        else:
            chosen = None
            if not is_htmx():
                return redirect(state.url(), 303)
    context = _table(actor, state)
    failed = context["filter_error"] or context["error"] or builder_error
    response = render_page(LIST_TEMPLATE, block="table", status=400 if failed else 200,
                           spec=spec, page_size=PAGE_SIZE,
                           choices=_column_choices(context["state"]),
                           can_create=may_create(actor, spec),
                           builder_fields=filter_builder.builder_fields(spec),
                           chips=filter_chips.read_chips(actor, spec, state.filter),
                           chosen=chosen, builder_error=builder_error, **context)
    if is_htmx():
        # The address bar shows the table's state as links write it, not the raw form fields.
        response.headers["HX-Push-Url"] = context["state"].url()
    return response


@bp.get("/count/<eclass>")
def count(eclass: str) -> BaseResponse:
    """The table's ``total`` block: how many visible entities of the class match
    ``?filter=``. The table asks for it through htmx once its rows are shown: counting
    hundreds of thousands of matches takes 0.3-0.7 s at a million entities, reading a page
    of them 30 ms (bench/runs/2026-11-28-million.md). A plain request gets the table with its count;
    a filter that does not compile is a 400."""
    spec = class_named(eclass)
    filter_text = request.args.get("filter", "").strip()
    if not is_htmx():
        return redirect(url_for("entity_views.browse", eclass=spec.name,
                                filter=filter_text or None, count=1), 303)
    try:
        total = loading.count_entities(current_actor(), spec, filter_text or None)
    except FilterError as error:
        return Response(render_block(LIST_TEMPLATE, "total", total=None,
                                     count_error=error.detail), 400)
    return Response(render_block(LIST_TEMPLATE, "total", total=total))


# ---- One entity: the detail page and what may be added to it ----------------------------------

@bp.get("/<eclass>/<path:entity_id>")
def detail(eclass: str, entity_id: str) -> Response:
    """Fields, attributes, notes, files, audit trail and events of one entity."""
    return render_detail(current_actor(), class_named(eclass), entity_id)


@bp.post("/<eclass>/<path:entity_id>/notes")
def add_note(eclass: str, entity_id: str) -> BaseResponse:
    """Add a note about the entity; htmx gets the notes section back, others a redirect."""
    actor = current_actor()
    spec = class_named(eclass)
    content = request.form.get("content", "")
    if not content.strip():
        return render_detail(actor, spec, entity_id, block="notes", status=400,
                       note_error="Write the note before adding it.", note_text=content)
    subject = load_visible(actor, spec, entity_id)
    service.save_batch(actor, [{"eClass": "Note", "subjectID": subject.id,
                                "subjectClass": spec.name, "content": content}],
                       notation=False)
    if is_htmx():
        return render_detail(actor, spec, entity_id, block="notes", status=201,
                       note_notice="Note added.")
    flash("Note added.", "success")
    return back_to(spec, entity_id, "notes")


@bp.post("/<eclass>/<path:entity_id>/status")
def change_status(eclass: str, entity_id: str) -> BaseResponse:
    """Move the entity to the posted ``status`` as of the posted ``version``. A transition
    the workflow does not allow, or a version that is no longer current, shows the detail
    page again with the refusal (409) and the stored status to choose from."""
    actor = current_actor()
    spec = class_named(eclass)
    target = request.form.get("status", "")
    version = request.form.get("version", "")
    item = {"eClass": spec.name, "id": entity_id, "status": target,
            **({"version": int(version)} if version.isdigit() else {})}
    try:
        saved = service.save_batch(actor, [item], notation=False).entities[0]
    except (Conflict, InvalidInput) as error:
        return render_detail(actor, spec, entity_id, status=error.status, status_error=error.detail)
    if version.isdigit() and saved["version"] == int(version):
        flash(f"{spec.name} {entity_id} is already {words_of(target)}.", "info")
    else:
        flash(f"{spec.name} {entity_id} is now {words_of(saved['status'])}.", "success")
    return redirect(display.detail_url(spec.name, entity_id), 303)


@bp.post("/<eclass>/<path:entity_id>/clone")
def clone(eclass: str, entity_id: str) -> BaseResponse:
    """Copy the entity (decisions §6) and show the copy."""
    spec = class_named(eclass)
    created = service.clone(current_actor(), spec, entity_id, {})
    flash(f"{spec.name} {entity_id} cloned as {created['id']}.", "success")
    return redirect(display.detail_url(spec.name, created["id"]), 303)
