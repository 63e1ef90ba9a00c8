"""Webhook pages: the list, the form that makes and edits one (URL, the classes and kinds of
change, a filter), and a webhook's page with its "Send a ping" button, its secret's
rotation and its delivery log with a Redeliver button per line. They call the same service
as ``/api/webhook``; the form's body is loaded by the API's schema, so both refuse the same
things with the same messages. A secret is shown on the page that follows its making (or
rotation), never again: that page is reached by a redirect, the session naming the webhook
whose secret it shows (the secret itself stays in the database), so reloading it neither
sends the form again — a second webhook delivering every change twice — nor shows the
secret twice."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, redirect, request, session, url_for
from marshmallow import ValidationError
from werkzeug.datastructures import MultiDict
from werkzeug.wrappers import Response as BaseResponse

from labapp.errors import InvalidInput, flatten_messages
from labapp.model.registry import classes
from labapp.web.blocks import render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only
from labapp.webhooks import service
from labapp.webhooks.schemas import WebhookInputSchema
from labapp.webhooks.settings import WebhookSettings

bp = members_only(Blueprint("webhook_views", __name__, url_prefix="/webhooks"))

LIST = "webhooks/list.html"
FORM = "webhooks/form.html"
LOG_SHOWN = 50
# Session key: the id of the webhook whose secret the next look at its page shows.
SECRET_TO_SHOW = "webhook_secret_to_show"


def _body_of(form: MultiDict[str, str]) -> dict[str, Any]:
    """The form as the API's body (before the schema loads it)."""
    return {"name": form.get("name", "").strip(), "url": form.get("url", "").strip(),
            "eClasses": form.getlist("eClasses"), "kinds": form.getlist("kinds"),
            "filter": form.get("filter", "").strip() or None,
            "active": form.get("active") == "true"}


def _form(hook_id: str | None, form: dict[str, Any], errors: list[dict[str, str]] | None = None,
          status: int = 200, secret: str | None = None) -> Response:
    actor = current_actor()
    page: dict[str, Any] = {"hook": None, "deliveries": [], "previous_secret_until": None}
    if hook_id is not None:
        hook = service.get_visible(actor, hook_id)
        page = {"hook": service.to_api(actor, hook),
                "deliveries": [service.delivery_to_api(row)
                               for row in service.deliveries(actor, hook_id, LOG_SHOWN)],
                "previous_secret_until": service.previous_secret_until(hook)}
    by_field: dict[str, str] = {}
    for error in errors or ():
        by_field.setdefault(error["field"].split(".")[0], error["message"])
    return render_page(FORM, status=status, hook_id=hook_id, form=form, errors=by_field,
                       eclasses=[spec.name for spec in classes()], kinds=service.KINDS,
                       secret=secret, **page)


@bp.get("")
def index() -> Response:
    """The caller's webhooks (ADMIN: all), with their state."""
    actor = current_actor()
    hooks = [service.to_api(actor, hook) for hook in service.list_hooks(actor)]
    return render_page(LIST, hooks=hooks, is_admin=actor.is_admin)


@bp.route("/new", methods=["GET", "POST"])
def new() -> BaseResponse:
    """The form of a new webhook; posted, it stores it and redirects to its page, which
    shows the secret."""
    if request.method == "GET":
        return _form(None, {"name": "", "url": "", "eClasses": [], "kinds": [],
                            "filter": "", "active": True})
    return _submit(None)


@bp.get("/<hook_id>")
def show(hook_id: str) -> BaseResponse:
    """A webhook's page: its form, its buttons and its delivery log; its secret too, the
    first time after its making or rotation."""
    actor = current_actor()
    hook = service.to_api(actor, service.get_visible(actor, hook_id))
    secret = None
    if session.get(SECRET_TO_SHOW) == hook_id:
        session.pop(SECRET_TO_SHOW)
        secret = service.revealed_secret(actor, hook_id, WebhookSettings.current())
    return _form(hook_id, hook, secret=secret)


def _show_with_secret(hook_id: str) -> BaseResponse:
    """Redirect to the webhook's page, which shows its secret that once."""
    session[SECRET_TO_SHOW] = hook_id
    return redirect(url_for("webhook_views.show", hook_id=hook_id), 303)


@bp.post("/<hook_id>")
def edit(hook_id: str) -> BaseResponse:
    """Store the posted webhook over ``hook_id``."""
    return _submit(hook_id)


def _submit(hook_id: str | None) -> BaseResponse:
    actor = current_actor()
    raw = _body_of(request.form)
    settings = WebhookSettings.current()
    try:
        body = WebhookInputSchema().load(raw)
        if hook_id is None:
            hook, _secret = service.create(actor, body, settings)
            return _show_with_secret(hook.id)
        service.update(actor, hook_id, body, settings)
    except ValidationError as error:
        return _form(hook_id, raw, flatten_messages(error.messages), status=400)
    except InvalidInput as error:
        return _form(hook_id, raw, error.errors or [{"field": "_form", "message": error.detail}],
                     status=400)
    return redirect(url_for("webhook_views.show", hook_id=hook_id), 303)


@bp.post("/<hook_id>/ping")
def ping(hook_id: str) -> BaseResponse:
    """Queue a ping (the worker sends it; the log shows how it went)."""
    service.ping(current_actor(), hook_id)
    return redirect(url_for("webhook_views.show", hook_id=hook_id, pinged=1) + "#deliveries",
                    303)


@bp.post("/<hook_id>/secret")
def rotate(hook_id: str) -> BaseResponse:
    """Give the webhook a new secret, shown on the page this once."""
    service.rotate_secret(current_actor(), hook_id, WebhookSettings.current())
    return _show_with_secret(hook_id)


@bp.post("/<hook_id>/deliveries/<int:delivery_id>/redeliver")
def redeliver(hook_id: str, delivery_id: int) -> BaseResponse:
    """Queue a past message again."""
    service.redeliver(current_actor(), hook_id, delivery_id)
    return redirect(url_for("webhook_views.show", hook_id=hook_id) + "#deliveries", 303)


@bp.post("/<hook_id>/delete")
def remove(hook_id: str) -> BaseResponse:
    """Delete the webhook (its owner or ADMIN)."""
    service.delete_hook(current_actor(), hook_id)
    return redirect(url_for("webhook_views.index"), 303)
