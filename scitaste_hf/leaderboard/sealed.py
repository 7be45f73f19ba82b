"""Sealed predictions for a prospective split (docs/prospective.md): papers too young for gold, answered now and
scored when ``scitaste resolve`` gives them their gold, as of each resolution date.

A sealed run is stored in ``DATA/sealed.sqlite``, a file of its own beside the board's store, which no view of the
board reads. What is shown of a sealed run is its model, mode, submission time and digest: the SHA-256 of a random
salt of its own and its answers' key (their parsed answers and mode,
:func:`~scitaste_hf.leaderboard.service.run_key`), so that no one can confirm a guessed answer set by hashing it;
the salt is shown once the split is resolved, and the digest then proves that the answers scored are the answers
sealed. Until the split's first resolution only the submitter reads them back (:meth:`SealedBoard.answers`); a
resolution closes the split to new runs (its gold is then known as of that date) and scores every sealed run with
:func:`~scitaste_hf.scoring.score_run`, whose results anyone may read.

With a Hub copy (:class:`~scitaste_hf.net.hub_copy.HubMirror`) the file goes up to the board's results repo as
:data:`FILE` with each run's salt, answers and signed-in submitter encrypted (Fernet, keyed by
:data:`~scitaste_hf.constants.SCITASTE_SEALED_KEY`, which only the Space holds) and its digest, model, mode and times
readable; a board that starts without the file restores every run from it, so a Space without persistent storage
keeps them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import secrets
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scitaste_hf import constants
from scitaste_hf.errors import ScitasteError, first_line
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
from scitaste_hf.net.hub_copy import HUB_COPY_WAIT, copy_in_background
from scitaste_hf.schema import PROSPECTIVE
from scitaste_hf.taxonomy import OVERALL

logger = logging.getLogger(__name__)

#: The file of the sealed runs, in the board's data folder and, encrypted, in its results repo.
FILE = "sealed.sqlite"
#: What the board shows as a sealed run's status until a resolution scores it.
SEALED = "sealed"
#: The status of a run that a resolution left unscored: it was sealed on or after the resolution date.
LATE = "sealed too late"
#: Random bytes of each run's salt (shown as hex once the split is resolved).
SALT_BYTES = 16
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
    salt TEXT NOT NULL DEFAULT '',
    answers_key TEXT NOT NULL DEFAULT '',
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
CREATE TABLE IF NOT EXISTS hub_pending (key TEXT PRIMARY KEY);
"""
#: Version of the layout above (SQLite's ``user_version``). 2: each run's salt and its answers' key (a run of
#: version 1 has neither: its digest is the unsalted key), and what waits for the Hub copy.
SCHEMA_VERSION = 2
_ADDED = {"sealed_runs": {"salt": "TEXT NOT NULL DEFAULT ''", "answers_key": "TEXT NOT NULL DEFAULT ''"}}
#: The table that only the Hub copy has: one value encrypted with the key, so that a wrong key is told at start even
#: before any run was sealed.
_KEY_CHECK = "key_check"
_KEY_CHECK_TEXT = b"scitaste sealed runs"


def split_key(bibcodes: Sequence[str]) -> str:
    """The key of a prospective split: the SHA-256 of its bibcodes in order (another split is another board)."""
    return hashlib.sha256(json.dumps(sorted(bibcodes)).encode()).hexdigest()[:16]


def salted_digest(salt: str, answers_key: str) -> str:
    """A sealed run's public digest: the SHA-256 of its salt's bytes (hex ``salt``) followed by its answers' key
    (:func:`~scitaste_hf.leaderboard.service.run_key`); the key itself for a run sealed before salts (``salt``
    empty)."""
    return hashlib.sha256(bytes.fromhex(salt) + answers_key.encode()).hexdigest() if salt else answers_key


def _fernet(key: str):
    """The cipher of the Hub copy: Fernet (AES-128-CBC with an HMAC-SHA256 tag) keyed by the SHA-256 of ``key``, so
    that any long random text serves as :data:`~scitaste_hf.constants.SCITASTE_SEALED_KEY`."""
    try:
        from cryptography.fernet import Fernet
    except ImportError:
        raise ScitasteError("the sealed runs' Hub copy needs the cryptography package: pip install "
                            "'scitaste-hf[space]'") from None
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(key.encode()).digest()))


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
    mirror : HubMirror, optional
        The Hub copy (a :class:`~scitaste_hf.net.hub_copy.HubMirror` of its own, to the board's results repo): on
        open, a board without sealed runs restores them from the repo's :data:`FILE`; each new run and resolution
        goes up encrypted with ``key``.
    key : str, optional
        The Hub copy's key (:data:`~scitaste_hf.constants.SCITASTE_SEALED_KEY`); required with ``mirror``.

    Raises
    ------
    ScitasteError
        One line, on open with ``mirror``: no ``key``, a key that does not open the repo's copy, or a board with no
        sealed run whose repo's copy cannot be read (starting empty would replace that copy with an empty one).
    """

    def __init__(self, data_dir: str | Path, split: Sequence[Mapping[str, Any]], *,
                 rate_limit: tuple[int, float] | None = None, mirror=None, key: str | None = None) -> None:
        if mirror is not None and not key:
            from scitaste_hf.sources.credentials import missing_secret

            raise ScitasteError(missing_secret(constants.SCITASTE_SEALED_KEY, "the sealed runs' Hub copy needs its "
                                               "key (any long random text, kept as a secret of the Space)"))
        Path(data_dir).mkdir(parents=True, exist_ok=True)
        self.db = Database(Path(data_dir) / FILE, _SCHEMA, SCHEMA_VERSION, _ADDED)
        with self.db.transaction() as db:  # a run of layout 1: its digest is its unsalted answers' key
            db.execute("UPDATE sealed_runs SET answers_key = digest WHERE answers_key = '' AND salt = ''")
        self.ids = {r["bibcode"] for r in split}
        self.key = split_key(list(self.ids))
        self.mirror, self._cipher = mirror, _fernet(key) if mirror is not None else None
        self._accepted = self._attempts = None
        if rate_limit is not None:
            self._accepted = RateLimit(*rate_limit, "sealed runs")
            self._attempts = RateLimit(rate_limit[0] * ATTEMPTS_PER_ACCEPTED, rate_limit[1], "sealed-run attempts")
        if mirror is not None:
            try:
                self._restore()
            except ScitasteError:
                self.db.close()
                raise
            self.copy_to_hub()

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

        The same answers in the same mode sealed again are the run already sealed (its answers' key is kept beside
        it, never shown); each new run gets a salt of its own, which its digest covers.

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
        answers_key = run_key(predictions, mode)
        with self.db.transaction() as db:
            row = db.execute("SELECT id, digest FROM sealed_runs WHERE split = ? AND answers_key = ?",
                             (self.key, answers_key)).fetchone()
            if row is not None:
                return SealResult(int(row["id"]), row["digest"], True,
                                  f"these answers were already sealed as run #{row['id']}; nothing changed")
            if self._accepted is not None:  # counted with the storing, as the board's submissions are
                self._accepted.check(submitter or ANONYMOUS)
            salt = secrets.token_hex(SALT_BYTES)
            digest = salted_digest(salt, answers_key)
            run_id = int(db.execute(
                "INSERT INTO sealed_runs (split, digest, model, mode, submitter, submitted_at, answers, salt,"
                " answers_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (self.key, digest, model, mode, submitter, timestamp(), data, salt, answers_key),
            ).lastrowid)
            db.execute("INSERT OR IGNORE INTO hub_pending (key) VALUES (?)", (f"run-{run_id}",))
        message = (f"sealed as run #{run_id} (SHA-256 {digest}, salted: the salt is shown when the split is "
                   "resolved); it is scored when the prospective split is resolved")
        if not self.copy_to_hub():
            message += "; its encrypted copy to the Hub dataset repo is pending and will be retried"
        return SealResult(run_id, digest, False, message)

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
        runs = self.db.query("SELECT id, mode, digest, salt, submitted_at, answers FROM sealed_runs WHERE split = ?"
                             " ORDER BY id", (self.key,))
        results = {}
        for row in runs:
            predictions = parse_upload(bytes(row["answers"]), self.ids, PROSPECTIVE, MAX_BYTES, MAX_BYTES)
            if salted_digest(row["salt"], run_key(predictions, row["mode"])) != row["digest"]:
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
            db.execute("INSERT OR IGNORE INTO hub_pending (key) VALUES (?)", (f"resolution-{as_of}",))
        self.copy_to_hub()
        return results

    def result(self, run_id: int, as_of: str) -> dict[str, Any] | None:
        """A sealed run's :func:`~scitaste_hf.scoring.score_run` result as of a resolution date, or None."""
        rows = self.db.query("SELECT result FROM resolved_scores WHERE run_id = ? AND as_of = ?", (run_id, as_of))
        return json.loads(rows[0]["result"]) if rows else None

    def rows(self) -> list[dict[str, Any]]:
        """Every sealed run of the split, newest first, as the board shows it: ``run``, ``model``, ``mode``,
        ``submitted_at``, ``digest``, ``status`` (:data:`SEALED`, ``resolved``, or :data:`LATE` for a run that no
        resolution scored), ``resolved``: resolution date -> the overall numbers of
        :func:`~scitaste_hf.leaderboard.service.summary_of` (none before a resolution), and ``salt``: what the
        digest covers besides the answers' key (:func:`salted_digest`), None until the split's first resolution.
        The answers are not read."""
        runs = self.db.query("SELECT id, model, mode, submitted_at, digest, salt FROM sealed_runs WHERE split = ?"
                             " ORDER BY id DESC", (self.key,))
        scores: dict[int, dict[str, Any]] = {}
        for r in self.db.query("SELECT s.run_id, s.as_of, s.result FROM resolved_scores s JOIN sealed_runs r"
                               " ON r.id = s.run_id WHERE r.split = ? ORDER BY s.as_of", (self.key,)):
            scores.setdefault(int(r["run_id"]), {})[r["as_of"]] = summary_of(json.loads(r["result"]))[OVERALL]
        resolved = bool(self.resolutions())
        unscored = LATE if resolved else SEALED
        return [{"run": int(r["id"]), "model": r["model"], "mode": r["mode"], "submitted_at": r["submitted_at"],
                 "digest": r["digest"], "status": "resolved" if scores.get(int(r["id"])) else unscored,
                 "resolved": scores.get(int(r["id"]), {}), "salt": r["salt"] if resolved else None} for r in runs]

    def prospective(self, scope: str = OVERALL) -> dict[tuple[str, str], dict[str, Any]]:
        """What the board's table shows beside each run's retrospective numbers: per (model, mode) with a run scored
        at the split's latest resolution, the best of those runs' Scheme-1 skill in ``scope`` (``s1_skill``,
        ``s1_skill_ci``), with its ``run`` and the resolution date ``as_of``. Best, as the Prospective tab pairs
        each sealed run with the best retrospective run of its model and mode; a scope the run has no paper of is
        left out."""
        done = self.resolutions()
        if not done:
            return {}
        as_of = done[-1]["as_of"]
        best: dict[tuple[str, str], dict[str, Any]] = {}
        for r in self.db.query("SELECT r.id, r.model, r.mode, s.result FROM resolved_scores s JOIN sealed_runs r"
                               " ON r.id = s.run_id WHERE r.split = ? AND s.as_of = ? ORDER BY r.id",
                               (self.key, as_of)):
            numbers = summary_of(json.loads(r["result"])).get(scope)
            if numbers is None or numbers.get("s1_skill") is None:
                continue
            held = best.get((r["model"], r["mode"]))
            if held is None or numbers["s1_skill"] > held["s1_skill"]:
                best[(r["model"], r["mode"])] = {"run": int(r["id"]), "as_of": as_of, "s1_skill": numbers["s1_skill"],
                                                 "s1_skill_ci": numbers["s1_skill_ci"]}
        return best

    def marker(self) -> tuple:
        """What changes whenever a resolution is recorded (by this process or ``scitaste resolve`` in another): the
        key of what is built from :meth:`prospective`."""
        return tuple((r["as_of"], r["resolved_at"]) for r in self.resolutions())

    # -- the Hub copy ----------------------------------------------------------------------------------

    def copy_to_hub(self, wait: float = HUB_COPY_WAIT) -> bool:
        """Copy what is pending to the Hub (:func:`~scitaste_hf.net.hub_copy.copy_in_background`); True when
        nothing is left pending or no copy is configured."""
        return copy_in_background(self.mirror, self, wait)

    def copy_pending(self) -> list[str]:
        """What waits for the Hub copy: ``run-ID`` for a new run, ``resolution-DATE`` for a resolution."""
        return [r["key"] for r in self.db.query("SELECT key FROM hub_pending ORDER BY key")]

    def copy_done(self, keys: list[str]) -> None:
        """Record that ``keys`` are on the Hub."""
        with self.db.transaction() as db:
            db.executemany("DELETE FROM hub_pending WHERE key = ?", [(k,) for k in keys])

    def hub_files(self, keys: list[str]) -> tuple[list[tuple[str, str | bytes]], str]:
        """The Hub copy: :data:`FILE` with each run's salt, answers and signed-in submitter encrypted in its
        ``answers`` column (a submitter who was an address is kept as no one: no address leaves the machine), its
        ``salt`` column shown once the split is resolved, and the answers' keys left out (they would confirm a
        guess); and the commit message."""
        runs = sum(k.startswith("run-") for k in keys)
        return [(FILE, self.db.snapshot(self._encrypt))], f"Seal {runs} run(s), {len(keys) - runs} resolution(s)"

    def _encrypt(self, copy: sqlite3.Connection) -> None:
        resolved = {r[0] for r in copy.execute("SELECT DISTINCT split FROM resolutions")}
        for run_id, split, salt, submitter, answers in copy.execute(
                "SELECT id, split, salt, submitter, answers FROM sealed_runs").fetchall():
            sealed = {"salt": salt, "submitter": submitter if submitter.startswith("hf:") else ANONYMOUS,
                      # base64: a sealed file need not be text (an Inspect log is a zip)
                      "answers": base64.b64encode(bytes(answers)).decode("ascii")}
            copy.execute("UPDATE sealed_runs SET answers = ?, salt = ?, submitter = '', answers_key = '' WHERE id = ?",
                         (self._cipher.encrypt(json.dumps(sealed).encode()), salt if split in resolved else "",
                          run_id))
        copy.execute("DELETE FROM hub_pending")
        copy.execute(f"CREATE TABLE {_KEY_CHECK} (token BLOB NOT NULL)")
        copy.execute(f"INSERT INTO {_KEY_CHECK} VALUES (?)", (self._cipher.encrypt(_KEY_CHECK_TEXT),))
        copy.commit()
        copy.execute("VACUUM")  # rebuilt page by page: no plain answer is left in a page's free space

    def _restore(self) -> None:
        """Check the key against the repo's copy and, when this board has no sealed run and no resolution, take
        every run and resolution from it (each run's digest checked against its decrypted answers)."""
        from cryptography.fernet import InvalidToken

        empty = not self.db.query("SELECT 1 FROM sealed_runs UNION ALL SELECT 1 FROM resolutions LIMIT 1")
        repo = self.mirror.repo_id
        try:
            data = _download(self.mirror)
        except ScitasteError as exc:
            if empty:
                raise ScitasteError(f"the sealed runs' Hub copy on {repo} cannot be read ({exc}); the board does not "
                                    "start without it, so that an empty board does not replace it") from None
            logger.warning("the sealed runs' Hub copy on %s was not checked: %s", repo, exc)
            return
        if data is None:  # no copy yet: what this board holds goes up
            if not empty:
                with self.db.transaction() as db:
                    db.execute("INSERT OR IGNORE INTO hub_pending (key) VALUES ('start')")
            return
        copy = sqlite3.connect(":memory:")
        try:
            copy.deserialize(data)
            try:
                self._cipher.decrypt(copy.execute(f"SELECT token FROM {_KEY_CHECK}").fetchone()[0])
                copy.row_factory = sqlite3.Row
                runs = [dict(r) for r in copy.execute("SELECT * FROM sealed_runs ORDER BY id")] if empty else []
                opened = [json.loads(self._cipher.decrypt(bytes(r["answers"]))) for r in runs]
            except InvalidToken:
                raise ScitasteError(f"{constants.SCITASTE_SEALED_KEY} does not open the sealed runs' Hub copy on "
                                    f"{repo}: set the key they were sealed with") from None
            if not empty:
                return
            restored = []
            for run, sealed in zip(runs, opened):
                answers = base64.b64decode(sealed["answers"])
                key = run_key(parse_upload(answers, self.ids, PROSPECTIVE, MAX_BYTES, MAX_BYTES), run["mode"]) \
                    if run["split"] == self.key else ""
                if key and salted_digest(sealed["salt"], key) != run["digest"]:
                    raise ScitasteError(f"sealed run #{run['id']} of the Hub copy on {repo}: its answers do not give "
                                        "its digest; nothing was restored")
                restored.append((run["id"], run["split"], run["digest"], run["model"], run["mode"],
                                 sealed["submitter"], run["submitted_at"], answers, sealed["salt"], key))
            resolutions = [tuple(r) for r in copy.execute(
                "SELECT split, as_of, resolved_at, n_resolved, n_total FROM resolutions")]
            scores = [tuple(r) for r in copy.execute("SELECT run_id, as_of, result FROM resolved_scores")]
        except sqlite3.DatabaseError as exc:
            raise ScitasteError(f"the sealed runs' Hub copy on {repo} is not a sealed-runs file ({exc})") from None
        finally:
            copy.close()
        with self.db.transaction() as db:
            db.executemany("INSERT INTO sealed_runs (id, split, digest, model, mode, submitter, submitted_at, answers,"
                           " salt, answers_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", restored)
            db.executemany("INSERT INTO resolutions VALUES (?, ?, ?, ?, ?)", resolutions)
            db.executemany("INSERT INTO resolved_scores VALUES (?, ?, ?)", scores)
        logger.info("restored %d sealed run(s) and %d resolution(s) from %s", len(restored), len(resolutions), repo)


def _download(mirror) -> bytes | None:
    """The repo's :data:`FILE` at its head, None when the repo or the file is not there yet.

    Raises
    ------
    ScitasteError
        One line: the Hub's reason, when it refuses or does not answer (each call bounded,
        :func:`~scitaste_hf.net.hub.bound_hub_calls`).
    """
    import tempfile

    from huggingface_hub.errors import LocalEntryNotFoundError, RemoteEntryNotFoundError, RepositoryNotFoundError

    from scitaste_hf.net.hub import hub_errors

    with tempfile.TemporaryDirectory() as cache:
        try:
            local = mirror.api.hf_hub_download(mirror.repo_id, FILE, repo_type="dataset", cache_dir=cache)
        except (RemoteEntryNotFoundError, RepositoryNotFoundError):  # the Hub's answer: not there
            return None
        # huggingface_hub says LocalEntryNotFoundError (an EntryNotFoundError too) when the Hub did not answer
        except (LocalEntryNotFoundError, *hub_errors()) as exc:
            raise ScitasteError(first_line(exc)) from None
        return Path(local).read_bytes()


def open_sealed(data_dir: str | Path, split: Sequence[Mapping[str, Any]], *,
                rate_limit: tuple[int, float] | None = None) -> SealedBoard:
    """The sealed runs of ``split`` in ``data_dir`` as the Space and ``scitaste resolve`` open them: with the Hub copy
    of :func:`~scitaste_hf.leaderboard.setup.hub_mirror_from_env` (``HF_TOKEN`` and ``SCITASTE_RESULTS_REPO``) keyed by
    :data:`~scitaste_hf.constants.SCITASTE_SEALED_KEY` when one is configured (:class:`SealedBoard` restores from it
    and says in one line what is missing), else local only."""
    from scitaste_hf.leaderboard.setup import hub_mirror_from_env
    from scitaste_hf.sources.credentials import resolve_secret

    return SealedBoard(data_dir, split, rate_limit=rate_limit, mirror=hub_mirror_from_env(),
                       key=resolve_secret(None, constants.SCITASTE_SEALED_KEY))


def prospective_split(source: str | Path) -> list[dict[str, Any]] | None:
    """The prospective split of a dataset folder (``data/prospective-*.parquet``), or None when it has none (or one
    of no paper, to which no run could be sealed)."""
    import pyarrow.parquet as pq

    files = sorted((Path(source) / "data").glob(f"{PROSPECTIVE}-*.parquet")) if Path(source).is_dir() else []
    return [r for f in files for r in pq.read_table(f).to_pylist()] or None
