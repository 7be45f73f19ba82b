"""Sampling the two splits (paper section 4): per discipline a pool of about 125 papers per sub-discipline
stratified across composite-score quartiles, then 50 ``selected`` papers that cover every sub-discipline,
balance journal tiers Q1-Q4, emphasise 2000-2020 and span the score range; the rest of the pool is ``backup``.

Pure and seeded: the same records and seed give the same splits. A refreshed release can be sampled against the
previous one (``previous``): within the same quotas and balance, a paper of the previous release is kept before a
new one, and a paper it selected is selected again before another, so that a refresh changes what drifted and not
what the random draws happened to pick.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scitaste_hf.release.drift import score_quartiles
from scitaste_hf.schema import JOURNAL_TIERS
from scitaste_hf.taxonomy import Taxonomy

PER_DISCIPLINE = 1000
SELECTED_PER_DISCIPLINE = 50
#: What a preferred paper takes off a pick's cost: more than the balance terms can add, so it always goes first.
PREFERRED = 100.0
#: Years the selected papers favour (paper section 4).
CORE_YEARS = (2000, 2020)


@dataclass
class Splits:
    """The sampled splits and what fell short."""

    selected: list[dict[str, Any]]
    backup: list[dict[str, Any]]
    #: (cell id, papers available, quota) for each sub-discipline with fewer candidates than its quota.
    short_cells: list[tuple[str, int, int]] = field(default_factory=list)
    #: (discipline, papers kept, target) for each discipline whose pool is below PER_DISCIPLINE.
    short_disciplines: list[tuple[str, int, int]] = field(default_factory=list)
    #: Of the previous release's selected papers: how many there were, and how many are selected again.
    previous_selected: tuple[int, int] | None = None


def quotas(total: int, keys: Sequence[str]) -> dict[str, int]:
    """``total`` split as evenly as possible over ``keys``, the first ones taking the remainder."""
    base, extra = divmod(total, len(keys))
    return {k: base + (i < extra) for i, k in enumerate(keys)}


def stratified(items: Sequence[Mapping[str, Any]], k: int, rng: np.random.Generator,
               prefer: Collection[str] = frozenset()) -> list[Mapping[str, Any]]:
    """``k`` items spread evenly over the quartiles of their ``innovation_score`` (random within a quartile, the
    items whose bibcode is in ``prefer`` first; a quartile with too few items leaves its share to the others)."""
    if k >= len(items):
        return list(items)
    quartile = score_quartiles([r["innovation_score"] for r in items])
    # a group is taken from its end: the preferred items go last, in their random order
    groups = [sorted(rng.permutation(np.flatnonzero(quartile == q)).tolist(),
                     key=lambda i: items[i].get("bibcode") in prefer) for q in range(4)]
    picked: list[int] = []
    while len(picked) < k:  # round-robin over the quartiles
        for group in groups:
            if group and len(picked) < k:
                picked.append(int(group.pop()))
    return [items[i] for i in sorted(picked)]


def _select(pool: Sequence[Mapping[str, Any]], cells: Sequence[str], n: int, rng: np.random.Generator,
            prefer: Collection[str] = frozenset()) -> list[Mapping[str, Any]]:
    """Greedy balanced choice of ``n`` papers: every cell gets its share; each pick takes a paper whose bibcode is
    in ``prefer`` while the cell has one, and prefers the journal tier and score quartile chosen least so far, and
    years in :data:`CORE_YEARS`."""
    quartile = score_quartiles([r["innovation_score"] for r in pool])
    jitter = rng.random(len(pool))
    quota = quotas(n, cells)
    by_cell = {c: [i for i, r in enumerate(pool) if r["subcategory_id"] == c] for c in cells}
    tiers: Counter[str | None] = Counter()
    quartiles: Counter[int] = Counter()
    chosen: list[int] = []
    while len(chosen) < n:
        progressed = False
        for cell in cells:
            if quota[cell] == 0 or not by_cell[cell]:
                continue

            def cost(i: int) -> float:
                r = pool[i]
                tier = r.get("journal_tier")
                core = CORE_YEARS[0] <= int(r["year"]) <= CORE_YEARS[1]
                return ((-PREFERRED if r["bibcode"] in prefer else 0.0)
                        + tiers[tier] / (n / len(JOURNAL_TIERS)) + (0.5 if tier is None else 0.0)
                        + quartiles[int(quartile[i])] / (n / 4) + (0.0 if core else 0.6) + 0.01 * jitter[i])

            best = min(by_cell[cell], key=cost)
            by_cell[cell].remove(best)
            quota[cell] -= 1
            tiers[pool[best].get("journal_tier")] += 1
            quartiles[int(quartile[best])] += 1
            chosen.append(best)
            progressed = True
        if not progressed:  # cells ran dry: fill the rest from whatever is left
            rest = [i for c in cells for i in by_cell[c]]
            if not rest:
                break
            chosen.extend(sorted(rest, key=lambda i: jitter[i])[: n - len(chosen)])
    return [pool[i] for i in chosen]


def sample_splits(records: Sequence[Mapping[str, Any]], taxonomy: Taxonomy, *, seed: int = 0,
                  per_discipline: int = PER_DISCIPLINE, selected_per_discipline: int = SELECTED_PER_DISCIPLINE,
                  previous: Mapping[str, str] | None = None) -> Splits:
    """Sample ``selected`` and ``backup`` from labelled, scored records.

    Parameters
    ----------
    records : sequence of records
        Benchmark records with ``discipline``, ``subcategory_id`` (a record without one is never sampled),
        ``journal_tier``, ``year`` and ``innovation_score``; bibcodes unique.
    taxonomy : Taxonomy
    seed : int
        Seed of every random choice.
    per_discipline : int
        Papers kept per discipline (selected + backup), split evenly over its sub-disciplines.
    selected_per_discipline : int
        Papers of the ``selected`` split per discipline.
    previous : mapping of bibcode to split name, optional
        The previous release's papers and their splits (``"selected"`` or ``"backup"``): its papers are kept
        before others and its selected papers selected before others, within the same quotas and balance.

    Returns
    -------
    Splits
        Both splits sorted by bibcode, and the cells and disciplines that were short. Nothing is padded:
        a short cell leaves its room to the other cells of its discipline.
    """
    rng = np.random.default_rng(seed)
    previous = previous or {}
    was_selected = {b for b, split in previous.items() if split == "selected"}
    out = Splits([], [])
    for discipline in taxonomy.names:
        cells = [c.id for c in taxonomy.of(discipline)]
        mine = sorted((r for r in records if r["discipline"] == discipline), key=lambda r: r["bibcode"])
        quota = quotas(per_discipline, cells)
        kept: list[Mapping[str, Any]] = []
        extras: list[Mapping[str, Any]] = []
        for cell in cells:
            pool = [r for r in mine if r["subcategory_id"] == cell]
            take = stratified(pool, quota[cell], rng, previous)
            if len(pool) < quota[cell]:
                out.short_cells.append((cell, len(pool), quota[cell]))
            taken = {r["bibcode"] for r in take}
            kept.extend(take)
            extras.extend(r for r in pool if r["bibcode"] not in taken)
        room = per_discipline - len(kept)
        kept.extend(stratified(extras, room, rng, previous)[:room] if room > 0 else [])
        if len(kept) < per_discipline:
            out.short_disciplines.append((discipline, len(kept), per_discipline))
        selected = _select(kept, cells, selected_per_discipline, rng, was_selected) if kept else []
        chosen = {r["bibcode"] for r in selected}
        out.selected.extend(dict(r) for r in selected)
        out.backup.extend(dict(r) for r in kept if r["bibcode"] not in chosen)
    out.selected.sort(key=lambda r: r["bibcode"])
    out.backup.sort(key=lambda r: r["bibcode"])
    if previous:
        out.previous_selected = (len(was_selected), sum(r["bibcode"] in was_selected for r in out.selected))
    return out
