"""The ratings service behind the Space's Annotate tab: who the rater is, which paper they see, what is stored, and
the agreement report. Pure Python over :class:`~scitaste_hf.ratings.store.RatingStore`; the Gradio app only
renders what this returns, and never sees a paper's gold numbers (:func:`blind`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scitaste_hf.net.guard import RateLimit, check_name
from scitaste_hf.net.hub_copy import HUB_COPY_WAIT, copy_in_background
from scitaste_hf.ratings.agreement import agreement, consensus_records, released
from scitaste_hf.ratings.export import export
from scitaste_hf.ratings.guide import NUMBERS
from scitaste_hf.ratings.store import LEASE_S, RatingError, RatingStore
from scitaste_hf.schema import SCORE_MAX, SCORE_MIN
from scitaste_hf.scoring.bootstrap import N_RESAMPLES, SEED
from scitaste_hf.taxonomy import discipline_order

if TYPE_CHECKING:
    from scitaste_hf.leaderboard.service import Leaderboard

#: Ratings and skips one rater may attempt per window (valid or not): an expert needs a minute or more per paper,
#: so this stops a script, never a person.
RATE_LIMIT = (240, 3600.0)
#: Fields of a record a rater is shown: never the gold numbers, the journal tier (an input of journal impact) or
#: anything derived from the bibliometric records.
BLIND_FIELDS = ("bibcode", "discipline", "title", "abstract", "year", "journal_name")
#: Leaderboard runs scored against the expert consensus in a report: the first ones of the board's order.
N_RUNS = 10


@dataclass(frozen=True)
class RateResult:
    """The outcome of a rating: its id, whether it was a replay of a stored one, and a one-line message."""

    rating_id: int
    duplicate: bool
    message: str


def blind(record: Mapping[str, Any]) -> dict[str, Any]:
    """What a rater sees of a paper: the fields of :data:`BLIND_FIELDS`, nothing else."""
    return {key: record.get(key) for key in BLIND_FIELDS}


def check_scores(scores: Mapping[str, Any] | Sequence[Any]) -> tuple[float, ...]:
    """A rating's eight numbers (:data:`~scitaste_hf.ratings.guide.NUMBERS`), given as a mapping with exactly those
    keys or as eight values in that order: each a finite real number within 0-100 (not a string or a boolean).

    Raises
    ------
    RatingError
        With a one-line reason otherwise.
    """
    if isinstance(scores, Mapping):
        if set(scores) != set(NUMBERS):
            raise RatingError(f"a rating has exactly the keys {', '.join(NUMBERS)}")
        values = [scores[n] for n in NUMBERS]
    elif isinstance(scores, Sequence) and not isinstance(scores, str | bytes):
        values = list(scores)
        if len(values) != len(NUMBERS):
            raise RatingError(f"a rating has {len(NUMBERS)} numbers, got {len(values)}")
    else:
        raise RatingError(f"a rating is {len(NUMBERS)} numbers, got {type(scores).__name__}")
    out = []
    for name, value in zip(NUMBERS, values):
        # Compared before float(): an int too large for a float is just out of range, not an OverflowError.
        if isinstance(value, bool) or not isinstance(value, int | float) or not SCORE_MIN <= value <= SCORE_MAX \
                or not math.isfinite(value):
            raise RatingError(f"{name} must be a number from 0 to 100")
        out.append(float(value))
    return tuple(out)


class Ratings:
    """Expert ratings of the papers of ``gold``, stored in ``data_dir`` beside the leaderboard's runs.

    Parameters
    ----------
    data_dir : path
        The Space's data folder; the ratings are ``DATA/ratings.sqlite`` and the salt ``DATA/ratings.salt``.
    gold : sequence of records
        The papers that can be rated (the board's ``selected`` split), with their gold labels for the report.
    mirror : callable, optional
        The Hub copy (:class:`~scitaste_hf.net.hub_copy.HubMirror`, one of its own): called with the
        store after each new rating and on start; it uploads the pseudonymised export, never the raw ids.
    rate_limit : (int, float)
        At most this many ratings and skips per rater per this many seconds.
    lease : float
        Seconds a paper shown to a rater counts as taken (:data:`~scitaste_hf.ratings.store.LEASE_S`).
    """

    def __init__(self, data_dir: str | Path, gold: Sequence[Mapping[str, Any]], *, mirror=None,
                 rate_limit: tuple[int, float] = RATE_LIMIT, lease: float = LEASE_S) -> None:
        self.store = RatingStore(data_dir, lease=lease)
        self.gold = list(gold)
        self.papers = {r["bibcode"]: r for r in self.gold}
        #: The disciplines a rater can choose, in the taxonomy's order.
        self.disciplines = tuple(discipline_order(r["discipline"] for r in self.gold))
        self._by_discipline = {d: [r["bibcode"] for r in self.gold if r["discipline"] == d] for d in self.disciplines}
        self.mirror = mirror
        self._attempts = RateLimit(*rate_limit, "ratings")
        self._report_lock = threading.Lock()
        self._reports: dict[Any, dict[str, Any]] = {}
        self.copy_to_hub()

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    @staticmethod
    def rater(*, username: str | None = None, local_name: str | None = None) -> str:
        """A rater's id: ``hf:<username>`` for a Hugging Face account (signed in on the Hub, so it cannot be
        claimed by anyone else), else ``local:<name>`` for a name typed into a locally run Space.

        Raises
        ------
        RatingError
            Without either, or for a name that is not plain text (:func:`~scitaste_hf.leaderboard.service.
            check_name`).
        """
        if username:
            return f"hf:{username}"
        if not local_name or not str(local_name).strip():
            raise RatingError("type your name first (or sign in with Hugging Face on the Hub)")
        return f"local:{check_name(local_name, 'your name')}"

    def _check_discipline(self, discipline: Any) -> str:
        if discipline not in self.disciplines:
            raise RatingError(f"choose a discipline: {', '.join(self.disciplines)}")
        return discipline

    def _record(self, bibcode: Any) -> Mapping[str, Any]:
        if not isinstance(bibcode, str) or not bibcode.strip():
            raise RatingError("no paper to rate: ask for the next paper first")
        record = self.papers.get(bibcode.strip())
        if record is None:
            raise RatingError("that paper is not one of the benchmark's; ask for the next paper")
        return record

    def next_paper(self, rater: str, discipline: str) -> dict[str, Any] | None:
        """The paper ``rater`` is to rate next in ``discipline`` (:meth:`~scitaste_hf.ratings.store.RatingStore.
        assign`), as :func:`blind` shows it; None when they have seen every paper of it."""
        discipline = self._check_discipline(discipline)
        bibcode = self.store.assign(rater, discipline, self._by_discipline[discipline])
        return None if bibcode is None else blind(self.papers[bibcode])

    def rate(self, rater: str, bibcode: str, scores: Mapping[str, Any] | Sequence[Any]) -> RateResult:
        """Validate and store a rating of the rater's open paper; the same rating sent twice is a no-op.

        Raises
        ------
        RatingError or SubmissionError
            With a one-line reason (bad numbers, a paper not open to this rater, a changed rating, over the rate
            limit); nothing is stored then.
        """
        self._attempts.check(rater)
        values = check_scores(scores)
        record = self._record(bibcode)
        stored = self.store.rate(rater, record["bibcode"], record["discipline"], values,
                                 datetime.now(UTC).isoformat(timespec="seconds"), copy=self.mirror is not None)
        if stored.duplicate:
            return RateResult(stored.rating_id, True, f"this rating of {record['bibcode']} was already stored; "
                                                      "nothing changed")
        message = f"rating of {record['bibcode']} stored"
        if not self.copy_to_hub():
            message += "; its copy to the Hub dataset repo is pending and will be retried"
        return RateResult(stored.rating_id, False, message)

    def skip(self, rater: str, bibcode: str) -> None:
        """Skip the rater's open paper: it is never shown to them again (a replay is a no-op)."""
        self._attempts.check(rater)
        self.store.skip(rater, self._record(bibcode)["bibcode"])

    def stop(self, rater: str) -> int:
        """The rater stops for now: their open paper is released for others at once. Returns how many papers they
        have rated."""
        self.store.release(rater)
        return self.store.rated_by(rater)

    def pseudonym(self, rater: str) -> str:
        """The rater's id as the export and the report show it."""
        return self.store.pseudonym(rater)

    def export(self, out_dir: str | Path) -> Path:
        """Write the ``expert_ratings`` configuration into ``out_dir`` (:func:`~scitaste_hf.ratings.export.export`)."""
        return export(self.store, out_dir)

    def copy_to_hub(self, wait: float = HUB_COPY_WAIT) -> bool:
        """Copy the ratings whose Hub copy is pending; True when none is left or no copy is configured
        (:func:`~scitaste_hf.net.hub_copy.copy_in_background`)."""
        return copy_in_background(self.mirror, self.store, wait)

    def report(self, board: Leaderboard | None = None, *, n_runs: int = N_RUNS, n_resamples: int = N_RESAMPLES,
               seed: int = SEED) -> dict[str, Any]:
        """The agreement report (:func:`~scitaste_hf.ratings.agreement.agreement`) of the released ratings
        (:func:`~scitaste_hf.ratings.agreement.released`: up to the last rating that completed a multiple of
        :data:`~scitaste_hf.ratings.agreement.MIN_PAPERS` panels), raters shown by pseudonym, with
        ``n_ratings_waiting``: ratings stored since, which wait for the next release, and
        ``n_ratings_outside_gold``: ratings of papers no longer in the gold set, left out; and,
        with ``board``, ``runs``: its first ``n_runs`` ranked runs scored against the expert consensus and against
        the gold on the same papers, both by :meth:`~scitaste_hf.leaderboard.service.Leaderboard.score_on` (the
        same scoring code, the consensus passed as the gold). Computed once until the ratings or the runs change.
        """
        key = (self.store.version(), board.generation() if board is not None else None, n_runs, n_resamples,
               seed)
        with self._report_lock:
            if key not in self._reports:
                self._reports = {key: self._report(board, n_runs, n_resamples, seed)}
            return self._reports[key]

    def _report(self, board: Leaderboard | None, n_runs: int, n_resamples: int, seed: int) -> dict[str, Any]:
        stored = self.store.ratings()
        # Ratings of papers that left the gold set (a new version of the labels) are left out and counted: they
        # cannot be compared with a gold label, and must not stop the report for every other paper.
        in_gold = [{**r, "rater": self.store.pseudonym(r["rater"])} for r in stored if r["bibcode"] in self.papers]
        rows = released(in_gold)
        out = agreement(rows, self.gold, n_resamples=n_resamples, seed=seed)
        out["n_ratings_waiting"] = len(in_gold) - len(rows)
        out["n_ratings_outside_gold"] = len(stored) - len(in_gold)
        out["runs"] = []
        if board is None or not out["numbers"]:
            return out
        consensus = consensus_records(rows, self.gold, out)
        gold = [self.papers[r["bibcode"]] for r in consensus]
        for run in board.rows()[:n_runs]:
            out["runs"].append({"run": run["run"], "model": run["model"], "mode": run["mode"],
                                "gold": board.score_on(run["run"], gold, n_resamples=n_resamples, seed=seed),
                                "experts": board.score_on(run["run"], consensus, n_resamples=n_resamples,
                                                          seed=seed)})
        return out


def open_ratings(board: Leaderboard) -> Ratings:
    """The expert ratings of the board's papers, stored in its data folder; with ``HF_TOKEN`` and
    ``SCITASTE_RESULTS_REPO`` set, each new rating also updates the pseudonymised ``expert_ratings`` configuration in
    that dataset repo while it is private (retried on start and with the next rating when the Hub is unreachable or
    the repo public)."""
    from scitaste_hf.leaderboard.setup import hub_mirror_from_env

    return Ratings(board.store.root, board.gold, mirror=hub_mirror_from_env(private_only=True))
