"""Stored runs re-scored on two releases (docs/releases.md#runs): would a leaderboard conclusion drawn on the old
release hold on the new one?

Each run is scored on the papers it answered that both releases hold, against the old gold and against the new
gold. The two scores share the run's answers and the papers, so their difference gets a paired interval: both
are evaluated on the same resamples of the papers, with the scoring's own code
(:mod:`scitaste_hf.scoring.bootstrap`). Between runs, each pair is compared on each release with
:func:`~scitaste_hf.scoring.paired_bootstrap`; a difference is *resolved* when its interval excludes 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.release.folder import Release
from scitaste_hf.schema import Answer, Failure
from scitaste_hf.scoring import paired_bootstrap, scheme1, wape, wape_score
from scitaste_hf.scoring.bootstrap import CONFIDENCE, percentile_interval, resampled_statistics
from scitaste_hf.scoring.inputs import as_answer_matrix

#: The statistics re-scored, and the one that orders runs (the leaderboard's headline, docs/scoring.md#scheme-1).
STATISTICS = ("scheme1", "scheme2")
ORDER_BY = "scheme1"
#: The file of a leaderboard store (:class:`scitaste_hf.leaderboard.store.Store`) that tells a store folder.
STORE_FILE = "leaderboard.sqlite"


@dataclass(frozen=True)
class Run:
    """A stored run: what the report calls it and its answers by bibcode."""

    label: str
    predictions: Mapping[str, Answer | Failure]


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    """The runs of predictions files and leaderboard store folders.

    Parameters
    ----------
    paths : sequence of path
        A predictions JSONL file (one run, called by its file name), or a leaderboard store folder (every run
        it holds, called ``#id model (mode)``).

    Raises
    ------
    ScitasteError
        On a path that is neither, or a predictions file that cannot be read.
    """
    from scitaste_hf.bounded_load import read_text
    from scitaste_hf.predictions import parse_predictions, read_predictions
    from scitaste_hf.records import jsonl_lines

    runs = []
    for path in map(Path, paths):
        if path.is_file():
            runs.append(Run(path.name, read_predictions(path)))
        elif (path / STORE_FILE).is_file():
            from scitaste_hf.leaderboard.store import Store

            store = Store(path, read_only=True)  # another's store: read, never written (nor its layout created)
            try:
                for row in reversed(store.rows()):  # oldest first
                    if Path(row["sha256"]).name != row["sha256"] or row["sha256"] in ("", ".", ".."):
                        # the key names the run's file in the store: "../x" would read a file anywhere
                        raise ScitasteError(f"--runs {path}: run #{row['id']} names its file {row['sha256']!r}, "
                                            "which is not a file of the store")
                    text = read_text(store.submission_file(row["sha256"]), "run")
                    label = f"#{row['id']} {row['model']} ({row['mode']})"
                    runs.append(Run(label, parse_predictions(jsonl_lines(text), label)))
            finally:
                store.close()
        else:
            raise ScitasteError(f"--runs {path}: neither a predictions file nor a leaderboard store folder "
                                f"(one with {STORE_FILE})")
    return runs


def _gold(release: Release, keys: Sequence[str]) -> np.ndarray:
    records = release.records()
    return as_answer_matrix([records[k] for k in keys], f"gold of {release.path}")


def _points(P: np.ndarray, G: np.ndarray, weights: Mapping[str, float]) -> dict[str, float]:
    return {"scheme1": scheme1(P, G, weights)["scheme1"], "scheme2": wape_score(wape(P[:, 0], G[:, 0]))}


def _answered(run: Run, shared: set[str]) -> list[str]:
    return sorted(k for k, p in run.predictions.items() if k in shared and isinstance(p, Answer))


def rescore_run(run: Run, old: Release, new: Release, shared: Sequence[str], *, weights: Mapping[str, float],
                n_resamples: int, seed: int) -> dict[str, Any]:
    """One run on both releases' gold for the shared papers it answered, and the change.

    Returns
    -------
    dict
        ``run``, ``n`` (papers scored) and per statistic of :data:`STATISTICS`: ``old`` and ``new`` (``value``,
        ``interval``) and ``change`` (new minus old: ``value``, the paired ``interval``, and ``resolved``: whether
        the interval excludes 0; None without resamples). With ``n`` 0 the statistics are None.
    """
    keys = _answered(run, set(shared))
    out: dict[str, Any] = {"run": run.label, "n": len(keys)}
    if not keys:
        return {**out, **dict.fromkeys(STATISTICS)}
    P = np.array([run.predictions[k].vector() for k in keys])
    G_old, G_new = _gold(old, keys), _gold(new, keys)
    point_old, point_new = _points(P, G_old, weights), _points(P, G_new, weights)
    # The same number of papers and the same seed give the same resample counts: the two golds are paired.
    boot_old, boot_new = (resampled_statistics([P], G, weights, n_resamples, seed)[0] if n_resamples else None
                          for G in (G_old, G_new))
    for name in STATISTICS:
        change = point_new[name] - point_old[name]
        interval = percentile_interval(boot_new[name] - boot_old[name], CONFIDENCE) if n_resamples else None
        out[name] = {
            "old": {"value": point_old[name], "interval": percentile_interval(boot_old[name], CONFIDENCE) if n_resamples
                    else None},
            "new": {"value": point_new[name], "interval": percentile_interval(boot_new[name], CONFIDENCE) if n_resamples
                    else None},
            "change": {"value": change, "interval": interval,
                       "resolved": None if interval is None else not interval[0] <= 0 <= interval[1]}}
    return out


def _order(scored: Sequence[dict[str, Any]], side: str) -> list[str]:
    ranked = [r for r in scored if r[ORDER_BY] is not None]
    return [r["run"] for r in sorted(ranked, key=lambda r: -r[ORDER_BY][side]["value"])]


def compare_runs(runs: Sequence[Run], scored: Sequence[dict[str, Any]], old: Release, new: Release,
                 shared: Sequence[str], *, weights: Mapping[str, float], n_resamples: int, seed: int
                 ) -> dict[str, Any]:
    """Whether the conclusions about the runs change: their order by :data:`ORDER_BY` on each release, and each
    pair's paired difference on each release.

    Returns
    -------
    dict
        ``order_old`` and ``order_new`` (run labels, best first), ``order_changed``, ``pairs`` (per pair of runs
        with shared papers both answered: ``a``, ``b``, ``n``, and ``old`` / ``new`` differences A - B of
        :data:`ORDER_BY` with ``interval``, ``p_value`` and ``resolved``; ``changed``: whether the difference
        became resolved or unresolved, or a resolved one changed direction) and ``conclusions_changed``: the pairs
        that changed.
    """
    order_old, order_new = _order(scored, "old"), _order(scored, "new")
    pairs = []
    if n_resamples:
        for a, b in combinations(runs, 2):
            keys = sorted(set(_answered(a, set(shared))) & set(_answered(b, set(shared))))
            if not keys:
                continue
            PA = np.array([a.predictions[k].vector() for k in keys])
            PB = np.array([b.predictions[k].vector() for k in keys])
            pair: dict[str, Any] = {"a": a.label, "b": b.label, "n": len(keys)}
            for side, release in (("old", old), ("new", new)):
                result = paired_bootstrap(PA, PB, _gold(release, keys), weights=weights, n_resamples=n_resamples,
                                          seed=seed)[ORDER_BY]
                interval = result["interval"]
                pair[side] = {"difference": result["difference"], "interval": interval, "p_value": result["p_value"],
                              "resolved": None if interval is None else not interval[0] <= 0 <= interval[1]}
            # A conclusion is a resolved difference and its direction; an unresolved one may flip sign freely.
            was, now = pair["old"], pair["new"]
            pair["changed"] = bool(was["resolved"] != now["resolved"] or (
                was["resolved"] and np.sign(was["difference"]) != np.sign(now["difference"])))
            pairs.append(pair)
    return {"order_by": ORDER_BY, "order_old": order_old, "order_new": order_new,
            "order_changed": order_old != order_new, "pairs": pairs,
            "conclusions_changed": [f"{p['a']} vs {p['b']}" for p in pairs if p["changed"]]}
