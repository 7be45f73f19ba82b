"""Wall time and requests of a full default build (6,000 candidates: 300 selected, 5,700 backup) against the
offline mirror, and of a warm re-run from the same work directory (target: zero requests).

    .venv/bin/python bench/bench_build.py [--papers 6000] [--seed 0]

It starts `scitaste mirror serve` on a free 127.0.0.1 port, runs `scitaste build` cold into a temporary folder,
then again with the same --work-dir (every stage recomputed, every response from the cache) and checks that the two
datasets are byte-identical. Requests are counted by the mirror (GET /_control/log).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _requests(url: str) -> int:
    return len(httpx.get(f"{url}/_control/log", timeout=30).json()["requests"])


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _build(url: str, out: Path, work: Path, seed: int, per_discipline: int) -> float:
    started = time.perf_counter()
    done = subprocess.run([SCITASTE, "build", "--mirror-url", url, "--out", str(out), "--work-dir", str(work),
                           "--seed", str(seed), "--per-discipline", str(per_discipline),
                           "--selected-per-discipline", str(min(50, per_discipline))],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"build failed: {done.stderr[-2000:]}")
    print(done.stdout.strip().splitlines()[-1])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=6000, help="candidates of the simulated world")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    port = _free_port()
    tmp = Path(tempfile.mkdtemp(prefix="bench-build-"))
    started = time.perf_counter()
    mirror = subprocess.Popen([SCITASTE, "mirror", "serve", "--papers", str(args.papers), "--seed", str(args.seed),
                               "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in mirror.stdout:
            if line.startswith("READY"):
                break
        url = f"http://127.0.0.1:{port}"
        print(f"mirror ready in {time.perf_counter() - started:.1f} s ({args.papers} candidates)")
        work = tmp / "work"
        per_discipline = args.papers // 6
        before = _requests(url)
        cold = _build(url, tmp / "cold", work, args.seed, per_discipline)
        cold_requests = _requests(url) - before
        before = _requests(url)
        warm = _build(url, tmp / "warm", work, args.seed, per_discipline)
        warm_requests = _requests(url) - before
        same = _files(tmp / "cold") == _files(tmp / "warm")
        print(f"cold build: {cold:.1f} s, {cold_requests} requests")
        print(f"warm re-run: {warm:.1f} s, {warm_requests} requests (target 0); byte-identical: {same}")
    finally:
        mirror.terminate()
        mirror.wait(timeout=30)


if __name__ == "__main__":
    main()
