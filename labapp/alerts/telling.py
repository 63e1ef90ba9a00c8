"""What an alert tells, and to whom: the bell lines and e-mails of the items a tick tells,
composed per recipient from what each may read (the one visibility rule), with the items'
names, expiry dates and places. :mod:`labapp.alerts.evaluate` decides which items are told
and when; :class:`Teller` composes the messages, before the write unit when it can, and
writes them in it."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Protocol

from sqlalchemy import select

from labapp.access.actor import Actor
from labapp.alerts import wording
from labapp.alerts.mail import MailSettings, queue
from labapp.alerts.matching import CHUNK, Actors, Item, may_read, placed, told_ids
from labapp.db import db
from labapp.model import AlertRule, Location
from labapp.model.registry import find_class
from labapp.notifications.service import ALERT, raise_for

# The fields a message tells of an item, when its class has them: its expiry date, and where
# it is stored (the location and the slot there).
EXPIRY_FIELD, PLACE_FIELD, SLOT_FIELD = "expiryDate", "locationID", "position"


class Tally(Protocol):
    """What a tick counts of what it told."""

    notifications: int
    emails: int


def _in_lists(values: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(values), CHUNK):
        yield list(values[start:start + CHUNK])


@dataclass(frozen=True)
class _Described:
    """What a message says of an item besides its id: name, expiry date, where it is."""

    name: str | None
    expiry: date | None = None
    location_id: str | None = None
    position: str | None = None


def _described(ids_by_class: dict[str, set[str]]) -> dict[str, _Described]:
    """Name, expiry date and location of each item, by id: one query per class and chunk
    (a class without an expiry date or a location has none)."""
    found: dict[str, _Described] = {}
    for eclass, ids in sorted(ids_by_class.items()):
        spec = find_class(eclass)
        if spec is None:
            continue
        model = spec.model
        columns = {name: getattr(model, spec.fields[name].stored_attr)
                   for name in (EXPIRY_FIELD, PLACE_FIELD, SLOT_FIELD)
                   if name in spec.fields and spec.fields[name].attr is not None}
        if PLACE_FIELD in columns and spec.fields[PLACE_FIELD].ref != "Location":
            del columns[PLACE_FIELD]
        for chunk in _in_lists(sorted(ids)):
            for row in db.session.execute(select(model.id, model.name, *columns.values())
                                          .where(model.id.in_(chunk))):
                values = dict(zip(columns, row[2:], strict=True))
                found[row[0]] = _Described(row[1], values.get(EXPIRY_FIELD),
                                           values.get(PLACE_FIELD), values.get(SLOT_FIELD))
    return found


@dataclass(frozen=True)
class _Place:
    """A location as a message names it (its name path), and what visibility needs."""

    path: str
    eclass: str
    item: Item


def _places(location_ids: Iterable[str]) -> dict[str, _Place]:
    """The locations of ``location_ids`` by id, read once for every recipient."""
    found: dict[str, _Place] = {}
    for chunk in _in_lists(sorted(set(location_ids))):
        found.update((row.id, _Place(row.hierarchy or row.name or row.id, row.eclass,
                                     Item(row.id, row.department_id, row.project_id)))
                     for row in db.session.execute(
                         select(Location.id, Location.name, Location.hierarchy,
                                Location.eclass, Location.department_id, Location.project_id)
                         .where(Location.id.in_(chunk))))
    return found


@dataclass(frozen=True)
class Known:
    """What the messages say of the items (and of their places), read before telling."""

    items: dict[str, Item]
    described: dict[str, _Described]
    places: dict[str, _Place]

    @classmethod
    def read(cls, ids_by_class: dict[str, set[str]]) -> Known:
        described = _described(ids_by_class)
        return cls(placed(entity_id for ids in ids_by_class.values() for entity_id in ids),
                   described, _places(about.location_id for about in described.values()
                                      if about.location_id))


@dataclass(frozen=True)
class _Bell:
    """A bell line composed before the unit that raises it."""

    user_id: str
    rule_id: str
    message: str


@dataclass(frozen=True)
class _Mail:
    """An e-mail composed before the unit that queues it."""

    address: str
    user_id: str
    subject: str
    text: str
    html: str
    rule_ids: list[str]


class Teller:
    """Collects, per recipient, the items each rule tells them, then tells them: one bell
    line per rule, one e-mail per recipient and cadence."""

    def __init__(self, mail: MailSettings, report: Tally) -> None:
        self.mail, self.report = mail, report
        self.actors = Actors()
        self.parts: dict[tuple[str, str], list[tuple[AlertRule, str, list[Item]]]] = \
            defaultdict(list)
        self.bells: list[_Bell] = []
        self.mails: list[_Mail] = []
        self.composed = False

    def add(self, rule: AlertRule, eclass: str, items: Sequence[Item]) -> None:
        """Each user the rule tells (its recipients within its owner's reach) is to hear of
        the ``items`` they may read."""
        for user_id in sorted(told_ids(rule, self.actors)):
            known = self.actors.get(user_id)
            if known is None:
                continue
            seen = [item for item in items if may_read(known[0], eclass, item)]
            if seen:
                self.parts[(user_id, rule.cadence)].append((rule, eclass, seen))

    def _owner(self, rule: AlertRule) -> str:
        known = self.actors.get(rule.owner_id)
        return wording.owner_label(rule.owner_id, known[0].name if known else None)

    def _told(self, reader: Actor, rule: AlertRule, eclass: str, items: Sequence[Item],
              described: dict[str, _Described], places: dict[str, _Place]) -> wording.Told:
        """The rule's items as ``reader`` is told of them, by name: a place only when they
        may read the location."""
        told = []
        for item in items:
            about = described.get(item.id, _Described(None))
            place = places.get(about.location_id or "")
            where = None
            if place is not None and may_read(reader, place.eclass, place.item):
                where = f"{place.path} · {about.position}" if about.position else place.path
            told.append(wording.ToldItem(item.id, about.name, about.expiry, where))
        told.sort(key=lambda found: ((found.name or "").lower(), found.id))
        return wording.Told(rule, eclass, told, self._owner(rule))

    def compose(self, now: datetime, read: Known | None = None) -> None:
        """Compose the bell lines and e-mails of what was added, to be written by
        :meth:`tell`: outside the write unit when the unit then tells what was planned.
        ``read`` holds what was read of the items beforehand, else it is read now."""
        if read is None:
            by_class: dict[str, set[str]] = defaultdict(set)
            for parts in self.parts.values():
                for _, eclass, items in parts:
                    by_class[eclass].update(item.id for item in items)
            read = Known.read(by_class)
        described, places = read.described, read.places
        today = now.astimezone(UTC).date()
        self.bells, self.mails = [], []
        for (user_id, cadence), parts in sorted(self.parts.items()):
            known = self.actors.get(user_id)
            if known is None:
                continue
            reader, address = known
            told = [self._told(reader, rule, eclass, items, described, places)
                    for rule, eclass, items in parts]
            self.bells += [_Bell(user_id, part.rule.id, wording.bell_message(part))
                           for part in told if "bell" in part.rule.channels]
            mailed = [part for part in told if "email" in part.rule.channels]
            if mailed and self.mail.enabled and address:
                base = self.mail.public_url
                self.mails.append(_Mail(address, user_id, wording.subject(cadence, mailed),
                                        wording.text_body(base, cadence, mailed, today),
                                        wording.html_body(base, cadence, mailed, today),
                                        [part.rule.id for part in mailed]))
        self.composed = True

    def tell(self, now: datetime, read: Known | None = None) -> None:
        """Raise the bell lines and queue the e-mails of what was added, in the current
        unit: those :meth:`compose` prepared, else composed now."""
        if not self.composed:
            self.compose(now, read)
        for bell in self.bells:
            self.report.notifications += raise_for(
                [bell.user_id], ALERT, bell.message, subject_class="AlertRule",
                subject_id=bell.rule_id, actor_id=None)
        for mail in self.mails:
            queue(mail.address, mail.user_id, mail.subject, mail.text, mail.html, now,
                  rule_ids=mail.rule_ids)
            self.report.emails += 1
        self.parts.clear()
        self.bells, self.mails, self.composed = [], [], False
