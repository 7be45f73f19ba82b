"""`scitaste rtaste run` end to end on the bundled synthetic study: every stage (propose, seal, judge, the toy
executor, rerun, the budget mode, audit, calibrate, novelty, review, release, report) against the scripted models of
tests/fixtures/rtaste_script.py on a scripted OpenAI-compatible server on 127.0.0.1 answering in `--latency` seconds;
then the same command again (the resumed run: nothing to ask or run). Prints wall time, the CPU time of the command
and its children, the model calls and each stage's seconds.

    python bench/bench_rtaste_run.py [--latency 0.0]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

from _scripted import scripted_server  # noqa: E402  (bench/, the script's own folder)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds the server takes per answer")
    args = parser.parse_args()
    from rtaste_script import MODEL, study_script

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "script.json").write_text(json.dumps({**study_script(), "latency": args.latency}))
        with scripted_server(folder / "script.json", folder / "log.jsonl") as url:
            command = [str(Path(sys.executable).with_name("scitaste")), "rtaste", "run", "--study",
                       str(folder / "study"), "--models", MODEL, "--base-url", url,
                       "--auditors", "a1,a2,a3", "--novelty-judges", "n1,n2", "--reviewers", "r1,r2,r3",
                       "--no-search", "--budget-units", "4", "--max-retries", "0"]
            for label in ("first run", "resumed run"):
                cpu, started = _cpu(), time.monotonic()
                done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
                wall, cpu = time.monotonic() - started, _cpu() - cpu
                if done.returncode:
                    raise SystemExit(done.stderr)
                record = json.loads((folder / "study" / "run.json").read_text())
                calls = sum(1 for _ in (folder / "log.jsonl").open())
                print(f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU (the command and its re-runs), {calls} model "
                      f"calls so far; stages: " + ", ".join(f"{k} {v['seconds']:.1f} s"
                                                           for k, v in record["stages"].items()))
    print("load average after: " + " ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
