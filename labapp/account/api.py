"""``/api/auth/*``, ``/api/user/pat``, ``/api/user/ratelimit`` and
``/api/user/password/change``."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request

from labapp.access.actor import ADMIN
from labapp.account import service
from labapp.account.schemas import (
    AuthContextSchema,
    CreatedPatSchema,
    LoginSchema,
    LogoutSchema,
    PasswordChangeSchema,
    PatCreateSchema,
    PatSchema,
    RateLimitSchema,
    RefreshSchema,
    SignInPageSchema,
    SignInQuerySchema,
    TokenPairSchema,
)
from labapp.auth import pats, sessions, sign_in_log
from labapp.auth.sessions import InvalidToken, RefreshTokenReused, TokenPair
from labapp.db import db, transaction
from labapp.model import User
from labapp.users.schemas import UserSchema
from labapp.web.endpoints import endpoint
from labapp.web.loader import (
    REFRESH_COOKIE,
    clear_login_cookies,
    client_address,
    csrf_exempt,
    current_actor,
    require_scope,
    rotate_csrf_token,
    set_login_cookies,
    verify_csrf,
)
from labapp.web.ratelimits import current_budgets
from labapp.web.units import opens_own_units

bp = Blueprint("account_api", __name__, url_prefix="/api")


def _token_response(pair: TokenPair) -> Response:
    response = jsonify(TokenPairSchema().dump({
        "accessToken": pair.access_token, "refreshToken": pair.refresh_token,
        "expiresIn": pair.expires_in, "tokenType": pair.token_type}))
    response.headers["Cache-Control"] = "no-store"
    set_login_cookies(response, pair)
    return response


@bp.post("/auth/login")
@csrf_exempt
@endpoint("Log in with username and password (and, for an account with a second factor, "
          "its code); answers a token pair and sets the cookies.",
          body=LoginSchema, responses={200: TokenPairSchema}, public=True, throttled=True,
          problems=(503,))
@opens_own_units
def login(body: dict[str, Any]) -> Response:
    pair = service.login_with_password(body["username"], body["password"], body["keepAlive"],
                                       client_address(), body["code"])
    rotate_csrf_token()
    return _token_response(pair)


@bp.post("/auth/refresh")
@csrf_exempt
@endpoint("Exchange a refresh token (body or cookie) for a new pair; the old one dies.",
          body=RefreshSchema, optional_body=True, responses={200: TokenPairSchema},
          public=True)
@opens_own_units
def refresh(body: dict[str, Any]) -> Response:
    value = body["refreshToken"]
    if value is None:
        value = request.cookies.get(REFRESH_COOKIE)
        if value is None:
            raise InvalidToken("Send refreshToken in the body or the refresh cookie.")
        verify_csrf()
    try:
        with transaction():
            pair = sessions.refresh(value)
    except RefreshTokenReused as reused:
        with transaction():
            sessions.revoke_session(reused.session_id)
        raise
    return _token_response(pair)


@bp.post("/auth/logout")
@csrf_exempt
@endpoint("End a login: the refresh token given (body or cookie), else the caller's login.",
          body=LogoutSchema, optional_body=True, responses={204: "Logged out"}, public=True)
def logout(body: dict[str, Any]) -> Response:
    actor = current_actor()
    value = body["refreshToken"]
    if value is not None:
        session_id: str | None = sessions.session_of_refresh_token(value)
    elif actor.session_id is not None:
        if actor.method == "cookie":
            verify_csrf()
        session_id = actor.session_id
    else:
        cookie = request.cookies.get(REFRESH_COOKIE)
        if cookie:
            verify_csrf()
        session_id = sessions.find_session_of_refresh_token(cookie) if cookie else None
    if session_id is not None:
        sessions.revoke_session(session_id)
    response = Response(status=204)
    clear_login_cookies(response)
    rotate_csrf_token()
    return response


@bp.get("/auth/user")
@endpoint("Who is calling, and how they authenticated (also for anonymous callers).",
          responses={200: AuthContextSchema}, public=True)
def auth_user() -> Response:
    actor = current_actor()
    user = db.session.get(User, actor.user_id) if actor.is_authenticated else None
    return jsonify({
        "contextUser": {"name": actor.user_id, "isAuthenticated": actor.is_authenticated,
                        "windowsAuthentication": False},
        "currentUser": UserSchema().dump(user) if user is not None else None,
        "method": actor.method,
    })


@bp.get("/user/pat")
@endpoint("The caller's personal access tokens (never their values).",
          responses={200: PatSchema(many=True)})
def list_pats() -> Response:
    return jsonify(PatSchema(many=True).dump(pats.list_for(current_actor())))


@bp.post("/user/pat")
@endpoint("Create a personal access token; its value is in this answer only.",
          body=PatCreateSchema, responses={201: CreatedPatSchema})
def create_pat(body: dict[str, Any]) -> tuple[Response, int]:
    created = pats.create(current_actor(), body["name"], body["expiresUtc"])
    data = PatSchema().dump(created.token) | {"value": created.value}
    return jsonify(data), 201


@bp.delete("/user/pat/<pat_id>")
@endpoint("Revoke one of the caller's personal access tokens.", responses={204: "Revoked"})
def revoke_pat(pat_id: str) -> Response:
    pats.revoke(current_actor(), pat_id)
    return Response(status=204)


@bp.get("/user/ratelimit")
@endpoint("The caller's rate limits and what is left of them after this request, for the "
          "credential it was sent with (the RateLimit headers of every answer, in JSON).",
          responses={200: RateLimitSchema})
def rate_limit() -> Response:
    return jsonify(RateLimitSchema().dump({"policies": current_budgets()}))


@bp.post("/user/password/change")
@require_scope()
@endpoint("Change the caller's password; their other logins end.",
          body=PasswordChangeSchema, responses={204: "Changed"}, throttled=True)
@opens_own_units
def change_password(body: dict[str, Any]) -> Response:
    service.change_own_password(current_actor(), body["password"], body["repeatPassword"],
                                body["confirmPassword"], client_address())
    return Response(status=204)


@bp.get("/auth/signins")
@require_scope(ADMIN)
@endpoint("Sign-in attempts, successful or not, newest first (administrators only).",
          query=SignInQuerySchema, responses={200: SignInPageSchema})
def list_sign_ins(query: dict[str, Any]) -> Response:
    page = sign_in_log.list_events(user=query["user"], succeeded=query["succeeded"],
                                   skip=query["skip"], top=query["top"])
    return jsonify(SignInPageSchema().dump({"items": page.events, "count": page.total}))
