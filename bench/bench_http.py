"""CPU of one chat request (scitaste_hf.net.bounded.exchange, one client a request, as the agent's chat client
sends them) against the scripted server on 127.0.0.1, and of one source transport's first request: what an
evaluation or a build pays per request besides the network.

    python bench/bench_http.py [--requests 200]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from _scripted import scripted_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()

    from scitaste_hf.net.bounded import exchange
    from scitaste_hf.sources.options import ClientOptions
    from scitaste_hf.sources.transport import Transport

    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps({"rules": [], "default": "an answer"}))
        with scripted_server(script, Path(tmp) / "log.jsonl") as url:
            exchange("POST", f"{url}/chat/completions", limit=10, max_bytes=1 << 20, json=body)  # imports, warm-up
            started, cpu = time.perf_counter(), time.process_time()
            for _ in range(args.requests):
                exchange("POST", f"{url}/chat/completions", limit=10, max_bytes=1 << 20, json=body)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            print(f"chat exchange: {1000 * cpu / args.requests:.2f} ms of CPU, {1000 * wall / args.requests:.2f} ms "
                  f"wall a request ({args.requests} requests)")
            cpu = time.process_time()
            for _ in range(20):
                transport = Transport("bench", ClientOptions(base_url=url.removesuffix("/v1")))
                transport.request("GET", "/health")
                transport.close()
            print(f"source transport, first request: {1000 * (time.process_time() - cpu) / 20:.2f} ms of CPU")


if __name__ == "__main__":
    main()
