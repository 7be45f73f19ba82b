"""The facts every part of scitaste-hf shares: dimension keys, weights, disciplines, grade bands, the record
schema and the model-answer schema (docs/dataset.md, docs/index-dimensions.md, docs/scoring.md, docs/answers.md).

Metrics, lm-eval tasks, the Space and the dataset builder import these names; nothing else defines them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, create_model

from scitaste_hf.taxonomy import load_taxonomy

if TYPE_CHECKING:
    import datasets

#: The seven Academic Taste Index dimensions, in the paper's order A..G (docs/index-dimensions.md#the-seven-dimensions).
DIMENSIONS: tuple[str, ...] = (
    "citation_impact",
    "knowledge_breadth",
    "semantic_novelty",
    "disruptiveness",
    "conceptual_innovation",
    "team_collaboration",
    "journal_impact",
)
#: The paper's letter for each dimension.
DIMENSION_LETTERS: Mapping[str, str] = MappingProxyType(dict(zip(DIMENSIONS, "ABCDEFG")))

#: The benchmark's dataset on the Hugging Face Hub.
HUB_DATASET = "skylenage/SciTaste-benchmark"

#: How to cite the benchmark (metric cards, Space, dataset card).
CITATION = """\
@misc{scitaste_bench,
  title  = {SciTaste-Bench: Can Large Language Models Judge the Innovativeness of Scientific Papers?},
  note   = {Benchmark of six disciplines; dataset skylenage/SciTaste-benchmark},
  year   = {2026}
}
"""

#: The disciplines of the default release (the paper's six, in its order), from the packaged default taxonomy,
#: their one home; a release built with another taxonomy has that taxonomy's (read them from its records).
DISCIPLINES: tuple[str, ...] = load_taxonomy().names



#: File beside a dataset's splits that maps each record's ``bibcode`` to its OpenAlex work id
#: (docs/dataset.md#bibcodes).
BIBCODE_MAP_FILE = "openalex_bibcode_map.json"

#: Both splits of the Hub dataset.
SPLITS: tuple[str, ...] = ("selected", "backup")
#: The split of papers too young for gold, released without it and resolved later (docs/prospective.md): a config
#: of its own beside the default one of :data:`SPLITS`.
PROSPECTIVE = "prospective"

#: Journal tiers a record may carry (``journal_tier``), or null.
JOURNAL_TIERS: tuple[str, ...] = ("Q1", "Q2", "Q3", "Q4")

SCORE_MIN, SCORE_MAX = 0.0, 100.0


class WapeBand(NamedTuple):
    """One grade band of Scheme 2: WAPE in ``[low, high)`` maps linearly from ``score_at_low`` to
    ``score_at_high`` (docs/scoring.md#scheme-2)."""

    grade: str
    low: float
    high: float
    score_at_low: float
    score_at_high: float


#: Scheme-2 bands, WAPE as a fraction. The last band is closed at 100%; beyond it the score is 0, grade F.
WAPE_BANDS: tuple[WapeBand, ...] = (
    WapeBand("A", 0.00, 0.05, 100.0, 90.0),
    WapeBand("B", 0.05, 0.10, 90.0, 75.0),
    WapeBand("C", 0.10, 0.20, 75.0, 60.0),
    WapeBand("D", 0.20, 0.30, 60.0, 40.0),
    WapeBand("E", 0.30, 0.50, 40.0, 20.0),
    WapeBand("F", 0.50, 1.00, 20.0, 0.0),
)

#: Scheme-1's points (docs/scoring.md#scheme-1): Part A spreads 50 points over the innovation score's components,
#: Part B 50 over the weighted dimension statistics; each part is its points-weighted mean of 0-100 scores.
SCHEME1_POINTS: dict[str, dict[str, int]] = {
    "part_a": {"s_rho": 15, "s_r": 10, "s_err": 15, "s_bias": 10},
    "part_b": {"weighted_dimension_spearman": 30, "weighted_dimension_accuracy": 20},
}
#: Scheme 1 = the parts' weighted sum.
SCHEME1_PARTS: dict[str, float] = {"part_a": 0.5, "part_b": 0.5}

#: Scheme-1 grades: the first threshold the score reaches (docs/scoring.md#scheme-1-grades).
SCHEME1_GRADES: tuple[tuple[float, str], ...] = (
    (80.0, "excellent"),
    (60.0, "moderate"),
    (40.0, "poor"),
    (-math.inf, "unusable"),
)


#: The fields of a benchmark record and their ``datasets`` dtypes, a mapping for a struct
#: (docs/dataset.md#record-schema): :func:`record_features` and the dataset writer (:mod:`scitaste_hf.builder.layout`,
#: which does not import ``datasets``) read the schema from here.
RECORD_FIELDS: Mapping[str, str | Mapping[str, str]] = MappingProxyType({
    "bibcode": "string",
    "doi": "string",
    "openalex_id": "string",
    "arxiv_id": "string",
    "title": "string",
    "abstract": "string",
    "year": "int32",
    "discipline": "string",
    "subcategory_id": "string",
    "subcategory_name": "string",
    "journal_name": "string",
    "journal_tier": "string",
    "innovation_score": "float64",
    "dimension_scores": MappingProxyType(dict.fromkeys(DIMENSIONS, "float64")),
})


def record_features() -> datasets.Features:
    """The ``datasets.Features`` of one benchmark record, shared by both splits (:data:`RECORD_FIELDS`)."""
    from datasets import Features, Value

    return Features({name: {k: Value(v) for k, v in dtype.items()} if isinstance(dtype, Mapping) else Value(dtype)
                     for name, dtype in RECORD_FIELDS.items()})


Score = Field(ge=SCORE_MIN, le=SCORE_MAX, allow_inf_nan=False)


#: The seven dimension scores of an answer, each a finite number in 0-100: one field per key of :data:`DIMENSIONS`,
#: in its order (built from it, so that the keys are written once).
DimensionScores = create_model(
    "DimensionScores",
    __config__=ConfigDict(extra="forbid", frozen=True, strict=True),
    __doc__="The seven dimension scores of an answer, each a finite number in 0-100.",
    __module__=__name__,
    **{key: (float, Score) for key in DIMENSIONS},
)


class Answer(BaseModel):
    """A model's answer for one paper (docs/answers.md#answer-format).

    Numbers must be JSON numbers (a quoted number is a schema failure), finite and within 0-100;
    ``confidence`` is optional and within 0-1. Keys other than these are ignored.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    innovation_score: float = Score
    dimension_scores: DimensionScores
    reasoning: str | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)

    def vector(self) -> tuple[float, ...]:
        """The eight numbers: innovation score, then the seven dimensions in :data:`DIMENSIONS` order."""
        return (self.innovation_score, *(getattr(self.dimension_scores, k) for k in DIMENSIONS))


FailureReason = Literal["no_json", "schema", "out_of_range", "api_error", "timeout", "missing", "other"]
#: Why an item was not scored; failures are excluded from metrics and counted in coverage.
FAILURE_REASONS: tuple[str, ...] = FailureReason.__args__

#: How a failed item reaches lm-eval's ``process_results``: the reply text starts with this, then the reason.
FAILURE_PREFIX = "[scitaste failure: "
#: Failures of the endpoint rather than of the model's answer: asking again later may succeed.
TRANSIENT_FAILURES = ("api_error", "timeout")


def failure_text(reason: str, detail: str = "") -> str:
    """The reply text that carries a failure and its reason through lm-eval to ``process_results``."""
    return f"{FAILURE_PREFIX}{reason}] {detail}".strip()


def failure_of(text: str) -> str | None:
    """The reason carried by :func:`failure_text`, or None for an ordinary reply."""
    if not text.startswith(FAILURE_PREFIX):
        return None
    return text[len(FAILURE_PREFIX):].split("]", 1)[0]


@dataclass(frozen=True)
class Failure:
    """An item that could not be scored, with its reason (one of :data:`FAILURE_REASONS`) and a detail."""

    reason: str
    detail: str = ""

    def __post_init__(self) -> None:
        if self.reason not in FAILURE_REASONS:
            raise ValueError(f"unknown failure reason {self.reason!r}; expected one of {FAILURE_REASONS}")
