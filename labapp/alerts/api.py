"""``/api/alert-rule``: alert rules (decisions §16), for their owner and ADMIN."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from labapp.alerts import service
from labapp.alerts.schemas import (
    AlertRuleInputSchema,
    AlertRuleSchema,
    MatchesQuerySchema,
    MatchesSchema,
)
from labapp.web.endpoints import endpoint
from labapp.web.loader import current_actor

bp = Blueprint("alert_rule_api", __name__, url_prefix="/api/alert-rule")


@bp.get("")
@endpoint("The alert rules the caller owns (ADMIN: every rule), by name.",
          responses={200: AlertRuleSchema(many=True)})
def list_rules() -> Response:
    actor = current_actor()
    data = [service.to_api(actor, rule) for rule in service.list_rules(actor)]
    return jsonify(data)


@bp.post("")
@endpoint("Create an alert rule owned by the caller. The class must exist, the filter "
          "compile against its fields, every recipient exist.",
          body=AlertRuleInputSchema, responses={201: AlertRuleSchema})
def create_rule(body: dict[str, Any]) -> tuple[Response, int]:
    actor = current_actor()
    data = service.to_api(actor, service.create(actor, body))
    return jsonify(data), 201


@bp.get("/<rule_id>")
@endpoint("One alert rule (its owner or ADMIN; 404 for anyone else).",
          responses={200: AlertRuleSchema})
def get_rule(rule_id: str) -> Response:
    actor = current_actor()
    data = service.to_api(actor, service.get_visible(actor, rule_id))
    return jsonify(data)


@bp.put("/<rule_id>")
@endpoint("Replace an alert rule (its owner or ADMIN).",
          body=AlertRuleInputSchema, responses={200: AlertRuleSchema})
def update_rule(rule_id: str, body: dict[str, Any]) -> Response:
    actor = current_actor()
    data = service.to_api(actor, service.update(actor, rule_id, body))
    return jsonify(data)


@bp.delete("/<rule_id>")
@endpoint("Delete an alert rule (its owner or ADMIN).", responses={204: "Deleted"})
def delete_rule(rule_id: str) -> Response:
    service.delete_rule(current_actor(), rule_id)
    return Response(status=204)


@bp.get("/<rule_id>/matches")
@endpoint("What the rule matches now that the caller may read: how many, and the first "
          "`top` by name (\"12 items match now\").",
          query=MatchesQuerySchema, responses={200: MatchesSchema})
def rule_matches(rule_id: str, query: dict[str, Any]) -> Response:
    actor = current_actor()
    data = service.matches(actor, service.get_visible(actor, rule_id), query["top"])
    return jsonify(data)
