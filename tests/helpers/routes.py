"""Every route of the URL map as a request to send: the every-route tests (security headers,
plain requests) walk them with values for each URL argument."""
from __future__ import annotations

from flask import Flask, url_for
from werkzeug.routing import Rule


def route_requests(app: Flask, values: dict[str, str]) -> list[tuple[str, str, Rule]]:
    """``(method, url, rule)`` of every method of every route, its arguments filled in from
    ``values`` (HEAD and OPTIONS left out).

    Built up front: requests sent inside this request context would share its ``g``."""
    with app.test_request_context():
        return [(method, url_for(rule.endpoint,
                                 **{name: values[name] for name in rule.arguments}), rule)
                for rule in app.url_map.iter_rules()
                for method in sorted(rule.methods - {"HEAD", "OPTIONS"})]
