"""The caller's rate-limit budget in the matrix (issue 36 §4): ``GET /api/user/ratelimit``
answers every signed-in caller their own buckets — the login's ``token`` and the ``user`` —
and refuses anonymous callers (401), whose budget is their address's, in the fields of the
answer."""
from __future__ import annotations

import http_sf

from tests.contracts.visibility.build import LiveWorld, closed
from tests.contracts.visibility.paths import MatrixPath, Outcome
from tests.contracts.visibility.world import ANONYMOUS
from tests.helpers.ratelimits import limits

_OUT_OF_REACH = 1_000_000_000


def budget(live: LiveWorld, caller: str, _subject: str) -> Outcome:
    with limits(live.app, token=_OUT_OF_REACH, user=_OUT_OF_REACH, address=_OUT_OF_REACH):
        response = closed(live.client(caller).get("/api/user/ratelimit"))
    fields = [name for name, _ in http_sf.parse(response.headers["RateLimit"].encode(),
                                                tltype="list")]
    if response.status_code != 200:
        return response.status_code if fields == ["address"] else ("not by address", fields)
    named = [policy["name"] for policy in response.get_json()["policies"]]
    # Matrix callers sign in with Bearer tokens: their login's bucket, then their own.
    if named != ["token", "user"] or fields != named:
        return ("not the caller's buckets", named, fields)
    return 200


def expect_budget(caller: str, _subject: str) -> Outcome:
    return 401 if caller == ANONYMOUS else 200


RATE_LIMIT_READ_PATHS: tuple[MatrixPath, ...] = (
    MatrixPath("ratelimit", ("own",), expect_budget, budget),
)
