"""The board's request queue: models that a visitor asks the board itself to evaluate, and the leases under which an
evaluation worker (``scitaste worker``) runs them.

A request names a model (a Hub model id with an optional revision, or the name of one of the operator's endpoints,
:func:`operator_endpoints`) and one mode; a visitor who asks for several modes makes one request per mode. Requests
live in the store's database (the ``requests`` table of :mod:`scitaste_hf.leaderboard.store`), go up with its Hub copy,
and move through :data:`REQUEST_STATES`:

``pending`` (queued; its position counts from 1) -> ``running`` (a worker holds its lease) -> ``finished`` (with the
run it produced) or ``failed`` (with a one-line reason); ``cancelled`` by its submitter (or the operator) while
pending or running: a running one's worker stops within a poll of its lease (the paper in flight is dropped) and
stores nothing.

Two workers never run one request: a worker *claims* a request in one write transaction (``BEGIN IMMEDIATE``),
which gives it a lease of ``lease_s`` seconds that it renews while it works (:meth:`RequestQueue.renew`); a worker
that dies stops renewing, and once the lease has expired another worker claims the request again, as another
attempt, and resumes it from lm-eval's per-paper cache. A request claimed :data:`MAX_ATTEMPTS` times without an end
is failed. Only the lease's holder can end a request, so a worker that lost its lease stores nothing. A queue kept
on the Hub for workers elsewhere (:mod:`scitaste_hf.leaderboard.hub_queue`) leases there, and the board takes its
leases and outcomes in (:meth:`RequestQueue.held_elsewhere`, :meth:`RequestQueue.settle`).
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scitaste_hf import constants
from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard.database import timestamp
from scitaste_hf.leaderboard.store import REQUEST_KEY, Store
from scitaste_hf.net.guard import SubmissionError, check_name

PENDING, RUNNING, FINISHED, FAILED, CANCELLED = "pending", "running", "finished", "failed", "cancelled"
#: The states of a request, in the order a request moves through them.
REQUEST_STATES = (PENDING, RUNNING, FINISHED, FAILED, CANCELLED)
#: States in which a request of the same model, revision and mode makes a new one a duplicate (a failed or
#: cancelled one may be asked for again).
DUPLICATE_STATES = (PENDING, RUNNING, FINISHED)
#: Where a request's model comes from: open weights on the Hub, or one of the operator's endpoints.
SOURCES = ("hub", "endpoint")
#: Seconds a claim holds a request before another worker may take it over (renewed while the worker runs it).
LEASE_S = 120.0
#: Claims of one request before it is failed: a worker lost each time (killed, out of memory, the machine gone).
MAX_ATTEMPTS = 3
#: A Hub model id: ``owner/name`` (the Hub's own characters).
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9_.][A-Za-z0-9_.-]{0,95}$")
#: A revision: a branch, a tag or a commit hash.
_REVISION = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_./-]{0,99}$")


@dataclass(frozen=True)
class Endpoint:
    """One of the operator's OpenAI-compatible endpoints: the name a request gives, the URL root (ending in ``/v1``),
    the model name the server expects and extra ``--model_args`` of ``scitaste-agent`` (a profile, timeouts); its key
    is the operator's :data:`~scitaste_hf.constants.OPENAI_API_KEY`, never a submitter's."""

    name: str
    base_url: str
    model: str
    model_args: str = ""


def operator_endpoints() -> dict[str, Endpoint]:
    """The endpoints of :data:`~scitaste_hf.constants.SCITASTE_ENDPOINTS` (a JSON file of ``{NAME: {"base_url",
    "model", "model_args"}}``), by name; empty when it is unset.

    Raises
    ------
    ScitasteError
        For a file that cannot be read or an entry without a ``base_url`` and ``model``.
    """
    from scitaste_hf.bounded_load import load_json

    path = constants.read(constants.SCITASTE_ENDPOINTS)
    if not path:
        return {}
    data = load_json(path, "SCITASTE_ENDPOINTS")
    if not isinstance(data, dict):
        raise ScitasteError(f"SCITASTE_ENDPOINTS {path}: expected a JSON object of endpoint name -> settings")
    out = {}
    for name, entry in data.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("base_url"), str) and isinstance(entry.get("model"),
                                                                                                   str)):
            raise ScitasteError(f"SCITASTE_ENDPOINTS {path}: endpoint {name!r} needs a base_url and a model")
        out[check_name(name, "endpoint name")] = Endpoint(name, entry["base_url"], entry["model"],
                                                          str(entry.get("model_args") or ""))
    return out


def _holder_is(row: sqlite3.Row | None, owner: str) -> bool:
    """Whether a request's row says that ``owner`` holds it: running under its lease."""
    return row is not None and row["state"] == RUNNING and row["lease_owner"] == owner


def check_model(model: str, revision: str, endpoints: Sequence[str]) -> tuple[str, str, str]:
    """Validate what a visitor names: one of ``endpoints`` (without a revision) or a Hub model id with an optional
    revision. Returns (model, source, revision), stripped."""
    model = check_name(model, "model")
    revision = (revision or "").strip() if isinstance(revision, str) else revision
    if model in endpoints:
        if revision:
            raise SubmissionError(f"model {model} is one of the board's endpoints, which have no revision")
        return model, "endpoint", ""
    named = f" or one of the board's endpoints ({', '.join(endpoints)})" if endpoints else ""
    model, revision = check_hub_model(model, revision, f"model: a Hub model id (owner/name){named}")
    return model, "hub", revision


def check_hub_model(model: str, revision: str, what: str = "Hub model id: owner/name") -> tuple[str, str]:
    """A Hub model id and an optional revision (a branch, tag or commit), stripped; :class:`SubmissionError` with
    ``what`` for a malformed id, in one line."""
    model = (model or "").strip() if isinstance(model, str) else model
    revision = (revision or "").strip() if isinstance(revision, str) else revision
    if not (isinstance(model, str) and _HUB_ID.match(model)):
        raise SubmissionError(what)
    if revision and not (isinstance(revision, str) and _REVISION.match(revision)):
        raise SubmissionError("revision: a branch, tag or commit hash (letters, digits and ._/- only)")
    return model, revision


class RequestQueue:
    """The requests of a :class:`~scitaste_hf.leaderboard.store.Store` (same database, same locks).

    Parameters
    ----------
    store : Store
    copy : bool
        List each change of state for the store's Hub copy (the board has a copy configured).
    """

    def __init__(self, store: Store, *, copy: bool = False) -> None:
        self.store = store
        self.copy = copy

    def _changed(self, db: sqlite3.Connection, request_id: int) -> None:
        if self.copy:
            db.execute("INSERT OR IGNORE INTO hub_pending (sha256) VALUES (?)", (f"{REQUEST_KEY}{request_id}",))

    def add(self, model: str, source: str, revision: str, modes: Sequence[str], submitter: str,
            knowledge_cutoff: str = "") -> list[int]:
        """Queue one request per mode, all or none, with the model's knowledge cutoff as the submitter states it;
        refused (:class:`SubmissionError`) when one of them duplicates a request of :data:`DUPLICATE_STATES`."""
        with self.store.transaction() as db:
            for mode in modes:
                row = db.execute("SELECT id, state FROM requests WHERE model = ? AND revision = ? AND mode = ? AND"
                                 f" state IN ({', '.join('?' * len(DUPLICATE_STATES))}) ORDER BY id LIMIT 1",
                                 (model, revision, mode, *DUPLICATE_STATES)).fetchone()
                if row is not None:
                    raise SubmissionError(f"{model}{'@' + revision if revision else ''} in mode {mode} is already "
                                          f"request #{row['id']} ({row['state']}); nothing queued")
            ids = []
            for mode in modes:
                cur = db.execute("INSERT INTO requests (model, source, revision, mode, submitter, state, created_at,"
                                 " knowledge_cutoff) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                 (model, source, revision, mode, submitter, PENDING, timestamp(), knowledge_cutoff))
                ids.append(int(cur.lastrowid))
                self._changed(db, ids[-1])
            return ids

    def get(self, request_id: int) -> dict[str, Any] | None:
        """One request as a dict of its columns, or None."""
        rows = self.store.query("SELECT * FROM requests WHERE id = ?", (request_id,))
        return dict(rows[0]) if rows else None

    def listing(self) -> list[dict[str, Any]]:
        """Every request, newest first, as the Queue tab shows it: id, model, revision, source, mode, state, reason,
        ``position`` (1 for the next pending one; None unless pending), the times, attempts and the run it produced
        (no submitter, no lease holder)."""
        rows = self.store.query("SELECT id, model, source, revision, mode, state, reason, created_at, started_at,"
                                " finished_at, attempts, run_id FROM requests ORDER BY id DESC")
        pending = sorted(int(r["id"]) for r in rows if r["state"] == PENDING)
        where = {request_id: k + 1 for k, request_id in enumerate(pending)}
        return [{**dict(r), "position": where.get(int(r["id"]))} for r in rows]

    def cancel(self, request_id: int, submitter: str | None) -> None:
        """Cancel a pending or running request of ``submitter`` (None: the operator's, any request);
        :class:`SubmissionError` otherwise, in one line. A running one's worker finds its lease gone and stops."""
        with self.store.transaction() as db:
            row = db.execute("SELECT state, submitter FROM requests WHERE id = ?", (request_id,)).fetchone()
            if row is None or (submitter is not None and row["submitter"] != submitter):
                raise SubmissionError(f"no request #{request_id} of yours" if submitter is not None
                                      else f"no request #{request_id}")
            if row["state"] not in (PENDING, RUNNING):
                raise SubmissionError(f"request #{request_id} is {row['state']}; only a pending or running request "
                                      "is cancelled")
            db.execute("UPDATE requests SET state = ?, finished_at = ?, lease_owner = '', lease_until = 0 WHERE id = ?",
                       (CANCELLED, timestamp(), request_id))
            self._changed(db, request_id)

    def requeue(self, request_id: int) -> None:
        """Put a finished or failed request back in the queue (the gold set or the task version changed): pending
        again, its attempts, reason and lease cleared; the run it produced stays on the board until a new one
        replaces it as the request's run."""
        with self.store.transaction() as db:
            row = db.execute("SELECT state FROM requests WHERE id = ?", (request_id,)).fetchone()
            if row is None:
                raise ScitasteError(f"no request #{request_id}")
            if row["state"] not in (FINISHED, FAILED):
                raise ScitasteError(f"request #{request_id} is {row['state']}; only a finished or failed request is "
                                    "queued again")
            db.execute("UPDATE requests SET state = ?, reason = '', attempts = 0, lease_owner = '', lease_until = 0,"
                       " started_at = '', finished_at = '' WHERE id = ?", (PENDING, request_id))
            self._changed(db, request_id)

    def claim(self, owner: str, *, lease_s: float = LEASE_S, max_attempts: int = MAX_ATTEMPTS
              ) -> dict[str, Any] | None:
        """Take the oldest request that is pending or whose lease has expired, under a lease of ``lease_s`` seconds
        held by ``owner``; None when there is none. One claimed ``max_attempts`` times already is failed instead."""
        while True:
            with self.store.transaction() as db:
                now = time.time()
                row = db.execute("SELECT * FROM requests WHERE state = ? OR (state = ? AND lease_until < ?)"
                                 " ORDER BY id LIMIT 1", (PENDING, RUNNING, now)).fetchone()
                if row is None:
                    return None
                if row["attempts"] >= max_attempts:
                    db.execute("UPDATE requests SET state = ?, reason = ?, finished_at = ?, lease_owner = '' WHERE"
                               " id = ?", (FAILED, f"no end after {row['attempts']} attempts (the worker was lost each"
                                           " time: killed, out of memory or its machine gone)", timestamp(), row["id"]))
                    self._changed(db, row["id"])
                    continue
                db.execute("UPDATE requests SET state = ?, attempts = attempts + 1, lease_owner = ?, lease_until = ?,"
                           " started_at = CASE started_at WHEN '' THEN ? ELSE started_at END WHERE id = ?",
                           (RUNNING, owner, now + lease_s, timestamp(), row["id"]))
                self._changed(db, row["id"])
                return dict(db.execute("SELECT * FROM requests WHERE id = ?", (row["id"],)).fetchone())

    def _held(self, db: sqlite3.Connection, request_id: int, owner: str) -> bool:
        return _holder_is(db.execute("SELECT state, lease_owner FROM requests WHERE id = ?", (request_id,)).fetchone(),
                          owner)

    def holds(self, request_id: int, owner: str) -> bool:
        """Whether ``owner`` still holds ``request_id`` (one read: what a worker asks between renewals, so that a
        cancelled request stops at once; a read, so no write lock every poll)."""
        rows = self.store.query("SELECT state, lease_owner FROM requests WHERE id = ?", (request_id,))
        return _holder_is(rows[0] if rows else None, owner)

    def held_elsewhere(self, request_id: int, owner: str, until: float, attempts: int, started_at: str) -> bool:
        """Record that a worker of the Hub's queue holds a pending or running request (its lease, read from the
        repo): shown as running, and taken by no local worker before ``until``. False when nothing changed."""
        with self.store.transaction() as db:
            row = db.execute("SELECT state, lease_owner, lease_until, attempts FROM requests WHERE id = ?",
                             (request_id,)).fetchone()
            if row is None or row["state"] not in (PENDING, RUNNING) or (
                    tuple(row) == (RUNNING, owner, until, attempts)):
                return False
            db.execute("UPDATE requests SET state = ?, lease_owner = ?, lease_until = ?, attempts = ?,"
                       " started_at = CASE started_at WHEN '' THEN ? ELSE started_at END WHERE id = ?",
                       (RUNNING, owner, until, attempts, started_at, request_id))
            self._changed(db, request_id)
            return True

    def settle(self, request_id: int, state: str, reason: str, run_id: int | None, *, attempts: int | None = None,
               started_at: str = "") -> bool:
        """End a pending or running request as ``state`` (finished or failed) whoever holds it: the outcome a worker
        of the Hub's queue reported (:mod:`scitaste_hf.leaderboard.hub_queue`), which the board has checked, with the
        ``attempts`` and start it reported. False when it had already ended."""
        with self.store.transaction() as db:
            row = db.execute("SELECT state FROM requests WHERE id = ?", (request_id,)).fetchone()
            if row is None or row["state"] not in (PENDING, RUNNING):
                return False
            db.execute("UPDATE requests SET attempts = COALESCE(?, attempts), started_at = CASE started_at WHEN ''"
                       " THEN ? ELSE started_at END WHERE id = ?", (attempts, started_at, request_id))
            self._close(db, request_id, state, reason, run_id)
            return True

    def renew(self, request_id: int, owner: str, *, lease_s: float = LEASE_S) -> bool:
        """Extend ``owner``'s lease; False when it no longer holds the request (cancelled, or taken over after the
        lease expired): the worker then stops and stores nothing."""
        with self.store.transaction() as db:
            if not self._held(db, request_id, owner):
                return False
            db.execute("UPDATE requests SET lease_until = ? WHERE id = ?", (time.time() + lease_s, request_id))
            return True

    def finish(self, request_id: int, owner: str, run_id: int) -> bool:
        """End a request held by ``owner`` as finished with ``run_id``; False when ``owner`` no longer holds it."""
        return self._end(request_id, owner, FINISHED, "", run_id)

    def fail(self, request_id: int, owner: str, reason: str) -> bool:
        """End a request held by ``owner`` as failed with a one-line ``reason``; False when ``owner`` no longer holds
        it."""
        return self._end(request_id, owner, FAILED, reason, None)

    def _end(self, request_id: int, owner: str, state: str, reason: str, run_id: int | None) -> bool:
        with self.store.transaction() as db:
            if not self._held(db, request_id, owner):
                return False
            self._close(db, request_id, state, reason, run_id)
            return True

    def _close(self, db: sqlite3.Connection, request_id: int, state: str, reason: str, run_id: int | None) -> None:
        """End a request as ``state`` with ``reason`` (made one line) and the run it produced, its lease cleared."""
        db.execute("UPDATE requests SET state = ?, reason = ?, finished_at = ?, lease_owner = '', lease_until = 0,"
                   " run_id = COALESCE(?, run_id) WHERE id = ?",
                   (state, " ".join(reason.split())[:300], timestamp(), run_id, request_id))
        self._changed(db, request_id)
