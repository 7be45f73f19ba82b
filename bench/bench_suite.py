"""Time the test suite as CI runs it: `.venv/bin/pytest` with the project's own options (xdist over the cores), and
report pytest's own time, the wall time, the load average before and after, and the files that took longest.

    python bench/bench_suite.py                 # the full suite
    python bench/bench_suite.py -- -m "not slow"    # anything after -- goes to pytest

The target (CONTRIBUTING.md) is under 6 minutes of pytest time on a quiet 2-core machine. The load average says how
quiet the machine was: a figure taken beside other work is reported as loaded.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=15, help="slowest files to list")
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest, after --")
    args = parser.parse_args()
    pytest = ROOT / ".venv" / "bin" / "pytest"
    command = [str(pytest if pytest.exists() else "pytest"), "-q", "-p", "no:cacheprovider",
               "--durations=0", "--durations-min=0.5", *args.pytest_args]
    load_before = os.getloadavg()
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - start
    load_after = os.getloadavg()
    out = done.stdout
    summary = next((line for line in reversed(out.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "")
    own = re.search(r"in ([\d.]+)s", summary)
    per_file: dict[str, float] = defaultdict(float)
    for seconds, path in re.findall(r"^([\d.]+)s (?:call|setup|teardown)\s+(\S+?)::", out, re.M):
        per_file[path] += float(seconds)
    print(f"command: {' '.join(command[1:])}")
    print(f"result: {summary.strip('= ') or 'no summary (exit ' + str(done.returncode) + ')'}")
    print(f"pytest's own time: {float(own.group(1)) / 60:.1f} min" if own else "pytest's own time: unknown")
    print(f"wall time: {wall / 60:.1f} min on {os.cpu_count()} cores")
    print(f"load average (1, 5, 15 min) before: {', '.join(f'{x:.1f}' for x in load_before)}; "
          f"after: {', '.join(f'{x:.1f}' for x in load_after)}")
    print(f"slowest files (sum of their tests' phases over 0.5 s, across workers; top {args.top}):")
    for path, seconds in sorted(per_file.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {seconds:7.1f} s  {path}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
