"""Things a user owns (a dashboard, a saved view, an alert rule): who reads, changes and
deletes one, and what everyone else is answered (decisions §2, §12, §16).

Each kind is one :class:`OwnedKind`, and every rule below holds for all of them:

- The owner and ADMIN read a thing; a shared kind is also read by whoever it is shared with
  (:func:`labapp.access.sharing.shared_with`).
- The owner and ADMIN change it; a reader it is only shared with may not (403).
- The owner deletes it; ADMIN too where the kind says so (dashboards and saved views are
  deleted by their owner alone, decisions §12).
- A thing the actor may not read is answered exactly as an id that never existed: 404 "No
  dashboard 'x'.", so its existence never shows. 403 is only for what the actor reads.
- The owner is the actor who made it and never changes: a body naming another owner is
  ignored (decisions §1: what was read may be sent back).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import ColumnElement, false, or_, select, true
from sqlalchemy.orm import InstrumentedAttribute

from labapp.access import sharing
from labapp.access.actor import Actor
from labapp.db import db
from labapp.errors import Forbidden, NotFound


class Thing(Protocol):
    """What every owned thing has besides its owner."""

    id: str
    created_utc: datetime
    modified_utc: datetime


ThingT = TypeVar("ThingT", bound=Thing)


@dataclass(frozen=True, eq=False)
class OwnedKind(Generic[ThingT]):
    """One kind of owned thing: ``noun`` names it in messages ("saved view"), ``model`` is
    its class with its ``key``, ``owner`` and ``name`` columns, ``owner_field`` the API's
    name of its owner ("userID"). ``shares`` is where a shared kind keeps its shares (None:
    never shared); ``admin_deletes`` whether ADMIN deletes what others own; ``own_first``
    whether lists put the actor's own things before the rest (else: by name alone)."""

    noun: str
    model: type[ThingT]
    key: InstrumentedAttribute[str]
    owner: InstrumentedAttribute[str]
    name: InstrumentedAttribute[str]
    owner_field: str
    shares: sharing.ShareTable | None = None
    admin_deletes: bool = False
    own_first: bool = True

    def owner_of(self, thing: ThingT) -> str:
        owner: str = getattr(thing, self.owner.key)
        return owner

    def visible(self, actor: Actor) -> ColumnElement[bool]:
        """SQL predicate: the things of this kind the actor may read."""
        if not actor.is_authenticated:
            return false()
        if actor.is_admin:
            return true()
        if self.shares is None:
            return self.owner == actor.user_id
        return or_(self.owner == actor.user_id, sharing.shared_with(actor, self.shares))

    def is_owner_or_admin(self, actor: Actor, thing: ThingT) -> bool:
        return actor.is_admin or (actor.is_authenticated
                                  and self.owner_of(thing) == actor.user_id)

    def may_change(self, actor: Actor, thing: ThingT) -> bool:
        """Whether the actor may change ``thing`` (its owner or ADMIN)."""
        return self.is_owner_or_admin(actor, thing)

    def may_delete(self, actor: Actor, thing: ThingT) -> bool:
        """Whether the actor may delete ``thing`` (its owner; ADMIN if the kind says so)."""
        if self.admin_deletes:
            return self.is_owner_or_admin(actor, thing)
        return actor.is_authenticated and self.owner_of(thing) == actor.user_id

    def missing(self, thing_id: str) -> NotFound:
        """The answer for an id that names nothing the actor may read."""
        return NotFound(f"No {self.noun} {thing_id!r}.")

    def listed(self, actor: Actor, *criteria: ColumnElement[bool]) -> list[ThingT]:
        """The things the actor may read (and that meet ``criteria``): by name, the actor's
        own first if the kind says so."""
        order: list[Any] = [self.name, self.key]
        if self.own_first:
            order.insert(0, self.owner != actor.user_id)
        return list(db.session.scalars(select(self.model).where(self.visible(actor), *criteria)
                                       .order_by(*order)))

    def get_visible(self, actor: Actor, thing_id: str) -> ThingT:
        """The thing if the actor may read it; else :meth:`missing` (404)."""
        thing = db.session.scalar(select(self.model).where(self.key == thing_id,
                                                           self.visible(actor)))
        if thing is None:
            raise self.missing(thing_id)
        return thing

    def get_changeable(self, actor: Actor, thing_id: str) -> ThingT:
        """The thing if the actor may change it; 404 if they may not read it, 403 if they
        only read it."""
        thing = self.get_visible(actor, thing_id)
        if not self.may_change(actor, thing):
            raise Forbidden(f"Only the owner or ADMIN may change {self.noun} {thing_id!r}.")
        return thing

    def delete(self, actor: Actor, thing_id: str) -> None:
        """Delete the thing; 404 if the actor may not read it, 403 if they may not delete
        it."""
        thing = self.get_visible(actor, thing_id)
        if not self.may_delete(actor, thing):
            who = "the owner or ADMIN" if self.admin_deletes else "the owner"
            raise Forbidden(f"Only {who} may delete {self.noun} {thing_id!r}.")
        db.session.delete(thing)
        db.session.flush()

    def new(self, actor: Actor, now: datetime, **values: Any) -> ThingT:
        """A new thing owned by the actor, made ``now`` (not yet added to the session)."""
        if self.shares is not None:
            values.setdefault(self.shares.rows.key, [])
        return self.model(**{self.key.key: uuid.uuid4().hex, self.owner.key: actor.author_id,
                             "created_utc": now, "modified_utc": now, **values})

    def share(self, actor: Actor, thing: ThingT, shares: sharing.Parties) -> set[str]:
        """Share ``thing`` with exactly ``shares`` once each party they add is one the actor
        may name (else 400 and nothing changed: :func:`sharing.check_shares`); returns the
        users newly shared with."""
        if self.shares is None:
            raise TypeError(f"a {self.noun} is never shared")
        rows = self.shares.rows.key
        sharing.check_shares(actor, shares, self.noun, kept=getattr(thing, rows))
        kept, newly_shared = sharing.replace_shares(getattr(thing, rows), shares,
                                                    self.shares.row)
        setattr(thing, rows, kept)
        return newly_shared

    def ownership(self, actor: Actor, thing: ThingT) -> dict[str, Any]:
        """The fields that close every answer of this kind: the owner, the shares (a shared
        kind), when it was made and last changed, and ``canWrite`` for the actor."""
        shares = ({"shares": sharing.shares_of(getattr(thing, self.shares.rows.key))}
                  if self.shares else {})
        return {self.owner_field: self.owner_of(thing), **shares,
                "createdUtc": thing.created_utc, "modifiedUtc": thing.modified_utc,
                "canWrite": self.may_change(actor, thing)}
