"""One tick of the alert rules: :func:`evaluate`, run every minute by the worker and by
``flask --app labapp alerts run``.

For each active rule the items matching now are compared with its ``alert_state`` rows:
rows of items that stopped matching are deleted (so they may alert again), rows of items
that started are inserted with ``ON CONFLICT DO NOTHING``, and only the ids the insert
really added are told, so two workers evaluating at once, or a restart, never tell twice.
A rule tells the recipients its owner may address now (:mod:`labapp.alerts.reach`), each
only of the items they may read (the one visibility rule): the bell gets one line per rule
naming its owner ("Expire within 14 days: 7 samples · rule of Alice Smith (alice)"), e-mail
a message listing the items with their expiry, their place and links. Rules with a daily or
weekly cadence collect their new items and tell them in a digest when it is due; the worker
that moves the rule's due time on is the one that sends it.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from flask import current_app
from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from labapp.access.actor import Actor
from labapp.alerts import wording
from labapp.alerts.mail import MailSettings, deliver, queue
from labapp.alerts.matching import Actors, Item, may_read, placed, scan, told_ids
from labapp.alerts.service import next_digest
from labapp.db import db, rows_matched, table_of, transaction
from labapp.model import AlertRule, AlertState, Location
from labapp.model.registry import find_class
from labapp.model.types import utc_now
from labapp.notifications.service import ALERT, raise_for

CHUNK = 500  # rows per INSERT or DELETE statement
# The fields a message tells of an item, when its class has them: its expiry date, and where
# it is stored (the location and the slot there).
EXPIRY_FIELD, PLACE_FIELD, SLOT_FIELD = "expiryDate", "locationID", "position"
logger = logging.getLogger(__name__)


@dataclass
class Report:
    """What one tick did, for the CLI and the logs."""

    rules: int = 0
    matching: int = 0
    started: int = 0
    stopped: int = 0
    notifications: int = 0
    emails: int = 0
    digests: int = 0
    broken: dict[str, str] = field(default_factory=dict)
    sent: int = 0
    failed: int = 0

    @property
    def worked(self) -> bool:
        return bool(self.started or self.stopped or self.notifications or self.emails
                    or self.digests or self.sent or self.failed)

    def lines(self) -> list[str]:
        """The report as the CLI prints it."""
        found = [f"{self.rules} active rules, {self.matching} matching items: "
                 f"{self.started} started matching, {self.stopped} stopped",
                 f"{self.notifications} notifications, {self.emails} e-mails queued, "
                 f"{self.digests} digests",
                 f"e-mail: {self.sent} sent, {self.failed} failed"]
        found += [f"rule {rule_id} skipped: {why}" for rule_id, why in self.broken.items()]
        return found


def _chunks(values: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(values), CHUNK):
        yield list(values[start:start + CHUNK])


def _claim(rule_id: str, entity_ids: Sequence[str], now: datetime,
           alerted: datetime | None) -> set[str]:
    """Insert the states of items that started matching; the ids this transaction really
    added (another worker's or an earlier tick's rows are left, and not told again)."""
    dialect = db.session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    claimed: set[str] = set()
    for chunk in _chunks(sorted(entity_ids)):
        statement = (insert(table_of(AlertState))
                     .values([{"rule_id": rule_id, "entity_id": entity_id,
                               "matching_since": now, "alerted_utc": alerted}
                              for entity_id in chunk])
                     .on_conflict_do_nothing(index_elements=["rule_id", "entity_id"])
                     .returning(table_of(AlertState).c.entity_id))
        claimed.update(db.session.scalars(statement))
    return claimed


def _forget(rule_id: str, entity_ids: Sequence[str]) -> None:
    """Delete the states of items that stopped matching, so they may alert again."""
    states = table_of(AlertState)
    for chunk in _chunks(sorted(entity_ids)):
        db.session.execute(delete(states).where(states.c.rule_id == rule_id,
                                                states.c.entity_id.in_(chunk)))


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
        for chunk in _chunks(sorted(ids)):
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
    for chunk in _chunks(sorted(set(location_ids))):
        found.update((row.id, _Place(row.hierarchy or row.name or row.id, row.eclass,
                                     Item(row.id, row.department_id, row.project_id)))
                     for row in db.session.execute(
                         select(Location.id, Location.name, Location.hierarchy,
                                Location.eclass, Location.department_id, Location.project_id)
                         .where(Location.id.in_(chunk))))
    return found


class _Teller:
    """Collects, per recipient, the items each rule tells them, then tells them: one bell
    line per rule, one e-mail per recipient and cadence."""

    def __init__(self, mail: MailSettings, report: Report) -> None:
        self.mail, self.report = mail, report
        self.actors = Actors()
        self.parts: dict[tuple[str, str], list[tuple[AlertRule, str, list[Item]]]] = \
            defaultdict(list)

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

    def tell(self, now: datetime) -> None:
        by_class: dict[str, set[str]] = defaultdict(set)
        for parts in self.parts.values():
            for _, eclass, items in parts:
                by_class[eclass].update(item.id for item in items)
        described = _described(by_class)
        places = _places(about.location_id for about in described.values()
                         if about.location_id)
        today = now.astimezone(UTC).date()
        for (user_id, cadence), parts in sorted(self.parts.items()):
            known = self.actors.get(user_id)
            if known is None:
                continue
            reader, address = known
            told = [self._told(reader, rule, eclass, items, described, places)
                    for rule, eclass, items in parts]
            for part in told:
                if "bell" in part.rule.channels:
                    self.report.notifications += raise_for(
                        [user_id], ALERT, wording.bell_message(part),
                        subject_class="AlertRule", subject_id=part.rule.id, actor_id=None)
            mailed = [part for part in told if "email" in part.rule.channels]
            if mailed and self.mail.enabled and address:
                base = self.mail.public_url
                queue(address, user_id, wording.subject(cadence, mailed),
                      wording.text_body(base, cadence, mailed, today),
                      wording.html_body(base, cadence, mailed, today), now,
                      rule_ids=[part.rule.id for part in mailed])
                self.report.emails += 1
        self.parts.clear()


def _due_digest(rule: AlertRule, now: datetime) -> bool:
    """Whether this worker sends the rule's digest now: it is due, and this worker's
    conditional UPDATE moved the due time on (another worker's would match no row)."""
    if rule.cadence == "immediate" or rule.digest_due_utc is None \
            or rule.digest_due_utc > now:
        return False
    return rows_matched(update(AlertRule).where(
        AlertRule.id == rule.id, AlertRule.digest_due_utc == rule.digest_due_utc)
        .values(digest_due_utc=next_digest(rule.cadence, now))) == 1


def _collected(rule: AlertRule, matching: set[str], now: datetime) -> list[str]:
    """The items a digest tells: those that started matching since the last digest and
    still match; they are marked told."""
    states = table_of(AlertState)
    waiting = [entity_id for entity_id in db.session.scalars(
        select(states.c.entity_id).where(states.c.rule_id == rule.id,
                                         states.c.alerted_utc.is_(None)))
               if entity_id in matching]
    for chunk in _chunks(waiting):
        db.session.execute(update(states).where(states.c.rule_id == rule.id,
                                                states.c.entity_id.in_(chunk))
                           .values(alerted_utc=now))
    return waiting


def _track(rule: AlertRule, matching: set[str], now: datetime, report: Report) -> list[str]:
    """Bring the rule's states in line with what matches now; the ids of the items that
    started matching in this transaction."""
    states = table_of(AlertState)
    known = set(db.session.scalars(select(states.c.entity_id)
                                   .where(states.c.rule_id == rule.id)))
    stopped = sorted(known - matching)
    _forget(rule.id, stopped)
    alerted = now if rule.cadence == "immediate" else None
    started = _claim(rule.id, sorted(matching - known), now, alerted)
    report.stopped += len(stopped)
    report.started += len(started)
    return sorted(started)


def evaluate(now: datetime | None = None, mail: MailSettings | None = None) -> Report:
    """One tick at ``now`` (default: the current time): track every active rule, tell the
    recipients of immediate rules about items that started matching, send the digests that
    are due, then deliver the due e-mails. Runs in an application context; commits once
    for the rules (and once per e-mail sent)."""
    now = utc_now() if now is None else now
    mail = mail or MailSettings(None, "labapp@localhost", "http://localhost:5000")
    report = Report()
    with transaction():
        # A rule switched off forgets what it matched: switched on, it tells it afresh.
        db.session.execute(delete(table_of(AlertState)).where(
            table_of(AlertState).c.rule_id.in_(
                select(AlertRule.id).where(AlertRule.active.is_(False)))))
        rules = list(db.session.scalars(select(AlertRule).where(AlertRule.active.is_(True))
                                        .order_by(AlertRule.id)))
        matched, report.broken = scan(rules, now)
        report.rules = len(rules)
        teller = _Teller(mail, report)
        telling: list[tuple[AlertRule, list[str]]] = []
        for rule in rules:
            if rule.id not in matched:
                continue
            matching = matched[rule.id]
            report.matching += len(matching)
            started = _track(rule, matching, now, report)
            if rule.cadence == "immediate" and started:
                telling.append((rule, started))
            elif _due_digest(rule, now):
                report.digests += 1
                collected = _collected(rule, matching, now)
                if collected:
                    telling.append((rule, collected))
        items = placed(entity_id for _, ids in telling for entity_id in ids)
        for rule, ids in telling:
            teller.add(rule, rule.eclass, [items[entity_id] for entity_id in ids
                                           if entity_id in items])
        teller.tell(now)
    delivered = deliver(mail, now)
    report.sent, report.failed = delivered.sent, delivered.failed
    return report


def upkeep() -> bool:
    """The worker's upkeep (every minute): one tick with the application's mail settings;
    whether it changed or sent anything."""
    report = evaluate(mail=MailSettings.of(current_app.config["LABAPP"]))
    if report.worked or report.broken:
        logger.info("alerts: %s", "; ".join(report.lines()))
    return report.worked
