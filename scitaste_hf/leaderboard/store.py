"""The leaderboard's local store: SQLite (WAL) for runs and results, plain files for the submitted predictions.

The store is the source of truth; a Hub dataset repo, when configured, is a copy, and the runs not yet
copied are listed in the store (:meth:`Store.copy_pending`) so that a failed copy is retried, not lost. A
submission is committed in two steps, the file first (atomic rename) and the database row second, and
:meth:`Store.pending` lists files whose row is missing, so a crash between the two is reconciled on the next
start without loss or duplication (the run's key, a SHA-256 of its answers and mode, is unique).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scitaste_hf.output import write_bytes_atomic

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sha256 TEXT NOT NULL UNIQUE,
    model TEXT NOT NULL,
    mode TEXT NOT NULL,
    organisation TEXT NOT NULL DEFAULT '',
    link TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL DEFAULT 'submission',
    status TEXT NOT NULL,
    submitter TEXT NOT NULL DEFAULT '',
    submitted_at TEXT NOT NULL,
    n_scored INTEGER NOT NULL,
    n_total INTEGER NOT NULL,
    summary TEXT NOT NULL,
    result TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hub_pending (sha256 TEXT PRIMARY KEY);
"""

#: Run kinds: a community submission, a row of the offline baseline, or the bundled synthetic example.
KINDS = ("submission", "baseline", "example")
#: Integrity status of a run (see :mod:`scitaste_hf.leaderboard.integrity` for what each does and does not prove).
FLAGGED, SELF_REPORTED, EVIDENCE_CONSISTENT = "flagged", "self-reported", "evidence-consistent"
STATUSES = (EVIDENCE_CONSISTENT, SELF_REPORTED, FLAGGED)
#: Former names of statuses, rewritten when a store is opened: "reproducible" claimed more than a samples log
#: consistent with the answers proves (anyone can write one).
RENAMED_STATUSES = {"reproducible": EVIDENCE_CONSISTENT}


@dataclass(frozen=True)
class Meta:
    """What a submitter says about a run."""

    model: str
    mode: str
    organisation: str = ""
    link: str = ""
    kind: str = "submission"
    submitter: str = ""
    submitted_at: str = ""


class Store:
    """Runs in ``DATA/leaderboard.sqlite``, submitted files in ``DATA/submissions/<sha256>.jsonl`` (with a
    ``.meta.json`` beside each, and optional ``.samples.jsonl`` / ``.trace.jsonl`` evidence).

    Parameters
    ----------
    data_dir : path
        The folder of the store; created if missing.
    """

    def __init__(self, data_dir: str | Path) -> None:
        self.root = Path(data_dir)
        self.files = self.root / "submissions"
        self.files.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.root / "leaderboard.sqlite", check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._rename_statuses()

    def _rename_statuses(self) -> None:
        """Rewrite the statuses of :data:`RENAMED_STATUSES` in a store written before the rename (idempotent; no
        write, and so no write lock, when none is left)."""
        old = tuple(RENAMED_STATUSES)
        marks = ", ".join("?" * len(old))
        if not self._query(f"SELECT 1 FROM runs WHERE status IN ({marks}) LIMIT 1", old):
            return
        with self.transaction() as db:
            db.executemany("UPDATE runs SET status = ? WHERE status = ?", [(n, o) for o, n in RENAMED_STATUSES.items()])

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One writer at a time, in this process (a lock) and across processes (BEGIN IMMEDIATE)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def write_file(self, name: str, data: bytes) -> Path:
        """Write ``submissions/<name>`` atomically (temporary file, fsync, rename)."""
        return write_bytes_atomic(self.files / name, data, fsync=True)

    def store_submission(self, sha256: str, data: bytes, meta: Meta, evidence: dict[str, bytes]) -> None:
        """Store the predictions file, its metadata and evidence; the predictions file is written last, so
        its presence means the submission is complete on disk."""
        self.write_file(f"{sha256}.meta.json", json.dumps(meta.__dict__).encode())
        for kind, blob in evidence.items():
            self.write_file(f"{sha256}.{kind}.jsonl", blob)
        self.write_file(f"{sha256}.jsonl", data)

    def snapshot(self) -> bytes:
        """A consistent copy of the database as bytes (SQLite's backup API; the WAL is included)."""
        with self._lock:
            copy = sqlite3.connect(":memory:")
            self._db.backup(copy)
        try:
            return copy.serialize()
        finally:
            copy.close()

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        # Under the writers' lock: a read still open on this shared connection while a thread begins a write would
        # pin an old snapshot, and after another process's commit that write fails at once ("database is locked").
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def has(self, sha256: str) -> int | None:
        """The id of the run with this key, if stored."""
        rows = self._query("SELECT id FROM runs WHERE sha256 = ?", (sha256,))
        return int(rows[0]["id"]) if rows else None

    def insert(self, sha256: str, meta: Meta, status: str, summary: dict[str, Any], result: dict[str, Any],
               n_scored: int, n_total: int, *, copy: bool = False) -> int:
        """Insert a scored run; a run already stored under ``sha256`` is returned unchanged (a no-op).

        With ``copy``, the run is also listed as waiting for its Hub copy, in the same transaction, so that a
        crash cannot leave a stored run that is never copied.
        """
        with self.transaction() as db:
            row = db.execute("SELECT id FROM runs WHERE sha256 = ?", (sha256,)).fetchone()
            if row is not None:
                return int(row["id"])
            cur = db.execute(
                "INSERT INTO runs (sha256, model, mode, organisation, link, kind, status, submitter, submitted_at,"
                " n_scored, n_total, summary, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (sha256, meta.model, meta.mode, meta.organisation, meta.link, meta.kind, status, meta.submitter,
                 meta.submitted_at, n_scored, n_total, json.dumps(summary), json.dumps(result)),
            )
            if copy:
                db.execute("INSERT OR IGNORE INTO hub_pending (sha256) VALUES (?)", (sha256,))
            return int(cur.lastrowid)

    def copy_pending(self) -> list[str]:
        """The keys of the runs whose Hub copy has not succeeded yet."""
        return [row["sha256"] for row in self._query("SELECT sha256 FROM hub_pending ORDER BY sha256")]

    def copy_done(self, keys: list[str]) -> None:
        """Record that the runs ``keys`` are on the Hub."""
        with self.transaction() as db:
            db.executemany("DELETE FROM hub_pending WHERE sha256 = ?", [(k,) for k in keys])

    def pending(self) -> list[tuple[str, Meta]]:
        """Submissions whose file is on disk but whose row is not: a crash came between the two."""
        out = []
        for path in sorted(self.files.glob("*.jsonl")):
            sha = path.name.split(".")[0]
            if path.name == f"{sha}.jsonl" and self.has(sha) is None:
                meta_path = self.files / f"{sha}.meta.json"
                if meta_path.is_file():
                    out.append((sha, Meta(**json.loads(meta_path.read_text("utf-8")))))
        return out

    def evidence(self, sha256: str) -> dict[str, bytes]:
        """The evidence files stored with a submission (``samples``, ``trace``)."""
        out = {}
        for kind in ("samples", "trace"):
            path = self.files / f"{sha256}.{kind}.jsonl"
            if path.is_file():
                out[kind] = path.read_bytes()
        return out

    def submission_file(self, sha256: str) -> Path:
        """The stored predictions file of a run."""
        return self.files / f"{sha256}.jsonl"

    def rows(self) -> list[sqlite3.Row]:
        """Every stored run, newest first, without the full results."""
        return self._query(
            "SELECT id, sha256, model, mode, organisation, link, kind, status, submitted_at, n_scored, n_total, summary"
            " FROM runs ORDER BY id DESC")

    def run(self, run_id: int) -> sqlite3.Row | None:
        """One run with its full result."""
        rows = self._query("SELECT * FROM runs WHERE id = ?", (run_id,))
        return rows[0] if rows else None
