"""Evaluation throughput: 300 papers in dimagent_v3_live mode (the live loop) through scitaste-agent at
num_concurrent=16 against a scripted OpenAI-compatible server that answers in 200 ms (two requests per paper), as
a share of the ideal; and the cost of one tool call on frozen evidence.

    python bench/bench_eval.py [--papers 300] [--concurrent 16] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from _scripted import scripted_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=300)
    parser.add_argument("--concurrent", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()

    import lm_eval.models  # noqa: F401  (lm-eval's registry is filled before ours, as scitaste eval does)

    from scitaste_hf.adapters.lmeval.models import AgentLM
    from scitaste_hf.agent.evidence import FrozenToolBox
    from scitaste_hf.agent.tools import TOOL_NAMES
    from scitaste_hf.schema import DIMENSIONS

    answer = json.dumps({"innovation_score": 50.0, "dimension_scores": dict.fromkeys(DIMENSIONS, 50.0)})
    calls = {"tool_calls": [{"name": n, "arguments": {"bibcode": "P0"}} for n in TOOL_NAMES]}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps({"latency": args.latency, "rules": [{"contains": "Identifier", "tools": True,
                                                                          "reply": calls}], "default": answer}))
        with scripted_server(script, Path(tmp) / "log.jsonl") as url:
            evidence = FrozenToolBox({(f"P{i}", t): {"tool": t, "items": list(range(50))}
                                      for i in range(args.papers) for t in TOOL_NAMES})
            model = AgentLM(base_url=url, model="scripted",
                            num_concurrent=args.concurrent, trace_path=str(Path(tmp) / "trace.jsonl"))
            model.tools = evidence
            # the live loop: two requests a paper (the model's calls, then its answer)
            requests = [SimpleNamespace(doc={"bibcode": f"P{i}", "discipline": "physics", "title": "t", "abstract": "a",
                                             "scitaste_mode": "dimagent_v3_live"}, args=("", {}))
                        for i in range(args.papers)]
            start = time.perf_counter()
            replies = model.generate_until(requests)
            took = time.perf_counter() - start
    ideal = args.papers * 2 * args.latency / args.concurrent
    print(f"{args.papers} papers, dimagent_v3_live mode, num_concurrent={args.concurrent}, server latency "
          f"{args.latency * 1000:.0f} ms: {took:.2f} s against an ideal {ideal:.2f} s = {100 * ideal / took:.0f}% "
          f"of the ideal throughput   target >= 80%   ({sum(r == answer for r in replies)} answers)")
    bibcode = "P0"
    n = 20000
    start = time.perf_counter()
    for k in range(n):
        evidence.call(TOOL_NAMES[k % 9], {"bibcode": bibcode})
    print(f"frozen tool call: {(time.perf_counter() - start) / n * 1e6:.1f} us per call   target < 5 ms")


if __name__ == "__main__":
    main()
