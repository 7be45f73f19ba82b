"""Time the test suite as CI runs it: `.venv/bin/pytest` with the project's own options (xdist over the cores), and
report pytest's own time, the wall time, the load average before and after, and the files that took longest.

    python bench/bench_suite.py                 # the full suite
    python bench/bench_suite.py -- -m "not slow"    # anything after -- goes to pytest
    python bench/bench_suite.py --by-command        # also the CPU seconds of each kind of process (Linux)
    python bench/bench_suite.py --tests 40          # also the 40 slowest test phases (setup, call, teardown)

The target (CONTRIBUTING.md) is under 6 minutes of pytest time on a quiet 2-core machine. The load average says how
quiet the machine was: a figure taken beside other work is reported as loaded. ``--by-command`` samples /proc every
0.3 s for the suite's process tree and adds up each process's own CPU seconds by what it runs (the xdist workers'
in-process tests, each `scitaste` subcommand, Spark's JVM, the browser, ...): which of them the suite spends its CPU
on, a figure that load does not skew the way it skews wall times (a process living under 0.3 s can be missed).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=15, help="slowest files to list")
    parser.add_argument("--tests", type=int, default=0, help="also list this many slowest test phases")
    parser.add_argument("--by-command", action="store_true", help="CPU seconds by kind of process (reads /proc)")
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest, after --")
    args = parser.parse_args()
    pytest = ROOT / ".venv" / "bin" / "pytest"
    command = [str(pytest if pytest.exists() else "pytest"), "-q", "-p", "no:cacheprovider",
               "--durations=0", "--durations-min=0.5", *args.pytest_args]
    load_before = os.getloadavg()
    start = time.monotonic()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cpu: dict[int, list] = {}
    sampler = threading.Thread(target=_sample, args=(proc, cpu), daemon=True) if args.by_command else None
    if sampler is not None:
        sampler.start()
    out, _ = proc.communicate()
    done = subprocess.CompletedProcess(command, proc.returncode, out)
    if sampler is not None:
        sampler.join(timeout=5)
    wall = time.monotonic() - start
    load_after = os.getloadavg()
    summary = next((line for line in reversed(out.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "")
    own = re.search(r"in ([\d.]+)s", summary)
    per_file: dict[str, float] = defaultdict(float)
    phases = re.findall(r"^([\d.]+)s ((?:call|setup|teardown)\s+(\S+?)::\S+)", out, re.M)
    for seconds, _, path in phases:
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
    if args.tests:
        print(f"slowest test phases (top {args.tests}):")
        for seconds, phase, _ in sorted(phases, key=lambda p: -float(p[0]))[:args.tests]:
            print(f"  {float(seconds):7.1f} s  {' '.join(phase.split())}")
    if args.by_command:
        kinds: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
        for command_line, seconds in cpu.values():
            kind = kinds[_kind(command_line)]
            kind[0] += seconds
            kind[1] += 1
        print(f"CPU seconds by kind of process ({sum(k[0] for k in kinds.values()):.0f} s in all):")
        for name, (seconds, count) in sorted(kinds.items(), key=lambda kv: -kv[1][0])[:args.top]:
            print(f"  {seconds:7.1f} s  {count:4d} processes  {name}")
    return done.returncode


def _sample(root: subprocess.Popen, cpu: dict[int, list]) -> None:
    """Until ``root`` ends: each process of its tree's command line and own CPU seconds so far (/proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    tree = {root.pid}
    while root.poll() is None:
        parents = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                except OSError:
                    continue
                fields = stat[stat.rfind(")") + 2:].split()
                parents[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
        grew = True
        while grew:
            new = {pid for pid, (parent, _) in parents.items() if parent in tree and pid not in tree}
            tree |= new
            grew = bool(new)
        for pid in tree & parents.keys():
            try:
                line = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()
            except OSError:
                line = ""
            record = cpu.setdefault(pid, ["", 0.0])
            record[0] = line or record[0]  # a process that has exited keeps the command it ran
            record[1] = parents[pid][1]
        time.sleep(0.3)


def _kind(command_line: str) -> str:
    """What a process of the suite runs, for :func:`main`'s totals."""
    if "exec(eval(sys.stdin.readline()))" in command_line:
        return "xdist workers (the tests run in-process)"
    # the console script, or the module run as `python -m scitaste_hf`
    if found := re.search(r"(?:/scitaste| -m scitaste_hf) (\w[\w-]*)"
                          r"(?: (serve|details|metrics|space|dataset|run|report|freeze|diff))?", command_line):
        return "scitaste " + " ".join(filter(None, found.groups()))
    for needle, name in (("java", "Spark's JVM"), ("pyspark.daemon", "Spark's Python workers"),
                         ("chrom", "the browser"), ("playwright", "the browser"), ("lm_eval", "lm_eval"),
                         ("inspect", "inspect")):
        if needle in command_line:
            return name
    # by the program and its script, not by any word of the line: a helper server's arguments hold /tmp/pytest-of-...
    program, *args = (part.rsplit("/", 1)[-1] for part in command_line.split(" "))
    if program == "pytest" or args[:2] == ["-m", "pytest"]:
        return "pytest (the controller, or a test's own pytest)"
    if program.startswith("python") and args and not args[0].startswith("-"):
        return f"{args[0]} (other)"
    return program + " (other)"


if __name__ == "__main__":
    sys.exit(main())
