"""Fencing that the storage checks (docs/semantics.md, "Fencing checked by the storage").

A lease alone cannot protect storage: a holder paused past its lease (a GC pause, a stopped VM,
a slow disk) wakes up still believing it holds the lock and writes over the next holder's work.
A fenced lock hands out a token that grows with every acquire; the storage keeps the greatest
token that wrote and refuses a smaller one, so the paused holder's late write is refused
whatever its clock believes.

- :func:`fenced_set` for data kept in Redis (one script, the same from Lua and OpenResty);
- :class:`FencedWriter` for SQL tables (a ``fence`` column and a guarded ``UPDATE``/upsert);
- :func:`check` for any other store whose compare-and-write you make atomic yourself.

Every refusal raises :class:`StaleTokenError`.
"""

import re
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from ._client import Client
from ._errors import LockError

__all__ = ["StaleTokenError", "check", "fenced_set", "fenced_set_async", "FencedWriter"]

_Bytes = Union[str, bytes]
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MAX_TOKEN = 1 << 53


class StaleTokenError(LockError):
    """A write carried a token older than one the storage already saw: its holder lost the lock
    (its lease ran out, or it was force-unlocked) and a newer holder came. ``fence`` is the
    storage's token when known, else None."""

    def __init__(self, token: int, fence: Optional[int], where: str) -> None:
        seen = f"; the storage has seen {fence}" if fence is not None else ""
        super().__init__(f"{where}: fencing token {token} is stale{seen}")
        self.token, self.fence, self.where = token, fence, where

    def __reduce__(self) -> "tuple[type, tuple[int, Optional[int], str]]":
        return (StaleTokenError, (self.token, self.fence, self.where))


def _token(token: Any) -> int:
    if isinstance(token, bool) or not isinstance(token, int):
        raise TypeError(f"a fencing token is an int, not {type(token).__name__}")
    if not 1 <= token <= _MAX_TOKEN:
        raise ValueError("a fencing token must be from 1 to 2**53 (a fenced lock's token)")
    return token


def check(token: int, fence: int) -> None:
    """The rule every fenced store applies: ``token`` may write where ``fence`` (the greatest
    token that wrote before) is not newer. Raises StaleTokenError otherwise. Equal passes: the
    same hold writing again (every acquire gets a token of its own)."""
    if _token(token) < fence:
        raise StaleTokenError(token, fence, "check")


def fenced_set(client: Client, key: _Bytes, value: _Bytes, token: int) -> int:
    """SET ``key`` to ``value`` unless a newer token wrote it: the greatest token is kept
    beside it in ``redlease_fence:{key}`` (docs/protocol.md), checked and written in one script.
    Returns the fence before this write (0: none). Raises StaleTokenError when refused."""
    if not isinstance(value, (str, bytes)):
        raise TypeError(f"a value must be str or bytes, not {type(value).__name__}")
    written, fence = client._core.fenced_set(key, value, _token(token))
    if not written:
        raise StaleTokenError(token, fence, f"fenced_set {key!r}")
    return fence


async def fenced_set_async(client: Any, key: _Bytes, value: _Bytes, token: int) -> int:
    """:func:`fenced_set` for a ``redlease.asyncio.Client``: the round trip runs on a worker
    thread, so the event loop is not blocked."""
    import asyncio

    sync = getattr(client, "_sync", None)
    if not isinstance(sync, Client):
        raise TypeError("fenced_set_async takes a redlease.asyncio.Client")
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, fenced_set, sync, key, value, token)


def _quoted(name: str) -> str:
    parts = name.split(".")
    if not name or len(parts) > 2 or not all(_IDENTIFIER.match(p) for p in parts):
        raise ValueError(f"not a plain SQL identifier: {name!r}")
    return ".".join(f'"{p}"' for p in parts)


class FencedWriter:
    """Guarded writes to one SQL table (DB-API 2: psycopg, sqlite3, ...) whose rows carry a
    ``fence`` column (``bigint NOT NULL DEFAULT 0``). Each write sets the row's columns and its
    fence in one statement that only matches while the row's fence is not newer than the token;
    0 rows means a stale holder, and StaleTokenError is raised. The check and the write are one
    statement, so no other write can come between them (PostgreSQL re-checks the condition on
    the newest row version; under REPEATABLE READ or SERIALIZABLE a concurrent write fails it
    with a serialization error instead).

    Identifiers are quoted the standard way ("name": PostgreSQL, SQLite; MySQL with
    ANSI_QUOTES). ``paramstyle``: "format" (%s: psycopg) or "qmark" (?: sqlite3)."""

    def __init__(self, table: str, key: Sequence[str] = ("id",), fence: str = "fence",
                 paramstyle: str = "format") -> None:
        if paramstyle not in ("format", "qmark"):
            raise ValueError('paramstyle must be "format" or "qmark"')
        if isinstance(key, str):
            key = (key,)
        if not key:
            raise ValueError("a table needs at least one key column")
        self.table, self.fence = _quoted(table), _quoted(fence)
        self.key = tuple(_quoted(k) for k in key)
        self._mark = "%s" if paramstyle == "format" else "?"

    def _split(self, key: Any, values: Mapping[str, Any]
               ) -> Tuple[Tuple[Any, ...], List[Tuple[str, Any]]]:
        keys = tuple(key) if isinstance(key, (tuple, list)) else (key,)
        if len(keys) != len(self.key):
            raise ValueError(f"{len(self.key)} key value(s) expected, got {len(keys)}")
        columns = [(_quoted(c), v) for c, v in values.items()]
        if any(c == self.fence or c in self.key for c, _ in columns):
            raise ValueError("values must not set the fence or the key columns")
        return keys, columns

    def _where(self) -> str:
        return " AND ".join(f"{k} = {self._mark}" for k in self.key)

    def update_statement(self, key: Any, values: Mapping[str, Any], token: int
                         ) -> Tuple[str, List[Any]]:
        """The SQL and parameters of :meth:`update`, for a driver of your own (asyncio ones)."""
        keys, columns = self._split(key, values)
        m = self._mark
        sets = ", ".join([f"{c} = {m}" for c, _ in columns] + [f"{self.fence} = {m}"])
        sql = f"UPDATE {self.table} SET {sets} WHERE {self._where()} AND {self.fence} <= {m}"
        return sql, [v for _, v in columns] + [_token(token), *keys, token]

    def write_statement(self, key: Any, values: Mapping[str, Any], token: int
                        ) -> Tuple[str, List[Any]]:
        """The SQL and parameters of :meth:`write`."""
        keys, columns = self._split(key, values)
        m = self._mark
        names = list(self.key) + [c for c, _ in columns] + [self.fence]
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in names[len(self.key):])
        sql = (f"INSERT INTO {self.table} ({', '.join(names)}) "
               f"VALUES ({', '.join([m] * len(names))}) "
               f"ON CONFLICT ({', '.join(self.key)}) DO UPDATE SET {updates} "
               f"WHERE {self.table}.{self.fence} <= EXCLUDED.{self.fence}")
        return sql, [*keys, *[v for _, v in columns], _token(token)]

    def advance_statement(self, key: Any, token: int) -> Tuple[str, List[Any]]:
        """The SQL and parameters of :meth:`advance`."""
        keys, _ = self._split(key, {})
        m = self._mark
        sql = (f"UPDATE {self.table} SET {self.fence} = {m} "
               f"WHERE {self._where()} AND {self.fence} < {m}")
        return sql, [_token(token), *keys, token]

    def _refused(self, rowcount: int, token: int, what: str, key: Any) -> None:
        if rowcount == 0:
            raise StaleTokenError(token, None, f"{what} of {self.table} {key!r}")

    def update(self, cursor: Any, key: Any, values: Mapping[str, Any], token: int) -> None:
        """UPDATE the existing row ``key`` (a value, or a tuple for several key columns):
        ``SET <values>, fence = token WHERE <key> AND fence <= token``. 0 rows (a stale token,
        or no such row) raises StaleTokenError."""
        cursor.execute(*self.update_statement(key, values, token))
        self._refused(cursor.rowcount, token, "update (or no such row)", key)

    def write(self, cursor: Any, key: Any, values: Mapping[str, Any], token: int) -> None:
        """Insert the row or update it, fenced: ``INSERT ... ON CONFLICT (<key>) DO UPDATE ...
        WHERE fence <= token`` (PostgreSQL 9.5+, SQLite 3.24+). 0 rows: a stale holder."""
        cursor.execute(*self.write_statement(key, values, token))
        self._refused(cursor.rowcount, token, "write", key)

    def advance(self, cursor: Any, key: Any, token: int) -> bool:
        """Raises the row's fence to ``token`` without writing data (after a force unlock: the
        token counter's new value fences the evicted holder out of the table at once). True when
        it moved, False when the fence was there already (or no such row)."""
        cursor.execute(*self.advance_statement(key, token))
        return bool(cursor.rowcount)

    async def update_async(self, cursor: Any, key: Any, values: Mapping[str, Any],
                           token: int) -> None:
        """:meth:`update` with an asyncio driver's cursor (``await cursor.execute``)."""
        await cursor.execute(*self.update_statement(key, values, token))
        self._refused(cursor.rowcount, token, "update (or no such row)", key)

    async def write_async(self, cursor: Any, key: Any, values: Mapping[str, Any],
                          token: int) -> None:
        """:meth:`write` with an asyncio driver's cursor."""
        await cursor.execute(*self.write_statement(key, values, token))
        self._refused(cursor.rowcount, token, "write", key)
