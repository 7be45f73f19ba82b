"""Wall time, CPU seconds and requests of a cold build against the offline mirror, and of a warm re-run from the
same work directory (target: zero requests).

    .venv/bin/python bench/bench_build.py [--papers 6000] [--seed 0] [--digests FILE] [--no-warm]

It starts `scitaste mirror serve` on a free 127.0.0.1 port, runs `scitaste build` cold into a temporary folder,
then again with the same --work-dir (every stage recomputed, every response from the cache) and checks that the two
datasets are byte-identical. Requests are counted by the mirror (GET /_control/log). CPU seconds (user + system)
are the build process's with its children (``resource.RUSAGE_CHILDREN``) and the mirror's during the build
(``psutil``, the mirror's own process, its world generation before the build left out). ``--digests FILE`` writes
the sha256 of every file of the cold build to FILE, or, when FILE exists, compares with it (a change of the code
must leave a build byte-identical).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _requests(url: str) -> int:
    return len(httpx.get(f"{url}/_control/log", timeout=30).json()["requests"])


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _build(url: str, out: Path, work: Path, seed: int, per_discipline: int) -> tuple[float, float]:
    """Wall and CPU seconds of one `scitaste build`."""
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run([SCITASTE, "build", "--mirror-url", url, "--out", str(out), "--work-dir", str(work),
                           "--seed", str(seed), "--per-discipline", str(per_discipline),
                           "--selected-per-discipline", str(min(50, per_discipline))],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"build failed: {done.stderr[-2000:]}")
    print(done.stdout.strip().splitlines()[-1])
    return time.perf_counter() - started, _children_cpu() - cpu


def _digests(folder: Path, path: Path | None) -> str:
    """Writes or compares the sha256 of every file of ``folder``; what to say about it."""
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in _files(folder).items()}
    if path is None:
        return f"{len(digests)} files"
    if not path.exists():
        path.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        return f"{len(digests)} files' sha256 written to {path}"
    before = json.loads(path.read_text())
    changed = sorted(k for k in before.keys() | digests.keys() if before.get(k) != digests.get(k))
    return f"sha256 of {len(digests)} files: " + ("identical to " + str(path) if not changed else
                                                   f"DIFFERENT from {path}: {', '.join(changed)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=6000, help="candidates of the simulated world")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--digests", type=Path, help="sha256 of the cold build's files: written, or compared")
    parser.add_argument("--no-warm", action="store_true", help="the cold build only")
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
        server = psutil.Process(mirror.pid)
        print(f"mirror ready in {time.perf_counter() - started:.1f} s, {_cpu(server):.1f} s of CPU "
              f"({args.papers} candidates)")
        work = tmp / "work"
        per_discipline = args.papers // 6
        before, mirror_cpu = _requests(url), _cpu(server)
        wall, cpu = _build(url, tmp / "cold", work, args.seed, per_discipline)
        cold_requests, mirror_cpu = _requests(url) - before, _cpu(server) - mirror_cpu
        print(f"cold build: {wall:.1f} s, {cold_requests} requests; CPU {cpu + mirror_cpu:.1f} s "
              f"(build {cpu:.1f} s, mirror {mirror_cpu:.1f} s); {_digests(tmp / 'cold', args.digests)}")
        if not args.no_warm:
            before, mirror_cpu = _requests(url), _cpu(server)
            wall, cpu = _build(url, tmp / "warm", work, args.seed, per_discipline)
            warm_requests, mirror_cpu = _requests(url) - before, _cpu(server) - mirror_cpu
            same = _files(tmp / "cold") == _files(tmp / "warm")
            print(f"warm re-run: {wall:.1f} s, {warm_requests} requests (target 0), CPU build {cpu:.1f} s, mirror "
                  f"{mirror_cpu:.1f} s; byte-identical: {same}")
    finally:
        mirror.terminate()
        mirror.wait(timeout=30)


if __name__ == "__main__":
    main()
