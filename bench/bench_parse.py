"""Time to parse adversarial replies of about 2 MB with :func:`scitaste_hf.scoring.parse_answer`: stray braces,
keys that never finish, objects nested deep but within the recursion limit, thousands of empty objects or broken
code fences; and an honest 100 kB reply with 2,000 embedded JSON objects before its answer.

    python bench/bench_parse.py [--mb 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring import parse_answer

ANSWER = json.dumps({"innovation_score": 50, "dimension_scores": dict.fromkeys(DIMENSIONS, 40)})


def replies(size: int) -> dict[str, str]:
    """Each adversarial pattern repeated to about ``size`` characters, and the honest reply."""
    patterns = {
        "stray braces in prose": "lorem ipsum { not json ",
        "keys that never finish": 'lorem ipsum {" not json ',
        "only opening braces": "{",
        'only {"': '{"',
        'keys without values {"k":x': '{"k":x',
        "empty objects {}": "{}",
        "broken code fences": "```json\n{x```",
    }
    out = {name: unit * max(1, size // len(unit)) for name, unit in patterns.items()}
    # 400 levels stay under the decoder's recursion limit, so every level is decoded to the end of the reply
    out["objects nested 400 levels deep"] = ('{"k":[' + "1," * (size // 800)) * 400
    out["honest: 2,000 objects, then the answer"] = "".join(
        f'tool {i}: {{"n": {i}, "v": [1, 2, 3], "s": "abc"}}\n' for i in range(2000)) + "Final: " + ANSWER
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"parse_answer, best of {args.repeat}; CPython {platform.python_version()} on {platform.machine()}")
    print(f"{'reply':42s} {'chars':>10s} {'seconds':>8s}  result")
    for name, text in replies(int(args.mb * 1_000_000)).items():
        best, result = float("inf"), None
        for _ in range(args.repeat):
            started = time.perf_counter()
            result = parse_answer(text)
            best = min(best, time.perf_counter() - started)
        print(f"{name:42s} {len(text):>10,d} {best:8.3f}  {getattr(result, 'reason', 'answer')}")


if __name__ == "__main__":
    main()
