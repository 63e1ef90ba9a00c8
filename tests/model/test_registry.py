"""The data-model registry matches spec/datamodel.md.

The expected tables below are transcribed from datamodel.md by hand: they are what makes
this test meaningful, so change them only when the specification changes.
"""
from __future__ import annotations

import pytest

from labapp.model.registry import CLASSES, PARENT_LINKS, ClassSpec, find_class

# API name → (type, referenced class or None). Types as the registry names them; ``ref``
# fields carry the target class (``*`` = any class).
COMMON_FIELDS: dict[str, tuple[str, str | None]] = {
    "id": ("str", None),
    "eClass": ("str", None),
    "name": ("str", None),
    "description": ("text", None),
    "barcode": ("str", None),
    "status": ("str", None),
    "type": ("str", None),
    "userID": ("ref", "User"),
    "departmentID": ("ref", "Department"),
    "projectID": ("ref", "Project"),
    "attributes": ("json", None),
    "createdBy": ("ref", "User"),
    "createdUtc": ("datetime", None),
    "modifiedBy": ("ref", "User"),
    "modifiedUtc": ("datetime", None),
    "version": ("int", None),
}
AUDIT_FIELDS = {"createdBy", "createdUtc", "modifiedBy", "modifiedUtc", "version"}
MAX_LENGTHS = {"id": 64, "name": 255, "barcode": 128}

WORKFLOW = ("Initial", "InProgress", "Completed", "Canceled")
WORKFLOW_MOVES = {"Initial": {"InProgress", "Canceled"},
                  "InProgress": {"Completed", "Canceled", "Initial"},
                  "Completed": {"InProgress"},
                  "Canceled": {"Initial"}}
PROJECT_MOVES = {status.replace("InProgress", "Active"): {move.replace("InProgress", "Active")
                                                          for move in moves}
                 for status, moves in WORKFLOW_MOVES.items()}
MATERIAL_MOVES = {**{status: moves | {"Discarded"} for status, moves in WORKFLOW_MOVES.items()},
                  "Discarded": set()}
REQUEST_MOVES = {"Initial": {"InProgress", "Rejected", "Canceled"},
                 "InProgress": {"Completed", "Canceled"},
                 "Completed": {"InProgress"},
                 "Rejected": {"Initial"},
                 "Canceled": {"Initial"}}
ACTIVE_INACTIVE = ("Active", "Inactive")


def _free(statuses: tuple[str, ...]) -> dict[str, set[str]]:
    """A single status list without arrows: any listed status may follow any other."""
    return {status: set(statuses) - {status} for status in statuses}


# class → (id prefix, own fields, statuses with the initial first, allowed moves)
EXPECTED: dict[str, tuple[str | None, dict[str, tuple[str, str | None]], tuple[str, ...],
                          dict[str, set[str]]]] = {
    "Department": ("DEP", {"parentID": ("ref", "Department")},
                   ACTIVE_INACTIVE, _free(ACTIVE_INACTIVE)),
    "Project": ("PRJ", {"startDate": ("date", None), "endDate": ("date", None)},
                ("Initial", "Active", "Completed", "Canceled"), PROJECT_MOVES),
    "User": (None, {"email": ("str", None), "initials": ("str", None),
                    "isActive": ("bool", None), "lastLoginUtc": ("datetime", None),
                    "authSource": ("str", None),
                    "roles": ("json", None)},
             ACTIVE_INACTIVE, _free(ACTIVE_INACTIVE)),
    "Experiment": ("EXP", {"startDate": ("date", None), "endDate": ("date", None)},
                   WORKFLOW, WORKFLOW_MOVES),
    "Step": ("STP", {"experimentID": ("ref", "Experiment"), "stepIndex": ("int", None),
                     "startDate": ("date", None), "endDate": ("date", None)},
             WORKFLOW, WORKFLOW_MOVES),
    "StepInput": ("SIN", {"stepID": ("ref", "Step"), "inputClass": ("str", None),
                          "inputID": ("ref", "*"), "inputPosition": ("int", None),
                          "amount": ("float", None), "unit": ("str", None)},
                  ("Initial",), {"Initial": set()}),
    "Sample": ("SAM", {"parentID": ("ref", "Sample"), "experimentID": ("ref", "Experiment"),
                       "stepID": ("ref", "Step"), "originID": ("ref", "*"),
                       "plateID": ("ref", "Plate"), "well": ("str", None),
                       "locationID": ("ref", "Location"), "position": ("str", None),
                       "amount": ("float", None), "unit": ("str", None),
                       "concentration": ("float", None), "concentrationUnit": ("str", None),
                       "dateTaken": ("date", None), "expiryDate": ("date", None)},
               WORKFLOW + ("Discarded",), MATERIAL_MOVES),
    "Plate": ("PLT", {"experimentID": ("ref", "Experiment"), "stepID": ("ref", "Step"),
                      "rows": ("int", None), "columns": ("int", None),
                      "locationID": ("ref", "Location"), "position": ("str", None)},
              WORKFLOW + ("Discarded",), MATERIAL_MOVES),
    "Fermentation": ("FER", {"experimentID": ("ref", "Experiment"),
                             "originID": ("ref", "Step"), "organism": ("str", None),
                             "startTime": ("datetime", None), "endTime": ("datetime", None),
                             "workingVolume": ("float", None)},
                     WORKFLOW, WORKFLOW_MOVES),
    "Request": ("REQ", {"assigneeID": ("ref", "User"), "dueDate": ("date", None),
                        "priority": ("str", None), "subjectClass": ("str", None),
                        "subjectID": ("ref", "*")},
                ("Initial", "InProgress", "Completed", "Rejected", "Canceled"), REQUEST_MOVES),
    "Location": ("LOC", {"parentID": ("ref", "Location"), "locationType": ("str", None),
                         "capacity": ("int", None), "rows": ("int", None),
                         "columns": ("int", None), "temperature": ("float", None),
                         "position": ("str", None), "hierarchy": ("str", None)},
                 ACTIVE_INACTIVE, _free(ACTIVE_INACTIVE)),
    "Note": ("NTE", {"subjectClass": ("str", None), "subjectID": ("ref", "*"),
                     "content": ("text", None)},
             ("Initial",), {"Initial": set()}),
    "File": ("FIL", {"subjectClass": ("str", None), "subjectID": ("ref", "*"),
                     "mediaType": ("str", None), "size": ("int", None),
                     "sha256": ("str", None)},
             ("Initial",), {"Initial": set()}),
}
READ_ONLY = {"*": AUDIT_FIELDS | {"eClass"}, "User": {"lastLoginUtc", "roles", "authSource"},
             "File": {"size", "sha256"}, "Location": {"hierarchy"}}
CHOICES = {("Request", "priority"): ("Low", "Normal", "High", "Urgent"),
           ("Location", "locationType"): ("Site", "Room", "Freezer", "Fridge", "Shelf", "Rack",
                                          "Box", "Cage", "Other")}
DEFAULTS = {("*", "type"): "Other", ("Plate", "rows"): 8, ("Plate", "columns"): 12,
            ("Location", "capacity"): None}
PARENTS = {"Step": {"experimentID"}, "StepInput": {"stepID"},
           "Sample": {"parentID", "stepID", "experimentID", "plateID"},
           "Plate": {"stepID", "experimentID"}, "Fermentation": {"originID", "experimentID"},
           "Location": {"parentID"}, "Department": {"parentID"}, "Note": {"subjectID"},
           "File": {"subjectID"}}


def spec_of(name: str) -> ClassSpec:
    return CLASSES[name]


def test_exactly_the_specified_classes() -> None:
    assert set(CLASSES) == set(EXPECTED)


@pytest.mark.parametrize("name", EXPECTED)
def test_prefix_and_statuses(name: str) -> None:
    prefix, _, statuses, _ = EXPECTED[name]
    spec = spec_of(name)

    assert spec.prefix == prefix
    assert spec.workflow.initial == statuses[0]
    assert spec.workflow.statuses == statuses


@pytest.mark.parametrize("name", EXPECTED)
def test_transitions(name: str) -> None:
    """Every ordered pair of statuses is allowed exactly when the specification allows it."""
    _, _, statuses, moves = EXPECTED[name]
    workflow = spec_of(name).workflow
    for current in statuses:
        for target in statuses:
            if target != current:
                assert workflow.can_move(current, target) == (target in moves[current]), (
                    f"{name}: {current} -> {target}")
        assert not workflow.can_move(current, "NoSuchStatus")


def test_transition_examples() -> None:
    experiment, sample, request = (spec_of(n).workflow for n in ("Experiment", "Sample",
                                                                 "Request"))
    assert experiment.can_move("Initial", "InProgress")
    assert not experiment.can_move("Completed", "Initial")
    assert all(sample.can_move(status, "Discarded") for status in WORKFLOW)
    assert sample.allowed_from("Discarded") == ()
    assert request.can_move("Rejected", "Initial")


@pytest.mark.parametrize("name", EXPECTED)
def test_fields_names_types_and_references(name: str) -> None:
    _, own, _, _ = EXPECTED[name]
    expected = {**COMMON_FIELDS, **own}
    fields = spec_of(name).fields

    assert set(fields) == set(expected)
    for field_name, (type_name, ref) in expected.items():
        field = fields[field_name]
        assert field.name == field_name
        assert (field.type, field.ref) == (type_name, ref), f"{name}.{field_name}"
        assert field.common == (field_name in COMMON_FIELDS)


@pytest.mark.parametrize("name", EXPECTED)
def test_references_point_at_existing_classes(name: str) -> None:
    for field in spec_of(name).fields.values():
        assert (field.type == "ref") == (field.ref is not None), f"{name}.{field.name}"
        if field.ref is not None:
            assert field.ref == "*" or field.ref in CLASSES


@pytest.mark.parametrize("name", EXPECTED)
def test_read_only_fields(name: str) -> None:
    read_only = READ_ONLY["*"] | READ_ONLY.get(name, set())
    fields = spec_of(name).fields

    assert {field.name for field in fields.values() if field.read_only} == read_only


@pytest.mark.parametrize("name", EXPECTED)
def test_lengths_choices_and_defaults(name: str) -> None:
    fields = spec_of(name).fields
    for field_name, length in MAX_LENGTHS.items():
        assert fields[field_name].max_length == length
    assert not fields["id"].nullable
    for (class_name, field_name), choices in CHOICES.items():
        if class_name == name:
            assert fields[field_name].choices == choices
    for (class_name, field_name), default in DEFAULTS.items():
        if class_name in {"*", name}:
            assert fields[field_name].default == default, f"{name}.{field_name}"


def test_any_class_references_have_a_class_field() -> None:
    """``ref(*)`` fields come with their ``...Class`` field where the specification lists one
    (Sample.originID has none in datamodel.md)."""
    for name, spec in CLASSES.items():
        for field in spec.fields.values():
            if field.ref == "*" and (name, field.name) != ("Sample", "originID"):
                partner = field.name.removesuffix("ID") + "Class"
                assert spec.fields[partner].type == "str", f"{name}.{field.name}"


def test_parent_links() -> None:
    assert {name: set(links) for name, links in PARENT_LINKS.items()} == PARENTS
    for name, links in PARENT_LINKS.items():
        for link in links:
            assert spec_of(name).fields[link].type == "ref"


def test_user_password_is_create_only_and_its_hash_never_a_field() -> None:
    assert "password" in spec_of("User").create_only
    assert "password" not in spec_of("User").fields
    for spec in CLASSES.values():
        for field in spec.fields.values():
            assert field.attr != "password_hash"
            assert "password" not in field.name.lower()


@pytest.mark.parametrize("spelling", ["Sample", "sample", "SAMPLE", "sAmPlE"])
def test_find_class_is_case_insensitive(spelling: str) -> None:
    assert find_class(spelling) is CLASSES["Sample"]


def test_find_class_unknown() -> None:
    assert find_class("NoSuchClass") is None
    assert find_class("") is None


def test_field_lookup_is_case_insensitive() -> None:
    sample = spec_of("Sample")
    assert sample.field("plateid") is sample.fields["plateID"]
    assert sample.field("ECLASS") is sample.fields["eClass"]
    assert sample.field("nope") is None


def test_final_statuses_are_those_that_end_the_work() -> None:
    """Discarded leads nowhere; Canceled and Rejected only back to the start (issue 19)."""
    assert find_class("Sample").workflow.final_statuses == {"Discarded", "Canceled"}
    assert find_class("Request").workflow.final_statuses == {"Rejected", "Canceled"}
    assert find_class("Experiment").workflow.final_statuses == {"Canceled"}
    assert find_class("Location").workflow.final_statuses == frozenset()
