"""Alert rules as the API and the pages keep them (decisions §16): who sees and changes a
rule, storing it whole after checking every part, and what it matches now.

Who reads, changes and deletes a rule is the rule of every owned thing
(:mod:`labapp.access.owned`) for a kind never shared: its owner and ADMIN; anyone else is
answered 404, as for an id that never existed (so none is seen but not changeable). Its
recipients may also read it where its alerts lead (what it matches, a dashboard's widget).
A rule is checked whole before anything is written: its class exists, its filter compiles
against the class's fields, its recipients exist and may be named by the one saving it (400,
:func:`labapp.access.sharing.unknown_parties`) and are within its owner's reach (403,
:mod:`labapp.alerts.reach`), its channels and cadence are known. A rule naming no recipient
tells its owner.
"""
from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from sqlalchemy import delete, select

from labapp.access.actor import Actor
from labapp.access.owned import OwnedKind
from labapp.access.sharing import SHARE_FIELDS, unknown_parties
from labapp.alerts.matching import Actors, RuleBroken, condition, told_ids, visible_matches
from labapp.alerts.reach import describe, out_of_reach
from labapp.db import db
from labapp.errors import Forbidden, InvalidInput
from labapp.model import AlertRule, AlertState
from labapp.model.registry import find_class
from labapp.model.types import utc_now

RECIPIENT_FIELDS = SHARE_FIELDS  # recipients are named by the four lists that name shares
DIGEST_HOUR = 6  # digests go out at 06:00 UTC: daily each day, weekly on Mondays

# Never shared; ADMIN deletes any; listed by name alone (ADMIN's list is everyone's rules).
RULES = OwnedKind("alert rule", AlertRule, AlertRule.id, AlertRule.owner_id, AlertRule.name,
                  "ownerID", admin_deletes=True, own_first=False)


def next_digest(cadence: str, now: datetime) -> datetime | None:
    """When a rule of ``cadence`` next sends its digest after ``now`` (None: immediate)."""
    if cadence == "immediate":
        return None
    due = datetime.combine(now.astimezone(UTC).date(), time(DIGEST_HOUR), tzinfo=UTC)
    if cadence == "weekly":
        due -= timedelta(days=due.weekday())
        step = timedelta(days=7)
    else:
        step = timedelta(days=1)
    while due <= now:
        due += step
    return due


def to_api(actor: Actor, rule: AlertRule) -> dict[str, Any]:
    """A rule as the API shows it."""
    return {"id": rule.id, "name": rule.name, "eClass": rule.eclass, "filter": rule.filter,
            "recipients": {field: sorted(rule.recipients.get(field) or ())
                           for field in RECIPIENT_FIELDS},
            "channels": list(rule.channels), "cadence": rule.cadence, "active": rule.active,
            **RULES.ownership(actor, rule)}


def list_rules(actor: Actor) -> list[AlertRule]:
    """The rules the actor may see, by name."""
    return RULES.listed(actor)


def get_visible(actor: Actor, rule_id: str) -> AlertRule:
    """The rule if the actor may see it; else 404."""
    return RULES.get_visible(actor, rule_id)


def is_told(actor: Actor, rule: AlertRule, actors: Actors | None = None) -> bool:
    """Whether the actor may read ``rule`` where its alerts lead: its owner, ADMIN, or one
    of the users it tells now (:func:`told_ids`)."""
    return (RULES.is_owner_or_admin(actor, rule)
            or (actor.user_id is not None
                and actor.user_id in told_ids(rule, actors or Actors())))


def find_told(actor: Actor, rule_id: str) -> AlertRule | None:
    """The rule if the actor may read it (:func:`is_told`); None for an unknown id and for
    a rule they may not read alike."""
    rule = db.session.get(AlertRule, rule_id)
    return rule if rule is not None and is_told(actor, rule) else None


def get_told(actor: Actor, rule_id: str) -> AlertRule:
    """The rule if the actor may read it (what its alerts link to); else 404."""
    rule = find_told(actor, rule_id)
    if rule is None:
        raise RULES.missing(rule_id)
    return rule


def rules_telling(actor: Actor) -> list[AlertRule]:
    """The active rules the actor owns or is told by, by name."""
    actors = Actors()
    rules = db.session.scalars(select(AlertRule).where(AlertRule.active.is_(True))
                               .order_by(AlertRule.name, AlertRule.id))
    return [rule for rule in rules if rule.owner_id == actor.user_id
            or (actor.user_id is not None and actor.user_id in told_ids(rule, actors))]


def skipped_recipients(rule: AlertRule) -> list[str]:
    """The recipients ``rule`` names but its owner may no longer address, as the rule's
    page names them ("department 'D-2'"): its evaluation skips them."""
    owner = Actors().get(rule.owner_id)
    return [describe(field, value)
            for field, value in out_of_reach(owner[0] if owner else None, rule.recipients)]


def _checked(actor: Actor, rule: AlertRule, data: dict[str, Any], now: datetime
             ) -> tuple[str, dict[str, list[str]]]:
    """The canonical class name and the recipients of a body for ``rule``; InvalidInput
    naming every field that is wrong (a recipient the actor may not name is unknown, unless
    the rule names it already)."""
    errors = []
    spec = find_class(data["eClass"])
    if spec is None:
        errors.append({"field": "eClass", "message": f"unknown entity class {data['eClass']!r}"})
    else:
        try:
            condition(spec, data.get("filter"), now)
        except InvalidInput as error:
            errors.append({"field": "filter", "message": error.detail})
    recipients = {field: sorted(set(data["recipients"].get(field) or ()))
                  for field in RECIPIENT_FIELDS}
    errors += unknown_parties(actor, recipients, "recipients", rule.recipients)
    if errors or spec is None:
        # A filter that does not compile is the usual mistake: its code says so.
        code = "invalid_filter" if any(e["field"] == "filter" for e in errors) else None
        raise InvalidInput("The alert rule is not valid.", errors=errors, code=code)
    return spec.name, recipients


def _check_reach(owner: Actor, recipients: dict[str, list[str]]) -> None:
    """403 naming every recipient the rule's owner may not address."""
    beyond = out_of_reach(owner, recipients)
    if beyond:
        named = ", ".join(describe(field, value) for field, value in beyond)
        raise Forbidden(
            f"The rule's owner may not address {named}: a member addresses themselves, the "
            "users of departments they belong to or hold Write on, and projects they hold "
            "Write on; other recipients need ADMIN.", code="recipient_out_of_reach",
            errors=[{"field": f"recipients.{field}",
                     "message": f"out of the owner's reach: {describe(field, value)}"}
                    for field, value in beyond])


def _owner(actor: Actor, rule: AlertRule) -> Actor | None:
    """The actor of the rule's owner (the saving actor for their own rule)."""
    if rule.owner_id == actor.user_id:
        return actor
    found = Actors().get(rule.owner_id)
    return found[0] if found else None


def _apply(actor: Actor, rule: AlertRule, data: dict[str, Any], now: datetime) -> None:
    eclass, recipients = _checked(actor, rule, data, now)
    if not any(recipients.values()):
        recipients["userIDs"] = [rule.owner_id]  # a rule naming nobody tells its owner
    owner = _owner(actor, rule)
    if owner is None:
        raise Forbidden(f"The rule's owner {rule.owner_id!r} is inactive: the rule addresses "
                        "nobody.", code="recipient_out_of_reach")
    _check_reach(owner, recipients)
    if rule.eclass != eclass or rule.filter != data.get("filter"):
        # Another question: what matched the old one says nothing about the new one.
        db.session.execute(delete(AlertState).where(AlertState.rule_id == rule.id))
    if rule.cadence != data["cadence"] or rule.digest_due_utc is None:
        rule.digest_due_utc = next_digest(data["cadence"], now)
    rule.name = data["name"]
    rule.eclass = eclass
    rule.filter = data.get("filter") or None
    rule.recipients = recipients
    rule.channels = sorted(set(data["channels"]))
    rule.cadence = data["cadence"]
    rule.active = data["active"]
    rule.modified_utc = now


def create(actor: Actor, data: dict[str, Any]) -> AlertRule:
    """Store a new rule owned by the actor (InvalidInput, nothing written, if any part is
    wrong)."""
    now = utc_now()
    rule = RULES.new(actor, now, eclass="", recipients={}, cadence=data["cadence"],
                     digest_due_utc=None)
    _apply(actor, rule, data, now)
    db.session.add(rule)
    db.session.flush()
    return rule


def update(actor: Actor, rule_id: str, data: dict[str, Any]) -> AlertRule:
    """Replace a rule (its owner or ADMIN; 404 for anyone else)."""
    rule = RULES.get_changeable(actor, rule_id)
    _apply(actor, rule, data, utc_now())
    db.session.flush()
    return rule


def set_active(actor: Actor, rule_id: str, active: bool) -> AlertRule:
    """Switch a rule on or off (its owner or ADMIN)."""
    rule = RULES.get_changeable(actor, rule_id)
    rule.active = active
    rule.modified_utc = utc_now()
    db.session.flush()
    return rule


def delete_rule(actor: Actor, rule_id: str) -> None:
    """Delete a rule and its states (its owner or ADMIN; 404 for anyone else)."""
    RULES.delete(actor, rule_id)


def matches(actor: Actor, rule: AlertRule, limit: int) -> dict[str, Any]:
    """What the rule matches now that the actor may read: ``{ruleID, count, items,
    message}``, the message as the pages say it ("12 items match now")."""
    try:
        count, items = visible_matches(actor, rule, utc_now(), limit)
    except RuleBroken as error:
        raise InvalidInput(f"The rule no longer applies: {error}.",
                           errors=[{"field": "filter", "message": str(error)}]) from None
    return {"ruleID": rule.id, "count": count, "items": items, "message": match_message(count)}


def match_message(count: int) -> str:
    """"12 items match now", "1 item matches now", "No items match now"."""
    if count == 0:
        return "No items match now"
    return "1 item matches now" if count == 1 else f"{count} items match now"


def try_filter(actor: Actor, eclass: str, text: str | None, limit: int) -> dict[str, Any]:
    """What an unsaved rule of ``eclass`` with filter ``text`` would match now for the actor
    (the form's Test button); InvalidInput naming the field when it does not compile."""
    spec = find_class(eclass)
    if spec is None:
        raise InvalidInput(f"Unknown entity class {eclass!r}.",
                           errors=[{"field": "eClass", "message": "unknown entity class"}])
    now = utc_now()
    try:
        condition(spec, text, now, actor.user_id)
    except InvalidInput as error:
        raise InvalidInput(error.detail, code="invalid_filter",
                           errors=[{"field": "filter", "message": error.detail}]) from None
    probe = AlertRule(id="", eclass=spec.name, filter=text or None, owner_id=actor.user_id)
    count, items = visible_matches(actor, probe, now, limit)
    return {"ruleID": "", "count": count, "items": items, "message": match_message(count)}
