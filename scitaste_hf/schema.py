"""The facts every part of scitaste-hf shares: dimension keys, weights, disciplines, grade bands, the record
schema and the model-answer schema (docs/dataset.md, docs/index-dimensions.md, docs/scoring.md, docs/answers.md).

Metrics, lm-eval tasks, the Space and the dataset builder import these names; nothing else defines them.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from scitaste_hf.errors import ScitasteError
from scitaste_hf.taxonomy import load_taxonomy, packaged_disciplines

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



class Mode(NamedTuple):
    """How one evaluation mode runs.

    ``tools`` is ``"none"``; ``"fixed"`` when the harness makes round 1 itself (all nine tools for the paper,
    answered from frozen evidence, rendered into the conversation) and the model answers round 2, which any chat
    model can do; or ``"live"`` when the model chooses its own calls in round 1 (a function-calling endpoint
    behind ``scitaste-agent``). ``search`` switches the provider's own web search on, which only
    ``scitaste-agent`` with a profile that has it can do.
    """

    task: str
    tools: Literal["none", "fixed", "live"]
    search: bool
    about: str


#: The evaluation modes: the paper's four (no tools, the model's native web search, the nine DimAgent-v3 tools
#: with round 1 made by the harness, the tools plus native search) and the live DimAgent-v3 loop, in which the
#: model chooses its calls; its results are kept apart from the paper's ``dimagent_v3``.
MODE_SPECS: Mapping[str, Mode] = MappingProxyType({
    "pure_qa": Mode("scitaste_pure_qa", "none", False, "title and abstract only, no tools"),
    "native_search": Mode("scitaste_native_search", "none", True, "the model's own web search"),
    "dimagent_v3": Mode("scitaste_dimagent", "fixed", False,
                        "the nine DimAgent-v3 bibliometric tools on frozen evidence, all nine called by the harness "
                        "in round 1"),
    "dimagent_v3_native": Mode("scitaste_dimagent_native", "fixed", True,
                               "the nine tools as in dimagent_v3, plus the model's own web search"),
    "dimagent_v3_live": Mode("scitaste_dimagent_live", "live", False,
                             "the nine tools on frozen evidence, the model choosing its own calls in round 1"),
})
MODES: tuple[str, ...] = tuple(MODE_SPECS)

#: File beside a dataset's splits that maps each record's ``bibcode`` to its OpenAlex work id
#: (docs/dataset.md#bibcodes).
BIBCODE_MAP_FILE = "openalex_bibcode_map.json"

#: Both splits of the Hub dataset.
SPLITS: tuple[str, ...] = ("selected", "backup")

#: Journal tiers a record may carry (``journal_tier``), or null.
JOURNAL_TIERS: tuple[str, ...] = ("Q1", "Q2", "Q3", "Q4")

SCORE_MIN, SCORE_MAX = 0.0, 100.0


def validate_weights(weights: Mapping[str, float], *, tolerance: float = 1e-6) -> dict[str, float]:
    """Check a weight vector and return it as a plain dict in dimension order.

    Parameters
    ----------
    weights : mapping of dimension key to weight
        Exactly the seven keys of :data:`DIMENSIONS`, each finite and non-negative, summing to 1.
    tolerance : float
        Allowed absolute deviation of the sum from 1.

    Raises
    ------
    ScitasteError
        On a missing or unknown key, a negative or non-finite weight, or a sum that is not 1; and on
        :class:`DisciplineWeights`, which only a caller that knows each record's discipline can apply
        (:func:`vector_for`).
    """
    if isinstance(weights, DisciplineWeights):
        # Every place that applies one vector to all records passes through here: a per-discipline file reaching
        # one of them says so instead of failing on the discipline names as unknown dimension keys.
        raise ScitasteError(f"{weights.source} holds one weight vector per discipline, and this applies one vector "
                            "to every record; give a file with a single vector")
    missing = [k for k in DIMENSIONS if k not in weights]
    unknown = sorted(set(weights) - set(DIMENSIONS))
    if missing or unknown:
        parts = [f"missing {', '.join(missing)}"] if missing else []
        parts += [f"unknown {', '.join(unknown)}"] if unknown else []
        raise ScitasteError(f"weight vector must have exactly the seven dimension keys: {'; '.join(parts)}")
    out = {}
    for key in DIMENSIONS:
        value = weights[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise ScitasteError(f"weight {key}={value!r} must be a finite number >= 0")
        out[key] = float(value)
    total = sum(out.values())
    if abs(total - 1.0) > tolerance:
        raise ScitasteError(f"weights must sum to 1, got {total:.6f}")
    return out


#: The entry of a per-discipline weights file that serves the disciplines it does not name.
DEFAULT_VECTOR = "default"


@dataclass(frozen=True)
class DisciplineWeights:
    """One weight vector per discipline, and optionally a default for the others
    (docs/weights.md#per-discipline-weights). Build it with :func:`parse_weights` or :func:`load_weights`, which
    validate every vector.

    Attributes
    ----------
    vectors : mapping of discipline to weight vector
    default : weight vector or None
        For a discipline without a vector of its own; None makes such a discipline an error.
    source : str
        What error messages call these weights (the file).
    """

    vectors: Mapping[str, Mapping[str, float]]
    default: Mapping[str, float] | None = None
    source: str = "the weights"

    def __post_init__(self) -> None:
        for discipline, vector in [*self.vectors.items(), (DEFAULT_VECTOR, self.default)]:
            if vector is not None:
                try:
                    validate_weights(vector)
                except ScitasteError as exc:
                    raise ScitasteError(f"{self.source}, {discipline}: {exc}") from None

    def check_disciplines(self, names: Sequence[str], what: str = "the taxonomy") -> None:
        """Refuse a vector for a discipline outside ``names``: a misspelt name would silently hand its papers to
        the default vector."""
        unknown = [d for d in self.vectors if d not in names]
        if unknown:
            raise ScitasteError(f"{self.source}: no discipline {unknown[0]!r} in {what} ({', '.join(names)})")

    def to_json(self) -> dict[str, dict[str, float]]:
        """The ``weights`` object of a per-discipline weights file: discipline -> vector, then ``default``."""
        out = {d: dict(v) for d, v in self.vectors.items()}
        return out | ({DEFAULT_VECTOR: dict(self.default)} if self.default is not None else {})


#: What every ``weights=`` accepts: one vector for all records, or one per discipline.
Weights = Mapping[str, float] | DisciplineWeights


def _vector(data: object, kind: str, where: str) -> dict[str, float]:
    """One vector of a weights file: ``weights`` as given, ``raw`` normalised by its sum."""
    if not isinstance(data, Mapping):
        raise ScitasteError(f"{where} must be an object of the seven dimension keys")
    if kind == "raw":
        numbers = [v for v in data.values() if isinstance(v, int | float) and not isinstance(v, bool)]
        total = sum(numbers)
        if len(numbers) != len(data) or total <= 0:
            raise ScitasteError(f"{where}: 'raw' must map keys to positive numbers")
        if not math.isfinite(total):  # each number a float, their sum beyond one: every share would read as 0
            raise ScitasteError(f"{where}: the 'raw' numbers sum beyond a float's range; scale them down")
        data = {k: v / total for k, v in data.items()}
    try:
        return validate_weights(data)
    except ScitasteError as exc:
        raise ScitasteError(f"{where}: {exc}") from None


def parse_weights(data: object, source: str = "the weights") -> dict[str, float] | DisciplineWeights:
    """Validate the content of a weights file (docs/weights.md#per-discipline-weights).

    Parameters
    ----------
    data : object
        The parsed JSON: ``{"weights": W}`` (already normalised) or ``{"raw": W}`` (each vector normalised by its
        sum), where ``W`` is one vector (dimension key -> number) or a mapping discipline -> vector, with an
        optional ``"default"`` vector for the disciplines it does not name.
    source : str
        What error messages call the data (the file).

    Returns
    -------
    dict or DisciplineWeights
        The single vector, or the vectors by discipline (a mapping holding only ``default`` is that one vector).

    Raises
    ------
    ScitasteError
        On any malformed vector (named by its discipline), a mapping that mixes numbers and vectors, an empty or
        mis-cased discipline name.
    """
    kind = next((k for k in ("weights", "raw") if isinstance(data, Mapping) and isinstance(data.get(k), Mapping)),
                None)
    if kind is None:
        raise ScitasteError(f"weights file {source} must hold a 'weights' or a 'raw' object")
    body = data[kind]
    nested = [isinstance(v, Mapping) for v in body.values()]
    if not any(nested):
        return _vector(body, kind, f"weights file {source}")
    if not all(nested):
        raise ScitasteError(f"weights file {source}: '{kind}' mixes numbers and per-discipline vectors")
    vectors = {}
    for discipline, vector in body.items():
        name = discipline.strip() if isinstance(discipline, str) else ""
        if not name:
            raise ScitasteError(f"weights file {source}: a vector has an empty discipline name")
        # A mis-cased name would never match a record's discipline and silently hand its papers to the default.
        if discipline != name.lower() and name.lower() in (*packaged_disciplines(), DEFAULT_VECTOR):
            raise ScitasteError(f"weights file {source}: discipline {discipline!r}; write {name.lower()!r}")
        vectors[discipline] = _vector(vector, kind, f"weights file {source}, {discipline}")
    default = vectors.pop(DEFAULT_VECTOR, None)
    if not vectors:
        return default
    return DisciplineWeights(MappingProxyType(vectors), default, source)


def vector_for(weights: Weights | None, discipline: str | None) -> dict[str, float]:
    """The vector that applies to a record of ``discipline``.

    Parameters
    ----------
    weights : mapping, DisciplineWeights or None
        One vector (for every discipline), vectors by discipline, or None for :data:`DEFAULT_WEIGHTS`.
    discipline : str or None
        The record's discipline; None (unknown) takes the default vector.

    Raises
    ------
    ScitasteError
        On a bad vector, or a discipline that has no vector where the weights have no default.
    """
    if weights is None:
        return dict(DEFAULT_WEIGHTS)
    if not isinstance(weights, DisciplineWeights):
        return validate_weights(weights)
    vector = weights.vectors.get(discipline, weights.default)
    if vector is None:
        named = f"discipline {discipline!r}" if discipline is not None else "a record without a discipline"
        raise ScitasteError(f"{weights.source} has no vector for {named} and no {DEFAULT_VECTOR!r} vector; it has "
                            f"{', '.join(weights.vectors)}")
    return dict(vector)


def load_weights(path: str | None = None) -> dict[str, float] | DisciplineWeights:
    """Load weights from a JSON file (:func:`parse_weights`), or the packaged default vector when ``path`` is None.

    The default is ``config/weights_default.json``: which of its figures are published and which are this
    package's assumption is docs/index-dimensions.md#published-and-assumed.
    """
    from scitaste_hf.bounded_load import parse_json, read_text

    if path is None:
        text = resources.files("scitaste_hf").joinpath("config/weights_default.json").read_text("utf-8")
    elif not os.path.exists(path):
        raise ScitasteError(f"weights file not found: {path}")
    else:
        text = read_text(path, "weights file")
    # an integer too large for a float reads as inf (refused as not finite), not an OverflowError
    data = parse_json(text, f"weights file {path}", parse_int=float)
    return parse_weights(data, str(path) if path is not None else "config/weights_default.json")


#: Default weights (docs/index-dimensions.md#weights; B..F split equally: an assumption, see :func:`load_weights`).
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(load_weights())


def default_contributions() -> tuple[dict[str, float], tuple[str, ...]]:
    """The packaged default's raw contributions (``config/weights_default.json``, the figures' one home) and the
    dimensions whose contribution is this package's assumption rather than the paper's: the equal split, the one
    value that repeats."""
    config = resources.files("scitaste_hf").joinpath("config/weights_default.json").read_text("utf-8")
    raw = json.loads(config)["raw"]
    values = list(raw.values())
    return raw, tuple(k for k in DIMENSIONS if values.count(raw[k]) > 1)


def weights_note() -> str:
    """One sentence on the default weights: the raw contributions the paper publishes, and the total it gives for
    the others, which the default splits equally; for every text that states them (the Space, the dataset card)."""
    raw, assumed = default_contributions()
    published = " and ".join(f"{k.replace('_', ' ')} ({raw[k]:g})" for k in DIMENSIONS if k not in assumed)
    return (f"The paper publishes the contributions of {published} of {sum(raw.values()):g}, and only the total of "
            f"the other {len(assumed)} dimensions ({sum(raw[k] for k in assumed):g}), which the default splits "
            "equally (an assumption, shown wherever weights are shown).")


def composite(dimension_scores: Mapping[str, float], weights: Weights | None = None,
              discipline: str | None = None) -> float:
    """The innovation score: the weighted sum of the seven dimensions, rounded to 2 decimals
    (docs/index-dimensions.md#composite), with the vector of the record's ``discipline`` when ``weights`` are per
    discipline (:func:`vector_for`)."""
    w = vector_for(weights, discipline)
    return round(sum(w[k] * float(dimension_scores[k]) for k in DIMENSIONS), 2)


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


def record_features() -> datasets.Features:
    """The ``datasets.Features`` of one benchmark record, shared by both splits (docs/dataset.md#record-schema)."""
    from datasets import Features, Value

    string = Value("string")
    return Features(
        {
            "bibcode": string,
            "doi": string,
            "openalex_id": string,
            "arxiv_id": string,
            "title": string,
            "abstract": string,
            "year": Value("int32"),
            "discipline": string,
            "subcategory_id": string,
            "subcategory_name": string,
            "journal_name": string,
            "journal_tier": string,
            "innovation_score": Value("float64"),
            "dimension_scores": {key: Value("float64") for key in DIMENSIONS},
        }
    )


Score = Field(ge=SCORE_MIN, le=SCORE_MAX, allow_inf_nan=False)


class DimensionScores(BaseModel):
    """The seven dimension scores of an answer, each a finite number in 0-100."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    citation_impact: float = Score
    knowledge_breadth: float = Score
    semantic_novelty: float = Score
    disruptiveness: float = Score
    conceptual_innovation: float = Score
    team_collaboration: float = Score
    journal_impact: float = Score


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


@dataclass(frozen=True)
class Failure:
    """An item that could not be scored, with its reason (one of :data:`FAILURE_REASONS`) and a detail."""

    reason: str
    detail: str = ""

    def __post_init__(self) -> None:
        if self.reason not in FAILURE_REASONS:
            raise ValueError(f"unknown failure reason {self.reason!r}; expected one of {FAILURE_REASONS}")
