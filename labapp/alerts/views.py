"""Alert rule pages: the list with an on/off switch per rule, the form that makes and edits
a rule (its filter built with the entity list's filter builder, a Test button: "12 items
match now", the rule's failed deliveries and the recipients it skips), and the e-mail outbox
(ADMIN: every message; anyone else: the messages of their own rules). They call the same
service as ``/api/alert-rule``; the form's body is loaded by the API's schema, so both
refuse the same things with the same messages."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, redirect, request, url_for
from marshmallow import ValidationError
from werkzeug.datastructures import MultiDict
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.sharing import share_choices
from labapp.alerts import mail, service
from labapp.alerts.schemas import AlertRuleInputSchema
from labapp.alerts.service import RECIPIENT_FIELDS
from labapp.entities import filter_builder, filter_chips
from labapp.errors import Forbidden, InvalidInput, flatten_messages
from labapp.model.alerts import CADENCES
from labapp.model.registry import classes, find_class
from labapp.web.blocks import is_htmx, render_block, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only
from labapp.web.units import reads

bp = members_only(Blueprint("alert_views", __name__, url_prefix="/alerts"))

LIST = "alerts/list.html"
FORM = "alerts/form.html"
OUTBOX = "alerts/outbox.html"
ITEMS_PAGE = "alerts/items.html"
TEST_ITEMS = 10
ITEMS = 200
FAILED_SHOWN = 50  # failed deliveries listed on a rule's page (the outbox lists them all)
# The example the list offers: items that expire within the next 14 days, written by the
# filter builder (today included, already expired excluded).
EXAMPLE_NAME, EXAMPLE_CLASS = "Expiring within 14 days", "Sample"
EXAMPLE_CONDITION = filter_builder.Condition("expiryDate", filter_builder.NEXT, "14")


def _mail_on() -> bool:
    return mail.MailSettings.of(current_app.config["LABAPP"]).enabled


def _body_of(form: MultiDict[str, str]) -> dict[str, Any]:
    """The form as the API's body (before the schema loads it)."""
    return {"name": form.get("name", "").strip(), "eClass": form.get("eClass", ""),
            "filter": form.get("filter", "").strip() or None,
            "recipients": {field: form.getlist(field) for field in RECIPIENT_FIELDS},
            "channels": form.getlist("channels"), "cadence": form.get("cadence", ""),
            "active": form.get("active") == "true"}


def example_filter() -> str | None:
    """The example rule's filter, as the filter builder writes it (None if the data model
    has no such field any more)."""
    spec = find_class(EXAMPLE_CLASS)
    if spec is None:
        return None
    try:
        return filter_builder.condition_text(spec, EXAMPLE_CONDITION)
    except filter_builder.ConditionError:
        return None


def _empty(user_id: str | None, example: bool = False) -> dict[str, Any]:
    """A new rule's form: telling its owner; the example's name, class and filter if asked."""
    recipients: dict[str, list[str]] = {field: [] for field in RECIPIENT_FIELDS}
    recipients["userIDs"] = [user_id] if user_id else []
    form: dict[str, Any] = {"name": "", "eClass": "Sample", "filter": "", "channels": ["bell"],
                            "cadence": "immediate", "active": True, "recipients": recipients}
    filter_text = example_filter() if example else None
    if filter_text:
        form.update(name=EXAMPLE_NAME, eClass=EXAMPLE_CLASS, filter=filter_text)
    return form


def _builder(eclass: str, filter_text: str | None) -> dict[str, Any]:
    """The filter builder's context for the form's class and filter (no builder for a class
    that does not exist)."""
    spec = find_class(eclass)
    if spec is None:
        return {"spec": None}
    return {"spec": spec, "builder_fields": filter_builder.builder_fields(spec),
            "chips": filter_chips.read_chips(current_actor(), spec, filter_text or "")}


def _form(rule_id: str | None, form: dict[str, Any], errors: list[dict[str, str]] | None = None,
          test: dict[str, Any] | None = None, status: int = 200,
          **builder: Any) -> Response:
    """The rule's form; ``builder`` holds what the filter builder shows again (``chosen``,
    ``builder_error``, ``builder_focus``). A stored rule's page also lists its failed
    deliveries and the recipients its owner may no longer address."""
    actor = current_actor()
    rule_page: dict[str, Any] = {"failed": [], "skipped": []}
    choices = share_choices(actor)
    context = _builder(form["eClass"], form.get("filter"))
    if rule_id is not None:
        rule = service.get_visible(actor, rule_id)
        rule_page = {"failed": mail.outbox(FAILED_SHOWN, mail.told_by(rule_id=rule.id),
                                           unsent_only=True),
                     "skipped": service.skipped_recipients(rule)}
    by_field: dict[str, str] = {}
    for error in errors or ():
        by_field.setdefault(error["field"].split(".")[0], error["message"])
    return render_page(FORM, status=status, rule_id=rule_id, form=form, errors=by_field,
                       choices=choices, eclasses=[spec.name for spec in classes()],
                       cadences=CADENCES, mail_on=_mail_on(), test=test,
                       max_attempts=mail.MAX_ATTEMPTS, remove_by_post=True,
                       example=example_filter(), **rule_page, **context, **builder)


def _list(block: str | None = None, status: int = 200) -> Response:
    actor = current_actor()
    rules = [service.to_api(actor, rule) for rule in service.list_rules(actor)]
    return render_page(LIST, block=block, status=status, rules=rules, mail_on=_mail_on(),
                       is_admin=actor.is_admin, example=example_filter() is not None)


@bp.get("")
def index() -> Response:
    """The caller's rules (ADMIN: all), each with its on/off switch."""
    return _list()


@bp.route("/new", methods=["GET", "POST"])
def new() -> BaseResponse:
    """The form of a new rule (``?example=1``: the example rule, items expiring within 14
    days); posted, it stores the rule, tests its filter or adds a builder condition."""
    if request.method == "GET":
        return _form(None, _empty(current_actor().user_id, request.args.get("example") == "1"))
    return _submit(None)


@bp.get("/<rule_id>")
def show(rule_id: str) -> BaseResponse:
    """A rule's page: its form, its failed deliveries and the recipients it skips."""
    actor = current_actor()
    form = service.to_api(actor, service.get_visible(actor, rule_id))
    return _form(rule_id, form)


@bp.get("/<rule_id>/items")
def items(rule_id: str) -> Response:
    """What a rule matches now that the reader may read: where its alerts lead (its owner,
    ADMIN and the users it tells)."""
    actor = current_actor()
    rule = service.get_told(actor, rule_id)
    found = service.matches(actor, rule, ITEMS)
    data = service.to_api(actor, rule)
    return render_page(ITEMS_PAGE, rule=data, found=found, limit=ITEMS)


@bp.post("/<rule_id>")
def edit(rule_id: str) -> BaseResponse:
    """Store the posted rule over ``rule_id`` (or test its filter, or change it with the
    filter builder)."""
    return _submit(rule_id)


def _builder_condition(form: MultiDict[str, str]) -> filter_builder.Condition | None:
    """The filter builder's condition when ``Add condition`` sent one (a field chosen)."""
    if form.get("add") != "1" or not form.get("add_field", "").strip():
        return None
    return filter_builder.Condition(form.get("add_field", ""), form.get("add_op", ""),
                                    form.get("add_ref") or form.get("add_value", ""))


def _add_condition(rule_id: str | None, raw: dict[str, Any],
                   chosen: filter_builder.Condition) -> Response:
    """The form again with the builder's condition joined to its filter (not saved yet);
    400 with the builder's message when the condition cannot be written."""
    spec = find_class(raw["eClass"])
    try:
        if spec is None:
            raise filter_builder.ConditionError("Choose a class first.")
        if not request.form.get("add_ref"):  # a reference typed, not picked
            chosen = filter_builder.resolve_reference(current_actor(), spec, chosen)
        raw["filter"] = filter_builder.add_condition(spec, raw["filter"] or "", chosen)
    except filter_builder.ConditionError as error:
        return _form(rule_id, raw, status=400, chosen=chosen, builder_error=str(error))
    return _form(rule_id, raw, builder_focus=True)


def _submit(rule_id: str | None) -> BaseResponse:
    actor = current_actor()
    raw = _body_of(request.form)
    removed = request.form.get("remove_condition")
    if removed is not None:  # a chip's ×: the filter without that condition
        raw["filter"] = removed.strip() or None
        return _form(rule_id, raw, builder_focus=True)
    action = request.form.get("action")
    if action == "test":
        return _form(rule_id, raw, test=_test(raw))
    if action == "refresh":  # the class changed: the builder offers its fields
        return _form(rule_id, raw)
    chosen = _builder_condition(request.form)
    if chosen is not None:
        return _add_condition(rule_id, raw, chosen)
    try:
        body = AlertRuleInputSchema().load(raw)
        if rule_id is None:
            service.create(actor, body)
        else:
            service.update(actor, rule_id, body)
    except ValidationError as error:
        return _form(rule_id, raw, flatten_messages(error.messages), status=400)
    except InvalidInput as error:
        return _form(rule_id, raw, error.errors or [{"field": "_form", "message": error.detail}],
                     status=400)
    except Forbidden as error:  # a recipient out of the owner's reach
        return _form(rule_id, raw, [{"field": "_form", "message": error.detail},
                                    *(error.errors or ())], status=403)
    return redirect(url_for("alert_views.index"), 303)


def _test(raw: dict[str, Any]) -> dict[str, Any]:
    """What the form's class and filter match now for the caller, or why they cannot."""
    try:
        return service.try_filter(current_actor(), raw["eClass"], raw["filter"],
                                  TEST_ITEMS)
    except InvalidInput as error:
        return {"error": (error.errors or [{"message": error.detail}])[0]["message"]}


@bp.post("/test")
@reads
def test() -> Response:
    """Block ``test`` of the form: "12 items match now" and the first of them (the Test
    button, through htmx)."""
    result = _test(_body_of(request.form))
    return Response(render_block(FORM, "test", test=result), mimetype="text/html")


@bp.post("/<rule_id>/active")
def switch(rule_id: str) -> BaseResponse:
    """Switch a rule on or off (the list's switch)."""
    service.set_active(current_actor(), rule_id, request.form.get("active") == "true")
    if is_htmx():
        return _list("rules")
    return redirect(url_for("alert_views.index"), 303)


@bp.post("/<rule_id>/delete")
def remove(rule_id: str) -> BaseResponse:
    """Delete a rule (its owner or ADMIN)."""
    service.delete_rule(current_actor(), rule_id)
    return redirect(url_for("alert_views.index"), 303)


@bp.get("/outbox")
def outbox() -> Response:
    """The e-mail outbox: waiting, failed (with the last error and the next attempt) and
    recently sent messages; ADMIN sees every message, anyone else those telling of their
    own rules."""
    actor = current_actor()
    shown = None if actor.is_admin else mail.told_by(owner_id=actor.author_id)
    messages = mail.outbox(shown=shown)
    counts = mail.counts(shown)
    return render_page(OUTBOX, messages=messages, counts=counts, mail_on=_mail_on(),
                       max_attempts=mail.MAX_ATTEMPTS, is_admin=actor.is_admin)
