"""The leaderboard service behind the Space: validate, score and store submissions; serve table rows,
comparisons and plot data. Pure Python over :mod:`scitaste_hf.scoring` and the local :class:`Store`; the
Gradio app only renders what this returns.

Every number shown is computed by :mod:`scitaste_hf.scoring`: the scores and their intervals, the skill over the
constant floor (:func:`~scitaste_hf.scoring.score_run`), the no-information floors themselves
(:func:`~scitaste_hf.scoring.floors.floor_matrices`, scored like a run and shown as reference rows, never stored),
the rank intervals (:mod:`scitaste_hf.scoring.ranks`) and the paired comparison.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from scitaste_hf import constants
from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard.database import timestamp
from scitaste_hf.leaderboard.details import Details, DetailsQueue
from scitaste_hf.leaderboard.integrity import RULE_VERSION, near_gold, seal, seal_holds, verify_evidence
from scitaste_hf.leaderboard.metadata import check_cutoff, check_filters, model_metadata
from scitaste_hf.leaderboard.requests import RequestQueue, check_hub_model, check_model, operator_endpoints
from scitaste_hf.leaderboard.store import (
    DETAILS_PENDING,
    EVIDENCE_CONSISTENT,
    FLAGGED,
    KINDS,
    SELF_REPORTED,
    SERVER_RUN,
    Meta,
    Store,
)
from scitaste_hf.leaderboard.views import GOLD_REDRAWN, RunCache, order_key
from scitaste_hf.modes import MODE_SPECS, MODES
from scitaste_hf.net.guard import RateLimit, SubmissionError, check_name
from scitaste_hf.net.hub_copy import HUB_COPY_WAIT, copy_in_background
from scitaste_hf.predictions import is_samples_log, logged_field, parse_predictions, run_text
from scitaste_hf.records import jsonl_lines
from scitaste_hf.schema import DIMENSIONS, Answer, Failure
from scitaste_hf.scoring import paired_bootstrap, score_run
from scitaste_hf.scoring.bootstrap import N_RESAMPLES, SEED
from scitaste_hf.scoring.floors import FLOORS, floor_matrices
from scitaste_hf.scoring.gold_uncertainty import GoldDraws, gold_replicates, noise_ceiling
from scitaste_hf.scoring.inputs import as_answer_matrix
from scitaste_hf.scoring.ranks import RANK_RESAMPLES, detectable_difference, replicates
from scitaste_hf.sources.credentials import resolve_secret
from scitaste_hf.taxonomy import OVERALL, RESERVED_NAMES, discipline_order
from scitaste_hf.weights import DEFAULT_WEIGHTS

logger = logging.getLogger(__name__)

#: Largest accepted predictions file: 300 raw replies with reasoning fit in well under this.
MAX_BYTES = 5 * 1024 * 1024
#: Largest accepted evidence file (lm-eval samples log or agent trace), each: four times MAX_BYTES, since a
#: samples log holds every reply twice beside its prompt and a trace holds the tools' evidence for every paper
#: (the offline baseline's trace of 300 papers in one tool mode is about 4 MiB).
MAX_EVIDENCE_BYTES = 4 * MAX_BYTES
_EVIDENCE_NAMES = {"samples": "samples log", "trace": "trace"}
#: Accepted submissions one submitter may make per window: a rejected file or a duplicate does not count.
RATE_LIMIT = (5, 3600.0)
#: Attempts of any outcome one submitter may make per window, as a multiple of :data:`RATE_LIMIT`'s count (over
#: the same window): generous enough for a user who fixes a file a few times, a bound on a script that scores
#: rejected files for ever.
ATTEMPTS_PER_ACCEPTED = 12
#: The submitter of a visitor who cannot be told apart from others (no account, no address).
ANONYMOUS = "anonymous"
#: Version of what is derived from a run's answers besides its status (the table numbers, the skill and the
#: replicates); part of :attr:`Leaderboard.derived_key`, so raising it rescores every stored run on the next open.
DERIVED_VERSION = 1
#: How the board names the no-information floors (:data:`scitaste_hf.scoring.floors.FLOORS`) in its reference rows.
FLOOR_NAMES = {"constant": "floor: constant (knows nothing)", "discipline_prior": "floor: discipline prior"}
_LINK = re.compile(r"^https?://[^\s<>\"'`]{1,300}$")


@dataclass(frozen=True)
class RequestResult:
    """The outcome of a request: the queued requests' ids (one per mode) and what to tell the visitor."""

    ids: tuple[int, ...]
    message: str


@dataclass(frozen=True)
class SubmitResult:
    """The outcome of a submission."""

    run_id: int
    status: str
    duplicate: bool
    message: str


def check_meta(model: str, mode: str, organisation: str = "", link: str = "") -> tuple[str, str, str, str]:
    """Validate what a submitter types: names are plain text (no markup), the mode is one of MODES, the
    link is an http(s) URL. Returns the stripped values."""
    model = check_name(model, "model name")
    organisation = check_name(organisation, "organisation", required=False)
    link = (link or "").strip()
    if mode not in MODES:
        raise SubmissionError(f"mode must be one of {', '.join(MODES)}")
    if link and not _LINK.match(link):
        raise SubmissionError("link must be an http(s) URL without spaces or quotes")
    return model, mode, organisation, link


def run_key(predictions: Mapping[str, Answer | Failure], mode: str) -> str:
    """A run's key: the SHA-256 of its parsed answers (in bibcode order) and its mode, so that the same answers
    sent again with other line endings, spacing or line order are the same run, and the same answers in another
    mode (a baseline whose modes agree) are another run."""
    canonical = {bibcode: answer.model_dump() if isinstance(answer, Answer) else [answer.reason, answer.detail]
                 for bibcode, answer in sorted(predictions.items())}
    return hashlib.sha256(json.dumps([mode, canonical], sort_keys=True).encode()).hexdigest()


def _result_of(row) -> dict[str, Any]:
    """A run's stored row (:meth:`~scitaste_hf.leaderboard.store.Store.run`'s) as :meth:`Leaderboard.result` gives
    it: the result with its metadata."""
    return {"run": row["id"], "model": row["model"], "mode": row["mode"], "status": row["status"],
            "kind": row["kind"], "organisation": row["organisation"], "link": row["link"],
            "submitted_at": row["submitted_at"], "sha256": row["sha256"],
            "provenance": json.loads(row["provenance"]) if row["provenance"] else None,
            **_details_of(row), **json.loads(row["result"])}


def _details_of(row) -> dict[str, Any]:
    """Where a stored run's details dataset stands (:mod:`~scitaste_hf.leaderboard.details`), for its result: nothing
    for a run whose details are not published (no results repo when it was stored)."""
    if not row["details"]:
        return {}
    visibility = "private" if row["private"] else "public"
    if row["details"] == DETAILS_PENDING:
        return {"details dataset": f"pending ({visibility}): not on the Hub yet; retried until the Hub takes it"}
    return {"details dataset": f"{row['details']} ({visibility}): datasets.load_dataset(\"{row['details']}\", "
                               f"split=\"train\")"}


def logged_withheld(mode: str, logs: Iterable[bytes], source: str) -> str:
    """The tool a run went without ("" for none): the ``withheld`` that the first of its samples logs ``logs`` to
    record one gives (per-tool attribution, docs/report.md#per-tool-attribution); a run of a tool-free mode has none,
    and its logs are not read (``logs`` may be a generator that reads them). A file that is no samples log, or that
    cannot be read, records none."""
    if MODE_SPECS[mode].tools == "none":
        return ""
    for data in logs:
        try:
            tool = logged_field(data, source, "withheld") if data else None
        except (ScitasteError, ValueError):
            tool = None
        if tool:
            return tool
    return ""


def _compact(block: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of one scope of a :func:`score_run` result that the table shows, with the skill over the
    constant floor (``s1_skill``, ``s1_skill_ci``, ``s1_above_floor`` and the same for Scheme 2)."""
    s1, s2 = block["scheme1"] or {}, block["scheme2"] or {}
    skill = block.get("skill") or {}
    out = {
        "scheme1": s1.get("scheme1"), "scheme1_grade": s1.get("grade"),
        "scheme1_ci": (s1.get("ci") or {}).get("scheme1"),
        "scheme2": s2.get("score"), "scheme2_grade": s2.get("grade"), "scheme2_ci": (s2.get("ci") or {}).get("score"),
        "wape": s2.get("wape"), "wape_ci": (s2.get("ci") or {}).get("wape"),
        "spearman": s1.get("spearman"), "pearson": s1.get("pearson"), "mae": s1.get("mae"), "bias": s1.get("bias"),
        "n_scored": block["n_scored"], "n_total": block["n_total"],
    }
    for scheme, prefix in (("scheme1", "s1"), ("scheme2", "s2")):
        numbers = skill.get(scheme) or {}
        out.update({f"{prefix}_skill": numbers.get("skill"), f"{prefix}_skill_ci": numbers.get("interval"),
                    f"{prefix}_above_floor": numbers.get("above_floor")})
    return out


def summary_of(result: Mapping[str, Any]) -> dict[str, Any]:
    """What the table shows of a :func:`score_run` result, per scope."""
    return {OVERALL: _compact(result["overall"]), **{d: _compact(b) for d, b in result["by_discipline"].items()}}


def _view_key(mode: str | None, discipline: str | None, grade: str | None, status: str | None,
              include_flagged: bool, open_weights: bool, model: Sequence[str] | None = None) -> tuple:
    return (mode or None, discipline or OVERALL, grade or None, status or None, bool(include_flagged),
            bool(open_weights), check_filters(model))


def _answer_rows(predictions: Mapping[str, Answer | Failure], gold: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The answers as an (n, 8) matrix in gold order; a NaN row for each failure."""
    P = np.full((len(gold), 1 + len(DIMENSIONS)), np.nan)
    for i, record in enumerate(gold):
        answer = predictions.get(record["bibcode"])
        if isinstance(answer, Answer):
            P[i] = answer.vector()
    return P


def _check_size(what: str, data: bytes, limit: int) -> None:
    if len(data) > limit:
        raise SubmissionError(f"{what} is {len(data) / 2**20:.1f} MiB, over the limit of {limit / 2**20:.1f} MiB")


def parse_upload(data: bytes, ids: set[str], split: str, max_bytes: int = MAX_BYTES,
                 max_evidence_bytes: int = MAX_EVIDENCE_BYTES) -> dict[str, Answer | Failure]:
    """Validate a predictions file against the bibcodes ``ids`` of ``split``: size, JSONL, exactly one line per
    bibcode. An lm-eval samples log, which holds every prompt beside its reply, may be as large as an evidence
    file (``max_evidence_bytes``); any other file is held to ``max_bytes``.

    Raises
    ------
    SubmissionError
        With a one-line reason.
    """
    _check_size("the file", data, max_evidence_bytes if is_samples_log(data) else max_bytes)
    try:
        text = run_text(data, "upload")
    except UnicodeDecodeError:
        raise SubmissionError("the file is not UTF-8 text (expected JSONL)") from None
    except ScitasteError as exc:  # an Inspect log that cannot be read here
        raise SubmissionError(str(exc)) from None
    try:
        predictions = parse_predictions(jsonl_lines(text), "upload", strict_fields=True)
    except ScitasteError as exc:
        raise SubmissionError(str(exc)) from None
    extra = sorted(set(predictions) - ids)
    if extra:
        raise SubmissionError(f"{len(extra)} bibcode(s) not in the {split} split, e.g. {extra[0]}")
    missing = sorted(ids - set(predictions))
    if missing:
        raise SubmissionError(f"{len(missing)} bibcode(s) of the {split} split missing, e.g. {missing[0]} "
                              "(send one line per paper; a failed answer is a line with its raw response)")
    return predictions


class Leaderboard:
    """Submissions scored against the gold labels of the ``selected`` split.

    Parameters
    ----------
    data_dir : path
        Folder of the local store (SQLite + submitted files), the source of truth.
    gold : sequence of records
        Gold labels of the ``selected`` split (records of the benchmark schema).
    max_bytes : int
        Largest accepted predictions file.
    max_evidence_bytes : int
        Largest accepted evidence file (samples log or trace).
    rate_limit : (int, float) or None
        At most this many accepted submissions per submitter per this many seconds, and
        :data:`ATTEMPTS_PER_ACCEPTED` times as many attempts of any outcome; None: no limit (a local board).
    mirror : callable, optional
        The Hub dataset copy (:class:`~scitaste_hf.net.hub_copy.HubMirror`): called with the store
        after each new run and on start, it copies the runs the store lists as pending and returns whether none
        is left; its failure never loses a run.
    backup : sequence of records, optional
        The ``backup`` split of the same dataset: the no-information floors are learned from it (as
        :func:`~scitaste_hf.scoring.floors.floor_matrices` does); without it, from the gold set itself.
    background_upgrade : bool
        Bring stored runs up to date (:meth:`upgrade`) in a background thread (default), so that opening an old
        store does not wait for it; False upgrades before returning.
    read_only : bool
        Open without writing (no reconciling, no upgrade, no Hub copy): for a reader of a store that a Space
        serves, such as ``scitaste ratings report``, whose gold labels or floors might differ from the Space's and
        must not rescore its runs. The board's order is then the one the Space stored.
    gold_draws : GoldDraws, optional
        How well the gold is known (:mod:`scitaste_hf.scoring.gold_uncertainty`): each run then also gets a rank
        interval with the gold redrawn (``rank_gold``) and the board its :meth:`noise_ceiling`. Default: the
        default weights taken as known, so that the second interval is the first.
    details : HubMirror, optional
        Publishes each new run's per-paper details as a dataset repo of its own beside the mirror's repo
        (:class:`~scitaste_hf.leaderboard.details.DetailsQueue`), in the background: a submission never waits for it,
        and a failure leaves the run's details pending (shown in its result), retried after the failure, with the
        next run and on the next start.
    """

    def __init__(self, data_dir: str | Path, gold: Sequence[Mapping[str, Any]], *, max_bytes: int = MAX_BYTES,
                 max_evidence_bytes: int = MAX_EVIDENCE_BYTES, rate_limit: tuple[int, float] | None = RATE_LIMIT,
                 mirror=None, backup: Sequence[Mapping[str, Any]] | None = None,
                 background_upgrade: bool = True, read_only: bool = False, gold_draws: GoldDraws | None = None,
                 details=None) -> None:
        self.store = Store(data_dir)
        self.gold_draws = gold_draws or GoldDraws(DEFAULT_WEIGHTS)
        self._ceilings: dict[str, dict[str, Any]] = {}
        self.gold = list(gold)
        self.backup = None if backup is None else list(backup)
        self.gold_ids = {r["bibcode"] for r in self.gold}
        self.max_bytes = max_bytes
        self.max_evidence_bytes = max_evidence_bytes
        self.rate_limit = rate_limit
        self.mirror = mirror
        self.details_mirror = details
        self._details_table: Details | None = None
        self._details_open = threading.Lock()
        self._details = None if details is None else DetailsQueue(self, details.repo_id)
        self._accepted = self._attempts = self._requested = None
        if rate_limit is not None:
            self._accepted = RateLimit(*rate_limit, "submissions")
            self._attempts = RateLimit(rate_limit[0] * ATTEMPTS_PER_ACCEPTED, rate_limit[1], "submission attempts")
            self._requested = RateLimit(*rate_limit, "requests")
        #: The queue of models the board evaluates itself (:mod:`scitaste_hf.leaderboard.requests`).
        self.requests = RequestQueue(self.store, copy=mirror is not None)
        #: The worker's secret, which seals and checks ``server-run`` results (None: no run here is one).
        self.worker_secret = resolve_secret(None, constants.SCITASTE_WORKER_SECRET)
        #: Runs that claimed ``server-run`` on open without a seal that holds (:meth:`verify_seals`).
        self.unsealed: list[int] = []
        self._submit_lock = threading.Lock()
        self._G = as_answer_matrix(self.gold, "gold")
        disciplines = np.array([r["discipline"] for r in self.gold])
        present = set(disciplines.tolist())
        if reserved := sorted(present & RESERVED_NAMES):
            raise ScitasteError(f"gold: discipline {reserved[0]!r} is reserved: the board's {OVERALL} row holds "
                                "every discipline; rename it")
        #: The scopes of a run's numbers, in :func:`score_run`'s order: overall, then each discipline.
        self.scopes = (OVERALL, *discipline_order(present))
        self._masks = {scope: np.ones(len(self.gold), dtype=bool) if scope == OVERALL else disciplines == scope
                       for scope in self.scopes}
        self._floor_answers = floor_matrices(self._G, disciplines, self.backup)
        self.derived_key = self._derived_key()
        self._floor_rows: dict[str, list[dict[str, Any]]] | None = None
        self._floor_lock = threading.Lock()
        self._cache = RunCache(self.store)
        self._upgrade_lock = threading.Lock()
        self._closing = threading.Event()
        self.upgrading: threading.Thread | None = None
        self.reconciled = 0
        if read_only:
            return
        self.reconciled = self.reconcile()
        self.unsealed = self.verify_seals()
        if self.store.stale(RULE_VERSION, self.derived_key) or self.store.unread_withheld():
            if background_upgrade:
                self.upgrading = threading.Thread(target=self.upgrade, daemon=True, name="scitaste-upgrade")
                self.upgrading.start()
            else:
                self.upgrade()
        self.copy_to_hub()
        self.publish_details()

    def _derived_key(self) -> str:
        """What a run's stored numbers and replicates depend on besides its answers: the gold set, the floors (and
        so the backup split), the resamples and :data:`DERIVED_VERSION`."""
        digest = hashlib.sha256(json.dumps([DERIVED_VERSION, RANK_RESAMPLES, SEED, dict(DEFAULT_WEIGHTS),
                                            [(r["bibcode"], r["discipline"]) for r in self.gold]]
                                           # gold taken as known keeps the key of a board from before the draws
                                           + ([] if self.gold_draws.trivial else [self.gold_draws.key()])).encode())
        digest.update(np.ascontiguousarray(self._G).tobytes())
        for name in sorted(self._floor_answers):
            digest.update(name.encode() + np.round(self._floor_answers[name], 9).tobytes())
        return digest.hexdigest()[:32]

    def close(self) -> None:
        """Stop a background upgrade (it resumes on the next open) and close the store."""
        self._closing.set()
        if self.upgrading is not None:
            self.upgrading.join()
        self.store.close()

    # -- submissions ---------------------------------------------------------------------------------

    def parse(self, data: bytes) -> dict[str, Answer | Failure]:
        """Validate a predictions file against the gold set (:func:`parse_upload`)."""
        return parse_upload(data, self.gold_ids, "selected", self.max_bytes, self.max_evidence_bytes)

    def submit(self, data: bytes, model: str, mode: str, organisation: str = "", link: str = "", *,
               submitter: str = "", samples: bytes | None = None, trace: bytes | None = None,
               kind: str = "submission", hub_id: str = "", revision: str = "", knowledge_cutoff: str = "",
               private: bool = False) -> SubmitResult:
        """Validate, score and store a predictions file; the same answers twice in a mode are a no-op.

        ``hub_id`` and ``revision`` name the model on the Hub, whose card and repo give the run's model metadata
        when the Hub answers (:func:`~scitaste_hf.leaderboard.metadata.model_metadata`; else it is stored as given,
        unverified), and ``knowledge_cutoff`` is the submitter's statement of it. ``private`` makes the run's details
        dataset private, where the board publishes them (its ``details``).

        Scoring and the evidence check run before the lock that serialises writes, so a large submission does not
        hold up others; a replay is answered before any scoring.

        A submission counts against the submitter's limit once it is stored; a rejected file and a duplicate
        count only as attempts, against the far larger bound of :data:`ATTEMPTS_PER_ACCEPTED`.

        Raises
        ------
        SubmissionError
            With a one-line reason, when the file, an evidence file or the metadata is rejected or the
            submitter is over a rate limit; nothing is stored then.
        """
        if kind not in KINDS:
            raise SubmissionError(f"kind must be one of {', '.join(KINDS)}")
        limited = kind == "submission" and self._accepted is not None
        if limited:
            self._attempts.check(submitter or ANONYMOUS)
            self._accepted.check(submitter or ANONYMOUS, record=False)  # refused before any scoring
        model, mode, organisation, link = check_meta(model, mode, organisation, link)
        if hub_id or revision:
            hub_id, revision = check_hub_model(hub_id, revision)
        knowledge_cutoff = check_cutoff(knowledge_cutoff)
        evidence = {k: v for k, v in (("samples", samples), ("trace", trace)) if v}
        for name, blob in evidence.items():
            _check_size(f"the {_EVIDENCE_NAMES[name]}", blob, self.max_evidence_bytes)
        predictions = self.parse(data)
        key = run_key(predictions, mode)
        # Runs stored before keys were canonical are keyed by their file's bytes and mode.
        keys = (key, hashlib.sha256(data + f"\n#mode={mode}".encode()).hexdigest())
        existing = self._stored(keys)
        if existing is not None:
            return existing
        status, note = self._status(predictions, evidence, mode)
        derived = self._derive(predictions)
        model_meta = model_metadata(hub_id, revision, knowledge_cutoff)
        with self._submit_lock:
            existing = self._stored(keys)  # the same answers may have been stored while these were scored
            if existing is not None:
                return existing
            if limited:  # counted with the storing, so that concurrent uploads of one submitter cannot pass it
                self._accepted.check(submitter or ANONYMOUS)
            meta = Meta(model=model, mode=mode, organisation=organisation, link=link, kind=kind,
                        submitter=submitter, submitted_at=timestamp(),
                        model_meta=model_meta, private=bool(private))
            self.store.store_submission(key, data, meta, evidence)
            run_id = self._insert(key, meta, status, *derived,
                                  withheld=logged_withheld(mode, [data, evidence.get("samples", b"")], "upload"))
        message = f"scored as run #{run_id}: {status}" + (f" ({note})" if note else "")
        if not self.copy_to_hub():
            message += "; it is stored here, and its copy to the Hub dataset repo is pending and will be retried"
        self.publish_details()
        return SubmitResult(run_id, status, False, message)

    def _stored(self, keys: Sequence[str]) -> SubmitResult | None:
        """The duplicate answer for a run already stored under one of ``keys``."""
        for key in keys:
            run_id = self.store.has(key)
            if run_id is not None:
                return SubmitResult(run_id, self.store.run(run_id)["status"], True,
                                    f"these answers were already submitted as run #{run_id}; nothing changed")
        return None

    def copy_to_hub(self, wait: float = HUB_COPY_WAIT) -> bool:
        """Copy the runs whose Hub copy is pending (tried on start and after each new run); True when none is
        left pending or no copy is configured.

        Parameters
        ----------
        wait : float
            Seconds to wait for the copy before it goes on in the background
            (:func:`~scitaste_hf.net.hub_copy.copy_in_background`).
        """
        return copy_in_background(self.mirror, self.store, wait)

    def details_table(self) -> Details:
        """The board's per-paper details (:class:`~scitaste_hf.leaderboard.details.Details`), opened on first use and
        shared by every reader in the process (the Papers tab, the details datasets' publication): two tables on one
        file would each read every stored run, and one rebuilding it could empty it under the other's reads."""
        with self._details_open:
            if self._details_table is None:
                self._details_table = Details(self)
            return self._details_table

    def publish_details(self) -> None:
        """Publish the details datasets still pending (:class:`~scitaste_hf.leaderboard.details.DetailsQueue`), in the
        background: tried on start and after each new run, never waited for."""
        if self._details is not None:
            copy_in_background(self.details_mirror, self._details, 0.0)

    def _status(self, predictions: Mapping[str, Answer | Failure], evidence: Mapping[str, bytes], mode: str
                ) -> tuple[str, str]:
        """Judge a run's integrity by the current rule: its status and a note on why.

        The statuses and what each proves are in :mod:`scitaste_hf.leaderboard.integrity`.
        """
        copy = near_gold(predictions, self.gold)
        if copy:
            status, note = FLAGGED, f"{copy}: closer than an honest judge gets; not ranked"
        elif evidence:
            problems = [p for p in (verify_evidence(blob, predictions, mode) for blob in evidence.values()) if p]
            status = SELF_REPORTED if problems else EVIDENCE_CONSISTENT
            note = problems[0] if problems else ("the evidence records every submitted answer; this shows they agree, "
                                                 "not that a model produced them")
        else:
            status, note = SELF_REPORTED, "no samples log or trace attached"
        return status, note

    def _derive(self, predictions: Mapping[str, Answer | Failure]
                ) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
        """Score a run: the :func:`score_run` result (floors learned from the backup split when there is one), the
        table's numbers per scope, and per scope its replicates, the Scheme-1 skill over the constant floor on
        the board's shared resamples (:func:`~scitaste_hf.scoring.ranks.replicates`), which rank it."""
        result = score_run(self.gold, predictions, backup=self.backup)
        P, F = _answer_rows(predictions, self.gold), self._floor_answers["constant"]
        values = {scope: replicates(P[m], self._G[m], F[m], weights=DEFAULT_WEIGHTS)
                  for scope, m in self._masks.items()}
        if not self.gold_draws.trivial:  # else the second rank interval is the first (RunCache.gold_ranks)
            values |= {GOLD_REDRAWN + scope: gold_replicates(P[m], self._G[m], F[m], self.gold_draws.of(m),
                                                             weights=DEFAULT_WEIGHTS, n_resamples=RANK_RESAMPLES)
                       for scope, m in self._masks.items()}
        return result, summary_of(result), values

    def _insert(self, key: str, meta: Meta, status: str, result: dict[str, Any], summary: dict[str, Any],
                values: dict[str, np.ndarray], withheld: str | None = None) -> int:
        overall = result["overall"]
        return self.store.insert(key, meta, status, summary, result, overall["n_scored"], overall["n_total"],
                                 copy=self.mirror is not None, replicates=values, integrity_version=RULE_VERSION,
                                 derived=self.derived_key, withheld=withheld,
                                 details=DETAILS_PENDING if self._details is not None else "")

    def reconcile(self) -> int:
        """Score and insert submissions whose file was stored but whose row was not (a crash in between)."""
        done = 0
        for key, meta in self.store.pending():
            data = self.store.submission_file(key).read_bytes()
            try:
                predictions = self.parse(data)
            except ScitasteError:
                continue  # validated before it was stored; a changed gold set cannot re-admit it
            evidence = self.store.evidence(key)
            if self._seal_holds(key, meta, data):  # a worker's run whose row a crash kept out
                status = self._worker_status(predictions)
            else:
                status, _ = self._status(predictions, evidence, meta.mode)
            self._insert(key, meta, status, *self._derive(predictions),
                         withheld=logged_withheld(meta.mode, [data, evidence.get("samples", b"")], "upload"))
            done += 1
        return done

    def _worker_status(self, predictions: Mapping[str, Answer | Failure]) -> str:
        """The status of a run whose seal holds: ``server-run``, or ``flagged`` when its answers copy the labels (the
        rule spares no run, the worker's included)."""
        return FLAGGED if near_gold(predictions, self.gold) else SERVER_RUN

    def _seal_holds(self, key: str, meta: Meta, answers: bytes) -> bool:
        """Whether a run's seal (:func:`~scitaste_hf.leaderboard.integrity.seal`) holds under this board's secret."""
        return seal_holds(self.worker_secret, meta.seal, sha256=key, model=meta.model, mode=meta.mode,
                          submitted_at=meta.submitted_at, provenance=meta.provenance, answers=answers)

    def _sealed(self, row: Any) -> bool:
        """Whether a stored run's seal holds over its row (:meth:`Store.run`'s) and its stored answers file."""
        if not row["seal"]:
            return False
        try:
            answers = self.store.submission_file(row["sha256"]).read_bytes()
        except OSError:
            return False
        meta = Meta(model=row["model"], mode=row["mode"], submitted_at=row["submitted_at"], seal=row["seal"],
                    provenance=json.loads(row["provenance"]) if row["provenance"] else None)
        return self._seal_holds(row["sha256"], meta, answers)

    def verify_seals(self) -> list[int]:
        """Check the seal of every run that claims ``server-run`` or carries a seal (on open): a claim whose seal does
        not hold (a row edited by hand, a replaced answers file, or no worker secret here to check it) is judged again
        as an upload, with a warning; a sealed run judged so before, whose seal holds again, is ``server-run``
        again. Returns the runs whose claim was refused."""
        refused = []
        for run_id in self.store.sealed_or_claimed():
            row = self.store.run(run_id)
            holds = self._sealed(row)
            if row["status"] == SERVER_RUN and not holds:
                try:
                    predictions = self.parse(self.store.submission_file(row["sha256"]).read_bytes())
                    status, _ = self._status(predictions, self.store.evidence(row["sha256"]), row["mode"])
                except (ScitasteError, OSError):
                    status = SELF_REPORTED
                self.store.set_status(run_id, status, RULE_VERSION)
                logger.warning("run #%s claims %s but its seal does not hold (edited by hand, or no %s here): "
                               "judged as an upload, %s", run_id, SERVER_RUN, constants.SCITASTE_WORKER_SECRET, status)
                refused.append(run_id)
            elif holds and row["status"] not in (SERVER_RUN, FLAGGED):
                self.store.set_status(run_id, SERVER_RUN, RULE_VERSION)
        return refused

    def upgrade(self) -> int:
        """Bring the stored runs up to date, once (idempotent; a second call finds nothing to do): a run whose status
        an older integrity rule set is judged again by the current one (:data:`~scitaste_hf.leaderboard.integrity.
        RULE_VERSION`), so that a copy an old rule let through is flagged; a run scored by an older version, or
        against another gold set or other floors, is scored again, with its replicates (:attr:`derived_key`).

        Runs whose stored file no longer parses against the gold set are left as they are. Returns the number of
        runs brought up to date.
        """
        done = 0
        with self._upgrade_lock:
            for row in self.store.stale(RULE_VERSION, self.derived_key):
                if self._closing.is_set():
                    break
                try:
                    predictions = self.parse(self.store.submission_file(row["sha256"]).read_bytes())
                except (ScitasteError, OSError):
                    continue
                if row["integrity_version"] < RULE_VERSION:
                    if self._sealed(self.store.run(row["id"])):
                        status = self._worker_status(predictions)
                    else:
                        status, _ = self._status(predictions, self.store.evidence(row["sha256"]), row["mode"])
                    self.store.set_status(row["id"], status, RULE_VERSION)
                    if status != row["status"]:
                        logger.info("run #%s re-assessed by integrity rule %s: %s -> %s", row["id"], RULE_VERSION,
                                    row["status"], status)
                if row["derived"] != self.derived_key:
                    result, summary, values = self._derive(predictions)
                    self.store.set_derived(row["id"], summary, result, values, self.derived_key)
                done += 1
            if not self._closing.is_set():
                done += self._read_withheld()
        return done

    def _read_withheld(self, chunk: int = 500) -> int:
        """Record the withheld tool of each run stored before the store kept it (read from its files once, recorded
        ``chunk`` runs a transaction); a run whose files cannot be read is left for the next open. Returns the number
        of runs recorded."""
        done, values = 0, {}
        for row in self.store.unread_withheld():
            if self._closing.is_set():
                break
            try:
                values[int(row["id"])] = self._withheld_of(row)
            except OSError:
                continue
            if len(values) >= chunk:
                self.store.set_withheld(values)
                done, values = done + len(values), {}
        if values:
            self.store.set_withheld(values)
        return done + len(values)

    def _withheld_of(self, row) -> str:
        """A run's withheld tool read from its stored files (:func:`logged_withheld`)."""
        key = row["sha256"]
        reads = (lambda: self.store.submission_file(key).read_bytes(),
                 lambda: self.store.evidence(key).get("samples", b""))
        return logged_withheld(row["mode"], (read() for read in reads), f"run #{row['id']}")

    # -- requests and the worker's runs -------------------------------------------------------------

    def request(self, model: str, modes: str | Sequence[str], *, revision: str = "", submitter: str = "",
                knowledge_cutoff: str = "") -> RequestResult:
        """Queue a model for the board to evaluate itself, one request per mode (what the Submit tab's request
        calls).

        ``model`` is a Hub model id (with an optional ``revision``: a branch, tag or commit) or the name of one of the
        operator's endpoints (:func:`~scitaste_hf.leaderboard.requests.operator_endpoints`); a Hub model runs in the
        modes any chat model can (no live tool loop, no provider search). ``submitter`` is the visitor's identity
        (the signed-in account, else the address): requests count against the same limit as submissions, in a
        window of their own. ``knowledge_cutoff`` is the submitter's statement of the model's, kept with the run.

        Raises
        ------
        SubmissionError
            In one line, for a malformed name, an unknown mode, a duplicate of a pending, running or finished request
            (same model, revision and mode) or a visitor over the limit; nothing is queued then.
        """
        who = submitter or ANONYMOUS
        if self._requested is not None:
            self._requested.check(who, record=False)
        model, source, revision = check_model(model, revision, list(operator_endpoints()))
        knowledge_cutoff = check_cutoff(knowledge_cutoff)
        modes = list(dict.fromkeys([modes] if isinstance(modes, str) else modes or []))
        if not modes:
            raise SubmissionError(f"modes: choose one or more of {', '.join(MODES)}")
        for mode in modes:
            if mode not in MODES:
                raise SubmissionError(f"mode must be one of {', '.join(MODES)}")
            spec = MODE_SPECS[mode]
            if source == "hub" and (spec.tools == "live" or spec.search):
                raise SubmissionError(f"mode {mode} needs an endpoint of the board (a live tool loop or the "
                                      "provider's search); a Hub model runs in "
                                      + ", ".join(m for m, s in MODE_SPECS.items() if s.tools != "live"
                                                  and not s.search))
        with self._submit_lock:
            if self._requested is not None:
                self._requested.check(who, record=False)
            ids = self.requests.add(model, source, revision, modes, submitter, knowledge_cutoff)
            if self._requested is not None:
                self._requested.check(who)
        queued = ", ".join(f"#{i} ({m})" for i, m in zip(ids, modes))
        message = f"queued as request {queued}: the board's worker will evaluate it"
        if not self.copy_to_hub():
            message += "; its copy to the Hub dataset repo is pending and will be retried"
        return RequestResult(tuple(ids), message)

    def queue(self) -> list[dict[str, Any]]:
        """Every request, newest first, as the Queue tab shows it (:meth:`~scitaste_hf.leaderboard.requests.
        RequestQueue.listing`: state, reason, position, times, the run produced; no submitter)."""
        return self.requests.listing()

    def cancel_request(self, request_id: int, submitter: str | None = "") -> str:
        """Cancel a pending or running request of ``submitter`` (None: the operator, any request); the line to show
        (:class:`SubmissionError` otherwise). A running one's worker stops within a poll and stores nothing."""
        self.requests.cancel(request_id, submitter)
        self.copy_to_hub()
        return f"request #{request_id} cancelled"

    def requeue_request(self, request_id: int) -> str:
        """Queue a finished or failed request again (the operator's re-run after the gold set or the task version
        changed); the line to show."""
        self.requests.requeue(request_id)
        self.copy_to_hub()
        return f"request #{request_id} is pending again"

    def store_server_run(self, request: Mapping[str, Any], data: bytes, provenance: Mapping[str, Any], *,
                         trace: bytes | None = None) -> SubmitResult:
        """Score and store what the evaluation worker ran for ``request`` (a row of the queue): ``data`` is its
        lm-eval samples log, scored by the same code as a submission; the run is ``server-run`` (``flagged`` when
        its answers copy the public labels), carries ``provenance`` (what was run) and is sealed with the worker's
        secret. The same request stored twice (a worker that died after storing) is the same run.

        Raises
        ------
        ScitasteError
            Without a worker secret (nothing here can be ``server-run``).
        SubmissionError
            When the samples log does not cover the gold set, or not one of its replies could be parsed (the reason
            counts the failures by kind).
        """
        if not self.worker_secret:
            raise ScitasteError(f"storing a server-run needs the worker's secret: set "
                                f"{constants.SCITASTE_WORKER_SECRET} (the same value on the Space)")
        predictions = self.parse(data)
        if not any(isinstance(a, Answer) for a in predictions.values()):
            reasons = defaultdict(int)
            for failure in predictions.values():
                reasons[failure.reason] += 1
            raise SubmissionError(f"no reply of the {len(predictions)} papers could be scored ("
                                  + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())) + ")")
        mode = request["mode"]
        key = hashlib.sha256(json.dumps([SERVER_RUN, request["id"], request["started_at"],
                                         run_key(predictions, mode)]).encode()).hexdigest()
        existing = self._stored([key])
        if existing is not None:
            return existing
        status = self._worker_status(predictions)
        derived = self._derive(predictions)
        hub = request["source"] == "hub"
        link = f"{constants.hf_endpoint()}/{request['model']}" if hub else ""
        model_meta = model_metadata(request["model"] if hub else "", provenance.get("revision") or "",
                                    request.get("knowledge_cutoff") or "")
        with self._submit_lock:
            existing = self._stored([key])
            if existing is not None:
                return existing
            meta = Meta(model=request["model"], mode=mode, link=link, submitter=request["submitter"],
                        submitted_at=timestamp(), provenance=dict(provenance),
                        model_meta=model_meta)
            meta = replace(meta, seal=seal(self.worker_secret, sha256=key, model=meta.model, mode=mode,
                                           submitted_at=meta.submitted_at, provenance=meta.provenance, answers=data))
            self.store.store_submission(key, data, meta, {"trace": trace} if trace else {})
            run_id = self._insert(key, meta, status, *derived, withheld=logged_withheld(mode, [data], "samples log"))
        self.copy_to_hub()
        self.publish_details()
        return SubmitResult(run_id, status, False, f"scored as run #{run_id}: {status}")

    # -- reading -------------------------------------------------------------------------------------

    def rows(self, *, mode: str | None = None, discipline: str | None = None, grade: str | None = None,
             status: str | None = None, include_flagged: bool = False, open_weights: bool = False,
             model: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Table rows, one per run, the scores of ``discipline`` (default overall), in the board's order: best
        Scheme-1 skill over the constant floor first (:func:`~scitaste_hf.leaderboard.views.order_key`).

        Flagged runs are left out unless ``include_flagged``, and then come last, unranked; ``grade`` matches the
        Scheme-2 grade; ``open_weights`` keeps the runs whose model the Hub shows with its weights, ``model`` (choices
        of :func:`~scitaste_hf.leaderboard.metadata.model_filters`: knowledge cutoff, size) those whose model passes
        them (:func:`~scitaste_hf.leaderboard.metadata.model_filter`), ranked among themselves. Each ranked run has
        ``rank``, its 95% rank interval ``(best, worst)`` among the view's ranked runs, ``rank_gold``, the same with the
        gold redrawn too (:attr:`gold_draws`), and ``top_group``, whether that interval reaches the leader's (None for a
        run not ranked, or whose replicates are not computed yet). Computed once per view until the store changes; the
        floors are never among the rows (see :meth:`floors`).
        """
        return self._cache.view(_view_key(mode, discipline, grade, status, include_flagged, open_weights, model))

    def map_rows(self, row, *, mode: str | None = None, discipline: str | None = None, grade: str | None = None,
                 status: str | None = None, include_flagged: bool = False, open_weights: bool = False,
                 model: Sequence[str] | None = None) -> list[Any]:
        """``row(meta, numbers, rank, top_group)`` for each row of :meth:`rows`, without building its dict: the run's
        metadata (``run``, ``model``, ``mode``, ``kind``, ``status``, ``organisation``, ``link``, ``date``,
        ``model_meta``), the
        numbers of the scope, the rank interval and the top group (the first two shared: not to be changed). For
        what renders thousands of rows."""
        key = _view_key(mode, discipline, grade, status, include_flagged, open_weights, model)
        return [row(*entry) for entry in self._cache.entries(key)]

    def gold_ranks(self, *, mode: str | None = None, discipline: str | None = None, grade: str | None = None,
                   status: str | None = None, include_flagged: bool = False, open_weights: bool = False,
                   model: Sequence[str] | None = None) -> dict[int, tuple[int, int]]:
        """Run id -> ``rank_gold`` of each ranked run of the view :meth:`map_rows` gives (the rank interval with the
        gold redrawn too), for what renders rows without their dicts."""
        return self._cache.gold_ranks(_view_key(mode, discipline, grade, status, include_flagged, open_weights,
                                                model))

    def generation(self) -> int:
        """A number that changes whenever the stored runs do (for caches of what is built from :meth:`rows`)."""
        return self._cache.generation()

    def memo(self, key: Any, build) -> Any:
        """``build()``, computed once per hashable ``key`` until the stored runs change."""
        return self._cache.memo(("memo", key), build)

    def per_run(self, run_id: int, key: Any, build) -> Any:
        """``build()``, computed once per run and hashable ``key`` until the run is rescored (it must not depend on
        the run's status)."""
        return self._cache.per_run(run_id, key, build)

    def noise_ceiling(self, discipline: str | None = None) -> dict[str, dict[str, Any]]:
        """The best a run can score in a scope (default overall) when the gold is known as well as
        :attr:`gold_draws` says: a predictor of the expected gold against the redrawn gold
        (:func:`~scitaste_hf.scoring.gold_uncertainty.noise_ceiling`: Scheme 1, Scheme 2 and their skill over the
        constant floor, each ``value`` and ``interval``). Computed once per scope."""
        scope = discipline or OVERALL
        if scope not in self._masks:
            raise ScitasteError(f"no papers of {scope!r} on this board")
        if scope not in self._ceilings:
            m = self._masks[scope]
            self._ceilings[scope] = noise_ceiling(self._G[m], self._floor_answers["constant"][m],
                                                  self.gold_draws.of(m), weights=DEFAULT_WEIGHTS)
        return self._ceilings[scope]

    def floors(self, *, mode: str | None = None, discipline: str | None = None, grade: str | None = None,
               status: str | None = None, include_flagged: bool = False, open_weights: bool = False,
               model: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The no-information floors of a view as reference rows, never runs: each floor's answers
        (:func:`~scitaste_hf.scoring.floors.floor_matrices` over the board's gold, learned from the backup split
        when there is one) scored by :func:`score_run` like a run, on the papers of ``discipline``.

        Each row has the keys of a :meth:`rows` row (``run`` None, ``kind`` "floor", ``status`` "reference") and
        ``runs_above``: how many of the view's ranked runs it would place above it (better Scheme-1 skill), out of
        ``runs``. The filters only choose those runs: a floor answers the same in every mode.
        """
        scope = discipline or OVERALL
        runs = [r for r in self.rows(mode=mode, discipline=discipline, grade=grade, status=status,
                                     include_flagged=include_flagged, open_weights=open_weights, model=model)
                if r["status"] != FLAGGED]
        out = []
        for floor in self._floors().get(scope, []):
            above = sum(order_key(r) < order_key(floor) for r in runs)
            out.append({**floor, "runs_above": above, "runs": len(runs)})
        return out

    def _floors(self) -> dict[str, list[dict[str, Any]]]:
        """Scope -> the floors' rows (scored once, on first use)."""
        with self._floor_lock:
            if self._floor_rows is None:
                rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
                for name in FLOORS:
                    if name not in self._floor_answers:
                        continue
                    answers = {r["bibcode"]: Answer.model_validate(
                        {"innovation_score": float(v[0]), "dimension_scores": dict(zip(DIMENSIONS, map(float, v[1:])))})
                        for r, v in zip(self.gold, self._floor_answers[name])}
                    for scope, numbers in summary_of(score_run(self.gold, answers, backup=self.backup)).items():
                        rows[scope].append({"run": None, "model": FLOOR_NAMES[name], "mode": "", "kind": "floor",
                                            "status": "reference", "organisation": "", "link": "", "date": "",
                                            "scope": scope, "floor": name, **numbers, "rank": None,
                                            "top_group": None})
                self._floor_rows = dict(rows)
            return self._floor_rows

    def _row(self, run_id: int):
        """A stored run's row (:class:`ScitasteError` for an unknown run)."""
        row = self.store.run(run_id)
        if row is None:
            raise ScitasteError(f"no run #{run_id}")
        return row

    def result(self, run_id: int) -> dict[str, Any]:
        """The full stored result of a run, with its metadata."""
        return _result_of(self._row(run_id))

    def current_result(self, run_id: int) -> dict[str, Any] | None:
        """:meth:`result` when the run was scored against this board's gold set and floors (its derived key is
        :attr:`derived_key`), else None: an upgrade has not reached it yet."""
        row = self._row(run_id)
        return _result_of(row) if row["derived"] == self.derived_key else None

    def answers(self, run_id: int) -> dict[str, Answer | Failure]:
        """A stored run's answers, ``{bibcode: Answer or Failure}``, parsed again from its stored file (what the
        Report tab analyses; :class:`ScitasteError` for an unknown run)."""
        return self.parse(self.store.submission_file(self._row(run_id)["sha256"]).read_bytes())

    def withheld(self, run_id: int) -> str:
        """The tool a stored run went without ("" for none): the ``withheld`` its samples log records, whether the log
        is the submission or its evidence (per-tool attribution, docs/report.md#per-tool-attribution), as stored with
        the run (no file is read); a run stored before the store kept it, and not yet upgraded, has its files read and
        the tool recorded."""
        meta = self._cache.meta(run_id)
        if meta is not None and meta["withheld"] is not None:
            return meta["withheld"]
        row = self._row(run_id)
        if row["withheld"] is not None:
            return row["withheld"]
        tool = self._withheld_of(row)
        self.store.set_withheld({run_id: tool})
        return tool

    def compare(self, run_a: int, run_b: int, *, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, Any]:
        """Paired bootstrap of run A minus run B on the papers both scored, overall and per discipline.

        Per scope, ``n`` and per statistic (``scheme1``, ``scheme2``, ``wape``) what
        :func:`~scitaste_hf.scoring.paired_bootstrap` gives, plus ``detectable``: the smallest true difference
        that a comparison this precise detects with 80% power
        (:func:`~scitaste_hf.scoring.ranks.detectable_difference` of the interval), and ``distinguishable``:
        whether the interval excludes 0 (both None without an interval).
        """
        a, b = self.answers(run_a), self.answers(run_b)
        out = {}
        for scope in self.scopes:
            both = [r for r in self.gold if (scope == OVERALL or r["discipline"] == scope)
                    and isinstance(a.get(r["bibcode"]), Answer) and isinstance(b.get(r["bibcode"]), Answer)]
            if len(both) < 2:
                continue
            stats = paired_bootstrap([a[r["bibcode"]] for r in both], [b[r["bibcode"]] for r in both], both,
                                     n_resamples=n_resamples, seed=seed)
            for numbers in stats.values():
                interval = numbers["interval"]
                numbers["detectable"] = None if interval is None else detectable_difference(interval)
                numbers["distinguishable"] = None if interval is None else not interval[0] <= 0 <= interval[1]
            out[scope] = {"n": len(both), **stats}
        return out

    def score_on(self, run_id: int, references: Sequence[Mapping[str, Any]], *, n_resamples: int = N_RESAMPLES,
                 seed: int = SEED) -> dict[str, Any]:
        """A run's answers on the papers of ``references`` scored against ``references`` as the gold, by
        :func:`score_run` like any run (floors learned from ``references`` themselves): the table's numbers over
        those papers. What scores a run against the expert consensus (records of the benchmark schema whose numbers
        are the experts' mean ratings) and, for the side-by-side, against the gold of the same papers."""
        keep = {r["bibcode"] for r in references}
        answers = {b: a for b, a in self.answers(run_id).items() if b in keep}
        return _compact(score_run(references, answers, n_resamples=n_resamples, seed=seed)["overall"])

    def scatter(self, run_id: int) -> list[dict[str, Any]]:
        """Predicted against gold innovation score for each scored paper of a run."""
        answers = self.answers(run_id)
        return [{"bibcode": r["bibcode"], "discipline": r["discipline"], "gold": r["innovation_score"],
                 "predicted": answers[r["bibcode"]].innovation_score}
                for r in self.gold if isinstance(answers.get(r["bibcode"]), Answer)]
