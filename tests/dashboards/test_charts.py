"""Charts (issue 21 §4): axis labels thinned to what fits the widget's width, values only on
non-zero weeks, the current week drawn apart, a table and a summary behind each chart, and
a minimum width per chart kind applied where charts are drawn and arranged (issue 32 §5:
not when a dashboard is stored), and a view box as wide as the page measured the widget."""
from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

from flask import Flask

from labapp.dashboards import charts
from tests.conftest import ApiClient
from tests.contracts.problem import assert_problem
from tests.dashboards.conftest import board, created, widget
from tests.entities.conftest import save
from tests.helpers.pages import html, post_form, signed_in


def weeks(*values: int) -> list[dict[str, object]]:
    """Per-week points ending in the week of 2026-11-23, as created_per_week returns them."""
    last = date(2026, 11, 23)
    return [{"label": (last - timedelta(weeks=len(values) - 1 - n)).isoformat(), "value": v}
            for n, v in enumerate(values)]


def test_thinning_keeps_the_newest_and_spaces_the_rest_evenly() -> None:
    assert charts.thinned(12, 12) == set(range(12))
    assert charts.thinned(12, 4) == {11, 8, 5, 2}
    assert charts.thinned(12, 5) == {11, 8, 5, 2}
    assert charts.thinned(1, 1) == {0}
    assert charts.thinned(0, 3) == set()


def test_how_many_labels_fit_grows_with_the_width() -> None:
    narrow = charts.labels_that_fit(charts.width_for(6) - 52, 6)
    wide = charts.labels_that_fit(charts.width_for(12) - 52, 6)
    assert 1 <= narrow < wide
    assert charts.labels_that_fit(10, 6) == 1


def test_week_labels_do_not_overlap_at_any_span() -> None:
    for columns in (6, 8, 12):
        chart = charts.line(weeks(*range(52)), columns=columns)
        shown = [mark for mark in chart.marks if mark.axis_label]
        assert shown[-1] is chart.marks[-1]
        room = charts.CHAR_WIDTH * max(len(mark.axis_label) for mark in shown)
        gaps = [b.x - a.x for a, b in zip(shown, shown[1:], strict=False)]
        assert min(gaps) >= room, (columns, gaps)
    assert charts.week_label("2026-11-02") == "2 Nov"


def test_only_non_zero_weeks_carry_a_value_and_none_when_too_many() -> None:
    sparse = charts.line(weeks(0, 0, 3, 0, 0, 0, 0, 1, 0, 0, 0, 2), columns=6)
    assert [mark.value for mark in sparse.marks if mark.show_value] == [3, 1, 2]
    crowded = charts.line(weeks(*range(1, 53)), columns=6)
    assert not any(mark.show_value for mark in crowded.marks)


def test_the_current_week_is_drawn_apart() -> None:
    chart = charts.line(weeks(1, 2, 3, 4), columns=6)
    assert [mark.partial for mark in chart.marks] == [False, False, False, True]
    assert len(chart.points.split()) == 3
    assert chart.partial_points.split() == [chart.points.split()[-1],
                                            f"{chart.marks[-1].x:.1f},{chart.marks[-1].y:.1f}"]
    assert "this week so far 4" in chart.summary
    assert "10 in all" in chart.summary


def test_the_view_box_follows_the_span_and_bar_labels_fit_their_slot() -> None:
    items = [{"label": "Waiting for approval", "value": 3}, {"label": "Done", "value": 0}]
    narrow, wide = charts.bars(items, columns=6), charts.bars(items, columns=12)
    assert (narrow.width, wide.width) == (charts.width_for(6), charts.width_for(12))
    for chart in (narrow, wide):
        for mark in chart.marks:
            slot = (chart.width - charts.LEFT - charts.RIGHT) / len(items)
            assert len(mark.axis_label) * charts.CHAR_WIDTH <= slot
    assert narrow.summary == "Bar chart: Waiting for approval 3, Done 0"


def test_every_width_the_api_took_before_is_stored_and_saved_back(
        member: Callable[..., ApiClient]) -> None:
    """Issue 32 §5: dashboards saved by earlier clients hold charts narrower than their kind
    is drawn at; the API stores them and takes them back unchanged (the page and the editor
    apply the minimum)."""
    alice = member("alice")
    narrow = [widget("note", {"markdown": "hi"}, cols=2),
              widget("status-counts", {"eClass": "Sample"}, x=2, cols=4, header="Status"),
              widget("created-per-week", {"eClass": "Sample"}, x=6, cols=1),
              widget("storage-usage", {}, x=7, cols=5, y=4)]
    stored = created(alice, board("From an older install", narrow))
    assert [item["gridster"] for item in stored["widgets"]] == [
        item["gridster"] for item in narrow]
    saved_back = alice.put(f"/api/dashboard/{stored['id']}", json=stored)
    assert saved_back.status_code == 200, saved_back.get_data(as_text=True)
    assert saved_back.get_json()["widgets"] == stored["widgets"]
    data = alice.get(f"/api/dashboard/{stored['id']}/widget/2").get_json()
    assert data["gridster"]["cols"] == 1 and len(data["data"]["points"]) == 12
    wider = alice.put(f"/api/dashboard/{stored['id']}", json=board("Still 12 at most", [
        widget("status-counts", {"eClass": "Sample"}, x=8, cols=5)]))
    assert_problem(wider, 400, "validation_failed", errors=True)
    # The alerts list was refused narrower than 4 columns since it exists: it still is.
    alerts = alice.put(f"/api/dashboard/{stored['id']}", json=board("Alerts", [
        widget("alerts", {}, cols=3, header="Watch")]))
    problem = assert_problem(alerts, 400, "invalid_input", errors=True)
    assert problem["errors"] == [{"field": "widgets.0.gridster.cols", "message":
                                  "Widget 'Watch': an alerts list needs at least 4 columns"}]
    assert [item["gridster"] for item in alice.get("/api/dashboard").get_json()[0]["widgets"]
            ] == [item["gridster"] for item in narrow]


def test_the_editor_shows_the_size_error(app: Flask, member: Callable[..., ApiClient]) -> None:
    member("alice")
    browser = signed_in(app, "alice")
    html(browser, "/dashboards/new")
    bad = post_form(browser, "/dashboards/new", {
        "name": "Mine", "w0-plugin": "storage-usage", "w0-header": "Freezers", "w0-x": "0",
        "w0-y": "0", "w0-cols": "3", "w0-rows": "4"})
    assert bad.status_code == 400
    assert "Widget &#39;Freezers&#39;: a storage chart needs at least 6 columns" in (
        bad.get_data(as_text=True))


def test_a_chart_widget_has_a_summary_a_table_and_thinned_labels(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    save(alice, {"eClass": "Sample", "name": "S1"}, {"eClass": "Sample", "name": "S2"})
    stored = created(alice, board("Charts", [
        widget("created-per-week", {"eClass": "Sample", "weeks": 52}, cols=6),
        widget("status-counts", {"eClass": "Sample"}, x=6, cols=6)]))
    browser = signed_in(app, "alice")
    line = html(browser, f"/dashboards/{stored['id']}/widget/0")
    assert re.search(r'<svg viewBox="0 0 480 220" role="img" aria-label="Line chart of 52 '
                     r'weeks from [^"]+: 2 in all, at most 2 [^"]+; this week so far 2"', line)
    assert line.count('<tr><th scope="row">') == 52
    assert "(this week so far)</th><td>2</td>" in line
    assert 'stroke-dasharray="5 4" class="partial-week"' in line
    axis = re.findall(r'class="axis-label">([^<]+)<', line)
    assert 1 < len(axis) <= charts.labels_that_fit(480 - 52, 6)
    assert re.findall(r'class="value">([^<]+)<', line) == ["2"]
    bars = html(browser, f"/dashboards/{stored['id']}/widget/1")
    assert 'aria-label="Bar chart: ' in bars and "Initial 2" in bars
    assert '<div class="visually-hidden">\n<table class="chart-table">' in bars


def test_a_measured_width_is_the_view_box_and_too_narrow_a_width_shows_the_table(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    save(alice, {"eClass": "Sample", "name": "S1"})
    stored = created(alice, board("Measured", [
        widget("status-counts", {"eClass": "Sample"}),
        widget("created-per-week", {"eClass": "Sample", "weeks": 26}, x=6)]))
    browser = signed_in(app, "alice")
    url = f"/dashboards/{stored['id']}/widget/"
    assert 'viewBox="0 0 326 220"' in html(browser, url + "0?width=326")
    for unmeasured in ("", "?width=", "?width=wide", "?width=0", "?width=-5", "?width=99999"):
        assert 'viewBox="0 0 480 220"' in html(browser, url + "0" + unmeasured), unmeasured
    narrow = html(browser, url + "1?width=200")
    assert "<svg" not in narrow and '<div class="chart-numbers">' in narrow
    assert narrow.count('<tr><th scope="row">') == 26 and "Too narrow for a chart" in narrow
    table = html(browser, url + "0?width=600&table=1")
    assert "<svg" not in table and '<th scope="row">Initial</th><td>1</td>' in table
    for junk in ("?heading=99", "?heading=x", "?table=yes&width=1e9", "?width=" + "9" * 5000):
        assert "<svg" in html(browser, url + "0" + junk), junk
    html(browser, url + "0?width=%00%01", 400)  # control characters: the app's 400


def test_bars_too_narrow_to_name_make_a_table_and_statuses_are_said_in_words(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    crowd = [{"label": f"Box {n}", "value": n, "capacity": 100} for n in range(50)]
    assert charts.bars(crowd, width=1800, by_capacity=True).as_table is False
    assert charts.bars(crowd, width=1200, by_capacity=True).as_table is True
    assert charts.bars(crowd[:5], width=charts.MIN_WIDTH - 1).as_table is True
    for mark in charts.bars(crowd[:8], width=400).marks:
        assert len(mark.axis_label) * charts.CHAR_WIDTH <= (400 - 52) / 8 - charts.LABEL_GAP
    alice = member("alice")
    save(alice, {"eClass": "Sample", "name": "S1", "status": "InProgress"})
    stored = created(alice, board("Words", [widget("status-counts", {"eClass": "Sample"})]))
    bars = html(signed_in(app, "alice"), f"/dashboards/{stored['id']}/widget/0?width=600")
    assert '<th scope="row">In progress</th><td>1</td>' in bars and "InProgress" not in bars
    assert alice.get(f"/api/dashboard/{stored['id']}/widget/0").get_json()["data"]["bars"][1] \
        == {"label": "InProgress", "value": 1}
