"""Integrity checks of a submission.

The gold labels of the ``selected`` split are public, so a score alone proves nothing. Each stored run gets one
of three statuses, decided in this order:

- ``flagged`` (not ranked): :func:`gold_copy_reason` finds the answers implausibly close to the public gold
  labels, closer than any honest judge gets. It proves that the answers derive from the labels (a copy, or a
  pipeline that recomputes them); it does not say who made the copy.
- ``evidence-consistent``: the attached lm-eval samples log or agent trace records, for every paper, exactly
  the submitted answer (:func:`verify_evidence`). That proves the log and the answers agree; it does not prove
  that a model produced either: a samples log is a JSONL file anyone can write, so a fabricated one passes.
- ``self-reported``: no evidence, or evidence that disagrees with the answers. The numbers are the
  submitter's word.

The rule for ``flagged``
------------------------
An honest judge, however strong, errs on each of the eight numbers of a paper (the innovation score and the
seven dimensions, 0-100), and its errors on the eight are not all tiny at once. A model with a mean absolute
error (MAE) of 4 per number has a given number within 1.5 points of the gold label for about one paper in four,
and all eight at once for about one paper in 100,000. A copy of the labels keeps all eight within rounding for
almost every paper, however it is disguised. So, per number, the answers are first mapped back onto the gold
scale by a robust affine fit ``prediction ~ a * gold + b`` (:func:`_affine_fit`: the median slope of the pairs
of papers half the gold ranking apart, then least-squares refits on the papers near the line), which undoes a
shift (+c), a scale (x0.97) or any affine map, and ignores the papers of a partial copy that were replaced by
other values. Each number's residual is measured in gold points, ``|(prediction - b) / a - gold|`` (infinite
for a flat fit, such as a constant predictor's). With at least :data:`MIN_PAPERS` (10) scored
papers, a run is flagged when any of these holds:

1. At least :data:`COPY_SHARE` (30%) of its papers have all eight residuals within :data:`COPY_TOLERANCE`
   (1.5 gold points). A copy rounded to integers or to one decimal, shifted or scaled is at 100%, one noised
   with an SD of 0.5 near 98%, one with 15% of its papers randomised near 85%. The threshold is a minority
   share so that randomising many papers does not hide the copied rest (it holds up to about 40% randomised at
   300 papers, 30% at 30; beyond half, the fit is lost, and so is most of the score). An honest model with
   an MAE of 4 is expected near 0%; at 300 papers it stays below 3% even at an MAE of 1.6.
2. At least :data:`RANKED_SHARE` (65%) of its papers have the innovation score alone within
   :data:`RANKED_TOLERANCE` (1 gold point), judged from :data:`RANKED_MIN_PAPERS` (30) scored papers on. The
   ranked Scheme-2 score uses the innovation score alone, so a copy of that one number tops the board whatever
   the dimensions say. An honest model with an MAE of 4 stays below 25% at 300 papers and 45% at 30 (one
   number alone is a weaker signal than eight, hence the larger share and sample).
3. The Spearman correlation with the gold labels is at least :data:`COPY_SPEARMAN` (0.995) for every one of the
   eight numbers: a monotone but not affine transform of the labels (a power of them, say). An honest MAE of 4
   gives about 0.85 on the innovation score and 0.97 on the dimensions of the bundled example gold; a model
   with tools may rank one or two dimensions almost perfectly (the offline baseline does), never all eight.

With fewer than :data:`MIN_PAPERS` scored papers (a run that answered only a few) no statistic is trusted, and a
run is flagged only when it is the gold labels up to rounding: every number of every scored paper within
:data:`EXACT_TOLERANCE` (0.5) of the label. No paper scored, no flag.

Together the rules flag copies noised with an SD up to about 1 point. What they cannot catch: labels with noise
of an honest strong model's size (an SD of 2 points or more) look like an honest strong model; such a run is
self-reported, or evidence-consistent with a fabricated log. The check is pure numpy, about 2 ms for 300 papers.

The seal of a ``server-run``
----------------------------
A run that the board's own evaluation worker produced (``scitaste worker``) is stored as ``server-run``, the one
status that rests on no submitter's word, and carries a *seal*: an HMAC-SHA256, keyed by the operator's worker secret
(:data:`scitaste_hf.constants.SCITASTE_WORKER_SECRET`), over the run's key, model, mode, time, provenance (what the
worker ran) and the SHA-256 of its stored answers file (:func:`seal`). Only a holder of the secret can make one, so an
upload never carries a valid seal, and every time the board opens it checks the seal of each run that claims
``server-run`` or carries one (:meth:`scitaste_hf.leaderboard.Leaderboard.verify_seals`): a row edited by hand to
say ``server-run``, a sealed row whose model, mode or provenance was changed, or a stored answers file replaced is
judged again as an upload (``self-reported`` or ``evidence-consistent``), with a warning; a seal that holds again
(the secret restored) gives the status back. A ``server-run`` is still subject to the ``flagged`` rule above: a
model tuned on the public labels is flagged like a copy.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError, first_line
from scitaste_hf.predictions import is_inspect_log, log_reader
from scitaste_hf.records import jsonl_lines
from scitaste_hf.schema import Answer, Failure
from scitaste_hf.scoring import parse_answer

#: Version of the rule below. A run keeps the version that set its status; one set by an older rule (1: a copy
#: only within a fixed distance of the labels, which a +0.6 shift passed) is judged again by this one when the store
#: is opened (:meth:`scitaste_hf.leaderboard.Leaderboard.upgrade`). Raise it whenever the rule changes.
RULE_VERSION = 2
#: Fewest scored papers for the statistical rules; with fewer, only an exact copy is flagged.
MIN_PAPERS = 10
#: Rule 1: share of papers with all eight residuals within COPY_TOLERANCE gold points.
COPY_SHARE = 0.3
COPY_TOLERANCE = 1.5
#: Rule 2: share of papers whose innovation score (the ranked number) is within RANKED_TOLERANCE gold points.
RANKED_SHARE = 0.65
RANKED_TOLERANCE = 1.0
RANKED_MIN_PAPERS = 30
#: Rule 3: Spearman correlation reached by every one of the eight numbers.
COPY_SPEARMAN = 0.995
#: Half-width, in gold points, of the band of papers that the affine fit is refined on.
FIT_BAND = 3.0
#: Fewer than MIN_PAPERS papers: flagged when every number is within this of the label (a copy up to rounding).
EXACT_TOLERANCE = 0.5
#: Version of what a seal covers (:func:`seal`); part of the sealed message, so a change never verifies old seals
#: by accident.
SEAL_VERSION = 1


def seal(secret: str, *, sha256: str, model: str, mode: str, submitted_at: str, provenance: Mapping[str, Any] | None,
         answers: bytes) -> str:
    """The seal of a worker's run: HMAC-SHA256 keyed by ``secret`` over its key, model, mode, time, provenance
    (canonical JSON) and the SHA-256 of its stored answers file ``answers`` (hex)."""
    message = json.dumps([SEAL_VERSION, sha256, model, mode, submitted_at, dict(provenance or {}),
                          hashlib.sha256(answers).hexdigest()], sort_keys=True)
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()


def seal_holds(secret: str | None, claimed: str, **fields: Any) -> bool:
    """Whether ``claimed`` is the seal of ``fields`` (:func:`seal`'s) under ``secret``; False without a secret or
    a seal (a board that cannot check a seal trusts none)."""
    if not secret or not claimed:
        return False
    return hmac.compare_digest(seal(secret, **fields), claimed)


def _affine_fit(P: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column, a robust fit ``P ~ a * G + b``: the median slope of the pairs of papers half the gold ranking
    apart and the median intercept, then two least-squares refits on the papers within :data:`FIT_BAND` gold
    points of the line (the copied papers of a partial copy; for honest answers, a central band of them)."""
    n = G.shape[0]
    order = np.argsort(G, axis=0, kind="stable")
    gs, ps = np.take_along_axis(G, order, axis=0), np.take_along_axis(P, order, axis=0)
    dg, dp = gs[n // 2:] - gs[:n - n // 2], ps[n // 2:] - ps[:n - n // 2]
    slopes = np.where(dg > 0, dp / np.where(dg > 0, dg, 1.0), np.nan)  # tied gold labels give no slope
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column of tied labels only: no slope, a = 0
        a = np.nan_to_num(np.nanmedian(slopes, axis=0))
    b = np.median(P - a * G, axis=0)
    for _ in range(2):
        w = np.abs(P - a * G - b) <= FIT_BAND * np.abs(a)
        count = w.sum(axis=0)
        mg, mp = (w * G).sum(axis=0) / np.maximum(count, 1), (w * P).sum(axis=0) / np.maximum(count, 1)
        var = (w * (G - mg) ** 2).sum(axis=0)
        refit = (count >= 3) & (var > 0)
        a = np.where(refit, (w * (G - mg) * (P - mp)).sum(axis=0) / np.where(refit, var, 1.0), a)
        b = np.where(refit, mp - a * mg, b)
    return a, b


def _gold_residuals(P: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Each answer's distance from its gold label in gold points, after the fit of :func:`_affine_fit`
    (infinite where the fit is flat: the answers do not follow the labels at all)."""
    a, b = _affine_fit(P, G)
    flat = np.abs(a) < 1e-9
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.abs((P - b) / np.where(flat, 1.0, a) - G)
    e[:, flat] = np.inf
    return e


def _spearman(P: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Per column, the Spearman correlation of ``P`` and ``G`` (NaN where either is constant), with the scoring
    package's own rank correlation."""
    from scitaste_hf.scoring.stats import Counts, Ranked, spearman

    once = Counts(np.ones((1, G.shape[0])))
    return np.array([spearman(Ranked(P[:, j]), Ranked(G[:, j]), once)[0] for j in range(G.shape[1])])


def gold_copy_reason(P: np.ndarray, G: np.ndarray) -> str | None:
    """Why the answers ``P`` are a disguised copy of the gold labels ``G`` (both (n, 8), the scored papers only),
    in words, or None when they are not (the rule is in the module docstring)."""
    n = P.shape[0]
    if n == 0:
        return None
    if n < MIN_PAPERS:
        if np.all(np.abs(P - G) <= EXACT_TOLERANCE):
            return f"all {n} scored papers match the public gold labels to within {EXACT_TOLERANCE:g} points"
        return None
    e = _gold_residuals(P, G)
    share = float(np.mean(np.all(e <= COPY_TOLERANCE, axis=1)))
    if share >= COPY_SHARE:
        return (f"{share:.0%} of the papers have all eight numbers within {COPY_TOLERANCE:g} points of an affine "
                "map of the public gold labels")
    ranked = float(np.mean(e[:, 0] <= RANKED_TOLERANCE))
    if n >= RANKED_MIN_PAPERS and ranked >= RANKED_SHARE:
        return (f"{ranked:.0%} of the papers have an innovation score within {RANKED_TOLERANCE:g} point of an "
                "affine map of the public gold labels")
    rho = _spearman(P, G)
    if np.all(rho >= COPY_SPEARMAN):  # NaN (a constant column) compares False
        return (f"every number ranks the papers as the public gold labels do (Spearman at least "
                f"{rho.min():.3f})")
    return None


def near_gold(predictions: Mapping[str, Answer | Failure], gold: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the answers are a disguised copy of the gold labels (:func:`gold_copy_reason` on the scored papers),
    or None."""
    from scitaste_hf.scoring.inputs import as_answer_matrix

    scored = [r for r in gold if isinstance(predictions.get(r["bibcode"]), Answer)]
    if not scored:
        return None
    P = as_answer_matrix([predictions[r["bibcode"]] for r in scored], "predictions")
    return gold_copy_reason(P, as_answer_matrix(scored, "gold"))


def _reply(obj: Mapping[str, Any]) -> Answer | Failure | None:
    """The answer an evidence line records, or None when it records no reply.

    An lm-eval samples line holds the reply in ``filtered_resps`` / ``resps``; an agent trace line (written by
    :mod:`scitaste_hf.adapters.lmeval.models`) holds the conversation in ``messages``, whose last assistant message is
    the reply, or an ``error`` for an item that failed and so has no reply; a plain ``{"bibcode", "response"}``
    line holds it as ``response``.
    """
    if isinstance(obj.get("response"), str):
        return parse_answer(obj["response"])
    for key in ("filtered_resps", "resps"):
        value = obj.get(key)
        while isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str):
            return parse_answer(value)
    if isinstance(obj.get("error"), str):
        return Failure("other", obj["error"])
    messages = obj.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                return parse_answer(message["content"]) if isinstance(message.get("content"), str) else None
    return None


def evidence_paper(obj: Mapping[str, Any]) -> str | None:
    """The paper of an evidence line: an lm-eval sample's ``doc.bibcode``, else an agent trace line's ``bibcode``."""
    doc = obj.get("doc")
    if isinstance(doc, Mapping) and isinstance(doc.get("bibcode"), str):
        return doc["bibcode"]
    return obj.get("bibcode") if isinstance(obj.get("bibcode"), str) else None


def evidence_mode(obj: Mapping[str, Any]) -> Any:
    """The mode an evidence line names: an agent trace line's ``mode``, else an lm-eval sample's
    ``doc.scitaste_mode`` (not a string when it names none)."""
    doc = obj.get("doc") if isinstance(obj.get("doc"), dict) else {}
    return obj.get("mode") if isinstance(obj.get("mode"), str) else doc.get("scitaste_mode")


def _same(a: Answer | Failure, b: Answer | Failure) -> bool:
    if isinstance(a, Answer) and isinstance(b, Answer):
        return np.allclose(a.vector(), b.vector(), rtol=0, atol=1e-9)
    return isinstance(a, Failure) and isinstance(b, Failure)


def verify_evidence(evidence: bytes, predictions: Mapping[str, Answer | Failure], mode: str | None = None
                    ) -> str | None:
    """Check that an evidence log (lm-eval's samples JSONL, the agent trace JSONL, see :func:`_reply`, or an
    Inspect log, whose samples are read as lm-eval's) agrees with the submitted answers: the same bibcodes, and
    each reply parses to the same answer. Agreement is all it shows: a log written to match the answers passes too.
    An Inspect log must also agree with itself: a sample whose recorded score is not what its reply parses to
    makes it no evidence.

    A line of another mode than ``mode`` is left out (a trace line's ``mode``, a samples line's
    ``doc.scitaste_mode``): one trace file gathers every mode of an evaluation, and the samples of another mode
    (the live loop's for ``dimagent_v3``, say) do not show this run's answers.
    When a paper has several lines (a trace appended to by a second evaluation), the last one counts.

    Returns
    -------
    str or None
        None when it agrees with them, else the first discrepancy, in words.
    """
    seen: dict[str, Answer | Failure] = {}
    if is_inspect_log(evidence):
        try:
            evidence = log_reader("the evidence").samples_text(evidence, "the evidence", consistent=True).encode()
        except ScitasteError as exc:
            return first_line(exc)
    try:
        lines = jsonl_lines(evidence.decode("utf-8"))
    except UnicodeDecodeError:
        return "the evidence is not UTF-8 text"
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, an integer past Python's int-string limit, too deep
            return f"evidence line {number} is not JSON"
        if not isinstance(obj, dict):
            return f"evidence line {number} has no bibcode and model reply"
        line_mode = evidence_mode(obj)
        if mode and isinstance(line_mode, str) and line_mode != mode:
            continue
        bibcode, answer = evidence_paper(obj), _reply(obj)
        if bibcode is None or answer is None:
            return f"evidence line {number} has no bibcode and model reply"
        seen[bibcode] = answer
    missing = sorted(set(predictions) - set(seen))
    extra = sorted(set(seen) - set(predictions))
    if missing or extra:
        return f"the evidence covers other papers ({len(missing)} missing, {len(extra)} extra)"
    for bibcode, answer in predictions.items():
        if not _same(answer, seen[bibcode]):
            return f"the evidence's answer for {bibcode} differs from the submitted one"
    return None
