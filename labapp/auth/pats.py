"""Personal access tokens: created, listed and revoked by their owner; used with Basic auth."""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select, update

from labapp.access.actor import Actor
from labapp.auth import secrets as tokens
from labapp.db import db
from labapp.errors import InvalidInput, NotFound
from labapp.model import PersonalAccessToken
from labapp.model.types import utc_now

# Writing last-used on every request would turn every read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class CreatedToken:
    """A new token with its value, which is shown this once and never stored."""

    token: PersonalAccessToken
    value: str


def create(actor: Actor, name: str, expires_utc: datetime | None) -> CreatedToken:
    """Create a PAT for the actor; ``expires_utc`` must lie in the future."""
    if expires_utc is not None and expires_utc <= utc_now():
        raise InvalidInput("expiresUtc must lie in the future.",
                           errors=[{"field": "expiresUtc", "message": "must lie in the future"}])
    value = tokens.new_pat_value()
    token = PersonalAccessToken(id="pat_" + secrets.token_hex(8), user_id=actor.user_id,
                                name=name, token_hash=tokens.token_hash(value),
                                created_utc=utc_now(), expires_utc=expires_utc)
    db.session.add(token)
    db.session.flush()
    return CreatedToken(token, value)


def list_for(actor: Actor) -> list[PersonalAccessToken]:
    """The actor's tokens that are not revoked, newest first (expired ones included)."""
    return list(db.session.scalars(
        select(PersonalAccessToken)
        .where(PersonalAccessToken.user_id == actor.user_id,
               PersonalAccessToken.revoked_utc.is_(None))
        .order_by(PersonalAccessToken.created_utc.desc(), PersonalAccessToken.id)))


def revoke(actor: Actor, token_id: str) -> None:
    """Revoke one of the actor's tokens; another user's token is 404, as if absent."""
    token = db.session.get(PersonalAccessToken, token_id)
    if token is None or token.user_id != actor.user_id or token.revoked_utc is not None:
        raise NotFound(f"No personal access token {token_id!r}.")
    token.revoked_utc = utc_now()


def record_use(token_id: str) -> None:
    """Set the token's last-used time to now."""
    db.session.execute(update(PersonalAccessToken).where(PersonalAccessToken.id == token_id)
                       .values(last_used_utc=utc_now())
                       .execution_options(synchronize_session=False))


def revoke_all(user_id: str) -> None:
    """Revoke every token of ``user_id`` (after an administrator reset their password)."""
    db.session.execute(
        update(PersonalAccessToken)
        .where(PersonalAccessToken.user_id == user_id,
               PersonalAccessToken.revoked_utc.is_(None))
        .values(revoked_utc=utc_now()).execution_options(synchronize_session=False))


def count_in_force(user_id: str) -> int:
    """How many of the user's tokens are neither revoked nor expired."""
    now = utc_now()
    return db.session.execute(
        select(func.count()).select_from(PersonalAccessToken)
        .where(PersonalAccessToken.user_id == user_id,
               PersonalAccessToken.revoked_utc.is_(None),
               or_(PersonalAccessToken.expires_utc.is_(None),
                   PersonalAccessToken.expires_utc > now))).scalar_one()
