"""Which columns a list keeps at which width (issue 32 §5, labapp/reading/column_fit.py) and
API keys said in words (labapp/reading/wording.py)."""
from __future__ import annotations

from labapp.model.registry import existing_class
from labapp.reading.column_fit import LARGEST, fits
from labapp.reading.wording import label_of, words_of

SAMPLE_COLUMNS = ["id", "name", "barcode", "status", "amount", "locationID", "expiryDate"]


def _hide_below(names: list[str], orderby: str | None = None) -> dict[str, int | None]:
    found = fits(existing_class("Sample"), names, [label_of(name) for name in names], orderby)
    return {name: fit.hide_below for name, fit in zip(names, found, strict=True)}


def test_the_row_link_and_the_name_are_always_kept_and_the_rest_go_lowest_value_first() -> None:
    widths = _hide_below(SAMPLE_COLUMNS)
    assert widths["id"] is None and widths["name"] is None
    order = sorted((name for name, width in widths.items() if width is not None),
                   key=lambda name: widths[name] or 0)
    assert order == ["locationID", "expiryDate", "amount", "status", "barcode"]
    assert all(isinstance(widths[name], int) for name in order)
    # On a 768 px window the table's box is about 43.75 rem: the barcode goes, the
    # place, the expiry date and the amount stay (a kept column needs its whole width).
    assert (widths["barcode"] or 0) > 44 >= (widths["amount"] or 0)


def test_the_column_a_list_is_sorted_by_is_kept_first() -> None:
    widths = _hide_below(["name", "barcode", "status", "locationID", "expiryDate"],
                         orderby="barcode desc, name")
    assert (widths["barcode"] or 0) < (widths["locationID"] or 0)
    first = _hide_below(["locationID", "name", "barcode"])
    assert first["locationID"] is None and first["name"] is None


def test_widths_stay_within_the_stylesheet_classes_and_unknown_columns_fit_too() -> None:
    many = ["name", *(f"attributes.key{number}" for number in range(14))]
    widths = fits(None, many, many)
    assert [fit.hide_below for fit in widths][-1] == LARGEST
    assert widths[0].css == "" and widths[1].css.startswith("fit-")
    assert widths[1].note_css == widths[1].css.replace("fit-", "fit-note-")


def test_keys_are_said_in_words() -> None:
    assert [words_of(key) for key in ("InProgress", "CheckedIn", "QCPassed", "Initial",
                                      "Awaiting QC", "Step2Done", "checkin", "")] == [
        "In progress", "Checked in", "QC passed", "Initial", "Awaiting QC", "Step 2 done",
        "checkin", ""]
