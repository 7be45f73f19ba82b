"""A run's details dataset when its evidence is an Inspect log: the conversations of every paper, read the way
``scitaste_hf.leaderboard.details.dataset_rows`` read them before (the Inspect adapter's ``messages``, the whole log
written out and opened again for each paper; timed on ``--sample`` papers and scaled to the run) and as it reads them
now (``all_messages``, the log read once). The log is synthetic (tests/fixtures/inspect_log.py), ``--papers`` samples
of one tool call each. Prints the log's size, both times and the peak memory.

    python bench/bench_details.py [--papers 10000] [--sample 20]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

from inspect_log import inspect_log  # noqa: E402  (tests/fixtures: test-only code, outside the package)


def main() -> None:
    from scitaste_hf.adapters.inspect.logs import all_messages, messages
    from scitaste_hf.schema import DIMENSIONS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=20, help="papers read one at a time, scaled to --papers")
    args = parser.parse_args()
    papers = [{"bibcode": f"2020Bench{i:08d}", "innovation_score": 50.0,
               "dimension_scores": dict.fromkeys(DIMENSIONS, 50.0)} for i in range(args.papers)]
    log = inspect_log(papers, "dimagent_v3")
    start = time.perf_counter()
    for paper in papers[:args.sample]:
        messages(log, "bench", paper["bibcode"])
    one_at_a_time = (time.perf_counter() - start) / args.sample
    start = time.perf_counter()
    every = all_messages(log, "bench")
    once = time.perf_counter() - start
    assert len(every) == args.papers
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"Inspect log of {args.papers:,} papers: {len(log) / 2**20:.1f} MiB")
    print(f"one paper at a time (before): {one_at_a_time * 1000:.1f} ms a paper -> {one_at_a_time * args.papers:.0f} s "
          f"for the run (scaled from {args.sample} papers)")
    print(f"the log read once (now): {once:.1f} s for the run")
    print(f"peak memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
