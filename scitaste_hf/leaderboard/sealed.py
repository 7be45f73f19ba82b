"""Sealed predictions for a prospective split (docs/prospective.md): papers too young for gold, answered now and
scored when ``scitaste resolve`` gives them their gold, as of each resolution date.

A sealed run is stored in ``DATA/sealed.sqlite``, a file of its own beside the board's store: the Hub copy of the
board (:meth:`~scitaste_hf.leaderboard.store.Store.hub_files`) uploads ``leaderboard.sqlite`` and the files under
``submissions/`` only, and no view of the board reads this file, so the answers reach no one through either. What
is shown of a sealed run is its model, mode, submission time and digest (the SHA-256 of its parsed answers and mode,
:func:`~scitaste_hf.leaderboard.service.run_key`): the digest proves later that the answers scored are the answers
sealed. Until the split's first resolution only the submitter reads them back (:meth:`SealedBoard.answers`); a
resolution closes the split to new runs (its gold is then known as of that date) and scores every sealed run with
:func:`~scitaste_hf.scoring.score_run`, whose results anyone may read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scitaste_hf.leaderboard.database import Database, timestamp
from scitaste_hf.leaderboard.service import (
    ANONYMOUS,
    ATTEMPTS_PER_ACCEPTED,
    MAX_BYTES,
    check_meta,
    parse_upload,
    run_key,
    summary_of,
)
from scitaste_hf.net.guard import RateLimit, SubmissionError
from scitaste_hf.schema import PROSPECTIVE
from scitaste_hf.taxonomy import OVERALL

#: The file of the sealed runs, in the board's data folder.
FILE = "sealed.sqlite"
#: What the board shows as a sealed run's status until a resolution scores it.
SEALED = "sealed"
#: The status of a run that a resolution left unscored: it was sealed on or after the resolution date.
LATE = "sealed too late"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sealed_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    split TEXT NOT NULL,
    digest TEXT NOT NULL,
    model TEXT NOT NULL,
    mode TEXT NOT NULL,
    submitter TEXT NOT NULL,
    submitted_at TEXT NOT NULL,
    answers BLOB NOT NULL,
    UNIQUE (split, digest)
);
CREATE TABLE IF NOT EXISTS resolutions (
    split TEXT NOT NULL,
    as_of TEXT NOT NULL,
    resolved_at TEXT NOT NULL,
    n_resolved INTEGER NOT NULL,
    n_total INTEGER NOT NULL,
    PRIMARY KEY (split, as_of)
);
CREATE TABLE IF NOT EXISTS resolved_scores (
    run_id INTEGER NOT NULL,
    as_of TEXT NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (run_id, as_of)
);
"""
#: Version of the layout above (SQLite's ``user_version``).
SCHEMA_VERSION = 1


def split_key(bibcodes: Sequence[str]) -> str:
    """The key of a prospective split: the SHA-256 of its bibcodes in order (another split is another board)."""
    return hashlib.sha256(json.dumps(sorted(bibcodes)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SealResult:
    """The outcome of a sealed submission."""

    run_id: int
    digest: str
    duplicate: bool
    message: str


class SealedBoard:
    """The sealed runs of one prospective split.

    Parameters
    ----------
    data_dir : path
        The board's data folder (``sealed.sqlite`` is made in it).
    split : sequence of records
        The prospective split (records without gold: only their bibcodes are read).
    rate_limit : (int, float) or None
        At most this many sealed runs per submitter per this many seconds, and
        :data:`~scitaste_hf.leaderboard.service.ATTEMPTS_PER_ACCEPTED` times as many attempts, as for the board's
        submissions; None: no limit (a local board).
    """

    def __init__(self, data_dir: str | Path, split: Sequence[Mapping[str, Any]], *,
                 rate_limit: tuple[int, float] | None = None) -> None:
        Path(data_dir).mkdir(parents=True, exist_ok=True)
        self.db = Database(Path(data_dir) / FILE, _SCHEMA, SCHEMA_VERSION)
        self.ids = {r["bibcode"] for r in split}
        self.key = split_key(list(self.ids))
        self._accepted = self._attempts = None
        if rate_limit is not None:
            self._accepted = RateLimit(*rate_limit, "sealed runs")
            self._attempts = RateLimit(rate_limit[0] * ATTEMPTS_PER_ACCEPTED, rate_limit[1], "sealed-run attempts")

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    def resolutions(self) -> list[dict[str, Any]]:
        """The split's resolutions, earliest first: ``as_of``, ``resolved_at``, ``n_resolved`` of ``n_total``."""
        return [dict(r) for r in self.db.query(
            "SELECT as_of, resolved_at, n_resolved, n_total FROM resolutions WHERE split = ? ORDER BY as_of",
            (self.key,))]

    def submit(self, data: bytes, model: str, mode: str, *, submitter: str) -> SealResult:
        """Seal a predictions file of the prospective split: one line per paper of the split, as for the board.

        Raises
        ------
        SubmissionError
            One line: the split was resolved (its gold is known), the file or the metadata is rejected, or the
            submitter is over a rate limit.
        """
        if self._accepted is not None:
            self._attempts.check(submitter or ANONYMOUS)
            self._accepted.check(submitter or ANONYMOUS, record=False)
        if done := self.resolutions():
            raise SubmissionError(f"the prospective split was resolved as of {done[0]['as_of']}: it takes no sealed "
                                  "run after its first resolution date")
        model, mode, _, _ = check_meta(model, mode)
        predictions = parse_upload(data, self.ids, PROSPECTIVE, MAX_BYTES, MAX_BYTES)
        digest = run_key(predictions, mode)
        with self.db.transaction() as db:
            row = db.execute("SELECT id FROM sealed_runs WHERE split = ? AND digest = ?", (self.key, digest)).fetchone()
            if row is not None:
                return SealResult(int(row["id"]), digest, True,
                                  f"these answers were already sealed as run #{row['id']}; nothing changed")
            if self._accepted is not None:  # counted with the storing, as the board's submissions are
                self._accepted.check(submitter or ANONYMOUS)
            run_id = int(db.execute(
                "INSERT INTO sealed_runs (split, digest, model, mode, submitter, submitted_at, answers)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (self.key, digest, model, mode, submitter, timestamp(), data),
            ).lastrowid)
        return SealResult(run_id, digest, False, f"sealed as run #{run_id} (SHA-256 {digest}); it is scored when the "
                                                 "prospective split is resolved")

    def answers(self, run_id: int, reader: str) -> bytes:
        """A sealed run's file as submitted: to its submitter only until the split's first resolution, to anyone
        after it.

        Raises
        ------
        SubmissionError
            One line: no such run, or ``reader`` is not its submitter while it is sealed.
        """
        rows = self.db.query("SELECT submitter, answers FROM sealed_runs WHERE id = ? AND split = ?",
                             (run_id, self.key))
        if not rows:
            raise SubmissionError(f"no sealed run #{run_id} on this prospective split")
        # ANONYMOUS names every visitor the Space could not tell apart, so it proves no one the submitter
        if (rows[0]["submitter"] != reader or reader == ANONYMOUS) and not self.resolutions():
            raise SubmissionError(f"run #{run_id} is sealed until the prospective split is resolved: only its "
                                  "submitter may read its answers")
        return bytes(rows[0]["answers"])

    def resolve(self, as_of: str, gold: Sequence[Mapping[str, Any]],
                backup: Sequence[Mapping[str, Any]] | None = None, *,
                sealed_before: str | None = None) -> dict[int, dict[str, Any]]:
        """Score every sealed run against the split's gold as of ``as_of`` and record the resolution (again for a
        date already resolved: its scores are replaced). Each run's answers are checked against its digest first.

        Parameters
        ----------
        as_of : str
            The resolution date (ISO).
        gold : sequence of records
            The papers of the split that the resolution gave a gold (those it could not rebuild are left out of
            every run's score).
        backup : sequence of records, optional
            The papers of the same age outside the split, which the no-information floors are learned from
            (:func:`~scitaste_hf.scoring.score_run`).
        sealed_before : str, optional
            A run sealed on or after this ISO date is left unscored (:data:`LATE`): its submitter could see the
            world as of the resolution. The resolution date where the world is the real one; None for the
            simulated world, whose dates are not the board's clock: every run is scored.

        Returns
        -------
        dict
            Run id -> its :func:`~scitaste_hf.scoring.score_run` result (the runs scored).

        Raises
        ------
        SubmissionError
            One line: a resolved paper is not in the split, or a sealed run's stored answers no longer give its
            digest (the file was changed after sealing); nothing is recorded then.
        """
        from scitaste_hf.scoring import score_run

        resolved = {r["bibcode"] for r in gold}
        if not resolved <= self.ids:
            raise SubmissionError(f"{len(resolved - self.ids)} resolved paper(s) are not in the prospective split")
        runs = self.db.query("SELECT id, mode, digest, submitted_at, answers FROM sealed_runs WHERE split = ?"
                             " ORDER BY id", (self.key,))
        results = {}
        for row in runs:
            predictions = parse_upload(bytes(row["answers"]), self.ids, PROSPECTIVE, MAX_BYTES, MAX_BYTES)
            if run_key(predictions, row["mode"]) != row["digest"]:
                raise SubmissionError(f"sealed run #{row['id']}'s answers no longer give its digest {row['digest']}: "
                                      f"{FILE} was changed after sealing; nothing was resolved")
            if sealed_before is not None and row["submitted_at"][:10] >= sealed_before:
                continue
            results[int(row["id"])] = score_run(gold, {b: a for b, a in predictions.items() if b in resolved},
                                                backup=backup)
        with self.db.transaction() as db:
            db.executemany("INSERT OR REPLACE INTO resolved_scores (run_id, as_of, result) VALUES (?, ?, ?)",
                           [(run_id, as_of, json.dumps(result)) for run_id, result in results.items()])
            db.execute("INSERT OR REPLACE INTO resolutions (split, as_of, resolved_at, n_resolved, n_total)"
                       " VALUES (?, ?, ?, ?, ?)", (self.key, as_of, timestamp(),
                                                   len(resolved), len(self.ids)))
        return results

    def result(self, run_id: int, as_of: str) -> dict[str, Any] | None:
        """A sealed run's :func:`~scitaste_hf.scoring.score_run` result as of a resolution date, or None."""
        rows = self.db.query("SELECT result FROM resolved_scores WHERE run_id = ? AND as_of = ?", (run_id, as_of))
        return json.loads(rows[0]["result"]) if rows else None

    def rows(self) -> list[dict[str, Any]]:
        """Every sealed run of the split, newest first, as the board shows it: ``run``, ``model``, ``mode``,
        ``submitted_at``, ``digest``, ``status`` (:data:`SEALED`, ``resolved``, or :data:`LATE` for a run that no
        resolution scored) and ``resolved``: resolution date -> the overall numbers of
        :func:`~scitaste_hf.leaderboard.service.summary_of` (none before a resolution). The answers are not read."""
        runs = self.db.query("SELECT id, model, mode, submitted_at, digest FROM sealed_runs WHERE split = ?"
                             " ORDER BY id DESC", (self.key,))
        scores: dict[int, dict[str, Any]] = {}
        for r in self.db.query("SELECT s.run_id, s.as_of, s.result FROM resolved_scores s JOIN sealed_runs r"
                               " ON r.id = s.run_id WHERE r.split = ? ORDER BY s.as_of", (self.key,)):
            scores.setdefault(int(r["run_id"]), {})[r["as_of"]] = summary_of(json.loads(r["result"]))[OVERALL]
        unscored = LATE if self.resolutions() else SEALED
        return [{"run": int(r["id"]), "model": r["model"], "mode": r["mode"], "submitted_at": r["submitted_at"],
                 "digest": r["digest"], "status": "resolved" if scores.get(int(r["id"])) else unscored,
                 "resolved": scores.get(int(r["id"]), {})} for r in runs]


def prospective_split(source: str | Path) -> list[dict[str, Any]] | None:
    """The prospective split of a dataset folder (``data/prospective-*.parquet``), or None when it has none (or one
    of no paper, to which no run could be sealed)."""
    import pyarrow.parquet as pq

    files = sorted((Path(source) / "data").glob(f"{PROSPECTIVE}-*.parquet")) if Path(source).is_dir() else []
    return [r for f in files for r in pq.read_table(f).to_pylist()] or None
