"""Benchmark of the Academic Taste Index engine; prints figures, asserts nothing.

1. CD index throughput: this package on a random graph of 100,000 focal papers and 5 million edges, and side by
   side with the ``cdindex`` package on a smaller graph that both finish, with a check that the values agree.
   The time numba takes to compile the kernel (or load it from its on-disk cache) is reported apart.
2. The full index (all seven dimensions, default offline embedder) for 6,000 papers (``--papers``) in a citation
   graph of 333 edges per paper (2 million at 6,000) and 75 other works per paper: wall time and peak resident
   memory. Run it alone (``--only index``) for a peak that is the index's own.

Run: ``python bench/bench_index.py [--quick] [--only cd|index] [--papers N] [--cold-jit]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time

import numpy as np
import pyarrow as pa

from scitaste_hf.index import CitationGraph, JournalTable, Population, compute_index
from scitaste_hf.index.cd import compile_kernel

WORDS = ("quantum photon lattice spin topological superconduct protein cell gene neural network market price "
         "volatility graph algebra manifold catalyst polymer tumour immune dark matter galaxy plasma laser "
         "entropy diffusion stochastic optimal transport kernel inference bayesian fluid turbulence").split()


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def random_texts(rng: np.random.Generator, n: int) -> list[str]:
    picks = rng.integers(0, len(WORDS), (n, 12))
    return [" ".join(WORDS[i] for i in row) for row in picks]


def synthetic_population(n_papers: int, n_edges: int, seed: int = 0) -> tuple[pa.Table, pa.Table, pa.Table]:
    """Papers with 40 references each into a pool of older works, and citers (papers' and references') that
    make up the rest of the edges; 25 references and 50 citers in the pool per paper."""
    rng = np.random.default_rng(seed)
    n_refs, n_citers = 25 * n_papers, 50 * n_papers
    fields = [f"field{i}" for i in range(26)]
    paper_days = rng.integers(16_000, 18_000, n_papers)
    ref_days = rng.integers(5_000, 16_000, n_refs)
    citer_days = rng.integers(16_500, 20_000, n_citers)
    paper_ids = np.array([f"P{i}" for i in range(n_papers)], dtype=object)
    ref_ids = np.array([f"R{i}" for i in range(n_refs)], dtype=object)
    citer_ids = np.array([f"C{i}" for i in range(n_citers)], dtype=object)
    ref_edges = 40 * n_papers
    citing = [np.repeat(paper_ids, 40)]
    cited = [ref_ids[rng.integers(0, n_refs, ref_edges)]]
    rest = n_edges - ref_edges
    to_papers = rest // 3
    citing += [citer_ids[rng.integers(0, n_citers, rest)]]
    cited += [np.concatenate([paper_ids[rng.integers(0, n_papers, to_papers)],
                              ref_ids[rng.integers(0, n_refs, rest - to_papers)]])]
    topics = [[{"field": fields[f], "subfield": f"sub{f}{s}", "score": float(sc)}
               for f, s, sc in zip(rng.integers(0, 26, 3), rng.integers(0, 4, 3), rng.uniform(0.3, 1, 3))]
              for _ in range(n_papers)]
    papers = pa.table({
        "id": paper_ids.tolist(),
        "date": pa.array(paper_days.astype(np.int32), pa.date32()),
        "citation_count": rng.poisson(30, n_papers),
        "journal": [f"J{j}" for j in rng.integers(0, 400, n_papers)],
        "field": [fields[f] for f in rng.integers(0, 26, n_papers)],
        "author_count": rng.integers(1, 20, n_papers),
        "countries": [["US", "DE", "CN", "FR", "JP"][: int(k)] for k in rng.integers(1, 6, n_papers)],
        "topics": topics,
        "concept_scores": [rng.uniform(0, 1, int(k)).tolist() for k in rng.integers(0, 8, n_papers)],
        "text": random_texts(rng, n_papers),
    })
    works = pa.table({
        "id": ref_ids.tolist() + citer_ids.tolist(),
        "date": pa.array(np.concatenate([ref_days, citer_days]).astype(np.int32), pa.date32()),
        "journal": [f"J{j}" for j in rng.integers(0, 2000, n_refs + n_citers)],
        "field": [fields[f] for f in rng.integers(0, 26, n_refs + n_citers)],
        "text": random_texts(rng, n_refs) + [None] * n_citers,
    })
    citations = pa.table({"citing": np.concatenate(citing).tolist(), "cited": np.concatenate(cited).tolist()})
    return papers, works, citations


def bench_full_index(n_papers: int, n_edges: int) -> None:
    papers, works, citations = synthetic_population(n_papers, n_edges)
    journals = JournalTable([{"name": f"J{j}", "impact_factor": float(j % 50), "jcr_quartile": f"Q{j % 4 + 1}"}
                             for j in range(400)])
    before = peak_rss_gb()
    start = time.perf_counter()
    population = Population.from_arrow(papers, citations, works)
    built = time.perf_counter()
    cpu = time.process_time()
    table = compute_index(population, journals)
    done = time.perf_counter()
    print(f"full index: {n_papers:,} papers, {population.graph.out.nnz:,} edges, {len(population.ids):,} works")
    cpu = time.process_time() - cpu
    print(f"  build population {built - start:.1f} s, index {done - built:.1f} s (CPU {cpu:.1f} s), "
          f"total {done - start:.1f} s")
    print(f"  peak RSS {peak_rss_gb():.2f} GB (after generating the input: {before:.2f} GB); "
          f"mean innovation score {np.mean(table.column('innovation_score').to_numpy()):.2f}")


def random_dag(n: int, out_degree: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each work cites ``out_degree`` distinct-ish works of earlier time stamps (times are the work numbers)."""
    rng = np.random.default_rng(seed)
    citing = np.repeat(np.arange(1, n), out_degree)
    cited = (rng.random(citing.size) * citing).astype(np.int64)
    return citing, cited, np.arange(n, dtype=np.int64)


def bench_cd(n: int, out_degree: int, n_small: int, sample: int) -> None:
    start = time.perf_counter()
    how = "loaded from numba's cache" if compile_kernel() else "compiled"
    print(f"CD kernel {how} in {time.perf_counter() - start:.2f} s (numba import included)")
    citing, cited, times = random_dag(n, out_degree, 1)
    graph = CitationGraph(citing, cited, times)
    start, cpu = time.perf_counter(), time.process_time()
    graph.cd(np.arange(n))
    ours, ours_cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"CD, this package: {n:,} focal / {graph.out.nnz:,} edges in {ours:.2f} s = "
          f"{graph.out.nnz / ours:,.0f} edges/s (CPU {ours_cpu:.2f} s = {graph.out.nnz / ours_cpu:,.0f} edges/s); "
          f"peak RSS {peak_rss_gb():.2f} GB")
    try:
        import cdindex
    except ImportError:
        print("CD, cdindex: not installed (pip install cdindex)")
        return
    citing, cited, times = random_dag(n_small, out_degree, 2)
    small = CitationGraph(citing, cited, times)
    start = time.perf_counter()
    result = small.cd(np.arange(n_small))
    ours_small = time.perf_counter() - start
    reference = cdindex.Graph()
    for v in range(n_small):
        reference.add_vertex(v, int(times[v]))
    rows, cols = small.out.nonzero()
    for a, b in zip(rows.tolist(), cols.tolist()):
        reference.add_edge(a, b)
    focal = np.random.default_rng(3).choice(n_small, sample, replace=False)
    start = time.perf_counter()
    theirs = [reference.cdindex(int(f), 10**12) for f in focal]
    per_focal = (time.perf_counter() - start) / sample
    agree = all(
        (r is None and np.isnan(result.cd[f])) or (result.n_i[f] + result.n_j[f] == 0 and r == 0)
        or r == result.cd[f] for f, r in zip(focal, theirs))
    their_rate = small.out.nnz / (per_focal * n_small)
    our_rate = small.out.nnz / ours_small
    timed = "all of them" if sample == n_small else f"{sample} focal papers and extrapolated to all"
    print(f"CD side by side: {n_small:,} focal / {small.out.nnz:,} edges; cdindex timed on {timed}")
    print(f"  this package {ours_small:.2f} s = {our_rate:,.0f} edges/s; cdindex {per_focal * n_small:.1f} s = "
          f"{their_rate:,.0f} edges/s; ratio {our_rate / their_rate:,.0f}x; identical values: {agree}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes, for a smoke run")
    parser.add_argument("--only", choices=("cd", "index"), help="run one part (a peak RSS of its own)")
    parser.add_argument("--papers", type=int, default=6_000, help="papers of the full index (default 6,000)")
    parser.add_argument("--cold-jit", action="store_true",
                        help="compile the CD kernel afresh (an empty numba cache folder) to time the compilation")
    parser.add_argument("--cdindex-sample", type=int, default=None,
                        help="time cdindex on this many focal papers and extrapolate (default: all of them; an "
                             "extrapolation from a few hundred overstated the ratio)")
    args = parser.parse_args()
    if args.cold_jit:
        # numba reads its settings when first imported, which the kernel defers to its first use.
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="numba-cold-")
    scale = 10 if args.quick else 1
    n_small = 20_000 // scale
    if args.only != "index":
        bench_cd(100_000 // scale, 50, n_small, min(args.cdindex_sample or n_small, n_small))
    if args.only != "cd":
        papers = args.papers // scale
        bench_full_index(papers, papers * 1_000 // 3)


if __name__ == "__main__":
    main()
