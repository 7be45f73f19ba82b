"""The paper part of every prompt and the answer instruction (docs/answers.md#the-prompt; the paper's worked example
fixes the layout): ``Discipline``, ``Title``, ``Abstract`` (truncated), ``Identifier``, then the instruction to
reply with one strict JSON object."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scitaste_hf.schema import DIMENSIONS

#: Abstracts are cut to this many characters so that prompts have a bounded size.
ABSTRACT_CHARS = 2000

ANSWER_INSTRUCTION = (
    "Assess the innovativeness of this paper. Reply with exactly one JSON object and nothing else:\n"
    + json.dumps({"innovation_score": "<0-100>",
                  "dimension_scores": {k: "<0-100>" for k in DIMENSIONS},
                  "reasoning": "<one short paragraph>", "confidence": "<0-1>"}, indent=1)
    + "\nEvery score is a number from 0 to 100; innovation_score is the weighted composite of the seven "
      "dimensions."
)


def paper_prompt(record: Mapping[str, Any], *, abstract_chars: int = ABSTRACT_CHARS) -> str:
    """The prompt for one benchmark record: the paper block followed by :data:`ANSWER_INSTRUCTION`."""
    abstract = (record.get("abstract") or "").strip()
    if len(abstract) > abstract_chars:
        abstract = abstract[:abstract_chars].rsplit(" ", 1)[0] + " ..."
    return (f"Discipline: {record['discipline']}\nTitle: {record.get('title') or ''}\nAbstract: {abstract}\n"
            f"Identifier: {record['bibcode']}\n\n{ANSWER_INSTRUCTION}")
