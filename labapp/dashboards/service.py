"""Dashboards: who sees and changes them, storing them with their shares, widget data.

Who reads, changes and deletes a dashboard is the rule of every owned thing
(:mod:`labapp.access.owned`): its owner, whoever it is shared with (a user, their home
department, a project they can read, one of their roles) and ADMIN read it; the owner or
ADMIN changes it; only the owner deletes it (decisions §12). One the actor cannot read is
404 as an unknown id; one they read but may not change is 403.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import select

from labapp.access import sharing
from labapp.access.actor import Actor
from labapp.access.owned import OwnedKind
from labapp.dashboards.schemas import REFUSED_NARROWER, too_narrow
from labapp.dashboards.widgets import WIDGETS, ClassGone, check_alert_rules
from labapp.db import db
from labapp.errors import InvalidInput, NotFound
from labapp.model import Dashboard, DashboardShare
from labapp.model.types import utc_now
from labapp.notifications.service import DASHBOARD_SHARED, raise_for

SHARE_FIELDS = sharing.SHARE_FIELDS  # the editor's form reads the share lists from here

DASHBOARDS = OwnedKind(
    "dashboard", Dashboard, Dashboard.id, Dashboard.user_id, Dashboard.name, "userID",
    shares=sharing.ShareTable(Dashboard.shares, DashboardShare.kind, DashboardShare.target,
                              DashboardShare.dashboard_id == Dashboard.id))


def to_api(actor: Actor, dashboard: Dashboard) -> dict[str, Any]:
    """A dashboard as the API shows it, with ``canWrite`` for the actor."""
    return {"id": dashboard.id, "name": dashboard.name, "description": dashboard.description,
            "widgets": dashboard.widgets, **DASHBOARDS.ownership(actor, dashboard)}


def list_dashboards(actor: Actor) -> list[Dashboard]:
    """Every dashboard the actor may see: their own first, then by name."""
    return DASHBOARDS.listed(actor)


def get_visible(actor: Actor, dashboard_id: str) -> Dashboard:
    """The dashboard if the actor may see it; else 404."""
    return DASHBOARDS.get_visible(actor, dashboard_id)


def get_changeable(actor: Actor, dashboard_id: str) -> Dashboard:
    """The dashboard if the actor may change it (owner or ADMIN); else 404 or 403."""
    return DASHBOARDS.get_changeable(actor, dashboard_id)


def _apply(actor: Actor, dashboard: Dashboard, data: dict[str, Any]) -> set[str]:
    """Write the fields and shares of ``data``; returns the users newly shared with.

    Any width the grid allows is stored for a chart, also one narrower than its kind's
    minimum (``schemas.MIN_COLUMNS``): earlier clients saved such dashboards, and they must
    save them back. The page applies the minimum when it draws (``layout``), the editor
    when it arranges. Only the kinds refused narrower since they exist stay 400
    (``schemas.REFUSED_NARROWER``)."""
    narrow = too_narrow(data["widgets"], REFUSED_NARROWER)
    if narrow:
        raise InvalidInput("A widget is too narrow for its kind.", errors=narrow)
    newly_shared = DASHBOARDS.share(actor, dashboard, data["shares"])
    dashboard.name = data["name"]
    dashboard.description = data.get("description")
    dashboard.widgets = data["widgets"]
    dashboard.modified_utc = utc_now()
    return newly_shared


def _notify_shared(actor: Actor, dashboard: Dashboard, users: set[str]) -> None:
    raise_for(users, DASHBOARD_SHARED,
              f"{actor.name or actor.user_id} shared the dashboard “{dashboard.name}” "
              "with you.", subject_class="Dashboard", subject_id=dashboard.id,
              actor_id=actor.user_id)


def create(actor: Actor, data: dict[str, Any]) -> Dashboard:
    """Store a new dashboard owned by the actor; notifies the users it is shared with."""
    dashboard = DASHBOARDS.new(actor, utc_now())
    check_alert_rules(actor, data["widgets"])
    newly_shared = _apply(actor, dashboard, data)
    db.session.add(dashboard)
    db.session.flush()
    _notify_shared(actor, dashboard, newly_shared)
    return dashboard


def update(actor: Actor, dashboard_id: str, data: dict[str, Any]) -> Dashboard:
    """Replace a dashboard (owner or ADMIN); notifies users it is newly shared with."""
    dashboard = DASHBOARDS.get_changeable(actor, dashboard_id)
    check_alert_rules(actor, data["widgets"])
    newly_shared = _apply(actor, dashboard, data)
    db.session.flush()
    _notify_shared(actor, dashboard, newly_shared)
    return dashboard


def delete(actor: Actor, dashboard_id: str) -> None:
    """Delete a dashboard; only its owner may."""
    DASHBOARDS.delete(actor, dashboard_id)


def widget_data(actor: Actor, dashboard_id: str, index: int, page: int = 0) -> dict[str, Any]:
    """The live data of one widget of a visible dashboard, as the actor may see it.

    Only the widgets are read (not the dashboard with its shares: one query, not two, for
    each of a page's widgets). A widget whose class a data-model sync has since removed
    answers ``{"problem": "..."}`` as its data, for the page to show instead of a chart."""
    widgets = db.session.scalar(select(Dashboard.widgets).where(Dashboard.id == dashboard_id,
                                                                DASHBOARDS.visible(actor)))
    if widgets is None:
        raise DASHBOARDS.missing(dashboard_id)
    if not 0 <= index < len(widgets):
        raise NotFound(f"Dashboard {dashboard_id!r} has no widget {index}.")
    widget = widgets[index]
    kind = WIDGETS[widget["plugin"]["plugin"]]
    try:
        data = kind.data(actor, widget["config"], page)
    except ClassGone as gone:
        data = {"problem": str(gone)}
    return {"index": index, "plugin": widget["plugin"], "header": widget.get("header"),
            "gridster": widget["gridster"], "data": data}


def _starter_widgets() -> list[dict[str, Any]]:
    def widget(plugin: str, x: int, y: int, cols: int, rows: int, config: dict[str, Any],
               header: str | None = None) -> dict[str, Any]:
        return {"plugin": {"app": "labapp", "plugin": plugin},
                "gridster": {"x": x, "y": y, "cols": cols, "rows": rows},
                "config": config, "header": header}
    return [
        widget("my-requests", 0, 0, 6, 4, {}, "My open requests"),
        widget("recent-activity", 6, 0, 6, 4, {"limit": 10}, "Recent activity"),
        widget("status-counts", 0, 4, 6, 4, {"eClass": "Sample"}, "Samples by status"),
        widget("created-per-week", 6, 4, 6, 4, {"eClass": "Sample", "weeks": 12},
               "Samples created per week"),
        widget("note", 0, 8, 12, 2, {"markdown": "Welcome! **Edit** this dashboard to add "
                                                 "charts, saved lists and notes."}),
    ]


def own_default(actor: Actor) -> Dashboard | None:
    """The actor's default dashboard (the oldest they own), None when they own none."""
    return db.session.scalar(select(Dashboard).where(Dashboard.user_id == actor.user_id)
                             .order_by(Dashboard.created_utc, Dashboard.id).limit(1))


def default_for(actor: Actor) -> Dashboard:
    """The actor's default dashboard (:func:`own_default`); a starter one is made and stored
    for a user who owns none."""
    own = own_default(actor)
    if own is not None:
        return own
    return create(actor, {"name": "My dashboard", "description": "Your starter dashboard.",
                          "widgets": _starter_widgets(), "shares": sharing.no_shares()})


def share_choices(actor: Actor) -> dict[str, list[tuple[str, str]]]:
    """What the editor's pickers offer (:func:`sharing.share_choices`)."""
    return sharing.share_choices(actor)
