"""Dry run and commit: outcomes of every row, updates, references, storage, all or nothing."""
from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from labapp.db import db, transaction
from labapp.errors import InvalidInput
from labapp.imports.engine import commit_import, plan_import
from labapp.imports.mapping import auto_map
from labapp.imports.spreadsheets import open_table
from labapp.model import AuditEvent, Fermentation, Sample
from labapp.model.registry import existing_class
from tests.conftest import ApiClient
from tests.entities.conftest import save, snapshot
from tests.imports.conftest import Importer, actor_of, errors, outcomes
from tests.storage.conftest import make_locations


def _samples(app: Flask) -> dict[str, Sample]:
    with app.app_context():
        return {s.name: s for s in db.session.scalars(select(Sample))}


@pytest.fixture
def box(admin: ApiClient) -> dict[str, Any]:
    """Freezer 1 / Rack 2 / Box 12: a 2 × 3 box."""
    *_, made = make_locations(admin, {"id": "#f", "name": "Freezer 1"},
                              {"id": "#r", "name": "Rack 2", "parentID": "#f"},
                              {"name": "Box 12", "parentID": "#r", "rows": 2, "columns": 3,
                               "barcode": "BOX-12"})
    return made


def test_a_csv_creates_samples(app: Flask, importer: Importer, write_csv) -> None:
    path = write_csv("Name;Volume (mL);Expiry;Status;Lot\nS-1;1,5;2026-03-01;in progress;L7\n"
                     "S-2;0,25;24.12.2026;;\n")
    mapping = {"Name": "name", "Volume (mL)": "amount", "Expiry": "expiryDate",
               "Status": "status", "Lot": "attributes.lot"}
    plan, ids = importer.commit(path, mapping)
    assert outcomes(plan) == [(2, "create"), (3, "create")], errors(plan)
    assert plan.counts == {"create": 2, "update": 0, "unchanged": 0, "error": 0}
    assert len(ids) == 2 and [o.entity_id for o in plan.outcomes] == ids
    stored = _samples(app)
    first, second = stored["S-1"], stored["S-2"]
    assert (first.amount, first.unit, first.status) == (1.5, "mL", "InProgress")
    assert first.attributes == {"lot": "L7"} and str(first.expiry_date) == "2026-03-01"
    assert str(second.expiry_date) == "2026-12-24" and second.status == "Initial"
    with app.app_context():  # written through the batch: each has its audit record
        audits = db.session.scalars(select(AuditEvent.entity_id)
                                    .where(AuditEvent.entity_id.in_(ids))).all()
    assert sorted(audits) == sorted(ids)


def test_an_xlsx_with_date_cells_and_numbers(app: Flask, importer: Importer, write_xlsx) -> None:
    path = write_xlsx([["Name", "Amount", "Unit", "Date taken"],
                       ["X-1", 250, "µL", datetime(2026, 1, 31)], ["X-2", 0.5, "mL", None]])
    plan, _ids = importer.commit(path)
    assert outcomes(plan) == [(2, "create"), (3, "create")], errors(plan)
    stored = _samples(app)
    assert str(stored["X-1"].date_taken) == "2026-01-31" and stored["X-2"].amount == 0.5


def test_units_convert_into_the_unit_column_or_the_stored_unit(
        app: Flask, admin: ApiClient, importer: Importer, write_csv) -> None:
    save(admin, {"eClass": "Sample", "name": "Old", "barcode": "OLD-1", "amount": 10,
                 "unit": "µL"})
    path = write_csv("Name,Volume (mL),Unit\nNew,1.5,µL\n")
    importer.commit(path)
    assert (_samples(app)["New"].amount, _samples(app)["New"].unit) == (1500.0, "µL")
    plan, _ = importer.commit(write_csv("Barcode,Volume\nOLD-1,0.02 mL\n"))
    assert outcomes(plan) == [(2, "update")], errors(plan)
    assert (_samples(app)["Old"].amount, _samples(app)["Old"].unit) == (20.0, "µL")
    plan = importer.plan(write_csv("Barcode,Volume\nOLD-1,3 mg\n"))
    assert errors(plan) == {2: [("Volume", "cannot convert mg into µL: a mass is not a "
                                           "volume")]}


def test_update_by_barcode_and_unchanged(app: Flask, admin: ApiClient, importer: Importer,
                                         write_csv) -> None:
    first, second = save(admin, {"eClass": "Sample", "name": "A", "barcode": "B-1",
                                 "amount": 1, "unit": "mL"},
                         {"eClass": "Sample", "name": "B", "barcode": "B-2", "amount": 2,
                          "unit": "mL"})
    path = write_csv("Barcode,Name,Amount\nB-1,A renamed,1\nB-2,B,2\nB-3,C,3\n")
    plan = importer.plan(path)
    assert outcomes(plan) == [(2, "update"), (3, "unchanged"), (4, "create")], errors(plan)
    assert [o.entity_id for o in plan.outcomes[:2]] == [first["id"], second["id"]]
    plan, ids = importer.commit(path)
    assert ids[0] == first["id"] and len(ids) == 2
    stored = _samples(app)
    assert stored["A renamed"].version == 2 and stored["B"].version == 1
    assert stored["C"].barcode == "B-3"


def test_update_matched_by_a_chosen_field(app: Flask, admin: ApiClient, importer: Importer,
                                          write_csv) -> None:
    made, = save(admin, {"eClass": "Sample", "name": "Named", "amount": 1})
    plan, ids = importer.commit(write_csv("Name,Amount\nNamed,4\n"), match="name")
    assert outcomes(plan) == [(2, "update")] and ids == [made["id"]]
    assert _samples(app)["Named"].amount == 4
    with pytest.raises(InvalidInput, match="no column is mapped"):
        importer.plan(write_csv("Name,Amount\nNamed,4\n"), match="barcode")


def test_update_rights_and_status_moves(app: Flask, admin: ApiClient, importer: Importer,
                                        member, department, grant, write_csv) -> None:
    other = department("Other")
    member("reader")
    grant.department(other, "Read", user="reader")
    hidden, readable = save(admin, {"eClass": "Sample", "name": "H", "barcode": "H-1",
                                    "departmentID": department("Hidden")},
                            {"eClass": "Sample", "name": "R", "barcode": "R-1",
                             "departmentID": other, "status": "Completed"})
    plan = importer.plan(write_csv("Barcode,Name\nH-1,x\nR-1,y\n"), username="reader")
    assert errors(plan) == {2: [("Barcode", "'H-1' is already used by another entity")],
                            3: [("Barcode", f"you may read but not change {readable['id']}")]}
    plan = importer.plan(write_csv("Barcode,Status\nR-1,Initial\n"))
    assert errors(plan) == {2: [("Status", f"{readable['id']} cannot go from Completed to "
                                           "Initial")]}
    assert hidden


def test_references_by_id_name_and_barcode_among_visible_entities(
        app: Flask, admin: ApiClient, importer: Importer, department, member,
        write_csv) -> None:
    member("alice")
    experiment, twin_a, twin_b = save(
        admin, {"eClass": "Experiment", "name": "Exp 1", "barcode": "EXP-BC"},
        {"eClass": "Experiment", "name": "Twin"}, {"eClass": "Experiment", "name": "Twin"})
    save(admin, {"eClass": "Experiment", "name": "Secret", "departmentID": department("D2")})
    path = write_csv("Name,Experiment\nA,Exp 1\nB,EXP-BC\nC," + experiment["id"] +
                     "\nD,Twin\nE,Secret\nF,Nowhere\n")
    plan = importer.plan(path, username="alice")
    assert outcomes(plan)[:3] == [(2, "create"), (3, "create"), (4, "create")]
    twins = ", ".join(sorted([twin_a["id"], twin_b["id"]]))
    assert errors(plan) == {
        5: [("Experiment", f"'Twin' is ambiguous: 2 entities have that name ({twins}); give "
                           "the id or barcode")],
        6: [("Experiment", "unknown Experiment 'Secret'")],
        7: [("Experiment", "unknown Experiment 'Nowhere'")]}
    good = write_csv("Name,Experiment\nA,Exp 1\nB,EXP-BC\n")
    _plan, ids = importer.commit(good, username="alice")
    stored = _samples(app)
    assert stored["A"].experiment_id == stored["B"].experiment_id == experiment["id"]
    assert len(ids) == 2


def test_parents_by_a_row_of_the_same_file_above_or_below(app: Flask, importer: Importer,
                                                          write_csv) -> None:
    path = write_csv("Name,Parent\nChild,Mother\nMother,\nGrandchild,Child\n")
    plan, ids = importer.commit(path)
    assert outcomes(plan) == [(2, "create"), (3, "create"), (4, "create")], errors(plan)
    stored = _samples(app)
    assert stored["Child"].parent_id == stored["Mother"].id
    assert stored["Grandchild"].parent_id == stored["Child"].id
    assert ids == [stored["Child"].id, stored["Mother"].id, stored["Grandchild"].id]


def test_rows_referring_to_each_other_in_a_circle_or_to_a_bad_row(importer: Importer,
                                                                  write_csv) -> None:
    plan = importer.plan(write_csv("Name,Parent,Amount\nA,B,1\nB,A,1\nC,D,1\nD,,x\n"))
    found = errors(plan)
    assert found[2] == found[3] == [("", "rows of the file refer to each other in a circle")]
    assert found[4] == [("Parent", "row 5, which it refers to, has errors")]
    assert found[5] == [("Amount", "'x' is not a number")]


def test_storage_locations_and_slots(app: Flask, admin: ApiClient, importer: Importer,
                                     box: dict[str, Any], write_csv) -> None:
    stored, = save(admin, {"eClass": "Sample", "name": "In A1", "locationID": box["id"],
                           "position": "A1"})
    make_locations(admin, {"id": "#f2", "name": "Freezer 2"},  # a second "Box 12"
                   {"name": "Box 12", "parentID": "#f2"})
    path = write_csv(
        "Name,Location,Slot\n"
        "S-path,Freezer 1 / Rack 2 / Box 12,a2\n"
        "S-barcode,BOX-12,B1\n"
        f"S-id,{box['id']},A3\n"
        "S-taken,BOX-12,A1\n"
        "S-twice,BOX-12,B1\n"
        "S-outside,BOX-12,C9\n"
        "S-unknown,Freezer 9,A1\n"
        "S-ambiguous,Box 12,A1\n"
        "S-slotless,Freezer 1/Rack 2/Box 12,\n"
        "S-noplace,,B2\n")
    plan = importer.plan(path)
    assert outcomes(plan)[:3] == [(2, "create"), (3, "create"), (4, "create")], errors(plan)
    found = errors(plan)
    assert found[5] == [("Slot", f"slot A1 of Box 12 is taken by {stored['name']}")]
    assert found[6] == [("Slot", "slot B1 of Box 12 is also given to row 3")]
    assert found[7] == [("Slot", "'C9' is not a slot of Box 12 (2 rows × 3 columns)")]
    assert found[8] == [("Location", "unknown location 'Freezer 9'")]
    assert found[9][0][1].startswith("location 'Box 12' is ambiguous: 2 locations")
    assert 10 not in found
    assert found[11] == [("Slot", "a slot needs a location")]
    good = write_csv("Name,Location,Slot\nS-1,Freezer 1 / Rack 2 / Box 12,a2\nS-2,BOX-12,\n")
    _plan, _ids = importer.commit(good)
    samples = _samples(app)
    assert (samples["S-1"].location_id, samples["S-1"].position) == (box["id"], "A2")
    assert (samples["S-2"].location_id, samples["S-2"].position) == (box["id"], "A3")


def test_a_full_location_is_a_row_error(admin: ApiClient, importer: Importer,
                                        write_csv) -> None:
    small, = make_locations(admin, {"name": "Small", "capacity": 1})
    plan = importer.plan(write_csv("Name,Location\nA,Small\nB,Small\n"))
    assert errors(plan) == {3: [("Location", "Small is full (it holds at most 1 item)")]}
    assert small["id"] not in str(errors(plan))


def test_ambiguous_dates_are_row_errors_unless_the_column_decides(importer: Importer,
                                                                  write_csv) -> None:
    plan = importer.plan(write_csv("Name,Expiry\nA,03/04/2026\nB,2026-05-01\n"))
    assert errors(plan) == {2: [("Expiry", "'03/04/2026' is ambiguous: day 3 of month 4 or "
                                           "day 4 of month 3? Write it as YYYY-MM-DD")]}
    plan = importer.plan(write_csv("Name,Expiry\nA,03/04/2026\nB,25/12/2026\n"))
    assert outcomes(plan) == [(2, "create"), (3, "create")]
    plan, _ids = importer.commit(write_csv("Name,Expiry\nMDY,03/04/2026\nB,12/25/2026\n"))
    assert plan.date_orders == {"Expiry": "mdy"}


def test_a_date_column_is_decided_before_any_row_is_built(
        app: Flask, admin: ApiClient, importer: Importer, write_csv, write_xlsx) -> None:
    """Every row reads a date the column's other cells make unambiguous the same way: an
    update it leaves as it is is unchanged, in a CSV and in a workbook's text cells."""
    save(admin, {"eClass": "Sample", "name": "Kept", "barcode": "K-1",
                 "expiryDate": "2026-04-03"})
    for path in (write_csv("Barcode,Name,Expiry\nK-1,Kept,03/04/2026\nN-1,New,25/12/2026\n"),
                 write_xlsx([["Barcode", "Name", "Expiry"], ["K-1", "Kept", "03/04/2026"],
                             ["N-2", "Newer", "25/12/2026"]])):
        plan, _ids = importer.commit(path)
        assert outcomes(plan) == [(2, "unchanged"), (3, "create")], errors(plan)
        assert plan.date_orders == {"Expiry": "dmy"}
    stored = _samples(app)
    assert str(stored["New"].expiry_date) == "2026-12-25"
    assert str(stored["Newer"].expiry_date) == "2026-12-25"
    plan = importer.plan(write_csv("Name,Expiry\nA,03/04/2026\nB,25/12/2026\nC,12/25/2026\n"))
    assert list(errors(plan)) == [2]  # a column written both ways decides nothing


def test_a_header_unit_is_the_unit_of_its_column(app: Flask, importer: Importer,
                                                 write_csv) -> None:
    """``Volume (mL)`` without a unit column: cells in other units convert into mL, or the
    row says why not; a number field without a unit field keeps its header's unit."""
    plan, _ids = importer.commit(write_csv("Name,Volume (mL)\nA,1.5\nB,250 µL\n"))
    assert outcomes(plan) == [(2, "create"), (3, "create")], errors(plan)
    stored = _samples(app)
    assert [(stored[name].amount, stored[name].unit) for name in "AB"] == [(1.5, "mL"),
                                                                          (0.25, "mL")]
    plan = importer.plan(write_csv("Name,Volume (mL)\nC,1.5 mg\nD,2 cups\n"))
    assert errors(plan) == {
        2: [("Volume (mL)", "cannot convert mg into mL: a mass is not a volume")],
        3: [("Volume (mL)", "cannot convert cups into mL: unknown unit 'cups'")]}
    plan, _ids = importer.commit(write_csv("Name,Temperature (°C),Capacity\nCold,-20,5\n"
                                           "Colder,-80 °C,5\n"), eclass="Location")
    assert outcomes(plan) == [(2, "create"), (3, "create")], errors(plan)
    plan = importer.plan(write_csv("Name,Temperature (°C)\nWarm,40 °F\n"), eclass="Location")
    assert errors(plan) == {2: [("Temperature (°C)", "cannot convert °F into °C: unknown "
                                                     "unit '°F'")]}
    plan = importer.plan(write_csv("Name,Working volume (mL)\nF-1,2 L\nF-2,5\n"),
                         eclass="Fermentation")
    assert outcomes(plan) == [(2, "create"), (3, "create")], errors(plan)
    plan, _ids = importer.commit(write_csv("Name,Working volume (mL)\nF-1,2 L\n"),
                                 eclass="Fermentation")
    with app.app_context():
        assert db.session.scalars(select(Fermentation.working_volume)).one() == 2000


def test_duplicate_ids_and_barcodes_in_the_file_or_the_database(
        admin: ApiClient, importer: Importer, write_csv) -> None:
    save(admin, {"eClass": "Sample", "name": "Held", "barcode": "HELD"})
    plan = importer.plan(write_csv("Name,Barcode\nA,NEW\nB,NEW\n"), match="name")
    assert errors(plan) == {3: [("Barcode", "'NEW' is also given to row 2")]}
    plan = importer.plan(write_csv("Name,Barcode\nA,HELD\n"), match="name")
    assert errors(plan) == {2: [("Barcode", "'HELD' is already used by another entity")]}


def test_bad_values_name_their_column(importer: Importer, write_csv) -> None:
    plan = importer.plan(write_csv("Name,Amount,Status,Expiry\nA,-1,Lost,someday\n" +
                                   "B" * 300 + ",1,,\n"))
    assert errors(plan) == {
        2: [("Amount", "must not be less than 0"),
            ("Status", "'Lost' is not a status of Sample (one of Initial, InProgress, "
                       "Completed, Canceled, Discarded)"),
            ("Expiry", "'someday' is not a date (write it as YYYY-MM-DD)")],
        3: [("Name", "longer than 255 characters")]}


def test_a_plan_with_errors_is_not_committed_and_writes_nothing(
        app: Flask, importer: Importer, write_csv) -> None:
    before = snapshot(app)
    with app.app_context(), transaction():
        path = write_csv("Name,Amount\nA,1\nB,x\n")
        table = open_table(path, path.name)
        spec = existing_class("Sample")
        actor = actor_of("admin")
        plan = plan_import(actor, spec, table, auto_map(spec, table.headers))
        assert plan.counts["error"] == 1
        with pytest.raises(InvalidInput, match="1 rows have errors"):
            commit_import(actor, plan)
    assert snapshot(app) == before


def test_a_commit_refused_in_a_later_chunk_leaves_nothing_written(
        app: Flask, admin: ApiClient, importer: Importer, write_csv,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from labapp.imports import engine

    monkeypatch.setattr(engine, "CHUNK", 2)
    before = snapshot(app)
    path = write_csv("Name,Barcode\nA,C-1\nB,C-2\nC,C-3\nD,C-4\nE,C-5\n")
    with pytest.raises(Exception) as caught:
        with app.app_context(), transaction():
            table = open_table(path, path.name)
            spec = existing_class("Sample")
            actor = actor_of("admin")
            plan = plan_import(actor, spec, table, auto_map(spec, table.headers),
                               match="name")
            assert plan.ok
            # Meanwhile another request takes a barcode of the fourth row.
            save(admin, {"eClass": "Sample", "name": "Thief", "barcode": "C-4"})
            commit_import(actor, plan)
    # The row is found by the error's item index (data), and told in words.
    assert str(caught.value) == "Row 5: the barcode 'C-4' is already used."
    assert errors(plan) == {5: [("", "the barcode 'C-4' is already used.")]}
    assert plan.counts == {"create": 4, "update": 0, "unchanged": 0, "error": 1}
    # The first chunk was saved, then rolled back with the rest (and, sharing the test's
    # connection, the thief's own write too).
    assert snapshot(app) == before


def test_progress_is_reported(importer: Importer, app: Flask, write_csv) -> None:
    seen: list[int] = []
    path = write_csv("Name\n" + "".join(f"P-{n}\n" for n in range(3)))
    with app.app_context(), transaction():
        table = open_table(path, path.name)
        spec = existing_class("Sample")
        plan_import(actor_of("admin"), spec, table, {"Name": "name"}, progress=seen.append)
    assert seen == [3]


def test_members_may_import_only_what_they_may_create(importer: Importer, member,
                                                      write_csv) -> None:
    member("bob")
    plan = importer.plan(write_csv("Name\nNew department\n"), eclass="Department",
                         username="bob")
    assert errors(plan) == {2: [("id", "you may not create Department entities")]}


def test_two_rows_may_not_write_the_same_entity(admin: ApiClient, importer: Importer,
                                                write_csv) -> None:
    save(admin, {"eClass": "Sample", "name": "Once", "barcode": "ONCE"})
    plan = importer.plan(write_csv("Name,Amount\nNew,1\nNew,2\n"), match="name")
    assert errors(plan) == {3: [("Name", "'New' is also given to row 2")]}
    plan = importer.plan(write_csv("Barcode,Amount\nONCE,1\nONCE,2\n"))
    assert list(errors(plan)) == [3]
    assert errors(plan)[3][0][1].endswith("is also updated by row 2")


def test_a_unit_in_the_header_of_a_field_without_one_is_a_caption(
        app: Flask, importer: Importer, write_csv) -> None:
    plan, _ids = importer.commit(write_csv("Name,Temperature (°C),Capacity\nCold room,-20,5\n"),
                                 eclass="Location")
    assert outcomes(plan) == [(2, "create")], errors(plan)
    plan = importer.plan(write_csv("Name,Temperature\nWarm,5 mL\n"), eclass="Location")
    assert errors(plan) == {2: [("Temperature", "'mL': temperature has no unit; give the "
                                                "number alone")]}


def test_an_error_travels_down_a_chain_of_rows(importer: Importer, write_csv) -> None:
    plan = importer.plan(write_csv("Name,Parent,Amount\nGrandchild,Child,1\nChild,Mother,1\n"
                                   "Mother,,bad\n"))
    assert errors(plan) == {2: [("Parent", "row 3, which it refers to, has errors")],
                            3: [("Parent", "row 4, which it refers to, has errors")],
                            4: [("Amount", "'bad' is not a number")]}


def test_a_slot_alone_moves_an_item_within_its_location(app: Flask, admin: ApiClient,
                                                        importer: Importer,
                                                        box: dict[str, Any],
                                                        write_csv) -> None:
    save(admin, {"eClass": "Sample", "name": "Mover", "barcode": "MOVE",
                 "locationID": box["id"], "position": "A1"},
         {"eClass": "Sample", "name": "Loose", "barcode": "LOOSE"})
    plan = importer.plan(write_csv("Barcode,Slot\nMOVE,B2\nLOOSE,A2\nMOVE-NEW,A3\n"))
    assert errors(plan) == {3: [("Slot", "a slot needs a location")],
                            4: [("Slot", "a slot needs a location")]}
    plan, _ids = importer.commit(write_csv("Barcode,Slot\nMOVE,b2\n"))
    assert outcomes(plan) == [(2, "update")]
    moved = _samples(app)["Mover"]
    assert (moved.location_id, moved.position) == (box["id"], "B2")
    plan = importer.plan(write_csv("Barcode,Slot\nMOVE,B2\n"))
    assert outcomes(plan) == [(2, "unchanged")]
