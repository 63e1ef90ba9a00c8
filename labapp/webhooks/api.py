"""``/api/webhook``: webhooks (issue 36 §3, decisions §18), for their owner and ADMIN."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from labapp.web.endpoints import endpoint
from labapp.web.loader import current_actor
from labapp.webhooks import service
from labapp.webhooks.schemas import (
    DeliveriesQuerySchema,
    DeliverySchema,
    WebhookInputSchema,
    WebhookSchema,
    WebhookWithSecretSchema,
)
from labapp.webhooks.settings import WebhookSettings

bp = Blueprint("webhook_api", __name__, url_prefix="/api/webhook")


@bp.get("")
@endpoint("The webhooks the caller owns (ADMIN: every webhook), by name.",
          responses={200: WebhookSchema(many=True)})
def list_hooks() -> Response:
    actor = current_actor()
    return jsonify([service.to_api(actor, hook) for hook in service.list_hooks(actor)])


@bp.post("")
@endpoint("Create a webhook owned by the caller: it is told of the changes made from now "
          "on that its owner may read. The answer holds its secret, shown only this once.",
          body=WebhookInputSchema, responses={201: WebhookWithSecretSchema})
def create_hook(body: dict[str, Any]) -> tuple[Response, int]:
    actor = current_actor()
    hook, secret = service.create(actor, body, WebhookSettings.current())
    return jsonify(service.to_api(actor, hook, secret)), 201


@bp.get("/<hook_id>")
@endpoint("One webhook (its owner or ADMIN; 404 for anyone else).",
          responses={200: WebhookSchema})
def get_hook(hook_id: str) -> Response:
    actor = current_actor()
    return jsonify(service.to_api(actor, service.get_visible(actor, hook_id)))


@bp.put("/<hook_id>")
@endpoint("Replace a webhook's name, URL, events, filter and switch (its owner or ADMIN). "
          "Switched on again, it goes on from the change it was delivering.",
          body=WebhookInputSchema, responses={200: WebhookSchema})
def update_hook(hook_id: str, body: dict[str, Any]) -> Response:
    actor = current_actor()
    hook = service.update(actor, hook_id, body, WebhookSettings.current())
    return jsonify(service.to_api(actor, hook))


@bp.delete("/<hook_id>")
@endpoint("Delete a webhook and its delivery log (its owner or ADMIN).",
          responses={204: "Deleted"})
def delete_hook(hook_id: str) -> Response:
    service.delete_hook(current_actor(), hook_id)
    return Response(status=204)


@bp.post("/<hook_id>/secret")
@endpoint("Give a webhook a new secret, shown only in this answer; the next attempt is "
          "signed with it.", responses={200: WebhookWithSecretSchema})
def rotate_secret(hook_id: str) -> Response:
    actor = current_actor()
    hook, secret = service.rotate_secret(actor, hook_id, WebhookSettings.current())
    return jsonify(service.to_api(actor, hook, secret))


@bp.post("/<hook_id>/ping")
@endpoint("Queue a `webhook.ping` message, sent once by the worker (whether the webhook is "
          "switched on or not); its outcome joins the delivery log.",
          responses={202: DeliverySchema})
def ping(hook_id: str) -> tuple[Response, int]:
    delivery = service.ping(current_actor(), hook_id)
    return jsonify(service.delivery_to_api(delivery)), 202


@bp.get("/<hook_id>/deliveries")
@endpoint("The webhook's delivery log, newest first: every attempt with its status, the "
          "receiver's answer (code, time, the start of its body) or the error.",
          query=DeliveriesQuerySchema, responses={200: DeliverySchema(many=True)})
def deliveries(hook_id: str, query: dict[str, Any]) -> Response:
    rows = service.deliveries(current_actor(), hook_id, query["top"], query["before"])
    return jsonify([service.delivery_to_api(row) for row in rows])


@bp.post("/<hook_id>/deliveries/<int:delivery_id>/redeliver")
@endpoint("Queue a past message again, as it was sent and under the same webhook-id; the "
          "worker sends it once.", responses={202: DeliverySchema})
def redeliver(hook_id: str, delivery_id: int) -> tuple[Response, int]:
    delivery = service.redeliver(current_actor(), hook_id, delivery_id)
    return jsonify(service.delivery_to_api(delivery)), 202
