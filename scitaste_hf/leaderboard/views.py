"""The board's views, kept fast as the store fills: every run's table numbers held in memory, each view's rows
ranked once and kept until the store changes.

A *view* is one combination of the board's filters (mode, scope, Scheme-2 grade, status, flagged runs shown or not, and
the model filters of :func:`~scitaste_hf.leaderboard.metadata.model_filter`: open weights, knowledge cutoff, size). Its
runs are ordered by Scheme-1 skill over the constant floor, best first (see :func:`order_key`); flagged runs, shown on
request, come last and are never ranked. Each ranked run gets a 95% rank interval from the joint paired bootstrap of
:mod:`scitaste_hf.scoring.ranks` (its stored replicates, on resamples shared by every run of the board) and whether it
shares the top group.

The cache follows the store, whoever writes to it (this process, or another one on the same folder): on each
read it asks the store whether anything changed (:meth:`~scitaste_hf.leaderboard.store.Store.change_marker`), and
if so re-reads only the runs that are new or were rescored, takes every status afresh, and forgets the views.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from scitaste_hf.leaderboard.metadata import model_filter
from scitaste_hf.leaderboard.store import FLAGGED, Store
from scitaste_hf.scoring.ranks import rank_intervals, top_group

#: What a scope's replicates against redrawn gold are stored under, before the scope's name
#: (:func:`~scitaste_hf.scoring.gold_uncertainty.gold_replicates`; the board's second rank interval).
GOLD_REDRAWN = "gold-redrawn:"

#: A view: (mode or None, scope, Scheme-2 grade or None, status or None, flagged runs included, only runs whose model
#: the Hub shows with open weights, the model filters chosen: :func:`~scitaste_hf.leaderboard.metadata.check_filters`).
ViewKey = tuple[str | None, str, str | None, str | None, bool, bool, tuple[str, ...]]
#: Views (and what is built from them) kept at once, the least recently used dropped first: a board of 10,000 runs
#: has 735 filter combinations, and a crawler visiting all of them must not fill the memory.
MEMO_SIZE = 64


def order_key(row: dict[str, Any]) -> tuple:
    """The board's default order: Scheme-1 skill over the constant floor, highest first (an undefined skill
    last), then Scheme-2, then the older run.

    Skill, not Scheme-2: a predictor that knows nothing about any paper (the constant floor) has a Scheme-1 skill
    of exactly 0, so it can never be placed above a run whose answers carry information about the papers, whereas
    WAPE rewards answering the mean and ranks such a predictor above many informative runs.
    """
    return _order(row.get("s1_skill"), row.get("scheme2"), row["run"])


def _order(skill: float | None, scheme2: float | None, run: int | None) -> tuple:
    return (skill is None, -(skill or 0.0), scheme2 is None, -(scheme2 or 0.0), run or 0)


def _record(row: Any) -> dict[str, Any]:
    # Intervals as tuples: a dict of atomic values and tuples of them is left alone by the garbage collector once it
    # has seen it, and a board of 10,000 runs holds 70,000 of them (with lists, every full collection walked them
    # all, a quarter of a second each).
    summary = {scope: {k: tuple(v) if isinstance(v, list) else v for k, v in numbers.items()}
               for scope, numbers in json.loads(row["summary"]).items()}
    return {"meta": {"run": int(row["id"]), "model": row["model"], "mode": row["mode"], "kind": row["kind"],
                     "status": row["status"], "organisation": row["organisation"], "link": row["link"],
                     "date": row["submitted_at"][:10],
                     "model_meta": json.loads(row["model_meta"]) if row["model_meta"] else None,
                     "withheld": row["withheld"]},
            "derived": row["derived"], "summary": summary, "memo": {}}


class RunCache:
    """The runs of a :class:`~scitaste_hf.leaderboard.store.Store` as the board reads them (thread-safe).

    Parameters
    ----------
    store : Store
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.RLock()
        self._marker: tuple[int, int] | None = None
        self._runs: dict[int, dict[str, Any]] = {}
        self._replicates: dict[str, dict[int, np.ndarray]] = {}  # scope -> run id -> values, loaded per scope
        # key -> (generation, value): an entry of an older generation is built again when asked for, and freed
        # then (or when the least recently used go), not all at once in the request that follows a change.
        self._memo: OrderedDict[Hashable, tuple[int, Any]] = OrderedDict()
        self._generation = 0

    def _sync(self) -> None:
        """Catch up with the store (under the lock). After this process's own commits alone, only the runs they
        changed are read again (a commit that changed no run, such as a Hub copy, keeps the views); after any
        other process's, every run's status and ``derived`` key are compared."""
        marker = self.store.change_marker()
        if marker == self._marker:
            return
        if self._marker is not None and marker[0] == self._marker[0]:
            changed, gone = sorted(self.store.own_changes(self._marker[1])), []
            if not changed:
                self._marker = marker
                return
            self._runs.update((int(row["id"]), _record(row)) for row in self.store.rows_by_id(changed))
        else:
            states = {run_id: (status, derived) for run_id, status, derived in self.store.states()}
            gone = [i for i in self._runs if i not in states]
            changed = [i for i, (_, derived) in states.items()
                       if i not in self._runs or self._runs[i]["derived"] != derived]
            for i in gone:
                del self._runs[i]
            for row in self.store.rows_by_id(changed):
                self._runs[int(row["id"])] = _record(row)
            for i, (status, _) in states.items():
                if i in self._runs:
                    self._runs[i]["meta"]["status"] = status
        for scope, values in self._replicates.items():
            for i in (*gone, *changed):
                values.pop(i, None)
            if changed:
                values.update(self.store.replicates(scope, changed))
        self._generation += 1
        self._marker = marker

    def generation(self) -> int:
        """A number that changes whenever the store does."""
        with self._lock:
            self._sync()
            return self._generation

    def memo(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """``build()``, computed once per ``key`` until the store changes (the last :data:`MEMO_SIZE` kept)."""
        with self._lock:
            self._sync()
            entry = self._memo.get(key)
            if entry is not None and entry[0] == self._generation:
                self._memo.move_to_end(key)
                return entry[1]
            self._memo.pop(key, None)
            value = build()
            self._memo[key] = (self._generation, value)
            while len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)
            return value

    def per_run(self, run_id: int, key: Hashable, build: Callable[[], Any]) -> Any:
        """``build()``, computed once per run and ``key`` until the run is rescored or removed (what is built must not
        depend on the run's status, which changes without either)."""
        record = self._runs.get(run_id)
        if record is None:
            return build()
        memo = record["memo"]
        if key not in memo:
            memo[key] = build()
        return memo[key]

    def meta(self, run_id: int) -> dict[str, Any] | None:
        """A run's metadata as the cache last read it (None for a run it has not read), without asking the store
        whether anything changed: for a caller that reads it for every run of a view it has just built."""
        record = self._runs.get(run_id)
        return None if record is None else record["meta"]

    def view(self, key: ViewKey) -> list[dict[str, Any]]:
        """The rows of a view, ordered and ranked: per run its metadata, the numbers of the view's scope (intervals as
        pairs), ``rank`` and ``top_group`` (new dicts; the cache keeps only references to what it holds)."""
        scope, gold = key[1], self.gold_ranks(key)
        return [{**meta, "scope": scope, **numbers, "rank": rank, "rank_gold": gold.get(meta["run"]), "top_group": top}
                for meta, numbers, rank, top in self.entries(key)]

    def gold_ranks(self, key: ViewKey) -> dict[int, tuple[int, int]]:
        """Each ranked run's second rank interval in a view: its ranks on the same resamples of the papers, each
        against a draw of the gold (the replicates stored under :data:`GOLD_REDRAWN`; a run without them, on a
        board whose gold is taken as known, has its papers-only replicates, so the two intervals are the same)."""
        return self.memo(("gold", key), lambda: self._gold_ranks(key))

    def _gold_ranks(self, key: ViewKey) -> dict[int, tuple[int, int]]:
        runs = [meta["run"] for meta, _, rank, _ in self.entries(key) if rank is not None]
        if not runs:
            return {}
        papers, gold = self._scope_replicates(key[1]), self._scope_replicates(GOLD_REDRAWN + key[1])
        values = np.stack([gold.get(run, papers[run]) for run in runs]).astype(np.float32)
        return {run: tuple(interval) for run, interval in zip(runs, rank_intervals(values).tolist())}

    def entries(self, key: ViewKey) -> list[tuple[dict[str, Any], dict[str, Any], tuple[int, int] | None,
                                                   bool | None]]:
        """A view as it is kept: (metadata, the scope's numbers, rank interval, top group) per run, in order
        (shared: callers must not change them)."""
        return self.memo(("view", key), lambda: self._build(key))

    def _scope_replicates(self, scope: str) -> dict[int, np.ndarray]:
        if scope not in self._replicates:
            self._replicates[scope] = self.store.replicates(scope)
        return self._replicates[scope]

    def _build(self, key: ViewKey) -> list[tuple[dict[str, Any], dict[str, Any], tuple[int, int] | None, bool | None]]:
        """A view as (metadata, the scope's numbers, rank interval, top group) per run, in the board's order."""
        mode, scope, grade, status, include_flagged, open_weights, chosen = key
        keeps = model_filter(open_weights=open_weights, chosen=chosen)
        ranked, flagged = [], []
        for run in self._runs.values():
            meta = run["meta"]
            if (mode and meta["mode"] != mode) or (status and meta["status"] != status):
                continue
            if not keeps(meta["model_meta"]):
                continue
            if meta["status"] == FLAGGED and not include_flagged:
                continue
            numbers = run["summary"].get(scope)
            if numbers is None or (grade and numbers.get("scheme2_grade") != grade):
                continue
            (flagged if meta["status"] == FLAGGED else ranked).append((meta, numbers))

        def order(pair):
            meta, numbers = pair
            return _order(numbers.get("s1_skill"), numbers.get("scheme2"), meta["run"])

        ranked.sort(key=order)
        flagged.sort(key=order)
        replicates = self._scope_replicates(scope)
        ranks: dict[int, tuple[tuple[int, int], bool]] = {}
        # Runs whose replicates are not computed yet (an old store being upgraded) are shown, unranked.
        with_values = [(meta, numbers) for meta, numbers in ranked if meta["run"] in replicates]
        if with_values:
            values = np.stack([replicates[meta["run"]] for meta, _ in with_values]).astype(np.float32)
            points = np.array([np.nan if n.get("s1_skill") is None else n["s1_skill"] for _, n in with_values])
            intervals = rank_intervals(values)
            top = top_group(intervals, points)
            ranks = {meta["run"]: (tuple(interval), in_top)
                     for (meta, _), interval, in_top in zip(with_values, intervals.tolist(), top.tolist())}
        return [(meta, numbers, *ranks.get(meta["run"], (None, None))) for meta, numbers in ranked + flagged]
