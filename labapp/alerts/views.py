"""Alert rule pages: the list with an on/off switch per rule, the form that makes and edits
a rule (with a Test button: "12 items match now"), and the administrators' view of the
e-mail outbox. They call the same service as ``/api/alert-rule``; the form's body is
loaded by the API's schema, so both refuse the same things with the same messages."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, redirect, request, url_for
from marshmallow import ValidationError
from werkzeug.datastructures import MultiDict
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import ADMIN
from labapp.access.sharing import share_choices
from labapp.alerts import mail, service
from labapp.alerts.schemas import AlertRuleInputSchema
from labapp.alerts.service import RECIPIENT_FIELDS
from labapp.db import transaction
from labapp.errors import InvalidInput, flatten_messages
from labapp.model.alerts import CADENCES
from labapp.model.registry import classes
from labapp.web.blocks import is_htmx, render_block, render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only, require
from labapp.web.units import reads

bp = members_only(Blueprint("alert_views", __name__, url_prefix="/alerts"))

LIST = "alerts/list.html"
FORM = "alerts/form.html"
OUTBOX = "alerts/outbox.html"
ITEMS_PAGE = "alerts/items.html"
TEST_ITEMS = 10
ITEMS = 200


def _mail_on() -> bool:
    return mail.MailSettings.of(current_app.config["LABAPP"]).enabled


def _body_of(form: MultiDict[str, str]) -> dict[str, Any]:
    """The form as the API's body (before the schema loads it)."""
    return {"name": form.get("name", "").strip(), "eClass": form.get("eClass", ""),
            "filter": form.get("filter", "").strip() or None,
            "recipients": {field: form.getlist(field) for field in RECIPIENT_FIELDS},
            "channels": form.getlist("channels"), "cadence": form.get("cadence", ""),
            "active": form.get("active") == "true"}


def _empty() -> dict[str, Any]:
    return {"name": "", "eClass": "Sample", "filter": "", "channels": ["bell"],
            "cadence": "immediate", "active": True,
            "recipients": {field: [] for field in RECIPIENT_FIELDS}}


def _form(rule_id: str | None, form: dict[str, Any], errors: list[dict[str, str]] | None = None,
          test: dict[str, Any] | None = None, status: int = 200) -> Response:
    actor = current_actor()
    with transaction():
        choices = share_choices(actor)
    if actor.user_id and actor.user_id not in form["recipients"]["userIDs"] and not rule_id \
            and not errors and test is None:
        form["recipients"]["userIDs"] = [actor.user_id]
    by_field: dict[str, str] = {}
    for error in errors or ():
        by_field.setdefault(error["field"].split(".")[0], error["message"])
    return render_page(FORM, status=status, rule_id=rule_id, form=form, errors=by_field,
                       choices=choices, eclasses=[spec.name for spec in classes()],
                       cadences=CADENCES, mail_on=_mail_on(), test=test)


def _list(block: str | None = None, status: int = 200) -> Response:
    actor = current_actor()
    with transaction():
        rules = [service.to_api(actor, rule) for rule in service.list_rules(actor)]
    return render_page(LIST, block=block, status=status, rules=rules, mail_on=_mail_on(),
                       is_admin=actor.is_admin)


@bp.get("")
def index() -> Response:
    """The caller's rules (ADMIN: all), each with its on/off switch."""
    return _list()


@bp.route("/new", methods=["GET", "POST"])
def new() -> BaseResponse:
    """The form of a new rule; posted, it stores the rule (or tests its filter)."""
    if request.method == "GET":
        return _form(None, _empty())
    return _submit(None)


@bp.get("/<rule_id>")
def show(rule_id: str) -> BaseResponse:
    """A rule's page: its form (the subject of its alerts in the bell)."""
    actor = current_actor()
    with transaction():
        form = service.to_api(actor, service.get_visible(actor, rule_id))
    return _form(rule_id, form)


@bp.get("/<rule_id>/items")
def items(rule_id: str) -> Response:
    """What a rule matches now that the reader may read: where its alerts lead (its owner,
    ADMIN and its recipients)."""
    actor = current_actor()
    with transaction():
        rule = service.get_told(actor, rule_id)
        found = service.matches(actor, rule, ITEMS)
        data = service.to_api(actor, rule)
    return render_page(ITEMS_PAGE, rule=data, found=found, limit=ITEMS)


@bp.post("/<rule_id>")
def edit(rule_id: str) -> BaseResponse:
    """Store the posted rule over ``rule_id`` (or test its filter)."""
    return _submit(rule_id)


def _submit(rule_id: str | None) -> BaseResponse:
    actor = current_actor()
    raw = _body_of(request.form)
    if request.form.get("action") == "test":
        return _form(rule_id, raw, test=_test(raw))
    try:
        body = AlertRuleInputSchema().load(raw)
        with transaction():
            if rule_id is None:
                service.create(actor, body)
            else:
                service.update(actor, rule_id, body)
    except ValidationError as error:
        return _form(rule_id, raw, flatten_messages(error.messages), status=400)
    except InvalidInput as error:
        return _form(rule_id, raw, error.errors or [{"field": "_form", "message": error.detail}],
                     status=400)
    return redirect(url_for("alert_views.index"), 303)


def _test(raw: dict[str, Any]) -> dict[str, Any]:
    """What the form's class and filter match now for the caller, or why they cannot."""
    try:
        with transaction():
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
    with transaction():
        service.set_active(current_actor(), rule_id, request.form.get("active") == "true")
    if is_htmx():
        return _list("rules")
    return redirect(url_for("alert_views.index"), 303)


@bp.post("/<rule_id>/delete")
def remove(rule_id: str) -> BaseResponse:
    """Delete a rule (its owner or ADMIN)."""
    with transaction():
        service.delete_rule(current_actor(), rule_id)
    return redirect(url_for("alert_views.index"), 303)


@bp.get("/outbox")
def outbox() -> Response:
    """The e-mail outbox (ADMIN): waiting, failed (with the last error and the next attempt)
    and recently sent messages."""
    require(current_actor(), (ADMIN,))
    with transaction():
        messages = mail.outbox()
        counts = mail.counts()
    return render_page(OUTBOX, messages=messages, counts=counts, mail_on=_mail_on(),
                       max_attempts=mail.MAX_ATTEMPTS)
