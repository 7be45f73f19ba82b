"""Benchmark of the bibliographic clients against a local server on 127.0.0.1 (issue: production-grade sources).

Prints:

1. requests per paper of the dataset builder's access pattern (metadata + references + citers, for the CD index)
   against the lower bound that batching (100 ids per filter) and paging (200 records per page) allow;
2. 2,000 requests against a server that answers in 50 ms and allows 10 requests/s: wall time against the 200 s the
   limit allows, and the 429s provoked (target: within 10% of 200 s, zero 429s). The requests are what the builder
   sends concurrently: ``OpenAlexClient.afetch_plan`` over a plan of 2,000 one-page listings (``cites:W...`` of one
   work each);
3. the same with the limit at 100/s and 16 connections (target: at least 80% of 100/s);
4. a warm-cache re-run of those 2,000 requests (target: under 2 s, zero requests sent).

The full run takes about four minutes, most of it the 10/s run. ``--quick`` runs that part with 300 requests and
extrapolates its time to 2,000, and says so in its output.

    python bench/bench_sources.py [--quick] [--papers 500]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import socket
import sys
import tempfile
import time
from pathlib import Path

from scitaste_hf.sources import OpenAlexClient, SnowballPlan

# The replay server is test-only code and lives with the tests' fixtures, outside the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))
from replay_server import ServerProcess, SyntheticWorks

BATCH, PAGE = 100, 200
FIRST_ID = 10_000_000


def _pages(n: int) -> int:
    return math.ceil(n / PAGE)


def requests_per_paper(papers: int, pools: tuple[int, int], label: str) -> None:
    graph = SyntheticWorks(papers, ref_pool=pools[0], citer_pool=pools[1])
    ks = range(1, papers + 1)
    refs = {k: graph.references[k] for k in ks}
    citers = {k: graph.citers[k] for k in ks if graph.citers[k]}
    union_refs = {r for v in refs.values() for r in v}
    union_citers = {c for v in citers.values() for c in v}
    meta = math.ceil(papers / BATCH)
    # Global bound: every focal id in some 100-id filter, every distinct record on some 200-record page.
    bound = meta + max(_pages(len(union_refs)), meta) + max(_pages(len(union_citers)), math.ceil(len(citers) / BATCH))
    # The same pattern without OR-ing ids: one listing per paper, paged.
    per_paper = meta + sum(_pages(len(v)) for v in refs.values()) + sum(_pages(len(v)) for v in citers.values())
    # OR-ing the works 100 at a time in the order given (fields of 125 split across batches).
    batches = [list(ks)[i:i + BATCH] for i in range(0, papers, BATCH)]
    consecutive = meta + sum(max(1, _pages(len(graph.listing(kind, b)))) for kind in ("cited_by", "cites")
                             for b in batches)
    with ServerProcess(synthetic=papers, pools=pools) as server:
        oa = OpenAlexClient(base_url=server.url + "/openalex", rate_limit=(10_000, 1.0))
        snow = oa.snowball([f"W{k}" for k in ks])
        sent = oa.stats.sent
    start = time.perf_counter()
    plan = oa.snowball_plan(snow.works)
    planned = time.perf_counter() - start
    listed = sum(len(graph.listing(flt.split(":")[0], [int(v[1:]) for v in flt.split(":")[1].split("|")]))
                 for _, flt in plan.filters())
    assert len(snow.works) == papers and len(snow.references) == len(union_refs)
    assert len(snow.citers) == len(union_citers)
    relations_r, relations_c = sum(map(len, refs.values())), sum(map(len, citers.values()))
    print(f"[1{label}] builder access pattern (metadata + references + citers), {papers} papers in fields of 125")
    print(f"    references: {relations_r} links to {len(union_refs)} works "
          f"({relations_r / len(union_refs):.2f} links each); citers: {relations_c} links from "
          f"{len(union_citers)} works ({relations_c / len(union_citers):.2f} each); {papers - len(citers)} uncited")
    print(f"    requests sent:            {sent}  ({sent / papers:.3f} per paper)")
    print(f"    lower bound:              {bound}  ({bound / papers:.3f} per paper)")
    print(f"    ratio to the bound:       {sent / bound:.3f}  (target <= 1.10)")
    print(f"    plan:                     {len(plan.reference_listings)} reference listings, "
          f"{len(plan.reference_ids)} references by id, {len(plan.citer_listings)} citer listings "
          f"(planned in {planned * 1000:.0f} ms)")
    print(f"    records listed twice:     {listed - len(union_refs) - len(union_citers)}")
    print(f"    100 at a time in order:   {consecutive} requests ({consecutive / bound:.3f} x the bound)")
    print(f"    one listing per paper:    {per_paper} requests at best ({per_paper / papers:.3f} per paper)")


def _fetch_all(oa: OpenAlexClient, n: int) -> None:
    """``n`` requests the way the builder sends them: :meth:`OpenAlexClient.afetch_plan` over ``n`` listings of one
    page each (the citers of one work; the synthetic server has none for these ids, so one request each)."""
    plan = SnowballPlan((), (), tuple((f"W{FIRST_ID + k}",) for k in range(n)))
    done: list[int] = []
    asyncio.run(oa.afetch_plan(plan, "id", progress=done.append))
    assert len(done) == n


def throughput(n: int, limit: int, connections: int, cache_dir: str | None = None,
               port: int = 0) -> tuple[float, int, int]:
    """Wall time, requests answered and 429s of ``n`` concurrent one-page listings at ``limit``/s over
    ``connections``."""
    with ServerProcess(synthetic=1, rate_limit=limit, latency=0.05, port=port) as server:
        oa = OpenAlexClient(base_url=server.url + "/openalex", rate_limit=(limit, 1.0),
                            max_connections=connections, cache_dir=cache_dir)
        start = time.monotonic()
        _fetch_all(oa, n)
        elapsed = time.monotonic() - start
        assert oa.stats.sent == n
        log = server.requests_log()
    return elapsed, log["answered"], log["rejected_429"]


def warm_rerun(n: int, cache_dir: str, port: int) -> tuple[float, int]:
    # The same port as the run that filled the cache: the cache key includes the service's address.
    with ServerProcess(synthetic=1, port=port) as server:
        oa = OpenAlexClient(base_url=server.url + "/openalex", cache_dir=cache_dir)
        start = time.monotonic()
        _fetch_all(oa, n)
        elapsed = time.monotonic() - start
        answered = server.requests_log()["answered"]
    assert oa.stats.sent == 0
    return elapsed, answered


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="run the 10 req/s part with 300 requests, extrapolated")
    parser.add_argument("--papers", type=int, default=500, help="focal papers of the access-pattern run")
    args = parser.parse_args()

    # How much the works of one field share references and citers decides how many records two batches of
    # 100 ids both list; both ends are shown.
    requests_per_paper(args.papers, (300, 400), "a, sparse field")
    requests_per_paper(args.papers, (40, 80), "b, dense field")
    requests_per_paper(args.papers, (10, 20), "c, very dense field")

    n = 300 if args.quick else 2000
    elapsed, answered, r429 = throughput(n, limit=10, connections=16)
    ideal = n / 10
    print(f"[2] {n} requests, server 50 ms and 10 req/s, 16 connections")
    print(f"    wall time:                {elapsed:.1f} s  (the limit allows {ideal:.0f} s; "
          f"{100 * (elapsed / ideal - 1):+.1f}%, target within +10%)")
    if args.quick:
        print(f"    SCALED RUN: {n} instead of 2000 requests; extrapolated to 2000: {elapsed * 2000 / n:.1f} s "
              "against 200 s")
    print(f"    answered / 429s:          {answered} / {r429}  (target: 0 429s)")

    with tempfile.TemporaryDirectory(prefix="bench-sources-cache-") as cache_dir:
        port = _free_port()
        elapsed, answered, r429 = throughput(2000, limit=100, connections=16, cache_dir=cache_dir, port=port)
        rate = 2000 / elapsed
        print("[3] 2000 requests, server 50 ms and 100 req/s, 16 connections (cache being filled)")
        print(f"    wall time:                {elapsed:.1f} s  -> {rate:.1f} req/s = {rate:.0f}% of 100/s "
              "(target >= 80%)")
        print(f"    answered / 429s:          {answered} / {r429}")
        elapsed, answered = warm_rerun(2000, cache_dir, port)
        print("[4] warm-cache re-run of the same 2000 requests")
        print(f"    wall time:                {elapsed:.2f} s  (target < 2 s)")
        print(f"    requests the server saw:  {answered}  (target 0)")


if __name__ == "__main__":
    main()
