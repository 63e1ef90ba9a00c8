"""How alerts read: the bell's one line per rule, and e-mails listing the items by rule
with links (plain text and HTML, built from the same parts).

Every message names the rule's owner (decisions §16: a rule is a channel from its owner to
its recipients). An item is told with what a lab acts on: its expiry date (when its class
has one) and where it is stored, by the location's name path and slot, when the recipient
may read that location.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from html import escape
from urllib.parse import quote

from labapp.model import AlertRule

CADENCE_TITLES = {"immediate": "Alert", "daily": "Daily digest", "weekly": "Weekly digest"}


@dataclass(frozen=True)
class ToldItem:
    """One item as a recipient is told of it: its expiry date and its place (the location's
    name path and slot; None when not stored or when the recipient may not read the
    location)."""

    id: str
    name: str | None
    expiry: date | None = None
    place: str | None = None


@dataclass(frozen=True)
class Told:
    """One rule's items told to one recipient, by name; ``owner`` names the rule's owner as
    messages show them ("Alice Smith (alice)")."""

    rule: AlertRule
    eclass: str
    items: Sequence[ToldItem]
    owner: str


def owner_label(user_id: str, name: str | None) -> str:
    """"Alice Smith (alice)", or the id alone when the user has no other name."""
    return f"{name} ({user_id})" if name and name != user_id else user_id


def noun(eclass: str, count: int) -> str:
    """"1 sample", "7 samples": the class in lower case, plural past one."""
    word = eclass[:1].lower() + eclass[1:]
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _count_line(told: Told) -> str:
    prefix = "" if told.rule.cadence == "immediate" else f"{CADENCE_TITLES[told.rule.cadence]} · "
    return f"{prefix}{told.rule.name}: {noun(told.eclass, len(told.items))}"


def bell_message(told: Told) -> str:
    """The bell's line for one rule, naming its owner: "Expire within 14 days: 7 samples ·
    rule of Alice Smith (alice)"."""
    return f"{_count_line(told)} · rule of {told.owner}"


def _link(base: str, eclass: str, entity_id: str) -> str:
    return f"{base}/entities/{quote(eclass)}/{quote(entity_id, safe='')}"


def _rule_link(base: str, rule_id: str) -> str:
    return f"{base}/alerts/{quote(rule_id, safe='')}/items"


def subject(cadence: str, told: Sequence[Told]) -> str:
    """The e-mail's subject: the one rule's line, or how many rules a digest covers. Plain
    text; :func:`labapp.alerts.mail.queue` makes it fit a header."""
    if len(told) == 1:
        return f"[labapp] {_count_line(told[0])}"
    return f"[labapp] {CADENCE_TITLES[cadence]}: {len(told)} alert rules"


def expiry_words(expiry: date, today: date) -> str:
    """"expires 2026-12-01", or "expired 2026-11-01" for a date before ``today``."""
    return f"{'expired' if expiry < today else 'expires'} {expiry.isoformat()}"


def _details(item: ToldItem, today: date) -> list[str]:
    found = [expiry_words(item.expiry, today)] if item.expiry else []
    return found + ([item.place] if item.place else [])


def _intro(told: Sequence[Told]) -> str:
    owners = sorted({part.owner for part in told})
    return (f"You are a recipient of alert rules of {', '.join(owners)}."
            if len(owners) > 1 else f"You are a recipient of an alert rule of {owners[0]}.")


def text_body(base: str, cadence: str, told: Sequence[Told], today: date) -> str:
    """The plain-text body: each rule with its owner, then its items with their expiry,
    their place and their links."""
    lines = [f"{CADENCE_TITLES[cadence]} from labapp", _intro(told), ""]
    for part in told:
        lines.append(f"{part.rule.name} — {noun(part.eclass, len(part.items))} "
                     f"(alert rule of {part.owner})")
        for item in part.items:
            details = "".join(f" · {detail}" for detail in _details(item, today))
            lines.append(f"  • {item.name or item.id} ({item.id}){details}: "
                         f"{_link(base, part.eclass, item.id)}")
        lines.append(f"  All it matches now: {_rule_link(base, part.rule.id)}")
        lines.append("")
    lines.append(f"Alert rules: {base}/alerts")
    return "\n".join(lines) + "\n"


def html_body(base: str, cadence: str, told: Sequence[Told], today: date) -> str:
    """The HTML alternative: the same parts as :func:`text_body`, escaped."""
    parts = [f"<h1>{escape(CADENCE_TITLES[cadence])} from labapp</h1>",
             f"<p>{escape(_intro(told))}</p>"]
    for part in told:
        parts.append(f"<h2>{escape(part.rule.name)} — "
                     f"{escape(noun(part.eclass, len(part.items)))}</h2>"
                     f"<p>Alert rule of {escape(part.owner)}</p><ul>")
        for item in part.items:
            details = "".join(f" · {escape(detail)}" for detail in _details(item, today))
            parts.append(f'<li><a href="{escape(_link(base, part.eclass, item.id))}">'
                         f"{escape(item.name or item.id)}</a> ({escape(item.id)}){details}</li>")
        parts.append(f'</ul><p><a href="{escape(_rule_link(base, part.rule.id))}">'
                     "All it matches now</a></p>")
    parts.append(f'<p><a href="{escape(base)}/alerts">Alert rules</a></p>')
    return ("<!doctype html><html><body>" + "".join(parts) + "</body></html>")
