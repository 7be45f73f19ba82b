"""The CD index's counts as SQL joins equal the in-memory engine's CitationGraph on random graphs."""

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from scitaste_hf.index.cd import UNDATED, CitationGraph
from scitaste_hf.scale import sql


def _graph(seed: int, n: int = 400, m: int = 4000):
    rng = np.random.default_rng(seed)
    days = rng.integers(0, 3000, n).astype(np.int64)
    undated = rng.random(n) < 0.05
    citing = rng.integers(0, n, m)
    cited = rng.integers(0, n, m)
    # Mostly later works citing earlier ones, some the other way round; duplicates and self-citations included.
    swap = (days[citing] < days[cited]) & (rng.random(m) < 0.9)
    citing[swap], cited[swap] = cited[swap], citing[swap]
    return days, undated, citing, cited


@pytest.mark.parametrize(("seed", "window"), [(0, None), (1, None), (2, 365), (3, 120)])
def test_sql_counts_equal_the_citation_graph(seed, window):
    days, undated, citing, cited = _graph(seed)
    n = days.size
    times = np.where(undated, UNDATED, days)
    focal = np.flatnonzero(~undated)  # the focal papers must be dated
    expected = CitationGraph(citing, cited, times).cd(focal, window)
    # The flat tables: the focal papers first, as the engines number them.
    order = np.concatenate([focal, np.flatnonzero(undated)])
    number = np.empty(n, dtype=np.int64)
    number[order] = np.arange(n)
    day = pa.array([None if undated[i] else int(days[i]) for i in order], pa.int32())
    con = duckdb.connect()
    works = pa.table({"w": pa.array(np.arange(n), pa.int32()), "day": day})
    keep = citing != cited
    pairs = np.unique(np.stack([number[citing[keep]], number[cited[keep]]]), axis=1)
    edges = pa.table({"citing": pa.array(pairs[0], pa.int32()), "cited": pa.array(pairs[1], pa.int32()),
                      "citing_day": day.take(pa.array(pairs[0]))})
    con.register("works", works)
    con.register("edges", edges)
    got = np.zeros((focal.size, 3), dtype=np.int64)
    half = focal.size // 2
    for lo, hi in ((0, half), (half, focal.size)):  # two blocks, as the engine splits the focal papers
        for w, n_i, n_j, n_k in con.execute(sql.cd_counts(lo, hi, window)).fetchall():
            got[w] = (n_i, n_j, n_k)
    assert (got[:, 0] == expected.n_i).all()
    assert (got[:, 1] == expected.n_j).all()
    assert (got[:, 2] == expected.n_k).all()
    assert expected.n_i.sum() > 0 and expected.n_j.sum() > 0 and expected.n_k.sum() > 0
