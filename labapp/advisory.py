"""PostgreSQL advisory locks: what a process holds for as long as it lives, seen by every host.

On a PostgreSQL installation, the locks that say "a worker runs", "the search queue is being
drained" and "an export is under way" are advisory locks of the database server rather than
``flock`` on files of one instance folder, so every host sharing the database sees them. A
lock is held on a connection of its own (autocommit: it never holds a transaction open) and
the server drops it when that connection ends, however the process ends (``kill -9``, a host
that dies is noticed when the server's TCP keepalive gives up on its connection).

Locks use the two-key form ``(namespace, key)``: one namespace per kind of lock
(:data:`PROCESS`, :data:`SEARCH_DRAIN`, :data:`EXPORT`), a key within it made from a name
(:func:`key`). Probing reads ``pg_locks`` and takes no lock itself, so a probe never refuses a
process taking its lock, and probers never refuse each other.
"""
from __future__ import annotations

import hashlib
import weakref

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

# Namespaces of labapp's advisory locks (the first of the two keys).
PROCESS = 0x4C410001  # a process that runs jobs (labapp.liveness)
SEARCH_DRAIN = 0x4C410002  # a worker draining the search queue (labapp.search.upkeep)
EXPORT = 0x4C410003  # the one export under way (labapp.exports.progress)
# Committing transactions number their changes one after another (migration change_log).
CHANGE_LOG = 0x4C410004

_TAKE = text("SELECT pg_try_advisory_lock(CAST(:namespace AS integer), CAST(:key AS integer))")
_UNLOCK = text("SELECT pg_advisory_unlock(CAST(:namespace AS integer), CAST(:key AS integer))")
_HELD = text(
    "SELECT objid::bigint AS key FROM pg_locks WHERE locktype = 'advisory' AND granted "
    "AND mode = 'ExclusiveLock' AND objsubid = 2 AND classid = CAST(:namespace AS oid) "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")


def on_postgresql(engine: Engine) -> bool:
    """Whether ``engine``'s locks are advisory locks (PostgreSQL) rather than files."""
    return engine.dialect.name == "postgresql"


def key(name: str) -> int:
    """The key within a namespace of the lock named ``name`` (31 bits: a non-negative int4)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=4).digest(), "big") >> 1


class Held:
    """An exclusive advisory lock ``(namespace, key)`` held on a connection of its own until
    :meth:`release` (or the connection ends: also when the object is dropped)."""

    def __init__(self, connection: Connection, namespace: int, lock_key: int) -> None:
        self.connection = connection
        self.namespace, self.key = namespace, lock_key
        self._closed = weakref.finalize(self, _close, connection)

    def release(self) -> None:
        """Drop the lock, then close its connection. Unlocked first: the server ends a
        closed connection's session (and its locks) a moment later, and a probe or a taker
        in that moment still found the lock held."""
        if not self._closed.alive:
            return
        try:
            self.connection.scalar(_UNLOCK, {"namespace": self.namespace, "key": self.key})
        except SQLAlchemyError:  # a broken connection: its end drops the lock
            pass
        self._closed()


def _close(connection: Connection) -> None:
    """Close ``connection`` for good: back in the pool it would keep its session's locks."""
    connection.invalidate()
    connection.close()


def take(engine: Engine, namespace: int, lock_key: int) -> Held | None:
    """The lock ``(namespace, key)`` held by this process, or None while another holds it."""
    connection = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    try:
        granted = connection.scalar(_TAKE, {"namespace": namespace, "key": lock_key})
    except BaseException:
        _close(connection)
        raise
    if not granted:
        connection.close()  # holds nothing: may go back to the pool
        return None
    return Held(connection, namespace, lock_key)


def held_keys(engine: Engine, namespace: int) -> set[int]:
    """The keys of ``namespace`` some process holds now (in this database)."""
    with engine.connect() as connection:
        return set(connection.scalars(_HELD, {"namespace": namespace}))


def is_held(engine: Engine, namespace: int, lock_key: int | None = None) -> bool:
    """Whether some process holds ``(namespace, key)`` now; any key of ``namespace`` when
    ``key`` is None."""
    held = held_keys(engine, namespace)
    return bool(held) if lock_key is None else lock_key in held
