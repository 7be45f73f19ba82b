"""The leaderboard's local store: SQLite (WAL) for runs and results, plain files for the submitted predictions.

The store is the source of truth; a Hub dataset repo, when configured, is a copy, and the runs not yet
copied are listed in the store (:meth:`Store.copy_pending`) so that a failed copy is retried, not lost. A
submission is committed in two steps, the file first (atomic rename) and the database row second, and
:meth:`Store.pending` lists files whose row is missing, so a crash between the two is reconciled on the next
start without loss or duplication (the run's key, a SHA-256 of its answers and mode, is unique).

Besides its scores, each run keeps what its rank needs: its Scheme-1 skill over the constant floor on the board's
shared bootstrap resamples (:func:`scitaste_hf.scoring.ranks.replicates`), per scope (overall and each
discipline), as float16 blobs in ``replicates``; and two marks of freshness, ``integrity_version`` (the integrity
rule that set its status) and ``derived`` (the key of the gold set and floors its scores and replicates were computed
against). A run stored by an older version lacks them and is brought up to date by
:meth:`scitaste_hf.leaderboard.Leaderboard.upgrade` (see :meth:`Store.stale`).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard.database import Database
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
    result TEXT NOT NULL,
    integrity_version INTEGER NOT NULL DEFAULT 0,
    derived TEXT NOT NULL DEFAULT '',
    provenance TEXT NOT NULL DEFAULT '',
    seal TEXT NOT NULL DEFAULT '',
    model_meta TEXT NOT NULL DEFAULT '',
    withheld TEXT,
    private INTEGER NOT NULL DEFAULT 0,
    details TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS hub_pending (sha256 TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS replicates (
    scope TEXT NOT NULL,
    run_id INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (scope, run_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS replicates_run ON replicates (run_id);
CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    model TEXT NOT NULL,
    source TEXT NOT NULL,
    revision TEXT NOT NULL DEFAULT '',
    mode TEXT NOT NULL,
    submitter TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    started_at TEXT NOT NULL DEFAULT '',
    finished_at TEXT NOT NULL DEFAULT '',
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until REAL NOT NULL DEFAULT 0,
    run_id INTEGER,
    knowledge_cutoff TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS requests_state ON requests (state, id);
"""
#: Version of the layout above (SQLite's ``user_version``): 1 added ``integrity_version``, ``derived`` and the
#: ``replicates`` table (keyed by scope first: a view reads one scope's replicates of every run at once); 2 added the
#: ``requests`` table (the queue of :mod:`scitaste_hf.leaderboard.requests`) and a run's ``provenance`` and ``seal``
#: (what the evaluation worker ran, and its HMAC: :func:`scitaste_hf.leaderboard.integrity.seal`); 3 added a run's
#: ``model_meta`` (its model's size, licence, base model, open weights and stated knowledge cutoff:
#: :mod:`scitaste_hf.leaderboard.metadata`) and a request's ``knowledge_cutoff``; 4 added a run's ``withheld`` (the
#: tool its samples log says it went without, "" for none; NULL until read, for a run stored before:
#: :meth:`~scitaste_hf.leaderboard.Leaderboard.upgrade` reads it once), ``private`` (the visibility the submitter chose
#: for the run's details dataset) and ``details`` (where that dataset stands: :data:`DETAILS_PENDING`, the repo it was
#: published to, or "" when none is published).
SCHEMA_VERSION = 4
#: Columns added since a table's first layout, with their definitions, for stores written before them.
_ADDED_COLUMNS = {"integrity_version": "INTEGER NOT NULL DEFAULT 0", "derived": "TEXT NOT NULL DEFAULT ''",
                  "provenance": "TEXT NOT NULL DEFAULT ''", "seal": "TEXT NOT NULL DEFAULT ''",
                  "model_meta": "TEXT NOT NULL DEFAULT ''", "withheld": "TEXT",
                  "private": "INTEGER NOT NULL DEFAULT 0", "details": "TEXT NOT NULL DEFAULT ''"}
_ADDED_REQUEST_COLUMNS = {"knowledge_cutoff": "TEXT NOT NULL DEFAULT ''"}
#: How replicates are stored: half precision (a skill's resampled values only decide ranks), 2 bytes a value.
REPLICATE_DTYPE = np.float16
#: The prefix of a request's key in ``hub_pending`` (no run's key, a hex digest, has it): a request whose state
#: changed waits there for the next copy of the database.
REQUEST_KEY = "request-"
#: A run's ``details`` while its details dataset waits to be published (:mod:`scitaste_hf.leaderboard.details`).
DETAILS_PENDING = "pending"
#: Most ids in one ``IN (...)`` list (SQLite's default limit on variables is far above it).
_CHUNK = 900

#: Run kinds: a community submission, a row of the offline baseline, or the bundled synthetic example.
KINDS = ("submission", "baseline", "example")
#: Integrity status of a run (see :mod:`scitaste_hf.leaderboard.integrity` for what each does and does not prove),
#: most trusted first: ``server-run`` only the board's own evaluation worker stores, with a seal.
FLAGGED, SELF_REPORTED, EVIDENCE_CONSISTENT = "flagged", "self-reported", "evidence-consistent"
SERVER_RUN = "server-run"
STATUSES = (SERVER_RUN, EVIDENCE_CONSISTENT, SELF_REPORTED, FLAGGED)
#: Former names of statuses, rewritten when a store is opened: "reproducible" claimed more than a samples log
#: consistent with the answers proves (anyone can write one).
RENAMED_STATUSES = {"reproducible": EVIDENCE_CONSISTENT}


#: The columns of a table row (everything but the full result).
_ROW_COLUMNS = ("id, sha256, model, mode, organisation, link, kind, status, submitted_at, n_scored, n_total, summary,"
                " derived, model_meta, withheld")


def _without_submitter(meta_file: Path) -> bytes:
    """A run's ``.meta.json`` as the Hub copy carries it: without its submitter."""
    meta = json.loads(meta_file.read_text("utf-8"))
    meta.pop("submitter", None)
    return json.dumps(meta).encode()


def _erase_submitters(copy: sqlite3.Connection) -> None:
    copy.execute("UPDATE runs SET submitter = ''")
    copy.execute("UPDATE requests SET submitter = '', lease_owner = ''")
    copy.commit()
    copy.execute("VACUUM")  # rebuilt page by page: no erased value is left in a page's free space


def _put_replicates(db: sqlite3.Connection, run_id: int, replicates: dict[str, np.ndarray]) -> None:
    # Clipped into float16's range first: a skill far below the floor (a run much worse than knowing nothing) keeps
    # its place, last, without an overflow warning; NaN (undefined on a resample) stays NaN.
    limit = float(np.finfo(REPLICATE_DTYPE).max)
    db.executemany("INSERT OR REPLACE INTO replicates (run_id, scope, data) VALUES (?, ?, ?)",
                   [(run_id, scope, np.clip(np.asarray(values, dtype=np.float64), -limit, limit)
                     .astype(REPLICATE_DTYPE).tobytes()) for scope, values in replicates.items()])


@dataclass(frozen=True)
class Meta:
    """What a submitter says about a run; for a run of the evaluation worker, also what it ran (``provenance``) and
    the seal over both (:func:`scitaste_hf.leaderboard.integrity.seal`), which only the worker's secret makes."""

    model: str
    mode: str
    organisation: str = ""
    link: str = ""
    kind: str = "submission"
    submitter: str = ""
    submitted_at: str = ""
    provenance: dict[str, Any] | None = None
    seal: str = ""
    model_meta: dict[str, Any] | None = None
    private: bool = False


class Store(Database):
    """Runs in ``DATA/leaderboard.sqlite``, submitted files in ``DATA/submissions/<sha256>.jsonl`` (with a
    ``.meta.json`` beside each, and optional ``.samples.jsonl`` / ``.trace.jsonl`` evidence).

    Parameters
    ----------
    data_dir : path
        The folder of the store; created if missing.
    read_only : bool
        Open an existing store without writing to it, and refuse a file that is not one of this layout's version
        (for a reader of another's store, such as ``scitaste release diff --runs``).
    """

    def __init__(self, data_dir: str | Path, *, read_only: bool = False) -> None:
        self.root = Path(data_dir)
        self.files = self.root / "submissions"
        # Per commit through this connection, the runs it changed (PRAGMA data_version counts only other
        # connections' commits): what a cache needs to catch up with this process's own writes.
        self._own: list[tuple[int, ...]] = []
        self._touched: list[int] = []
        if read_only:
            super().__init__(self.root / "leaderboard.sqlite", _SCHEMA, SCHEMA_VERSION, read_only=True)
            self._check_layout()
            return
        self.files.mkdir(parents=True, exist_ok=True)
        super().__init__(self.root / "leaderboard.sqlite", _SCHEMA, SCHEMA_VERSION,
                         {"runs": _ADDED_COLUMNS, "requests": _ADDED_REQUEST_COLUMNS})
        self._rename_statuses()

    def _check_layout(self) -> None:
        """Refuse, closed, a file that is not a store of :data:`SCHEMA_VERSION` (a foreign SQLite file, another
        file, or a store that an older version wrote and that has not been opened for writing since)."""
        where = self.root / "leaderboard.sqlite"
        try:
            version = self.query("PRAGMA user_version")[0][0]
            tables = {r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            self.close()
            raise ScitasteError(f"{where} is not a leaderboard store ({exc})") from None
        if version != SCHEMA_VERSION or not {"runs", "replicates", "hub_pending", "requests"} <= tables:
            self.close()
            raise ScitasteError(f"{where} is not a leaderboard store of this version (layout {version}, tables "
                                f"{', '.join(sorted(tables)) or 'none'}; a store's is {SCHEMA_VERSION})")

    def _rename_statuses(self) -> None:
        """Rewrite the statuses of :data:`RENAMED_STATUSES` in a store written before the rename (idempotent; no
        write, and so no write lock, when none is left)."""
        old = tuple(RENAMED_STATUSES)
        marks = ", ".join("?" * len(old))
        if not self.query(f"SELECT 1 FROM runs WHERE status IN ({marks}) LIMIT 1", old):
            return
        with self.transaction() as db:
            db.executemany("UPDATE runs SET status = ? WHERE status = ?", [(n, o) for o, n in RENAMED_STATUSES.items()])

    def _committed(self) -> None:
        self._own.append(tuple(self._touched))
        self._touched.clear()

    def _rolled_back(self) -> None:
        self._touched.clear()

    def change_marker(self) -> tuple[int, int]:
        """A value that changes whenever the store does, whoever wrote to it: SQLite's ``data_version`` (commits
        by other connections, other processes included) and the number of this connection's own commits."""
        with self._lock:  # both read at one moment: no commit of this connection in between
            return self._db.execute("PRAGMA data_version").fetchone()[0], len(self._own)

    def own_changes(self, since: int) -> set[int]:
        """The runs changed by this connection's commits after the first ``since`` (see :meth:`change_marker`)."""
        with self._lock:
            return {run_id for commit in self._own[since:] for run_id in commit}

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

    def has(self, sha256: str) -> int | None:
        """The id of the run with this key, if stored."""
        rows = self.query("SELECT id FROM runs WHERE sha256 = ?", (sha256,))
        return int(rows[0]["id"]) if rows else None

    def insert(self, sha256: str, meta: Meta, status: str, summary: dict[str, Any], result: dict[str, Any],
               n_scored: int, n_total: int, *, copy: bool = False, replicates: dict[str, np.ndarray] | None = None,
               integrity_version: int = 0, derived: str = "", withheld: str | None = None, details: str = "") -> int:
        """Insert a scored run; a run already stored under ``sha256`` is returned unchanged (a no-op).

        With ``copy``, the run is also listed as waiting for its Hub copy, in the same transaction, so that a
        crash cannot leave a stored run that is never copied. ``replicates`` (scope -> values),
        ``integrity_version`` and ``derived`` are stored with it (see the module docstring); left out, the run is
        brought up to date on the next open, as is ``withheld`` (the tool its log says it went without) left None.
        ``details`` is :data:`DETAILS_PENDING` for a run whose details dataset is to be published.
        """
        with self.transaction() as db:
            row = db.execute("SELECT id FROM runs WHERE sha256 = ?", (sha256,)).fetchone()
            if row is not None:
                return int(row["id"])
            cur = db.execute(
                "INSERT INTO runs (sha256, model, mode, organisation, link, kind, status, submitter, submitted_at,"
                " n_scored, n_total, summary, result, integrity_version, derived, provenance, seal, model_meta,"
                " withheld, private, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (sha256, meta.model, meta.mode, meta.organisation, meta.link, meta.kind, status, meta.submitter,
                 meta.submitted_at, n_scored, n_total, json.dumps(summary), json.dumps(result), integrity_version,
                 derived, json.dumps(meta.provenance) if meta.provenance else "", meta.seal,
                 json.dumps(meta.model_meta) if meta.model_meta else "", withheld, int(meta.private), details),
            )
            run_id = int(cur.lastrowid)
            self._touched.append(run_id)
            _put_replicates(db, run_id, replicates or {})
            if copy:
                db.execute("INSERT OR IGNORE INTO hub_pending (sha256) VALUES (?)", (sha256,))
            return run_id

    def stale(self, integrity_version: int, derived: str) -> list[sqlite3.Row]:
        """Runs to bring up to date: their status was set by an older integrity rule than ``integrity_version``,
        or their scores and replicates were not computed against ``derived`` (an older store, another gold set
        or other floors). Those of an older rule come first: a copy that an old rule let through is the more
        urgent."""
        return self.query(
            "SELECT id, sha256, mode, status, integrity_version, derived FROM runs"
            " WHERE integrity_version < ? OR derived != ? ORDER BY integrity_version < ? DESC, id",
            (integrity_version, derived, integrity_version))

    def set_status(self, run_id: int, status: str, integrity_version: int) -> None:
        """Record a run's status as decided by integrity rule ``integrity_version``."""
        with self.transaction() as db:
            self._touched.append(run_id)
            db.execute("UPDATE runs SET status = ?, integrity_version = ? WHERE id = ?",
                       (status, integrity_version, run_id))

    def set_derived(self, run_id: int, summary: dict[str, Any], result: dict[str, Any],
                    replicates: dict[str, np.ndarray], derived: str) -> None:
        """Replace a run's scores and replicates by ones computed against ``derived``."""
        with self.transaction() as db:
            self._touched.append(run_id)
            db.execute("UPDATE runs SET summary = ?, result = ?, derived = ? WHERE id = ?",
                       (json.dumps(summary), json.dumps(result), derived, run_id))
            db.execute("DELETE FROM replicates WHERE run_id = ?", (run_id,))
            _put_replicates(db, run_id, replicates)

    def unread_withheld(self) -> list[sqlite3.Row]:
        """The runs whose ``withheld`` is not read yet (stored before layout 4, or reconciled after a crash)."""
        return self.query("SELECT id, sha256, mode FROM runs WHERE withheld IS NULL ORDER BY id")

    def set_withheld(self, values: dict[int, str]) -> None:
        """Record each run's withheld tool (run id -> tool, "" for none), in one transaction."""
        with self.transaction() as db:
            self._touched.extend(values)
            db.executemany("UPDATE runs SET withheld = ? WHERE id = ?", [(t, i) for i, t in values.items()])

    def details_pending(self) -> list[int]:
        """The runs whose details dataset waits to be published, oldest first."""
        return [int(r["id"]) for r in self.query("SELECT id FROM runs WHERE details = ? ORDER BY id",
                                                 (DETAILS_PENDING,))]

    def set_details(self, run_id: int, state: str) -> None:
        """Record where a run's details dataset stands (:data:`DETAILS_PENDING`, or the repo it was published to)."""
        with self.transaction() as db:
            db.execute("UPDATE runs SET details = ? WHERE id = ?", (state, run_id))

    def states(self) -> list[tuple[int, str, str]]:
        """Every run's ``(id, status, derived)``: what tells a cache of the runs what changed (plain tuples: read on
        every change of a board of 10,000 runs)."""
        with self._lock:
            cursor = self._db.cursor()
            cursor.row_factory = None
            return cursor.execute("SELECT id, status, derived FROM runs").fetchall()

    def rows_by_id(self, ids: list[int]) -> list[sqlite3.Row]:
        """The runs ``ids`` as :meth:`rows` gives them (in no particular order)."""
        out: list[sqlite3.Row] = []
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start:start + _CHUNK]
            out += self.query(f"SELECT {_ROW_COLUMNS} FROM runs WHERE id IN ({', '.join('?' * len(chunk))})",
                               tuple(chunk))
        return out

    def replicates_of(self, run_id: int) -> dict[str, np.ndarray]:
        """Scope -> the replicates of one run (as stored)."""
        rows = self.query("SELECT scope, data FROM replicates WHERE run_id = ?", (run_id,))
        return {r["scope"]: np.frombuffer(r["data"], dtype=REPLICATE_DTYPE) for r in rows}

    def replicates(self, scope: str, ids: list[int] | None = None) -> dict[int, np.ndarray]:
        """Run id -> its replicates of ``scope`` (as stored: :data:`REPLICATE_DTYPE`), for the runs ``ids`` (default:
        every run)."""
        if ids is None:
            rows = self.query("SELECT run_id, data FROM replicates WHERE scope = ?", (scope,))
        else:
            rows = []
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start:start + _CHUNK]
                rows += self.query("SELECT run_id, data FROM replicates WHERE scope = ? AND run_id IN "
                                    f"({', '.join('?' * len(chunk))})", (scope, *chunk))
        return {int(r["run_id"]): np.frombuffer(r["data"], dtype=REPLICATE_DTYPE) for r in rows}

    def copy_pending(self) -> list[str]:
        """The keys of the runs whose Hub copy has not succeeded yet, and of the requests (``request-<id>``, whose
        rows go up in the database's copy) changed since the last copy."""
        return [row["sha256"] for row in self.query("SELECT sha256 FROM hub_pending ORDER BY sha256")]

    def copy_done(self, keys: list[str]) -> None:
        """Record that the runs ``keys`` are on the Hub."""
        with self.transaction() as db:
            db.executemany("DELETE FROM hub_pending WHERE sha256 = ?", [(k,) for k in keys])

    def hub_files(self, keys: list[str]) -> tuple[list[tuple[str, str | bytes]], str]:
        """What the Hub copy of the runs ``keys`` uploads, as (path in the repo, local file or bytes): their
        submitted files and a snapshot of the database; and the commit message.

        The copy carries no submitter: the local store keeps it (an address or a user name), while the repo may be
        public and an address must not leave the machine; a digest of one would be reversed by trying the 2^32
        IPv4 addresses, and nothing in the copy needs to tell submitters apart."""
        files: list[tuple[str, str | bytes]] = [
            (f"submissions/{p.name}", _without_submitter(p) if p.name.endswith(".meta.json") else str(p))
            for key in keys for p in sorted(self.files.glob(f"{key}.*")) if p.is_file()]
        runs = sum(not key.startswith(REQUEST_KEY) for key in keys)
        message = f"Add {runs} run(s)" + (f", update {len(keys) - runs} request(s)" if runs < len(keys) else "")
        return [*files, ("leaderboard.sqlite", self.snapshot(_erase_submitters))], message

    def hub_private(self, keys: list[str]) -> set[str]:
        """The paths of :meth:`hub_files` that go only to a private repo: the submitted files (answers, reasoning,
        traces) of the runs among ``keys`` whose submitter chose private details. A public repo gets the run's row in
        the database's copy, as the board shows it, and not its files."""
        private: set[str] = set()
        for start in range(0, len(keys), _CHUNK):
            chunk = tuple(keys[start:start + _CHUNK])
            private.update(row["sha256"] for row in self.query(
                f"SELECT sha256 FROM runs WHERE private = 1 AND sha256 IN ({', '.join('?' * len(chunk))})", chunk))
        return {f"submissions/{p.name}" for key in private for p in self.files.glob(f"{key}.*")}

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

    def sealed_or_claimed(self) -> list[int]:
        """The runs that carry a seal or claim ``server-run``: those whose seal is checked when the board opens."""
        return [int(r["id"]) for r in self.query("SELECT id FROM runs WHERE seal != '' OR status = ? ORDER BY id",
                                                 (SERVER_RUN,))]

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
        return self.query(f"SELECT {_ROW_COLUMNS} FROM runs ORDER BY id DESC")

    def run(self, run_id: int) -> sqlite3.Row | None:
        """One run with its full result."""
        rows = self.query("SELECT * FROM runs WHERE id = ?", (run_id,))
        return rows[0] if rows else None
