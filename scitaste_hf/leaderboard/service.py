"""The leaderboard service behind the Space: validate, score and store submissions; serve table rows,
comparisons and plot data. Pure Python over :mod:`scitaste_hf.scoring` and the local :class:`Store`; the
Gradio app only renders what this returns.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard.integrity import near_gold, verify_evidence
from scitaste_hf.leaderboard.store import EVIDENCE_CONSISTENT, FLAGGED, SELF_REPORTED, Meta, Store
from scitaste_hf.predictions import parse_predictions
from scitaste_hf.records import jsonl_lines
from scitaste_hf.schema import DISCIPLINES, MODES, Answer, Failure
from scitaste_hf.scoring import paired_bootstrap, score_run

#: Seconds a submission (or the start) waits for its Hub copy before telling the user that it is pending.
HUB_COPY_WAIT = 10.0

#: Largest accepted predictions file: 300 raw replies with reasoning fit in well under this.
MAX_BYTES = 5 * 1024 * 1024
#: Largest accepted evidence file (lm-eval samples log or agent trace), each: four times MAX_BYTES, since a
#: samples log holds every reply twice beside its prompt and a trace holds the tools' evidence for every paper
#: (the offline baseline's trace of 300 papers in one tool mode is about 4 MiB).
MAX_EVIDENCE_BYTES = 4 * MAX_BYTES
_EVIDENCE_NAMES = {"samples": "samples log", "trace": "trace"}
#: Submissions one submitter may attempt per window (valid or not).
RATE_LIMIT = (5, 3600.0)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._:/+()@-]{0,99}$")
_LINK = re.compile(r"^https?://[^\s<>\"'`]{1,300}$")


class SubmissionError(ScitasteError):
    """A submission that is rejected; the message says why, in one line."""


@dataclass(frozen=True)
class SubmitResult:
    """The outcome of a submission."""

    run_id: int
    status: str
    duplicate: bool
    message: str


def check_meta(model: str, mode: str, organisation: str = "", link: str = "") -> tuple[str, str, str, str]:
    """Validate what a submitter types: names are plain text (no markup), the mode is one of the four, the
    link is an http(s) URL. Returns the stripped values."""
    model, organisation, link = (model or "").strip(), (organisation or "").strip(), (link or "").strip()
    if not _NAME.match(model):
        raise SubmissionError("model name: 1-100 letters, digits, spaces and ._:/+()@- only (no markup)")
    if organisation and not _NAME.match(organisation):
        raise SubmissionError("organisation: up to 100 letters, digits, spaces and ._:/+()@- only (no markup)")
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


def _compact(block: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of one scope of a :func:`score_run` result that the table shows."""
    s1, s2 = block["scheme1"] or {}, block["scheme2"] or {}
    return {
        "scheme1": s1.get("scheme1"), "scheme1_grade": s1.get("grade"),
        "scheme1_ci": (s1.get("ci") or {}).get("scheme1"),
        "scheme2": s2.get("score"), "scheme2_grade": s2.get("grade"), "scheme2_ci": (s2.get("ci") or {}).get("score"),
        "wape": s2.get("wape"), "wape_ci": (s2.get("ci") or {}).get("wape"),
        "spearman": s1.get("spearman"), "pearson": s1.get("pearson"), "mae": s1.get("mae"), "bias": s1.get("bias"),
        "n_scored": block["n_scored"], "n_total": block["n_total"],
    }


def _check_size(what: str, data: bytes, limit: int) -> None:
    if len(data) > limit:
        raise SubmissionError(f"{what} is {len(data) / 2**20:.1f} MiB, over the limit of {limit / 2**20:.1f} MiB")


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
    rate_limit : (int, float)
        At most this many submission attempts per submitter per this many seconds.
    mirror : callable, optional
        The Hub dataset copy (:class:`~scitaste_hf.leaderboard.hub_mirror.HubMirror`): called with the store
        after each new run and on start, it copies the runs the store lists as pending and returns whether none
        is left; its failure never loses a run.
    """

    def __init__(self, data_dir: str | Path, gold: Sequence[Mapping[str, Any]], *, max_bytes: int = MAX_BYTES,
                 max_evidence_bytes: int = MAX_EVIDENCE_BYTES, rate_limit: tuple[int, float] = RATE_LIMIT,
                 mirror=None) -> None:
        self.store = Store(data_dir)
        self.gold = list(gold)
        self.gold_ids = {r["bibcode"] for r in self.gold}
        self.max_bytes = max_bytes
        self.max_evidence_bytes = max_evidence_bytes
        self.rate_limit = rate_limit
        self.mirror = mirror
        self._attempts: dict[str, deque[float]] = defaultdict(deque)
        self._submit_lock = threading.Lock()
        self.reconciled = self.reconcile()
        self.copy_to_hub()

    # -- submissions ---------------------------------------------------------------------------------

    def parse(self, data: bytes) -> dict[str, Answer | Failure]:
        """Validate a predictions file against the gold set: size, JSONL, exactly one line per bibcode."""
        _check_size("the file", data, self.max_bytes)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SubmissionError("the file is not UTF-8 text (expected JSONL)") from None
        try:
            predictions = parse_predictions(jsonl_lines(text), "upload", strict_fields=True)
        except ScitasteError as exc:
            raise SubmissionError(str(exc)) from None
        extra = sorted(set(predictions) - self.gold_ids)
        if extra:
            raise SubmissionError(f"{len(extra)} bibcode(s) not in the selected split, e.g. {extra[0]}")
        missing = sorted(self.gold_ids - set(predictions))
        if missing:
            raise SubmissionError(f"{len(missing)} bibcode(s) of the selected split missing, e.g. {missing[0]} "
                                  "(send one line per paper; a failed answer is a line with its raw response)")
        return predictions

    def _rate_check(self, submitter: str) -> None:
        limit, window = self.rate_limit
        now = time.monotonic()
        attempts = self._attempts[submitter]
        while attempts and attempts[0] < now - window:
            attempts.popleft()
        if len(attempts) >= limit:
            wait = int(attempts[0] + window - now) + 1
            raise SubmissionError(f"too many submissions: at most {limit} per {int(window)} s; try again in {wait} s")
        attempts.append(now)

    def submit(self, data: bytes, model: str, mode: str, organisation: str = "", link: str = "", *,
               submitter: str = "", samples: bytes | None = None, trace: bytes | None = None,
               kind: str = "submission") -> SubmitResult:
        """Validate, score and store a predictions file; the same answers twice in a mode are a no-op.

        Scoring and the evidence check run before the lock that serialises writes, so a large submission does not
        hold up others; a replay is answered before any scoring.

        Raises
        ------
        SubmissionError
            With a one-line reason, when the file, an evidence file or the metadata is rejected or the
            submitter is over the rate limit; nothing is stored then.
        """
        if kind == "submission":
            self._rate_check(submitter or "anonymous")
        model, mode, organisation, link = check_meta(model, mode, organisation, link)
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
        status, note, result = self._assess(predictions, evidence, mode)
        with self._submit_lock:
            existing = self._stored(keys)  # the same answers may have been stored while these were scored
            if existing is not None:
                return existing
            meta = Meta(model=model, mode=mode, organisation=organisation, link=link, kind=kind,
                        submitter=submitter, submitted_at=datetime.now(UTC).isoformat(timespec="seconds"))
            self.store.store_submission(key, data, meta, evidence)
            run_id = self._insert(key, meta, status, result)
        message = f"scored as run #{run_id}: {status}" + (f" ({note})" if note else "")
        if not self.copy_to_hub():
            message += "; it is stored here, and its copy to the Hub dataset repo is pending and will be retried"
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
            Seconds to wait for the copy. huggingface_hub's uploads have no timeout of their own, so a Hub that
            takes a connection and never answers would hold the submission (or the start) indefinitely: past
            ``wait`` the copy goes on in the background, and this returns False (still pending).
        """
        if self.mirror is None:
            return True
        outcome: list[bool] = []
        copy = threading.Thread(target=lambda: outcome.append(self.mirror(self.store)), daemon=True,
                                name="scitaste-hub-copy")
        copy.start()
        copy.join(wait)
        return bool(outcome and outcome[0])

    def _assess(self, predictions: Mapping[str, Answer | Failure], evidence: Mapping[str, bytes], mode: str
                ) -> tuple[str, str, dict[str, Any]]:
        """Score a run and judge its integrity: its status, a note on why, and the :func:`score_run` result.

        The statuses and what each proves are in :mod:`scitaste_hf.leaderboard.integrity`.
        """
        result = score_run(self.gold, predictions)
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
        return status, note, result

    def _insert(self, key: str, meta: Meta, status: str, result: dict[str, Any]) -> int:
        summary = {"overall": _compact(result["overall"]),
                   **{d: _compact(b) for d, b in result["by_discipline"].items()}}
        overall = result["overall"]
        return self.store.insert(key, meta, status, summary, result, overall["n_scored"], overall["n_total"],
                                 copy=self.mirror is not None)

    def reconcile(self) -> int:
        """Score and insert submissions whose file was stored but whose row was not (a crash in between)."""
        done = 0
        for key, meta in self.store.pending():
            data = self.store.submission_file(key).read_bytes()
            try:
                predictions = self.parse(data)
            except ScitasteError:
                continue  # validated before it was stored; a changed gold set cannot re-admit it
            status, _, result = self._assess(predictions, self.store.evidence(key), meta.mode)
            self._insert(key, meta, status, result)
            done += 1
        return done

    # -- reading -------------------------------------------------------------------------------------

    def rows(self, *, mode: str | None = None, discipline: str | None = None, grade: str | None = None,
             status: str | None = None, include_flagged: bool = False) -> list[dict[str, Any]]:
        """Table rows, best Scheme-2 first: one per run, the scores of ``discipline`` (default overall).

        Flagged runs are left out unless ``include_flagged``; ``grade`` matches the Scheme-2 grade.
        """
        scope = discipline or "overall"
        out = []
        for row in self.store.rows():
            if (mode and row["mode"] != mode) or (status and row["status"] != status):
                continue
            if row["status"] == FLAGGED and not include_flagged:
                continue
            numbers = json.loads(row["summary"]).get(scope)
            if numbers is None or (grade and numbers["scheme2_grade"] != grade):
                continue
            out.append({"run": row["id"], "model": row["model"], "mode": row["mode"], "kind": row["kind"],
                        "status": row["status"], "organisation": row["organisation"], "link": row["link"],
                        "date": row["submitted_at"][:10], "scope": scope, **numbers})
        out.sort(key=lambda r: -1 if r["scheme2"] is None else r["scheme2"], reverse=True)
        return out

    def result(self, run_id: int) -> dict[str, Any]:
        """The full stored result of a run, with its metadata."""
        row = self.store.run(run_id)
        if row is None:
            raise ScitasteError(f"no run #{run_id}")
        return {"run": row["id"], "model": row["model"], "mode": row["mode"], "status": row["status"],
                "kind": row["kind"], "organisation": row["organisation"], "link": row["link"],
                "submitted_at": row["submitted_at"], "sha256": row["sha256"], **json.loads(row["result"])}

    def _answers(self, run_id: int) -> dict[str, Answer | Failure]:
        row = self.store.run(run_id)
        if row is None:
            raise ScitasteError(f"no run #{run_id}")
        return self.parse(self.store.submission_file(row["sha256"]).read_bytes())

    def compare(self, run_a: int, run_b: int, *, n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
        """Paired bootstrap of run A minus run B on the papers both scored, overall and per discipline."""
        a, b = self._answers(run_a), self._answers(run_b)
        out = {}
        for scope in ("overall", *DISCIPLINES):
            both = [r for r in self.gold if (scope == "overall" or r["discipline"] == scope)
                    and isinstance(a.get(r["bibcode"]), Answer) and isinstance(b.get(r["bibcode"]), Answer)]
            if len(both) < 2:
                continue
            out[scope] = {"n": len(both), **paired_bootstrap(
                [a[r["bibcode"]] for r in both], [b[r["bibcode"]] for r in both], both,
                n_resamples=n_resamples, seed=seed)}
        return out

    def scatter(self, run_id: int) -> list[dict[str, Any]]:
        """Predicted against gold innovation score for each scored paper of a run."""
        answers = self._answers(run_id)
        return [{"bibcode": r["bibcode"], "discipline": r["discipline"], "gold": r["innovation_score"],
                 "predicted": answers[r["bibcode"]].innovation_score}
                for r in self.gold if isinstance(answers.get(r["bibcode"]), Answer)]
