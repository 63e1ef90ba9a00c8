"""How alerts read: the bell's one line per rule, and e-mails listing the items by rule
with links (plain text and HTML, built from the same parts)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from urllib.parse import quote

from labapp.model import AlertRule

CADENCE_TITLES = {"immediate": "Alert", "daily": "Daily digest", "weekly": "Weekly digest"}


@dataclass(frozen=True)
class Told:
    """One rule's items told to one recipient: ``(id, name)`` pairs, by name."""

    rule: AlertRule
    eclass: str
    items: Sequence[tuple[str, str | None]]


def noun(eclass: str, count: int) -> str:
    """"1 sample", "7 samples": the class in lower case, plural past one."""
    word = eclass[:1].lower() + eclass[1:]
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def bell_message(told: Told) -> str:
    """The bell's line for one rule: "Expire within 14 days: 7 samples"."""
    prefix = "" if told.rule.cadence == "immediate" else f"{CADENCE_TITLES[told.rule.cadence]} · "
    return f"{prefix}{told.rule.name}: {noun(told.eclass, len(told.items))}"


def _link(base: str, eclass: str, entity_id: str) -> str:
    return f"{base}/entities/{quote(eclass)}/{quote(entity_id, safe='')}"


def subject(cadence: str, told: Sequence[Told]) -> str:
    """The e-mail's subject: the one rule's line, or how many rules a digest covers."""
    if len(told) == 1:
        return f"[labapp] {bell_message(told[0])}"
    return f"[labapp] {CADENCE_TITLES[cadence]}: {len(told)} alert rules"


def text_body(base: str, cadence: str, told: Sequence[Told]) -> str:
    """The plain-text body: each rule, then its items with their links."""
    lines = [f"{CADENCE_TITLES[cadence]} from labapp", ""]
    for part in told:
        lines.append(f"{part.rule.name} — {noun(part.eclass, len(part.items))}")
        lines += [f"  • {name or entity_id} ({entity_id}): {_link(base, part.eclass, entity_id)}"
                  for entity_id, name in part.items]
        lines.append("")
    lines.append(f"Your alert rules: {base}/alerts")
    return "\n".join(lines) + "\n"


def html_body(base: str, cadence: str, told: Sequence[Told]) -> str:
    """The HTML alternative: the same parts as :func:`text_body`, escaped."""
    parts = [f"<h1>{escape(CADENCE_TITLES[cadence])} from labapp</h1>"]
    for part in told:
        parts.append(f"<h2>{escape(part.rule.name)} — "
                     f"{escape(noun(part.eclass, len(part.items)))}</h2><ul>")
        parts += [f'<li><a href="{escape(_link(base, part.eclass, entity_id))}">'
                  f"{escape(name or entity_id)}</a> ({escape(entity_id)})</li>"
                  for entity_id, name in part.items]
        parts.append("</ul>")
    parts.append(f'<p><a href="{escape(base)}/alerts">Your alert rules</a></p>')
    return ("<!doctype html><html><body>" + "".join(parts) + "</body></html>")
