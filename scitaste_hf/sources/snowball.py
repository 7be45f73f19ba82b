"""Planning the snowball: which OpenAlex requests fetch the references and citers of many focal works.

The references and citers of focal works come from OR-ed listings (``cited_by:W1|W2|...`` lists what any of them
cites, ``cites:...`` what cites any of them), 200 records a page but at most :data:`MAX_OR_VALUES` focal works a
listing. A record shared by focal works of two listings is listed twice, and works of one field share many
references and citers, so how the focal works are grouped decides how many requests the snowball takes. This
module decides that grouping, as pure computation; :meth:`OpenAlexClient.fetch_plan
<scitaste_hf.sources.openalex.OpenAlexClient.fetch_plan>` sends the requests.

1. **Clusters by shared references.** A cluster starts from the work with the most references outside earlier
   clusters and grows by the work that shares the most references with it, until none shares any (or it holds
   twice :data:`MAX_OR_VALUES`): the works of one field end up together, whatever the input order.
2. **Batches.** A cluster's works fill batches of :data:`MAX_OR_VALUES`; what is left of each cluster (25 of a
   field of 125) is packed with the left-overs of other clusters, largest first. Works that share nothing with
   anything keep the caller's order, so pass works grouped by field where that is known.
3. **References.** The works left over are the last a cluster took in, the ones sharing least. A batch's works
   whose references are all in hand (focal, ``known``, or listed by an earlier batch) drop out; the rest are
   listed, unless fetching only the references still missing by id (``openalex:``, :data:`MAX_OR_VALUES` a
   request) is cheaper: the usual case for the left-overs of several fields.
4. **Citers** are not known in advance. A cluster's works are batched most-cited first, so the left-overs, whose
   citers may also cite a listed work and come twice, are the least cited.

On the access pattern of the builder (fields of 125 works) this stays within 10% of the lower bound that
batching and paging allow (``bench/bench_sources.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

#: Most values one OpenAlex filter ORs together (``openalex:W1|W2|...``).
MAX_OR_VALUES = 100
#: Largest ``per-page`` of an OpenAlex listing.
MAX_PAGE_SIZE = 200


@dataclass(frozen=True, slots=True)
class SnowballPlan:
    """The OpenAlex requests of a snowball.

    :param reference_listings: groups of focal works whose references are listed together (``cited_by:``).
    :param reference_ids: references fetched by id (``openalex:``), in batches of :data:`MAX_OR_VALUES`.
    :param citer_listings: groups of focal works whose citers are listed together (``cites:``).
    """

    reference_listings: tuple[tuple[str, ...], ...]
    reference_ids: tuple[str, ...]
    citer_listings: tuple[tuple[str, ...], ...]

    def filters(self) -> list[tuple[str, str]]:
        """Every listing of the plan as ``(kind, filter)``, kind ``"references"`` or ``"citers"``.

        Each is one cursor-paged ``/works`` listing; together they return every reference and citer at least once.
        """
        def ors(key: str, ids: Sequence[str]) -> str:
            return f"{key}:{'|'.join(ids)}"

        ids = self.reference_ids
        return ([("references", ors("cited_by", g)) for g in self.reference_listings]
                + [("references", ors("openalex", ids[i:i + MAX_OR_VALUES]))
                   for i in range(0, len(ids), MAX_OR_VALUES)]
                + [("citers", ors("cites", g)) for g in self.citer_listings])


def plan_snowball(ids: Sequence[str], references: Sequence[Iterable[str]], cited_by_counts: Sequence[int], *,
                  known: Iterable[str] = (), page_size: int = MAX_PAGE_SIZE) -> SnowballPlan:
    """The requests that fetch the references and citers of focal works (see the module's description).

    :param ids: the focal works' OpenAlex ids, grouped by field where known.
    :param references: each focal work's ``referenced_works`` (short ids).
    :param cited_by_counts: each focal work's ``cited_by_count``; works with 0 are not asked for citers.
    :param known: works already in hand, never fetched by id (the focal works always are).
    :param page_size: records per page of the listings (OpenAlex allows up to :data:`MAX_PAGE_SIZE`).
    :raises ValueError: when the three sequences differ in length or an id repeats.
    """
    if not len(ids) == len(references) == len(cited_by_counts):
        raise ValueError(f"plan_snowball: {len(ids)} ids, {len(references)} reference lists and "
                         f"{len(cited_by_counts)} citation counts; they must be parallel")
    if len(set(ids)) != len(ids):
        raise ValueError("plan_snowball: focal ids repeat; pass each work once")
    refs = [list(dict.fromkeys(r)) for r in references]
    in_hand = {*ids, *known}
    clusters = _clusters(refs, 2 * MAX_OR_VALUES)
    wanted = [[w for w in c if any(r not in in_hand for r in refs[w])] for c in clusters]
    covered: set[str] = set()
    listings: list[tuple[str, ...]] = []
    by_id: list[str] = []
    for batch in _batches(wanted, MAX_OR_VALUES):
        members = [w for w in batch if any(r not in covered and r not in in_hand for r in refs[w])]
        if not members:
            continue
        union = dict.fromkeys(r for w in members for r in refs[w])
        needed = [r for r in union if r not in covered and r not in in_hand]
        # A listing costs its pages; by id, what is still needed costs a request per MAX_OR_VALUES records.
        if len(needed) / MAX_OR_VALUES < math.ceil(len(union) / page_size):
            by_id.extend(needed)
            covered.update(needed)
        else:
            listings.append(tuple(ids[w] for w in members))
            covered.update(union)
    # The most cited works of a cluster share a listing; the least cited are the ones left over for packing.
    cited = [sorted((w for w in c if cited_by_counts[w] > 0), key=lambda w: -cited_by_counts[w]) for c in clusters]
    citers = [tuple(ids[w] for w in batch) for batch in _batches(cited, MAX_OR_VALUES)]
    return SnowballPlan(tuple(listings), tuple(by_id), tuple(citers))


def _clusters(refs: list[list[str]], cap: int) -> list[list[int]]:
    """Indices of the works in clusters of at most ``cap`` that share references, each in the order it grew.

    A cluster starts from the work with the most references outside earlier clusters and grows by the work that
    shares the most references with it, until none shares any: works of one field end up together, the works
    that share most with the rest first.
    """
    n = len(refs)
    number: dict[str, int] = {}
    rows = [[number.setdefault(r, len(number)) for r in rs] for rs in refs]
    citing: list[list[int]] = [[] for _ in range(len(number))]
    for w, row in enumerate(rows):
        for j in row:
            citing[j].append(w)
    covered = np.zeros(len(number), dtype=bool)
    uncovered = np.array([len(row) for row in rows], dtype=np.int64)
    free = np.ones(n, dtype=bool)
    clusters: list[list[int]] = []
    while free.any():
        shared = np.zeros(n, dtype=np.int64)
        union: set[int] = set()
        cluster = [int(np.argmax(np.where(free, uncovered, -1)))]
        _join(cluster[0], free, rows, citing, union, shared)
        while len(cluster) < cap:
            scores = np.where(free, shared, 0)
            best = int(np.argmax(scores))
            if scores[best] == 0:
                break
            cluster.append(best)
            _join(best, free, rows, citing, union, shared)
        for j in union:
            if not covered[j]:
                covered[j] = True
                for c in citing[j]:
                    uncovered[c] -= 1
        clusters.append(cluster)
    return clusters


def _batches(groups: list[list[int]], size: int) -> list[list[int]]:
    """Batches of at most ``size``: each group's full chunks of ``size`` as they are, the last part of each group
    packed with others (largest first, first fit; ties by input position, so that works that share nothing with
    anything keep the caller's order)."""
    batches: list[list[int]] = []
    rest: list[list[int]] = []
    for group in groups:
        full = len(group) - len(group) % size
        batches.extend(group[i:i + size] for i in range(0, full, size))
        if full < len(group):
            rest.append(group[full:])
    packed: list[list[int]] = []
    for part in sorted(rest, key=lambda p: (-len(p), min(p))):
        home = next((b for b in packed if len(b) + len(part) <= size), None)
        if home is None:
            packed.append(list(part))
        else:
            home.extend(part)
    return batches + packed


def _join(w: int, free: np.ndarray, rows: list[list[int]], citing: list[list[int]], union: set[int],
          shared: np.ndarray) -> None:
    """Put work ``w`` in the growing batch: its references join the union, raising what others share with it."""
    free[w] = False
    for j in rows[w]:
        if j not in union:
            union.add(j)
            for c in citing[j]:
                shared[c] += 1
