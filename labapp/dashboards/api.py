"""``/api/dashboard``: dashboards the caller may see, and the live data of their widgets."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from labapp.dashboards import service
from labapp.dashboards.schemas import (
    DashboardInputSchema,
    DashboardSchema,
    WidgetDataSchema,
    WidgetQuerySchema,
)
from labapp.web.endpoints import endpoint
from labapp.web.loader import current_actor

bp = Blueprint("dashboard_api", __name__, url_prefix="/api/dashboard")


@bp.get("")
@endpoint("Dashboards the caller owns or that are shared with them, their department, a "
          "project they can read or one of their roles.",
          responses={200: DashboardSchema(many=True)})
def list_dashboards() -> Response:
    actor = current_actor()
    data = [service.to_api(actor, board) for board in service.list_dashboards(actor)]
    return jsonify(data)


@bp.post("")
@endpoint("Create a dashboard owned by the caller (widgets and shares included).",
          body=DashboardInputSchema, responses={201: DashboardSchema})
def create_dashboard(body: dict[str, Any]) -> tuple[Response, int]:
    actor = current_actor()
    data = service.to_api(actor, service.create(actor, body))
    return jsonify(data), 201


@bp.put("/<dashboard_id>")
@endpoint("Replace a dashboard (its owner or ADMIN).",
          body=DashboardInputSchema, responses={200: DashboardSchema})
def update_dashboard(dashboard_id: str, body: dict[str, Any]) -> Response:
    actor = current_actor()
    data = service.to_api(actor, service.update(actor, dashboard_id, body))
    return jsonify(data)


@bp.delete("/<dashboard_id>")
@endpoint("Delete a dashboard (its owner only).", responses={204: "Deleted"})
def delete_dashboard(dashboard_id: str) -> Response:
    service.delete(current_actor(), dashboard_id)
    return Response(status=204)


@bp.get("/<dashboard_id>/widget/<int:index>")
@endpoint("The live data of one widget of a visible dashboard, as the caller may see it.",
          query=WidgetQuerySchema, responses={200: WidgetDataSchema})
def widget_data(dashboard_id: str, index: int, query: dict[str, Any]) -> Response:
    data = service.widget_data(current_actor(), dashboard_id, index, query["page"])
    return jsonify(data)
