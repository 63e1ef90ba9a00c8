"""Entities: create, update, clone, with audit trail and domain events."""
