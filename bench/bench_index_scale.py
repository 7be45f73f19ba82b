"""Benchmark of the index at scale (docs/scale.md): time and peak memory of `scitaste index --focal all` per
engine on simulated snapshots of 10k and 100k works (and 1M with --million), and the growth exponent of time in
the number of works; prints figures, asserts nothing.

Each run is a fresh `scitaste index` process (no stage reused), timed from outside; its peak resident memory is
the kernel's figure for that process (DuckDB's buffers included). Snapshots are written once into --work-dir and
reused by later runs of the benchmark. The in-memory engine is run up to --memory-max works (its exact nearest-
neighbour search is quadratic: hours at 1M). The Spark engine runs in local mode on every core (``--engines
spark``; pyspark and Java needed); ``--memory-limit`` is then its driver's memory. Two peaks are printed: the
`scitaste` process's own (the Spark engine's driver: its JVM and the executors' Python workers are processes it
does not wait for, so the kernel leaves them out) and that of the process tree, sampled each second. Per stage,
the seconds and their growth exponent in the number of works are printed too.

Where the in-memory engine ran at a size, every other engine's index is compared with its index, column by column
(issue 34's check: ``--engines memory,spark --sizes 20000 --neighbours ann``).

``--training 1000000,10000000,100000000`` times only the approximate search's training and its assignment of
papers to lists, part by part: what runs on the Spark engine's driver (the coarse level, bounded) and on its
executors (the fine level, one group a task; each paper's groups, then one group's lists against a chunk of the
papers probing it).

Run: ``python bench/bench_index_scale.py [--million] [--engines duckdb,memory,spark] [--neighbours ann]
[--sizes 10000,100000] [--work-dir DIR] [--training SIZES]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

SIZES = (10_000, 100_000)
MILLION = 1_000_000


def scitaste() -> str:
    """The `scitaste` console script of this interpreter's environment."""
    return str(Path(sys.executable).with_name("scitaste"))


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and its descendants now (Linux /proc): the Spark engine's JVM is a child of
    `scitaste` that it does not wait for, so the kernel's peak of `scitaste` leaves it out."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        child = int(stat.parent.name)
        children.setdefault(int(fields[1]), []).append(child)
        rss[child] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, ()))
    return total


def timed(argv: list[str], log: Path) -> tuple[float, float, float, int]:
    """Run ``argv``, output to ``log``; wall seconds, peak resident GB of that process (the kernel's figure), of
    it with its descendants (sampled each second, and at least the first), exit status."""
    started = time.perf_counter()
    sampled = [0]
    with open(log, "w") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT)

        def sample() -> None:
            while proc.returncode is None:
                sampled[0] = max(sampled[0], tree_rss(proc.pid))
                time.sleep(1)

        import threading

        threading.Thread(target=sample, daemon=True).start()
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    own = usage.ru_maxrss * 1024 / 1024**3
    return time.perf_counter() - started, own, max(own, sampled[0] / 1024**3), proc.returncode


def snapshot(work: Path, works: int) -> Path:
    """The simulated snapshot of ``works`` works (seed 0), written once."""
    root = work / f"snapshot-{works}"
    if not (root / "snapshot.json").is_file():
        shutil.rmtree(root, ignore_errors=True)
        seconds, _, peak, rc = timed([scitaste(), "mirror", "snapshot", "--works", str(works), "--out", str(root)],
                                     work / f"snapshot-{works}.log")
        if rc:
            sys.exit(f"writing the {works:,}-work snapshot failed; see {work / f'snapshot-{works}.log'}")
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1024**3
        print(f"snapshot {works:,} works: written in {seconds:.0f} s, peak {peak:.2f} GB, {size:.2f} GB on disk",
              flush=True)
    return root


def run_index(work: Path, root: Path, works: int, engine: str, memory_limit: str, neighbours: str = "auto"
              ) -> dict | None:
    """One fresh index run; its figures, or None when it failed."""
    out = work / f"run-{engine}-{works}"
    shutil.rmtree(out, ignore_errors=True)
    load = os.getloadavg()[0]
    argv = [scitaste(), "index", "--works", str(root), "--focal", "all", "--out", str(out), "--engine", engine,
            "--memory-limit", memory_limit, "--neighbours", neighbours, "--quiet"]
    seconds, own, peak, rc = timed(argv, work / f"run-{engine}-{works}.log")
    if rc:
        print(f"{engine} at {works:,} works failed (exit {rc}); see {work / f'run-{engine}-{works}.log'}", flush=True)
        return None
    summary = json.loads((out / "index.json").read_text())
    row = {"works": works, "engine": engine, "seconds": seconds, "peak_gb": peak, "driver_peak_gb": own,
           "citations": summary["citations"],
           "stages": summary["stage_seconds"], "neighbours": summary["neighbours"],
           "load": (load + os.getloadavg()[0]) / 2}
    recall = summary["neighbours"].get("recall")
    print(f"{engine:>6} {works:>9,} works {summary['citations']:>11,} citations: {seconds:8.1f} s, peak "
          f"{peak:5.2f} GB (the scitaste process alone {own:.2f} GB), load {row['load']:.1f}; neighbours "
          f"{summary['neighbours']['method']}"
          + (f" (recall@{recall['k']} {recall['recall_at_k']:.4f}, recall@1 {recall['recall_at_1']:.4f})"
             if recall else "")
          + "; stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in row["stages"].items()), flush=True)
    return row


def exponents(rows: list[dict]) -> None:
    """The growth exponent of time in works between consecutive sizes, and fitted over all, per engine."""
    for engine in dict.fromkeys(r["engine"] for r in rows):
        mine = sorted((r["works"], r["seconds"]) for r in rows if r["engine"] == engine)
        if len(mine) < 2:
            continue
        steps = [f"{a:,}->{b:,}: {math.log(tb / ta) / math.log(b / a):.2f}" for (a, ta), (b, tb) in pairwise(mine)]
        xs = [math.log(w) for w, _ in mine]
        ys = [math.log(t) for _, t in mine]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        fit = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        print(f"growth exponent of time, {engine}: {'; '.join(steps)}; fitted over all sizes {fit:.2f}")
        runs = sorted((r for r in rows if r["engine"] == engine), key=lambda r: r["works"])
        for stage in runs[0]["stages"]:
            pairs = [(a["works"], a["stages"].get(stage), b["works"], b["stages"].get(stage))
                     for a, b in pairwise(runs)]
            shown = [f"{a:,}->{b:,}: {math.log(tb / ta) / math.log(b / a):.2f}" for a, ta, b, tb in pairs
                     if ta and tb and ta > 0.05]
            if shown:
                print(f"  {stage}: {'; '.join(shown)}")


def agreement(work: Path, rows: list[dict]) -> None:
    """Per size where the in-memory engine ran too: for every column of each other engine's index, how many papers
    differ from the in-memory engine's (beyond 1e-6: the distances come from float32 similarities), and for the
    nearest-paper distance that share beside the run's reported recall@1 (the in-memory engine searches exactly)."""
    import numpy as np
    import pyarrow.parquet as pq

    for works in sorted({r["works"] for r in rows if r["engine"] == "memory"}):
        reference = pq.read_table(work / f"run-memory-{works}" / "index.parquet")
        for row in rows:
            if row["works"] != works or row["engine"] == "memory":
                continue
            table = pq.read_table(work / f"run-{row['engine']}-{works}" / "index.parquet")
            differing = {}
            for name in reference.column_names[1:]:
                x = table.column(name).to_numpy(zero_copy_only=False).astype(float)
                y = reference.column(name).to_numpy(zero_copy_only=False).astype(float)
                differ = ~((np.abs(x - y) <= 1e-6) | (np.isnan(x) & np.isnan(y)))
                if differ.any():
                    differing[name] = int(differ.sum())
            recall = row["neighbours"].get("recall")
            nn = differing.get("semantic_novelty.nn_distance", 0) / table.num_rows
            print(f"agreement at {works:,} works, {row['engine']} against memory: ids "
                  f"{'equal' if table.column('id').equals(reference.column('id')) else 'DIFFER'}; columns that "
                  f"differ (papers): {differing or 'none'}; nearest-paper distance differs for {nn:.4f} of papers"
                  + (f", 1 - recall@1 {1 - recall['recall_at_1']:.4f} on {recall['sample']}" if recall else ""))


def training(sizes: list[int], dim: int = 256) -> None:
    """The approximate search's training and assignment at ``sizes`` papers, timed part by part on clustered random
    unit vectors (one thread, as the engines run them): the coarse level on the coarse sample (the Spark engine's
    driver), one group's fine level (an executor's task; times the groups = the executors' core-seconds), and the
    assignment's two parts on the executors: a chunk of ``PROBE_QUERIES`` papers against the coarse centroids, and
    the same chunk against one group's lists (times the chunks, each paper in ``groups_probed`` groups)."""
    import numpy as np

    from scitaste_hf.scale import neighbours as nb
    from scitaste_hf.scale.spark_vectors import PROBE_QUERIES

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(2048, dim)).astype(np.float32)

    def unit(n: int) -> np.ndarray:
        x = centres[rng.integers(0, len(centres), n)] + rng.normal(size=(n, dim)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    for m in sizes:
        lists, groups = nb.lists_for(m), nb.groups_for(nb.lists_for(m))
        train, coarse = nb.sample_fractions(m)
        points = unit(round(coarse * m))
        started = time.process_time()
        top = nb.coarse_centroids(points, m)
        coarse_s = time.process_time() - started
        group = unit(round(train * m / groups))
        share = int(nb.fine_shares(np.full(groups, group.shape[0]), m)[0])
        started = time.process_time()
        own = nb.fine_centroids(group, share)
        fine_s = time.process_time() - started
        chunk = unit(PROBE_QUERIES)
        probed = nb.groups_probed(np.full(top.shape[0], share))
        started = time.process_time()
        nb.probed_groups(chunk, top, np.full(top.shape[0], share))
        groups_s = time.process_time() - started
        started = time.process_time()
        nb.group_hits(chunk, own, 0, nb.NPROBE)
        lists_s = time.process_time() - started
        chunks = m * probed / PROBE_QUERIES
        print(f"training at {m:,} papers: {groups} groups, {lists:,} lists; coarse level on {points.shape[0]:,} "
              f"points {coarse_s:.1f} CPU s (driver); one group's fine level ({group.shape[0]:,} points, {share} "
              f"lists) {fine_s:.2f} CPU s, x {groups} groups = {fine_s * groups:.0f} core-seconds (executors); "
              f"assignment, a chunk of {PROBE_QUERIES:,} papers: against the {top.shape[0]} coarse centroids "
              f"{groups_s:.3f} CPU s, against one group's {share} lists {lists_s:.3f} CPU s, x {chunks:,.0f} chunks "
              f"({probed} groups a paper) = {(groups_s / probed + lists_s) * chunks:,.0f} core-seconds (executors)",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--million", action="store_true", help="also 1,000,000 works (about an hour with DuckDB)")
    parser.add_argument("--engines", default="duckdb,memory", help="comma-separated: duckdb, memory, spark")
    parser.add_argument("--memory-max", type=int, default=100_000,
                        help="largest snapshot the in-memory engine runs on (default 100000)")
    parser.add_argument("--memory-limit", default="4GB", help="DuckDB's memory limit (default 4GB)")
    parser.add_argument("--neighbours", default="auto", help="the nearest-paper search: auto, exact or ann")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated numbers of works")
    parser.add_argument("--work-dir", default="/tmp/scitaste-bench-scale", help="snapshots and runs (kept)")
    parser.add_argument("--training", metavar="SIZES",
                        help="only time the approximate search's training at these numbers of papers "
                             "(comma-separated), part by part (driver and executors)")
    args = parser.parse_args()
    if args.training:
        training([int(n) for n in args.training.split(",")])
        return
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    sizes = [int(n) for n in args.sizes.split(",")]
    for works in (*sizes, *((MILLION,) if args.million else ())):
        root = snapshot(work, works)
        for engine in args.engines.split(","):
            if engine == "memory" and works > args.memory_max:
                continue
            row = run_index(work, root, works, engine, args.memory_limit, args.neighbours)
            if row:
                rows.append(row)
    exponents(rows)
    agreement(work, rows)
    (work / "results.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
