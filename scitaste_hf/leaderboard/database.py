"""One SQLite database in WAL mode, shared by the threads of a process and by other processes on the same folder:
the machinery under both stores of the Space, the runs (:class:`~scitaste_hf.leaderboard.store.Store`) and the
expert ratings (:class:`~scitaste_hf.ratings.store.RatingStore`).

Writes are serialised in this process by a lock and across processes by ``BEGIN IMMEDIATE``; reads take the same
lock (see :meth:`Database.query`). A store's layout is created, or brought up to its version, when it is opened.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def timestamp() -> str:
    """The time a row is written, as every stored time is: UTC, ISO 8601, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class Database:
    """A SQLite file opened in WAL mode with its layout brought up to ``version``.

    Parameters
    ----------
    path : path
        The database file; its folder must exist.
    schema : str
        ``CREATE ... IF NOT EXISTS`` statements of the current layout, separated by ``;``.
    version : int
        The layout's version, kept in SQLite's ``user_version``; a file below it runs ``schema`` and gets the
        columns of ``added_columns`` that it lacks.
    added_columns : mapping of table to (column -> definition)
        Columns added to a table after its first layout, for files written before them.
    read_only : bool
        Open an existing file without writing to it (SQLite's ``mode=ro``): no layout is created or upgraded, and
        any write fails; for a reader of a file that is not its own.
    """

    def __init__(self, path: str | Path, schema: str, version: int,
                 added_columns: Mapping[str, Mapping[str, str]] | None = None, *, read_only: bool = False) -> None:
        self._lock = threading.Lock()
        if read_only:
            self._db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False,
                                       isolation_level=None)
            self._db.row_factory = sqlite3.Row
            return
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._migrate(schema, version, added_columns or {})

    def _migrate(self, schema: str, version: int, added_columns: Mapping[str, Mapping[str, str]]) -> None:
        """Bring a file written by an older version to ``version`` (idempotent; one writer at a time, so two
        processes opening an old file at once add each column once)."""
        if self._db.execute("PRAGMA user_version").fetchone()[0] >= version:
            return
        with self.transaction() as db:
            for statement in filter(str.strip, schema.split(";")):
                db.execute(statement)
            for table, columns in added_columns.items():
                present = {row["name"] for row in db.execute(f"PRAGMA table_info({table})")}
                for name, definition in columns.items():
                    if name not in present:
                        db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {definition}")
            db.execute(f"PRAGMA user_version = {int(version)}")

    def close(self) -> None:
        """Close the database connection, once no other thread is using it: closed under a thread's statement (a
        board closed while its details are published in the background), SQLite crashes the process."""
        with self._lock:
            self._db.close()

    def _committed(self) -> None:
        """Called under the lock after each commit of :meth:`transaction` (a subclass records what it changed)."""

    def _rolled_back(self) -> None:
        """Called under the lock after each rollback of :meth:`transaction`."""

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One writer at a time, in this process (a lock) and across processes (BEGIN IMMEDIATE)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                self._rolled_back()
                raise
            self._db.execute("COMMIT")
            self._committed()

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """The rows of one read.

        Under the writers' lock: a read still open on this shared connection while a thread begins a write would
        pin an old snapshot, and after another process's commit that write fails at once ("database is locked").
        """
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def snapshot(self, prepare=None) -> bytes:
        """A consistent copy of the database as bytes (SQLite's backup API; the WAL is included), first changed by
        ``prepare(connection)`` when given (what a copy leaves out)."""
        with self._lock:
            copy = sqlite3.connect(":memory:")
            self._db.backup(copy)
        try:
            if prepare is not None:
                prepare(copy)
            return copy.serialize()
        finally:
            copy.close()
