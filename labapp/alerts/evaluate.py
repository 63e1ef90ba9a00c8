"""One tick of the alert rules: :func:`evaluate`, run every minute by the worker and by
``flask --app labapp alerts run``.

For each active rule the items matching now are compared with its ``alert_state`` rows:
rows of items that stopped matching are deleted (so they may alert again), rows of items
that started are inserted with ``ON CONFLICT DO NOTHING``, and only the ids the insert
really added are told, so two workers evaluating at once, or a restart, never tell twice.
A rule tells (:mod:`labapp.alerts.telling`) the recipients its owner may address now
(:mod:`labapp.alerts.reach`), each only of the items they may read (the one visibility
rule): the bell gets one line per rule naming its owner ("Expire within 14 days: 7 samples
· rule of Alice Smith (alice)"), e-mail a message listing the items with their expiry,
their place and links. Rules with a daily or weekly cadence collect their new items and
tell them in a digest when it is due; the worker that moves the rule's due time on is the
one that sends it.

A tick writes in short units, so it never holds SQLite's write lock for long (a rule's first
tick once matched 22,368 items and held it 4.1 s): the rules and what they match are read
first, outside any write unit; states are inserted or deleted up to :data:`CHUNK` at a time,
each chunk a unit of its own, with ``alerted_utc`` empty ("not told yet"); then items are told
up to :data:`TELL_CHUNK` at a time, each unit marking the states it tells (``UPDATE … WHERE
alerted_utc IS NULL RETURNING``) in the same transaction as the bell lines and e-mails it
raises. What a unit tells, and its messages, are read and composed before it, so the unit
only writes. Each unit's size follows from how long the last one took (:data:`UNIT_SECONDS`
aimed at), so a loaded machine gets smaller units. A tick that stops between two units
leaves states not told yet, which the next tick tells: every item is told once, never twice,
and a rule whose first tick tells more items than one unit takes tells them in as many bell
lines and e-mails.
"""
from __future__ import annotations

import itertools
import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from flask import current_app
from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from labapp.alerts.mail import MailSettings, deliver
from labapp.alerts.matching import scan
from labapp.alerts.service import next_digest
from labapp.alerts.telling import Known, Teller
from labapp.db import db, own_read, rows_matched, table_of, transaction
from labapp.model import AlertRule, AlertState
from labapp.model.types import utc_now

CHUNK = 500  # rows per INSERT or DELETE statement, and per write unit of the states
TELL_CHUNK = 500  # items told per write unit (of all rules)
# What a write unit of the tick aims at: each unit's size follows from how long the last one
# took (a loaded machine gets smaller units), never below MIN_UNIT_ITEMS nor above the chunk.
UNIT_SECONDS = 0.1
MIN_UNIT_ITEMS = 50
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


class _UnitSize:
    """How many items the next write unit takes: the floor ``min(MIN_UNIT_ITEMS, largest)``
    at first, then as many as the last unit's pace fits in :data:`UNIT_SECONDS`, at most
    twice the last and never more than ``largest``. The time includes the wait for the
    write lock, which errs on the small side.

    Starting small and at most doubling: the first unit of a kind is sized before any pace
    is known, and a whole chunk at that point could hold SQLite's write lock longer than
    the 250 ms the worker allows itself (docs/decisions/alert-tick-units.md)."""

    def __init__(self, largest: int) -> None:
        self.largest = largest
        self.floor = min(MIN_UNIT_ITEMS, largest)
        self.items = self.floor

    @contextmanager
    def timing(self, items: int) -> Iterator[None]:
        """Time the unit run in the block, of ``items`` items, and size the next from it."""
        started = time.perf_counter()
        yield
        self.follow(items, time.perf_counter() - started)

    def follow(self, items: int, seconds: float) -> None:
        """Size the next unit after one of ``items`` items that took ``seconds``."""
        if items and seconds > 0:
            paced = int(items * UNIT_SECONDS / seconds)
            self.items = max(self.floor, min(self.largest, 2 * items, paced))

    def slices(self, values: Sequence[str]) -> Iterator[list[str]]:
        """``values`` a unit at a time, each slice as large as :attr:`items` is when it is
        taken."""
        start = 0
        while start < len(values):
            taken = list(values[start:start + self.items])
            yield taken
            start += len(taken)


def _chunks(values: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(values), CHUNK):
        yield list(values[start:start + CHUNK])


def _claim(rule_id: str, entity_ids: Sequence[str], now: datetime) -> set[str]:
    """Insert the states of items that started matching, not told yet; the ids this
    transaction really added (another worker's or an earlier tick's rows are left)."""
    dialect = db.session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    claimed: set[str] = set()
    for chunk in _chunks(sorted(entity_ids)):
        statement = (insert(table_of(AlertState))
                     .values([{"rule_id": rule_id, "entity_id": entity_id,
                               "matching_since": now, "alerted_utc": None}
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


def _due_digest(rule: AlertRule, now: datetime) -> bool:
    """Whether this worker sends the rule's digest now: it is due, and this worker's
    conditional UPDATE moved the due time on (another worker's would match no row)."""
    if rule.cadence == "immediate" or rule.digest_due_utc is None \
            or rule.digest_due_utc > now:
        return False
    return rows_matched(update(AlertRule).where(
        AlertRule.id == rule.id, AlertRule.digest_due_utc == rule.digest_due_utc)
        .values(digest_due_utc=next_digest(rule.cadence, now))) == 1


def _take(rule_id: str, entity_ids: Sequence[str], now: datetime) -> set[str]:
    """Mark the rule's states of ``entity_ids`` not told yet as told now; the ids this
    transaction really marked (another worker's are left to it)."""
    states = table_of(AlertState)
    taken: set[str] = set()
    for chunk in _chunks(sorted(entity_ids)):
        taken.update(db.session.scalars(
            update(states).where(states.c.rule_id == rule_id, states.c.entity_id.in_(chunk),
                                 states.c.alerted_utc.is_(None))
            .values(alerted_utc=now).returning(states.c.entity_id)))
    return taken


def _forget_inactive() -> None:
    """A rule switched off forgets what it matched (switched on, it tells it afresh): its
    states are deleted, :data:`CHUNK` per unit."""
    states = table_of(AlertState)
    inactive = select(AlertRule.id).where(AlertRule.active.is_(False))
    while True:
        with transaction():
            chunk = db.session.execute(select(states.c.rule_id, states.c.entity_id)
                                       .where(states.c.rule_id.in_(inactive))
                                       .limit(CHUNK)).all()
            for rule_id, entity_ids in _by_rule(chunk).items():
                _forget(rule_id, entity_ids)
        if len(chunk) < CHUNK:
            return


def _by_rule(rows: Iterable[Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for rule_id, entity_id in rows:
        found[rule_id].append(entity_id)
    return found


def _track(rule_id: str, matching: set[str], size: _UnitSize, now: datetime,
           report: Report) -> None:
    """Bring the rule's states in line with what matches now, ``size.items`` items per unit
    (the size follows the pace of the tick's units, rule after rule): states of items that
    stopped matching deleted, of those that started inserted, not told yet."""
    states = table_of(AlertState)
    with own_read() as session:
        known = set(session.scalars(select(states.c.entity_id)
                                    .where(states.c.rule_id == rule_id)))
    stopped = sorted(known - matching)
    for chunk in size.slices(stopped):
        with size.timing(len(chunk)), transaction():
            _forget(rule_id, chunk)
    report.stopped += len(stopped)
    for chunk in size.slices(sorted(matching - known)):
        with size.timing(len(chunk)), transaction():
            report.started += len(_claim(rule_id, chunk, now))


def _tells_now(rule: AlertRule, digests: set[str], first: bool, now: datetime) -> bool:
    """Whether the unit tells the rule's items: an immediate rule, or a digest this worker
    sends (one due, when ``first``: the unit then moves its due time on)."""
    return rule.cadence == "immediate" or rule.id in digests or (
        first and rule.digest_due_utc is not None and rule.digest_due_utc <= now)


@dataclass
class _Plan:
    """What the next unit is to tell, read and composed before it: up to ``size`` states not
    told yet, by rule, and the teller holding the bell lines and e-mails of those that still
    match."""

    taking: dict[str, set[str]]
    known: Known
    teller: Teller


def _plan(rule_ids: Sequence[str], digests: set[str], first: bool,
          matched: dict[str, set[str]], size: int, now: datetime, mail: MailSettings,
          report: Report) -> _Plan:
    """Read, outside any unit, the states the next unit is to mark told, what the messages
    say of their items, and compose the messages (what is done here is not done under the
    write lock)."""
    states = table_of(AlertState)
    teller = Teller(mail, report)
    with own_read() as session:
        rules = {rule.id: rule for rule in session.scalars(
            select(AlertRule).where(AlertRule.id.in_(rule_ids), AlertRule.active.is_(True))
            .order_by(AlertRule.id)) if _tells_now(rule, digests, first, now)}
        taking: dict[str, set[str]] = defaultdict(set)
        by_class: dict[str, set[str]] = defaultdict(set)
        untold = list(session.execute(
            select(states.c.rule_id, states.c.entity_id)
            .where(states.c.rule_id.in_(sorted(rules)), states.c.alerted_utc.is_(None))
            .order_by(states.c.rule_id, states.c.entity_id).limit(TELL_CHUNK)))
        groups = [(rule_id, [row.entity_id for row in rows])
                  for rule_id, rows in itertools.groupby(untold, key=lambda row: row.rule_id)]
        taken = 0
        for index, (rule_id, entity_ids) in enumerate(groups):
            # A rule's items are told whole (one message per recipient and tick): a unit
            # stops before a rule that would take it past ``size`` or that the read cut
            # short; only the first rule of a unit may be larger (split by TELL_CHUNK).
            cut_short = len(untold) == TELL_CHUNK and index == len(groups) - 1
            if taken and (cut_short or taken + len(entity_ids) > size):
                break
            taking[rule_id].update(entity_ids)
            taken += len(entity_ids)
            for entity_id in entity_ids:
                if entity_id in matched.get(rule_id, ()):
                    by_class[rules[rule_id].eclass].add(entity_id)
        known = Known.read(by_class)
        _add(teller, [(rules[rule_id], ids) for rule_id, ids in sorted(taking.items())],
             matched, known)
        teller.compose(now, known)
    return _Plan(dict(taking), known, teller)


def _add(teller: Teller, taken: Sequence[tuple[AlertRule, set[str]]],
         matched: dict[str, set[str]], known: Known) -> None:
    """Hand ``teller`` the items taken of each rule that still match."""
    for rule, ids in taken:
        items = [known.items[entity_id] for entity_id in sorted(ids)
                 if entity_id in matched[rule.id] and entity_id in known.items]
        if items:
            teller.add(rule, rule.eclass, items)


def _tell_chunk(rule_ids: Sequence[str], digests: set[str], first: bool,
                matched: dict[str, set[str]], size: _UnitSize, now: datetime,
                mail: MailSettings, report: Report) -> bool:
    """One unit of telling: up to ``size.items`` items not told yet, of the immediate rules and of
    the digest rules whose digest this worker sends now (decided in the ``first`` unit,
    which moves their due time on: ``digests`` collects them). The states to mark and the
    messages are read and composed before the unit (:func:`_plan`); the unit marks the
    states and writes the messages, composing them afresh only when it marked other states
    than planned (another worker took some, a rule was switched off or its digest sent by
    another worker). Whether any state was marked told."""
    plan = _plan(rule_ids, digests, first, matched, size.items, now, mail, report)
    if not plan.taking and not first:
        return False
    with size.timing(sum(len(ids) for ids in plan.taking.values())), transaction():
        rules = list(db.session.scalars(select(AlertRule).where(
            AlertRule.id.in_(rule_ids), AlertRule.active.is_(True)).order_by(AlertRule.id)))
        taken: list[tuple[AlertRule, set[str]]] = []
        for rule in rules:
            if rule.cadence != "immediate" and rule.id not in digests:
                if not (first and _due_digest(rule, now)):
                    continue
                digests.add(rule.id)
                report.digests += 1
            ids = _take(rule.id, sorted(plan.taking.get(rule.id, ())), now)
            if ids:
                taken.append((rule, ids))
        teller = plan.teller
        if {rule.id: ids for rule, ids in taken} != plan.taking:
            teller = Teller(mail, report)
            teller.actors = plan.teller.actors
            _add(teller, taken, matched, plan.known)
        if teller.parts:
            teller.tell(now, plan.known)
    return bool(taken)


def evaluate(now: datetime | None = None, mail: MailSettings | None = None) -> Report:
    """One tick at ``now`` (default: the current time): track every active rule, tell the
    recipients of immediate rules about items that started matching, send the digests that
    are due, then deliver the due e-mails. Runs in an application context; reads outside
    any unit, then writes in short units (see the module docstring) and commits once per
    e-mail sent."""
    now = utc_now() if now is None else now
    mail = mail or MailSettings(None, "labapp@localhost", "http://localhost:5000")
    report = Report()
    _forget_inactive()
    with own_read() as session:
        rules = list(session.scalars(select(AlertRule).where(AlertRule.active.is_(True))
                                     .order_by(AlertRule.id)))
        matched, report.broken = scan(rules, now)
        report.rules = len(rules)
        rule_ids = [rule.id for rule in rules if rule.id in matched]
    tracking = _UnitSize(CHUNK)
    for rule_id in rule_ids:
        report.matching += len(matched[rule_id])
        _track(rule_id, matched[rule_id], tracking, now, report)
    digests: set[str] = set()
    first = True
    size = _UnitSize(TELL_CHUNK)
    while _tell_chunk(rule_ids, digests, first, matched, size, now, mail, report):
        first = False
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
