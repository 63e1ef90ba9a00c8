"""Login, logout and profile pages."""
from __future__ import annotations

from flask import Blueprint

bp = Blueprint("auth_views", __name__)


@bp.route("/login", methods=["GET", "POST"])
def login() -> str:
    return "login"


@bp.post("/logout")
def logout() -> str:
    return "logout"


@bp.get("/profile")
def profile() -> str:
    return "profile"
