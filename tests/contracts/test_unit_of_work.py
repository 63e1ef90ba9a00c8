"""The unit of work is opened in one place (issue 33 §1).

The request handler (:class:`labapp.web.units.LabFlask`) runs every view in one
:func:`labapp.db.transaction` of its route's kind; views and API functions open none of their
own, and only :mod:`labapp.db` commits or rolls back. The few views that open their own units
are declared with ``@opens_own_units`` and listed here, so a new one is a decision, not an
accident. The behaviour is tested on routes added to a fresh application: a view's error and
a refusal (4xx) save nothing, a GET that writes is refused by the read units' guard.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flask import Flask, Response, jsonify
from sqlalchemy import select, text

from labapp.db import db, unit_state
from labapp.model import Role
from labapp.web.loader import csrf_exempt
from labapp.web.units import opens_own

LABAPP = Path(__file__).resolve().parents[2] / "labapp"

# Views that open their own units of work, each for a reason of its own (see
# docs/decisions/unit-of-work.md).
OWN_UNITS = {
    "account_api.login",  # the password is verified before the write, with no write lock
    "account_views.login",
    "account_views.login_code",  # a wrong code is recorded while the answer is 401
    "account_views.login_enrol",
    "account_views.confirm_second_factor",
    "account_views.disable_second_factor",
    "account_api.change_password",  # the same for the current password
    "account_views.change_password",
    # the provider's token is fetched and verified before the write that logs the user in
    "oidc_views.oidc_callback",
    "oidc_views.oidc_start",
    "account_api.refresh",  # a reused refresh token ends its login while the answer is 401
    "account_views.logout",  # the provider's logout is looked up (network) after the write
    "web.home",  # reads; writes a first visitor's starter dashboard in a write unit
    "dashboard_views.show",  # the same page as the home page
    "file_api.upload_file",  # the upload streams in before the unit (folder store) or in it
    "file_views.upload_file",
    "import_api.create_import",
    "import_views.upload",
    "import_views.run_dry",  # opens the uploaded table before the write unit begins
    "datamodel_api.sync",  # migrates on connections of its own, then rebuilds the index
    "datamodel_views.sync",
    "change_api.list_changes",  # a long poll opens a short read unit per look, none between
}
# The functions of views and API modules that open a unit: those of the views above.
OPENING_UNITS = {
    ("changefeed/api.py", "list_changes"),
    ("changefeed/api.py", "_wait_for_change"),
    ("account/api.py", "refresh"),
    ("account/views.py", "logout"),
    ("dashboards/views.py", "_page"),
    ("files/api.py", "upload_file"),
    ("files/views.py", "upload_file"),
    ("imports/api.py", "start"),
    ("imports/views.py", "run_dry"),
}
_ENDING = re.compile(r"(session|connection)(\(\))?\.(rollback|commit)\(")
# What opens a unit: labapp.db.transaction, and labapp.blobs.stored, which opens one around
# the content it stores (the upload views).
_OPENERS = {"transaction", "stored"}


def _view_modules() -> Iterator[Path]:
    for path in sorted(LABAPP.rglob("*.py")):
        if path.name == "api.py" or path.name.endswith("views.py"):
            yield path


def _functions_calling_transaction(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute) \
                    and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) \
                    in _OPENERS:
                found.add(function.name)
    return found


def test_views_and_api_functions_open_no_unit_except_the_declared_ones() -> None:
    opening = {(str(path.relative_to(LABAPP)), name) for path in _view_modules()
               for name in _functions_calling_transaction(path)}
    assert opening == OPENING_UNITS


def test_only_the_database_module_commits_or_rolls_back() -> None:
    ending = [f"{path.relative_to(LABAPP)}:{number}: {line.strip()}"
              for path in sorted(LABAPP.rglob("*.py")) if path.name != "db.py"
              for number, line in enumerate(path.read_text().splitlines(), 1)
              if _ENDING.search(line)]
    assert ending == []


def test_only_the_listed_views_open_their_own_units(app: Flask) -> None:
    declared = {endpoint for endpoint, view in app.view_functions.items() if opens_own(view)}
    assert declared == OWN_UNITS


# ---------------------------------------------------------------- behaviour, on test routes

class Boom(Exception):
    """Raised by a test view after it wrote."""


def _add_role(name: str) -> None:
    db.session.add(Role(name=name, description=""))
    db.session.flush()


def _committed(app: Flask) -> set[str]:
    """Test roles as another connection sees them (only what was really committed)."""
    with app.app_context(), db.engine.connect() as connection:
        return set(connection.scalars(text("SELECT name FROM role WHERE name LIKE 'U\\_%' "
                                           "ESCAPE '\\'")))


@pytest.fixture
def unit_app(fresh_app: Callable[..., Flask]) -> Flask:
    """An initialised application with routes that write, then answer or fail."""
    application = fresh_app(initialised=True)

    def written() -> Response:
        _add_role("U_WRITTEN")
        return jsonify(inUnit=isinstance(unit_state("test", dict), dict))

    def refused() -> tuple[Response, int]:
        _add_role("U_REFUSED")
        return jsonify(error="refused"), 409

    def failing() -> Response:
        _add_role("U_FAILED")
        raise Boom

    def reading() -> Response:
        return jsonify(roles=list(db.session.scalars(select(Role.name))))

    def sneaking() -> Response:
        _add_role("U_SNEAKED")
        return jsonify()

    for rule, view, methods in (("/t/written", written, ["POST"]),
                                ("/t/refused", refused, ["POST"]),
                                ("/t/failing", failing, ["POST"]),
                                ("/t/reading", reading, ["GET"]),
                                ("/t/sneaking", sneaking, ["GET"])):
        application.add_url_rule(rule, view.__name__, csrf_exempt(view), methods=methods)
    application.testing = False  # an error in a view is answered as in production
    return application


def test_a_view_runs_in_one_unit_committed_when_it_answers(unit_app: Flask) -> None:
    response = unit_app.test_client().post("/t/written")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json() == {"inUnit": True}
    assert _committed(unit_app) == {"U_WRITTEN"}


def test_an_error_raised_in_a_view_rolls_back_the_whole_unit(unit_app: Flask) -> None:
    assert unit_app.test_client().post("/t/failing").status_code == 500
    assert _committed(unit_app) == set()


def test_a_refusal_saves_nothing_of_what_the_view_wrote(unit_app: Flask) -> None:
    response = unit_app.test_client().post("/t/refused")
    assert response.status_code == 409
    assert response.get_json() == {"error": "refused"}
    assert _committed(unit_app) == set()


def test_a_get_view_runs_in_a_read_unit_whose_guard_refuses_a_write(unit_app: Flask) -> None:
    client = unit_app.test_client()
    assert "ADMIN" in client.get("/t/reading").get_json()["roles"]
    assert client.get("/t/sneaking").status_code == 500
    assert _committed(unit_app) == set()
