"""Releases of the dataset and how two of them differ: what a build records about itself
(:mod:`scitaste_hf.release.folder`), the drift of the papers' scores between two releases
(:mod:`scitaste_hf.release.drift`) and the stored runs re-scored on both (:mod:`scitaste_hf.release.rescore`).
docs/releases.md defines every statistic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scitaste_hf.release.folder import Release


def _direction(old: Release, new: Release, membership: dict[str, Any], citations: dict[str, Any] | None
               ) -> dict[str, Any]:
    """Whether the new release differs from the old one as a later one must: no shared paper's citation count
    fell, no paper published after the old as-of date is in the old release, the citation graph did not shrink."""
    later = (old.as_of is not None and (new.as_of is None or new.as_of > old.as_of))
    after = membership["published_after_old_as_of"]
    graph = {k: [(r.provenance.get("graph") or {}).get(k) for r in (old, new)]
             for k in ("papers", "works_around", "citations")}
    checks = {"citations_fell": None if citations is None else citations["fell"],
              "newer_papers_in_old": None if after is None else after["in_old"],
              "newer_papers_in_new": None if after is None else after["in_new"],
              "graph": graph}
    known = [v for v in (checks["citations_fell"], checks["newer_papers_in_old"]) if v is not None]
    grew = [b >= a for a, b in graph.values() if a is not None and b is not None]
    return {"old_as_of": old.as_of.isoformat() if old.as_of else None,
            "new_as_of": new.as_of.isoformat() if new.as_of else None, "new_is_later": later, **checks,
            "as_expected": (not any(known) and all(grew)) if later and (known or grew) else None}


def diff_releases(old: Release, new: Release, runs: Sequence[Any] = (), *, n_resamples: int, seed: int
                  ) -> dict[str, Any]:
    """Everything ``scitaste release diff`` reports (docs/releases.md).

    Parameters
    ----------
    old, new : Release
    runs : sequence of Run
        Stored runs to re-score (:func:`scitaste_hf.release.rescore.load_runs`).
    n_resamples, seed : int
        The bootstrap's resamples (0: no intervals) and seed.

    Returns
    -------
    dict
        ``old`` and ``new`` (path, provenance, papers per split), ``direction``, ``membership``, ``citations``,
        ``drift``, ``quartile_moves``, ``runs`` and ``conclusions`` (see the functions of
        :mod:`~scitaste_hf.release.drift` and :mod:`~scitaste_hf.release.rescore`).

    Raises
    ------
    ScitasteError
        When the releases share no paper.
    """
    from scitaste_hf.release import drift, rescore
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    shared = drift.shared_papers(old, new)
    boot = {"n_resamples": n_resamples, "seed": seed}
    membership = drift.membership(old, new)
    citations = drift.citations(old, new, shared, **boot)
    scored = [rescore.rescore_run(r, old, new, shared, weights=DEFAULT_WEIGHTS, **boot) for r in runs]
    return {
        **{side: {"path": str(r.path), "provenance": r.provenance,
                  "papers": {s: len(v) for s, v in r.splits.items()}} for side, r in (("old", old), ("new", new))},
        "shared": len(shared),
        "direction": _direction(old, new, membership, citations),
        "membership": membership,
        "citations": citations,
        "drift": drift.drift(old, new, shared, **boot),
        "quartile_moves": drift.quartile_moves(old, new, shared, **boot),
        "runs": scored,
        "conclusions": rescore.compare_runs(runs, scored, old, new, shared, weights=DEFAULT_WEIGHTS, **boot),
    }
