"""Things their owners make and only they and ADMIN see (alert rules, webhooks) in the
matrix: made by their owners the first time a path needs them (they live in tables of their
own, so the entity expectations of the world are untouched), listed and read by the owner
and ADMIN, 404 like an unknown id for everyone else."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.contracts.visibility import oracle
from tests.contracts.visibility.build import LiveWorld
from tests.contracts.visibility.paths import Outcome, hidden_like_unknown


@dataclass(frozen=True)
class OwnedThings:
    """The things under ``url`` (e.g. ``/api/webhook``): ``owners`` maps each world key to
    the user who makes it; ``body(key, owner)`` is what that user posts."""

    url: str
    owners: dict[str, str]
    body: Callable[[str, str], dict[str, Any]]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self.owners)

    @property
    def _marker(self) -> str:
        return f"made:{self.url}"

    def make(self, live: LiveWorld, key: str) -> dict[str, Any]:
        """A new one like ``key``, made by its owner (a fresh copy for a write path)."""
        owner = self.owners[key]
        response = live.client(owner).post(self.url, json=self.body(key, owner))
        assert response.status_code == 201, response.get_data(as_text=True)
        made: dict[str, Any] = response.get_json()
        return made

    def ensure(self, live: LiveWorld) -> None:
        """Make the world's things once (their ids join the world's keys)."""
        if self._marker in live.ids:
            return
        for key in self.keys:
            made = self.make(live, key)
            live.ids[key] = made["id"]
            live.keys[made["id"]] = key
        live.ids[self._marker] = self._marker

    def sees(self, caller: str, key: str) -> bool:
        mine = oracle.reach(caller)
        return mine is not None and (mine.admin or self.owners[key] == caller)

    def listed(self, live: LiveWorld, caller: str, _subject: str) -> Outcome:
        self.ensure(live)
        status, body = live.get_json(caller, self.url)
        return frozenset(live.key(item["id"]) for item in body) if status == 200 else status

    def expect_listed(self, caller: str, _subject: str) -> Outcome:
        return frozenset(key for key in self.keys if self.sees(caller, key))

    def read(self, live: LiveWorld, caller: str, key: str, tail: str = "") -> Outcome:
        """The status of a GET of the thing (``tail``: a part of it), a 404 only if it is
        the one an unknown id gets."""
        self.ensure(live)
        url = f"{self.url}/{live.id(key)}{tail}"
        status, body = live.get_json(caller, url)
        if status == 404:
            return hidden_like_unknown(live, caller, url, live.id(key), body)
        return status

    def expect(self, status: int) -> Callable[[str, str], Outcome]:
        """``status`` for the owner and ADMIN, 404 for everyone else."""
        def expected(caller: str, key: str) -> Outcome:
            return status if self.sees(caller, key) else 404
        return expected
