"""The offline baseline as a chat model: the stand-in that runs through the same loop as any model.

Deterministic and transparent. Without tools it answers with the discipline priors of the leaderboard's floor
(:class:`~scitaste_hf.scoring.floors.PriorBaseline`); in the tool modes it calls all nine tools in round 1 and
maps their raw evidence to the seven dimensions with fixed, documented rules (:func:`evidence_answer`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.scoring.floors import PriorBaseline


def _saturate(x: float, scale: float) -> float:
    """0 at 0, approaching 100: a transparent map of a raw count onto the 0-100 range."""
    return round(100.0 * (1.0 - float(np.exp(-max(0.0, x) / scale))), 2)


def evidence_answer(evidence: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The baseline's answer in the tool modes: fixed, documented maps from the nine tools' raw evidence to
    the seven dimensions (missing evidence gives 50, the middle), and the composite of the default weights.

    - citation_impact: the paper's percentile among same-field, same-year papers (``citation_baseline``);
    - knowledge_breadth: distinct venues and fields of the references and their year span (``references``);
    - semantic_novelty: 100 x (1 - mean similarity of the nearest papers) (``semantic_neighbours``);
    - disruptiveness: share of citers that cite the paper but none of its references (``citing_works``);
    - conceptual_innovation: number of topics and concepts (``concepts_topics``);
    - team_collaboration: authors and countries (``authorship``);
    - journal_impact: the journal's two-year mean citedness (``journal_profile``).
    """
    from scitaste_hf.weights import composite

    def get(tool: str) -> Mapping[str, Any]:
        value = evidence.get(tool) or {}
        return {} if "error" in value else value

    refs, cites, neighbours = get("references"), get("citing_works"), get("semantic_neighbours")
    topics, team, journal = get("concepts_topics"), get("authorship"), get("journal_profile")
    baseline = get("citation_baseline").get("paper_percentile")
    similar = [n["similarity"] for n in neighbours.get("items", [])]
    dims = {
        "citation_impact": 50.0 if baseline is None else float(baseline),
        "knowledge_breadth": _saturate(refs.get("distinct_venues", 0) + refs.get("distinct_fields", 0)
                                       + (refs.get("year_span") or 0) / 10, 10) if refs else 50.0,
        "semantic_novelty": round(100 * (1 - float(np.mean(similar))), 2) if similar else 50.0,
        "disruptiveness": round(100 * cites["cite_only_this_paper"] / cites["count"], 2) if cites.get("count")
        else 50.0,
        "conceptual_innovation": _saturate(len(topics.get("topics", [])) + len(topics.get("concepts", [])), 6)
        if topics else 50.0,
        "team_collaboration": _saturate(team.get("n_authors", 0) / 5 + len(team.get("countries", [])), 3)
        if team else 50.0,
        "journal_impact": _saturate(journal.get("two_year_mean_citedness") or 0, 4) if journal.get("journal")
        else 50.0,
    }
    dims = {k: float(min(100.0, max(0.0, v))) for k, v in dims.items()}
    return {"innovation_score": composite(dims), "dimension_scores": dims,
            "reasoning": "scitaste-baseline: fixed maps from the tools' raw evidence", "confidence": 0.2}


class BaselineChat:
    """The baseline as a chat model, so that it runs through the same loop as any model: in tool modes it calls
    all nine tools in round 1 and answers with :func:`evidence_answer` in round 2; without tools it answers
    with its discipline priors (it has no web search of its own, so ``native_search`` equals ``pure_qa``)."""

    def __init__(self, priors: PriorBaseline) -> None:
        self.priors = priors

    @staticmethod
    def _field(messages: list[dict[str, Any]], name: str) -> str:
        for message in messages:
            for line in str(message.get("content") or "").splitlines():
                if line.startswith(f"{name}: "):
                    return line[len(name) + 2:].strip()
        raise ScitasteError(f"the prompt has no {name} line")

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 search: bool = False, deadline: float | None = None):
        from scitaste_hf.agent.chat import Reply
        from scitaste_hf.agent.tools import TOOL_NAMES

        if tools:
            bibcode = self._field(messages, "Identifier")
            calls = [{"id": f"call_{k}", "name": name, "arguments": json.dumps({"bibcode": bibcode})}
                     for k, name in enumerate(TOOL_NAMES)]
            return Reply("", calls, {}, 0.0)
        names = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}
        evidence = {names[m["tool_call_id"]]: json.loads(m["content"]) for m in messages if m.get("role") == "tool"}
        if evidence:
            return Reply(json.dumps(evidence_answer(evidence)), [], {}, 0.0)
        return Reply(self.priors.reply({"discipline": self._field(messages, "Discipline")}), [], {}, 0.0)
