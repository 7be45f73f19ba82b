"""Fixtures of the rTaste tests: hand-built rows whose every number can be computed by hand, the synthetic
release's rows, and a deterministic OpenAI-compatible chat server on 127.0.0.1 for the judge task.

The row builders are handed out as fixtures (pytest runs with --import-mode=importlib, so test modules cannot
import a helper module from this folder).
"""

import json
from pathlib import Path

import pytest

from scitaste_hf.rtaste.synthetic import synthetic_rows


def _make_row(condition="c1", position=1, *, seed_paper="paper-1", model="m1", organisation="single_researcher",
             cost=10.0, probability=0.5, rank=None, judges=None, relation="greater", threshold=(0.5,),
             unit="fraction", rerun=1.0, reported=None, status="delivered", faithful=(True, True, True),
             valid=(True, True, True), value=(2, 2, 2), novelty=("distinct", "distinct")):
    """One release row; the event is ``rerun > 0.5`` by default, so ``rerun=1.0`` occurred and 0.0 did not."""
    return {
        "mve_id": f"{condition}/{position}", "condition_id": condition, "seed_paper": seed_paper,
        "seed_summary": f"summary of {seed_paper}", "model": model, "organisation": organisation,
        "cost_usd": cost, "position": position,
        "registration": {"hypothesis": "h", "nearest_prior_work": "w", "inputs": "i", "method": "m",
                         "event": {"statistic": "s", "relation": relation, "threshold": list(threshold),
                                   "unit": unit},
                         "evaluation_plan": "e", "resources": "r", "follow_up": "f"},
        "probability": probability, "rank": position if rank is None else rank,
        "judge_predictions": [{"judge_model": k, "probability": v} for k, v in (judges or {}).items()],
        "outcome": {"status": status, "executor": "x", "attempts": 1,
                    "executor_value": rerun if reported is None else reported,
                    "rerun_value": None if status == "failed" else rerun, "value_unit": "fraction"},
        "audit": {"faithful": list(faithful), "valid": list(valid), "value": list(value),
                  "novelty": list(novelty), "obvious": False, "reviewer_answers": []},
    }


def _make_condition(condition, *, occurred, probabilities, ranks=(1, 2, 3, 4, 5), judges=None, values=None,
                   **common):
    """Five rows of one condition; ``occurred``/``probabilities``/``values`` are per MVE in written order and
    ``judges`` maps a judge model to its five probabilities."""
    rows = []
    for k in range(5):
        rows.append(_make_row(condition, k + 1, probability=probabilities[k], rank=ranks[k],
                             rerun=1.0 if occurred[k] else 0.0,
                             judges={j: p[k] for j, p in (judges or {}).items()},
                             value=(values[k],) * 3 if values else (2, 2, 2), **common))
    return rows


# The chat server gives each of the five registered events the probability 0.5, except when the prompt is
# about FAILING_SEED, where the reply holds no JSON: a parse failure the task must count, not score.
FAILING_SEED = "synthetic-seed-4"
ANSWER = '{"probabilities": [0.5, 0.5, 0.5, 0.5, 0.5]}'


class _ChatServer:
    """The scripted chat server (tests/fixtures/scripted_chat.py) as the judge test sees it."""

    failing_seed = FAILING_SEED

    def __init__(self, url: str, log: Path) -> None:
        self.url, self.log = url, log
        self.server_address = ("127.0.0.1", int(url.rstrip("/").rsplit(":", 1)[1]))

    @property
    def prompts(self) -> list[str]:
        """The prompts received so far, in order."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return ["\n".join(m["content"] for m in json.loads(line)["messages"] if isinstance(m.get("content"), str))
                for line in lines]


@pytest.fixture()
def chat_server(tmp_path, servers, scripted_chat):
    """A real chat server process on 127.0.0.1 that answers 0.5 for every event, and no JSON for the
    conditions of ``FAILING_SEED``; ``.prompts`` lists the prompts it received."""
    proc, url, log = scripted_chat({"rules": [{"contains": FAILING_SEED, "reply": "I cannot tell."}],
                                    "default": f"My forecast:\n```json\n{ANSWER}\n```"}, tmp_path, "judge")
    yield _ChatServer(url, log)
    servers[1](proc)


@pytest.fixture()
def make_row():
    """The builder of one hand-made row (see ``_make_row``)."""
    return _make_row


@pytest.fixture()
def make_condition():
    """The builder of a hand-made condition's five rows (see ``_make_condition``)."""
    return _make_condition


@pytest.fixture(scope="session")
def synthetic():
    """The bundled synthetic release's rows (regenerated, so tests may compare them with the shipped file)."""
    return synthetic_rows()
