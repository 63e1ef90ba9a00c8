"""The SQL of every database view: generated for the flat views, the migration's for the
overviews.

A flat view is the class's table joined to ``entity``: every common column (``attributes``
as JSON text) and the class's own stored fields — exactly what the views migration
(``e2b2e5c79bf7``) wrote for the built-in classes, and what an extension class gets from a
sync. The overviews join several tables by hand; their SQL stays in that migration, the one
place it is written, and is read from there.
"""
from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

from labapp.model import Entity
from labapp.model.registry import ClassSpec
from labapp.query.dbviews import ViewSpec

VIEWS_MIGRATION = "20261121_e2b2e5c79bf7_database_views.py"


def flat_view_sql(view: ViewSpec, spec: ClassSpec) -> str:
    """``SELECT`` of the flat view of the class ``spec``: the view's columns in order."""
    common = set(Entity.__table__.c.keys())
    selected = [f'CAST(e."{c.column}" AS TEXT) AS "{c.column}"' if c.column == "attributes"
                else f'e."{c.column}"' if c.column in common else f't."{c.column}"'
                for c in view.columns]
    return (f'SELECT {", ".join(selected)} FROM "{spec.table}" t '
            f'JOIN "entity" e ON e."id" = t."id"')


@cache
def overview_sql(migrations_dir: str) -> dict[str, str]:
    """The overviews' ``SELECT`` by view name, as the views migration defines them."""
    path = Path(migrations_dir) / "versions" / VIEWS_MIGRATION
    module_spec = importlib.util.spec_from_file_location("labapp_views_migration", path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot load the views migration {path}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return dict(module.OVERVIEWS)


def view_sql(view: ViewSpec, spec: ClassSpec | None, migrations_dir: str) -> str:
    """The ``SELECT`` of ``view`` (``spec``: its class, for a flat view)."""
    if spec is not None:
        return flat_view_sql(view, spec)
    return overview_sql(migrations_dir)[view.name]
