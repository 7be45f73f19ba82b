"""The offline world: generation time and memory of the simulated world, and the requests per second the mirror
sustains for single-work lookups of random works at 16 connections, measured twice: with wrk (Debian's `wrk`,
a C load generator in a second process, when installed) for the server's capacity, and with Python's httpx
async client, which on 2 cores shares the CPU with the server and is the slower side.

    python bench/bench_world.py [--papers 6000] [--requests 4000]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np


def generation(papers: int) -> None:
    from scitaste_hf.simworld.world import generate

    start = time.perf_counter()
    world = generate(papers, 0)
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"world: {world.n_candidates} candidates, {world.n_works} works, {world.ref_idx.shape[0]} citation edges")
    print(f"generation: {took:.1f} s, peak RSS {peak:.0f} MiB   target < 60 s")


async def lookups(url: str, n_works: int, requests: int, connections: int) -> tuple[float, int]:
    ids = np.random.default_rng(0).integers(0, n_works, size=requests)
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in ids:
            queue.put_nowait(int(i))
        failures = 0

        async def worker() -> None:
            nonlocal failures
            while not queue.empty():
                i = queue.get_nowait()
                response = await client.get(f"/openalex/works/W9{i:09d}")
                failures += response.status_code != 200

        await asyncio.gather(*(worker() for _ in range(connections)))  # warm-up pass below is the same code
        start = time.perf_counter()
        for i in ids:
            queue.put_nowait(int(i))
        await asyncio.gather(*(worker() for _ in range(connections)))
        return requests / (time.perf_counter() - start), failures


def wrk(url: str, n_works: int, connections: int, seconds: int = 10) -> float:
    """Requests per second of wrk fetching random works."""
    script = (f"math.randomseed(0)\nrequest = function()\n  return wrk.format(\"GET\", "
              f"string.format(\"/openalex/works/W9%09d\", math.random(0, {n_works - 1})))\nend\n")
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as fh:
        fh.write(script)
        fh.flush()
        out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-s", fh.name, url],
                             capture_output=True, text=True, check=True).stdout
    return float(next(line.split()[1] for line in out.splitlines() if line.startswith("Requests/sec")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=6000)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    generation(args.papers)
    scitaste = str(Path(sys.executable).with_name("scitaste"))
    proc = subprocess.Popen([scitaste, "mirror", "serve", "--papers", str(args.papers), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = ""
        while not line.startswith("READY"):
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("the mirror did not start")
        url = line.split()[1]
        from scitaste_hf.simworld.world import generate

        n_works = generate(args.papers, 0).n_works
        if shutil.which("wrk"):
            print(f"mirror, wrk: {wrk(url, n_works, args.connections):.0f} single-work lookups/s with "
                  f"{args.connections} connections   target >= 500/s")
        else:
            print("mirror, wrk: not installed (apt-get install wrk)")
        rate, failures = asyncio.run(lookups(url, n_works, args.requests, args.connections))
        print(f"mirror, httpx client: {rate:.0f} single-work lookups/s with {args.connections} connections "
              f"({args.requests} requests, {failures} not 200)")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
