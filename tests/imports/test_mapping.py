"""Columns to fields: automatic by label, API name and alias; a mapping checked."""
from __future__ import annotations

import pytest

from labapp.errors import InvalidInput
from labapp.imports.mapping import auto_map, check_mapping, header_unit, split_unit
from labapp.model.registry import built_in

SAMPLE = built_in("Sample")


def test_by_label_api_name_and_alias_ignoring_case_spaces_and_underscores() -> None:
    headers = ["NAME", "expiry_date", "Date taken", "concentrationUnit", "Bar code", "Slot",
               "Location", "Parent", "Volume (µL)", "Expires", "Whatever"]
    assert auto_map(SAMPLE, headers) == {
        "NAME": "name", "expiry_date": "expiryDate", "Date taken": "dateTaken",
        "concentrationUnit": "concentrationUnit", "Bar code": "barcode", "Slot": "position",
        "Location": "locationID", "Parent": "parentID", "Volume (µL)": "amount"}


@pytest.mark.parametrize("header, field", [
    ("Barcode", "barcode"), ("Position", "position"), ("Expiry", "expiryDate"),
    ("Expiration date", "expiryDate"), ("Experiment", "experimentID"), ("ID", "id"),
    ("Amount [mL]", "amount"), ("Status", "status"), ("Storage location", "locationID"),
])
def test_common_aliases(header: str, field: str) -> None:
    assert auto_map(SAMPLE, [header]) == {header: field}


def test_computed_and_read_only_fields_are_never_mapped() -> None:
    assert auto_map(SAMPLE, ["Created", "Modified by", "Version", "Class"]) == {}


def test_a_field_goes_to_the_first_header_naming_it() -> None:
    assert auto_map(SAMPLE, ["Volume", "Amount"]) == {"Volume": "amount"}


def test_units_in_headers() -> None:
    assert split_unit("Volume (µL)") == ("Volume", "µL")
    assert header_unit("Mass [mg]") == "mg"
    assert header_unit("Volume") is None
    assert header_unit("(µL)") is None


def test_check_mapping_normalises_fields_and_keeps_attributes() -> None:
    headers = ["Name", "Volume", "Lot", "Ignored"]
    assert check_mapping(SAMPLE, headers, {"Name": "NAME", "Volume": "amount",
                                           "Lot": "attributes.lot", "Ignored": ""}) == {
        "Name": "name", "Volume": "amount", "Lot": "attributes.lot"}


@pytest.mark.parametrize("mapping, words", [
    ({"Nope": "name"}, "no column 'Nope'"),
    ({"Name": "colour"}, "no field 'colour'"),
    ({"Name": "createdBy"}, "no field 'createdBy'"),
    ({"Name": "name", "Volume": "Name"}, "mapped twice"),
    ({"Name": "attributes.lot", "Volume": "attributes.lot"}, "mapped twice"),
    ({"Name": "attributes. "}, "needs a name"),
])
def test_bad_mappings_are_refused(mapping: dict[str, str], words: str) -> None:
    with pytest.raises(InvalidInput, match=words) as caught:
        check_mapping(SAMPLE, ["Name", "Volume"], mapping)
    assert caught.value.code == "invalid_mapping" and caught.value.errors
