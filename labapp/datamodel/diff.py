"""The differences between the expected schema and the actual one (``GET /api/datamodel/diff``).

Missing and extra tables, columns, indexes and views, columns whose type differs, views whose
columns differ. The search structures migrations create with raw SQL are expected by name
where they can be made again (the expression indexes), and otherwise never reported as extra.
"""
from __future__ import annotations

from typing import Any

from labapp.datamodel.schema import SchemaModel, is_search_structure

KEYS = ("missingTables", "extraTables", "missingColumns", "extraColumns", "typeMismatches",
        "missingIndexes", "extraIndexes", "missingViews", "extraViews", "changedViews")


def compare(expected: SchemaModel, actual: SchemaModel) -> dict[str, list[Any]]:
    """Every difference, each list sorted; all lists empty when the two agree."""
    found: dict[str, list[Any]] = {key: [] for key in KEYS}
    for table, columns in expected.tables.items():
        present = actual.tables.get(table)
        if present is None:
            found["missingTables"].append(table)
            continue
        for column, facts in columns.items():
            if column not in present:
                found["missingColumns"].append({"table": table, "column": column,
                                                "type": facts["type"]})
            elif present[column]["type"] != facts["type"]:
                found["typeMismatches"].append({"table": table, "column": column,
                                                "expected": facts["type"],
                                                "actual": present[column]["type"]})
        for column, facts in present.items():
            if column not in columns and not is_search_structure(table, column):
                found["extraColumns"].append({"table": table, "column": column,
                                              "type": facts["type"]})
    found["extraTables"] = sorted(table for table in actual.tables
                                  if table not in expected.tables
                                  and not is_search_structure(table))
    for name, facts in expected.indexes.items():
        if name not in actual.indexes and facts["table"] in actual.tables:
            found["missingIndexes"].append({"name": name, "table": facts["table"]})
    found["extraIndexes"] = [{"name": name, "table": facts["table"]}
                             for name, facts in sorted(actual.indexes.items())
                             if name not in expected.indexes
                             and facts["table"] in expected.tables
                             and not is_search_structure(name.removeprefix("ix_"))]
    for name, view_columns in expected.views.items():
        present_columns = actual.views.get(name)
        if present_columns is None:
            found["missingViews"].append(name)
        elif set(present_columns) != set(view_columns):
            found["changedViews"].append({
                "name": name,
                "missingColumns": [c for c in view_columns if c not in present_columns],
                "extraColumns": [c for c in present_columns if c not in view_columns]})
    found["extraViews"] = sorted(name for name in actual.views if name not in expected.views)
    for key in ("missingTables", "missingViews"):
        found[key].sort()
    return found


def is_empty(found: dict[str, list[Any]]) -> bool:
    return not any(found.values())
