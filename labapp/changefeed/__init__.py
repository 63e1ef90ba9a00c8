"""The change feed: every committed change of an entity, in commit order, for clients that
follow it (``GET /api/changes``) and for the webhooks (issue 36)."""
