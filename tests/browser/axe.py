"""Accessibility checks with axe-core (the copy bundled in axe-playwright-python: nothing is
fetched at test time)."""
from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

SERIOUS = ("serious", "critical")


def serious_violations(page: Page) -> list[str]:
    """One line per axe-core rule the page breaks with impact serious or critical: the rule,
    its impact, its help text and the elements that break it."""
    results = Axe().run(page).response
    return [f"{rule['id']} ({rule['impact']}): {rule['help']} — "
            + ", ".join(" ".join(map(str, node["target"])) for node in rule["nodes"])
            for rule in results["violations"] if rule["impact"] in SERIOUS]


def assert_no_serious_violations(page: Page) -> None:
    """Fail, listing them, when axe-core finds serious or critical violations on the page as
    it is now."""
    found = serious_violations(page)
    assert found == [], "axe-core violations on " + page.url + ":\n" + "\n".join(found)
