"""Leaderboard Space figures: loading the table with 1,000 stored runs, validating + scoring a 300-line
submission (the server-side work of one upload, bootstrap intervals included), and, through a running Space
(`scitaste space`), a valid submission's latency alone and while a 5 MiB upload is being processed.

    python bench/bench_space.py [--runs 1000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import runpy
import socket
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

from scitaste_hf.leaderboard import Leaderboard, Meta
from scitaste_hf.records import load_records
from scitaste_hf.resources import bundled_dir


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    examples = resources.files("scitaste_hf").joinpath("data/examples")
    gold = load_records(str(examples.joinpath("gold.jsonl")))
    data = Path(str(examples.joinpath("predictions.jsonl"))).read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        board = Leaderboard(tmp, gold, rate_limit=(10**9, 1.0))
        t = time.perf_counter()
        first = board.submit(data, "bench-model", "dimagent_v3", submitter="bench")
        t_submit = time.perf_counter() - t
        row = board.store.run(first.run_id)
        summary, result = json.loads(row["summary"]), json.loads(row["result"])
        for i in range(args.runs - 1):  # the same scored run under 999 other names: only the store grows
            sha = hashlib.sha256(f"run {i}".encode()).hexdigest()
            meta = Meta(model=f"model-{i}", mode="pure_qa", submitted_at="2026-11-29T00:00:00")
            board.store.insert(sha, meta, "self-reported", summary, result, 295, 300)
        app = runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="bench")
        times = []
        for _ in range(5):
            t = time.perf_counter()
            frame = app["table"](board)
            frame.to_html()  # what Gradio serialises: every styled cell
            times.append(time.perf_counter() - t)
        print(f"stored runs: {len(board.rows())}")
        print(f"leaderboard table load (rows + styling, best of 5): {min(times):.3f} s   target < 1 s")
        print(f"300-line submission validated + scored + stored: {t_submit:.3f} s   target < 2 s")
    submission_beside_a_large_one(gold)


def _jsonl(lines) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


def _answers(gold, shift: float) -> list[dict]:
    return [{"bibcode": r["bibcode"], "innovation_score": min(100.0, r["innovation_score"] + shift),
             "dimension_scores": {k: min(100.0, v + shift) for k, v in r["dimension_scores"].items()}} for r in gold]


def _large(gold, limit: int) -> str:
    """Raw replies just under ``limit`` bytes in all: long prose full of keys that never finish (what the reply
    parser has to try and give up on), then the answer."""
    per_line = limit // len(gold) - 400
    prose = 'we weigh {"evidence" of the tools '
    escaped = len(json.dumps(prose)) - 2  # its length inside a JSON string
    return _jsonl({"bibcode": a["bibcode"], "response": prose * (per_line // escaped) + "\nFinal: " + json.dumps(
        {k: a[k] for k in ("innovation_score", "dimension_scores")})} for a in _answers(gold, 1.0))


def submission_beside_a_large_one(gold) -> None:
    """A small valid submission's latency through a running Space, alone and while a 5 MiB upload is processed."""
    import httpx
    from gradio_client import Client, handle_file
    from gradio_client.utils import Status

    from scitaste_hf.leaderboard.service import MAX_BYTES

    with socket.socket() as probe:  # a free port for the Space
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        files = {name: Path(tmp) / f"{name}.jsonl" for name in ("alone", "beside", "large")}
        files["alone"].write_text(_jsonl(_answers(gold, 2.0)))
        files["beside"].write_text(_jsonl(_answers(gold, 3.0)))
        files["large"].write_text(_large(gold, MAX_BYTES))
        size = files["large"].stat().st_size / 2**20
        env = {**os.environ, "SCITASTE_SUBMIT_LIMIT": "100", "GRADIO_ANALYTICS_ENABLED": "False"}
        server = subprocess.Popen([str(Path(sys.executable).with_name("scitaste")), "space", "--data",
                                   str(Path(tmp) / "data"), "--port", str(port)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/"
        try:
            for _ in range(600):
                try:
                    if httpx.get(url, timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)

            def submit(client, name):
                return client.submit(handle_file(str(files[name])), f"bench-{name}", "pure_qa", "", "",
                                     api_name="/submit")

            client = Client(url, verbose=False)
            t = time.perf_counter()
            alone = submit(client, "alone").result()
            t_alone = time.perf_counter() - t
            t = time.perf_counter()
            large = submit(Client(url, verbose=False), "large")
            while large.status().code != Status.PROCESSING and not large.done():
                time.sleep(0.05)
            t_started = time.perf_counter()
            beside = submit(client, "beside").result()
            t_beside = time.perf_counter() - t_started
            overlapped = not large.done()
            large_message = large.result()
            t_large = time.perf_counter() - t
        finally:
            server.terminate()
            server.wait()
    print(f"valid 300-line submission through the Space, alone: {t_alone:.2f} s ({alone.split(':')[0]})")
    print(f"the same while a {size:.2f} MiB upload is processed: {t_beside:.2f} s ({beside.split(':')[0]}; "
          f"{'answered while the large one was still processed' if overlapped else 'the large one had ended first'})")
    print(f"the {size:.2f} MiB upload, submitted to answered: {t_large:.2f} s ({large_message.split(':')[0]})")


if __name__ == "__main__":
    main()
