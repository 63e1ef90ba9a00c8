"""The import of a spreadsheet into one class: a dry run that gives every row its outcome,
then a commit through the entity batch.

:func:`plan_import` reads the rows in chunks; each row is a ``create``, an ``update`` (of the
entity its id, barcode or ``match`` field names), ``unchanged`` (an update that changes
nothing) or an ``error`` naming the column and the reason. :func:`commit_import` reads the
file again and saves its rows through :func:`labapp.entities.service.save_batch` in chunks —
sequences, audit, search queue, tallies, notifications and the check-in rule as for any API
write — inside the caller's one transaction; the plan keeps outcomes only, so memory stays
flat however long the file is. The ids of the rows it creates are drawn beforehand by
:func:`draw_ids`, in a short transaction of their own, so the class's sequence is not held
for the length of the commit.

Every row of a dry run goes through the checks of the commit: the order of day and month in
a date column is decided from all its cells in a first pass, before any row is built, and
where a row's item goes is decided by the placement rule the batch applies (the slot it is
given is the one the commit sends). A commit that fails on a row marks that row's outcome
as an error with the reason in words, as a dry run would have.
"""
from __future__ import annotations

import bisect
import itertools
import pickle
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from labapp.access.actor import Actor
from labapp.entities.batch import resolve_sequence
from labapp.entities.service import save_batch
from labapp.errors import AppError, Conflict, InvalidInput
from labapp.imports.cells import Named
from labapp.imports.mapping import check_mapping
from labapp.imports.rows import POSITION_FIELD, Draft, FileRow, RowBuilder
from labapp.imports.spreadsheets import SourceTable
from labapp.imports.targets import taken_values
from labapp.imports.values import DateOrder, date_evidence
from labapp.model.registry import ClassSpec
from labapp.sequences.service import Drawn, draw_apart, next_ids
from labapp.storage.checkin import refusal_of

CHUNK = 500  # rows per chunk: per bulk lookup, and per save_batch (the API's bulk size)
Outcome = Literal["create", "update", "unchanged", "error"]
OUTCOMES: tuple[Outcome, ...] = ("create", "update", "unchanged", "error")


@dataclass(frozen=True, slots=True)
class CellError:
    """Why one cell (named by its column header) stops its row."""

    column: str
    message: str


@dataclass(slots=True)
class RowOutcome:
    """What the import does with one row (``row`` as the spreadsheet numbers it)."""

    row: int
    outcome: Outcome
    entity_id: str | None
    errors: list[CellError] = field(default_factory=list)


class Spool:
    """The rows of a workbook as the dry run read them, pickled chunk by chunk into an
    anonymous temporary file, so that the commit does not parse the XLSX again (openpyxl
    reads a few thousand rows a second). Closed when the plan holding it is dropped."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()
        weakref.finalize(self, self.file.close)

    def add(self, chunk: list[tuple[int, list[Any]]]) -> None:
        pickle.dump(chunk, self.file, protocol=pickle.HIGHEST_PROTOCOL)

    def chunks(self) -> Iterator[list[tuple[int, list[Any]]]]:
        self.file.seek(0)
        while True:
            try:
                # Our own file, written by add() above: never data from outside.
                yield pickle.load(self.file)
            except EOFError:
                return


@dataclass
class ImportPlan:
    """A dry run: every row's outcome and the counts, plus what the commit needs to build
    the same items again (the table, the checked mapping, the decisions of the dry run)."""

    spec: ClassSpec
    outcomes: list[RowOutcome]
    counts: dict[str, int]
    table: SourceTable
    mapping: dict[str, str]
    match: str | None
    date_orders: dict[str, DateOrder] = field(default_factory=dict)
    file_refs: dict[tuple[int, str], int] = field(default_factory=dict)
    spool: Spool | None = field(default=None, repr=False)
    # The slot the dry run gave each row storing an item without naming one.
    slots: dict[int, str] = field(default_factory=dict)
    # How many created rows take their id from the class's sequence (no id of their own).
    drawn_ids: int = 0

    @property
    def ok(self) -> bool:
        """Whether the plan may be committed: no row has an error."""
        return self.counts.get("error", 0) == 0

    def mark_error(self, row: int, column: str, message: str) -> None:
        """Make row ``row`` an error (a commit found it could not be written), counted."""
        outcome = _at(self.outcomes, row)
        if outcome.outcome != "error":
            self.counts[outcome.outcome] -= 1
            self.counts["error"] = self.counts.get("error", 0) + 1
        _fail(outcome, column, message)


def _chunks(table: SourceTable, size: int) -> Iterator[list[tuple[int, list[Any]]]]:
    chunk: list[tuple[int, list[Any]]] = []
    for row in table.rows():
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _check_match(spec: ClassSpec, mapping: Mapping[str, str], match: str | None) -> str | None:
    if match is None:
        return None
    found = spec.field(match)
    if found is None or found.attr is None or found.type in ("json", "ref"):
        raise InvalidInput(f"{spec.name} has no field {match!r} to match rows by.",
                           code="invalid_match")
    if found.name not in mapping.values():
        raise InvalidInput(f"Rows are matched by {found.name}, but no column is mapped to it.",
                           code="invalid_match")
    return found.name


def _draws_id(draft: Draft) -> bool:
    """Whether the row creates an entity whose id the class's sequence gives."""
    return draft.existing is None and not isinstance(draft.values.get("id"), str)


def _outcome(draft: Draft) -> RowOutcome:
    existing = draft.existing
    if draft.errors:
        return RowOutcome(draft.row, "error", existing.id if existing is not None else None,
                          [CellError(column, message) for column, message in draft.errors])
    if existing is None:
        return RowOutcome(draft.row, "create", None)
    return RowOutcome(draft.row, "unchanged" if draft.unchanged else "update", existing.id)


def date_orders(rows: Iterable[tuple[int, list[Any]]], columns: list[tuple[int, str]]
                ) -> dict[str, DateOrder]:
    """The day/month order of each date column (``(index, header)``) whose cells agree on
    one: a first number over 12 or dots say day first, a second over 12 month first."""
    seen: dict[str, set[DateOrder]] = {}
    for _number, cells in rows:
        for index, header in columns:
            evidence = date_evidence(cells[index])
            if evidence is not None:
                seen.setdefault(header, set()).add(evidence)
    return {header: next(iter(orders)) for header, orders in seen.items() if len(orders) == 1}


def _read_once(table: SourceTable, spool: Spool | None) -> Iterator[tuple[int, list[Any]]]:
    """The rows of the table, each chunk spooled on its way when there is a spool."""
    for chunk in _chunks(table, CHUNK):
        if spool is not None:
            spool.add(chunk)
        yield from chunk


def plan_import(actor: Actor, spec: ClassSpec, table: SourceTable, mapping: Mapping[str, str],
                *, match: str | None = None,
                progress: Callable[[int], None] | None = None) -> ImportPlan:
    """The dry run of importing ``table`` into ``spec`` with ``mapping`` (column → field);
    writes nothing. Raises :class:`InvalidInput` for a bad mapping or match field; a bad
    row is an ``error`` outcome, not an exception. ``progress`` is told the rows checked."""
    checked = check_mapping(spec, table.headers, mapping)
    chosen = _check_match(spec, checked, match)
    builder = RowBuilder(actor, spec, table.headers, checked, chosen, checking=True)
    spool = Spool() if table.kind == "xlsx" else None
    chunks: Iterable[list[tuple[int, list[Any]]]]
    if builder.date_columns:  # a first pass decides each date column before any row is built
        builder.date_orders = date_orders(_read_once(table, spool), builder.date_columns)
        chunks = spool.chunks() if spool is not None else _chunks(table, CHUNK)
    else:
        chunks = _chunks(table, CHUNK)
    spooling = spool if not builder.date_columns else None
    outcomes: list[RowOutcome] = []
    forward: list[tuple[int, str, str]] = []  # (row, field, key) naming a row further down
    file_refs: dict[tuple[int, str], int] = {}
    drawn_ids = 0
    for chunk in chunks:
        if spooling is not None:
            spooling.add(chunk)
        for draft in builder.build(chunk):
            for name, value in draft.values.items():
                if isinstance(value, FileRow):
                    file_refs[draft.row, name] = value.row
                elif isinstance(value, Named) and name in builder.self_refs:
                    forward.append((draft.row, name, value.key))
            outcome = _outcome(draft)
            outcomes.append(outcome)
            if spec.prefix and outcome.outcome == "create" and _draws_id(draft):
                drawn_ids += 1
        if progress is not None:
            progress(len(outcomes))
    _link_forward(builder, outcomes, forward, file_refs)
    counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
    for outcome in outcomes:
        counts[outcome.outcome] += 1
    return ImportPlan(spec, outcomes, counts, table, checked, chosen, builder.date_orders,
                      file_refs, spool, builder.slots, drawn_ids)


def _link_forward(builder: RowBuilder, outcomes: list[RowOutcome],
                  forward: list[tuple[int, str, str]],
                  file_refs: dict[tuple[int, str], int]) -> None:
    """Resolve references to rows further down the file, once every row is read; then
    refuse references that go round in a circle."""
    for row, name, key in forward:
        outcome = _at(outcomes, row)
        rows = builder.file_keys.rows_named(key)
        if len(rows) == 1 and rows[0] != row:
            file_refs[row, name] = rows[0]
            continue
        column = _column_of(builder, name)
        message = (f"{key!r} is ambiguous: rows {', '.join(map(str, rows[:5]))} of this file"
                   if len(rows) > 1 else f"unknown {builder.spec.fields[name].ref} {key!r}")
        _fail(outcome, column, message)
    parents: dict[int, set[int]] = {}
    for (row, _name), parent in file_refs.items():
        parents.setdefault(row, set()).add(parent)
    for start in parents:
        seen, stack = {start}, list(parents[start])
        while stack:
            current = stack.pop()
            if current == start:
                _fail(_at(outcomes, start), "", "rows of the file refer to each other "
                                                     "in a circle")
                break
            if current not in seen:
                seen.add(current)
                stack.extend(parents.get(current, ()))
    changed = True
    while changed:  # a row is only as good as the rows it refers to, all the way up
        changed = False
        for (row, name), parent in file_refs.items():
            outcome = _at(outcomes, row)
            if outcome.outcome != "error" and _at(outcomes, parent).outcome == "error":
                _fail(outcome, _column_of(builder, name),
                      f"row {parent}, which it refers to, has errors")
                changed = True


def _at(outcomes: list[RowOutcome], row: int) -> RowOutcome:
    """The outcome of spreadsheet row ``row`` (outcomes are in row order)."""
    return outcomes[bisect.bisect_left(outcomes, row, key=lambda outcome: outcome.row)]


def _column_of(builder: RowBuilder, name: str) -> str:
    return next((header for _, header, target in builder.columns if target == name), name)


def _fail(outcome: RowOutcome, column: str, message: str) -> None:
    outcome.outcome = "error"
    outcome.errors.append(CellError(column, message))


def _item(plan: ImportPlan, draft: Draft, row_ids: Mapping[int, str]) -> dict[str, Any]:
    item: dict[str, Any] = {"eClass": plan.spec.name}
    for name, value in draft.values.items():
        item[name] = row_ids[value.row] if isinstance(value, FileRow) else value
    if draft.existing is not None:
        item["id"] = draft.existing.id
    if draft.row in plan.slots:  # the slot the dry run gave it, not one the batch picks anew
        item[POSITION_FIELD] = plan.slots[draft.row]
    return item


class _Committer:
    """Saves drafts in batches, parents before the rows that refer to them."""

    def __init__(self, actor: Actor, plan: ImportPlan, builder: RowBuilder,
                 ids: Drawn | None) -> None:
        self.actor, self.spec, self.plan, self.builder = actor, plan.spec, plan, builder
        self.sequence = (ids.sequence_id if ids is not None else
                         resolve_sequence(plan.spec.name) if plan.spec.prefix else None)
        self.drawn = iter(ids) if ids is not None else None
        self.referenced = set(plan.file_refs.values())
        self.row_ids: dict[int, str] = {}
        self.batch: list[Draft] = []
        self.in_batch: set[int] = set()
        self.waiting: dict[int, list[Draft]] = {}
        self.outcomes = plan.outcomes

    def add(self, draft: Draft) -> None:
        missing = [value.row for value in draft.values.values() if isinstance(value, FileRow)
                   and value.row not in self.row_ids and value.row not in self.in_batch]
        if missing:
            self.waiting.setdefault(missing[0], []).append(draft)
            return
        self.batch.append(draft)
        self.in_batch.add(draft.row)
        for child in self.waiting.pop(draft.row, []):
            self.add(child)

    def flush(self) -> None:
        if not self.batch:
            return
        new = [draft for draft in self.batch if _draws_id(draft)]
        if new and self.sequence is not None:
            drawn = self._ids(self.sequence, len(new))
            if taken_values("id", drawn):
                raise Conflict(f"An id drawn from sequence {self.sequence!r} is already taken; "
                               "raise the sequence's nextValue.", code="duplicate_id")
            for draft, entity_id in zip(new, drawn, strict=True):
                draft.values["id"] = entity_id
        for draft in self.batch:
            if draft.row in self.referenced:
                existing = draft.existing
                self.row_ids[draft.row] = existing.id if existing else draft.values["id"]
        items = [_item(self.plan, draft, self.row_ids) for draft in self.batch]
        try:
            saved = save_batch(self.actor, items, notation=False).entities
        except AppError as error:
            raise self._on_row(error) from None
        for draft, entity in zip(self.batch, saved, strict=True):
            _at(self.outcomes, draft.row).entity_id = entity["id"]
        self.batch, self.in_batch = [], set()

    def _ids(self, sequence: str, count: int) -> list[str]:
        """The ids of ``count`` new rows: the next of those drawn beforehand, or drawn now
        in the caller's transaction when none were."""
        if self.drawn is None:
            return next_ids(sequence, count)
        ids = list(itertools.islice(self.drawn, count))
        if len(ids) < count:
            raise InvalidInput("The file creates more rows than its dry run counted; run it "
                               "again.", code="import_changed")
        return ids

    def _on_row(self, error: AppError) -> AppError:
        """The batch's error told by the spreadsheet row it is about, in words, and that
        row's outcome made an error with the same words."""
        index = error.item
        if index is None or not 0 <= index < len(self.batch):
            return error
        draft = self.batch[index]
        refusal = refusal_of(error)
        if refusal is not None:
            name, message = self.builder.refusal_words(draft, refusal)
        elif error.errors and len(error.errors) == 1:
            name = error.errors[0]["field"].split(".", 2)[-1]
            message = error.errors[0]["message"]
        else:
            name, message = "", error.detail.removeprefix(f"entities[{index}]: ")
        column = draft.columns.get(name, name)
        self.plan.mark_error(draft.row, column, message)
        error.detail = f"Row {draft.row}: {message}"
        error.args = (error.detail,)
        return error


def draw_ids(plan: ImportPlan) -> Drawn | None:
    """Draw the ids the commit of ``plan`` gives the rows it creates, in a short write unit
    of their own (:func:`labapp.sequences.service.draw_apart`): the row of the class's
    sequence is locked for the draw only, so while the commit runs other requests create
    entities of the class without waiting for it. None when no row takes an id from a
    sequence. Ids of a commit that then fails are a gap in the sequence, never reused.

    Call it before the commit's unit opens (on SQLite a side unit inside it would wait for
    the write lock the unit holds)."""
    if not plan.drawn_ids:
        return None
    return draw_apart(resolve_sequence(plan.spec.name), plan.drawn_ids)


def commit_import(actor: Actor, plan: ImportPlan, *, ids: Drawn | None = None,
                  progress: Callable[[int], None] | None = None) -> list[str]:
    """Write the rows ``plan`` creates or updates; the ids written, in the order of the
    plan's ``create``/``update`` outcomes (each outcome's ``entity_id`` is set too).

    Runs in the caller's transaction, which must roll back on any error: the whole import
    is then unwritten. New rows take their ids from ``ids`` (:func:`draw_ids`); without
    them the commit draws its ids chunk by chunk in the caller's transaction, which then
    holds the sequence's row (PostgreSQL) until it ends. Raises :class:`InvalidInput` for a
    plan with errors, and whatever the entity batch raises (naming the row) should the
    data have changed since the plan.
    """
    if not plan.ok:
        raise InvalidInput(f"{plan.counts['error']} rows have errors; nothing was imported.",
                           code="import_has_errors")
    builder = RowBuilder(actor, plan.spec, plan.table.headers, plan.mapping, plan.match,
                         checking=False, date_orders=plan.date_orders, file_refs=plan.file_refs)
    committer = _Committer(actor, plan, builder, ids)
    done = 0
    chunks = plan.spool.chunks() if plan.spool is not None else _chunks(plan.table, CHUNK)
    for chunk in chunks:
        for draft in builder.build(chunk):
            outcome = _at(plan.outcomes, draft.row)
            if outcome.row != draft.row or outcome.outcome not in ("create", "update"):
                continue
            if draft.errors:
                column, message = draft.errors[0]
                plan.mark_error(draft.row, column, message)
                raise InvalidInput(f"Row {draft.row}, column {column!r}: {message}",
                                   code="import_changed")
            if (draft.existing is None) != (outcome.outcome == "create"):
                message = (f"was to {outcome.outcome} an entity, but the stored entities "
                           "changed since the dry run; run it again")
                plan.mark_error(draft.row, "", message)
                raise InvalidInput(f"Row {draft.row} {message}.", code="import_changed")
            committer.add(draft)
        if len(committer.batch) >= CHUNK:
            committer.flush()
        done += len(chunk)
        if progress is not None:
            progress(done)
    committer.flush()
    if committer.waiting:
        row = next(iter(committer.waiting))
        raise InvalidInput(f"Row {row} of the file is referred to but was not written.",
                           code="import_changed")
    return [outcome.entity_id for outcome in plan.outcomes
            if outcome.outcome in ("create", "update") and outcome.entity_id is not None]
