"""The rTaste release schema: one row per minimal viable experiment (MVE), five rows per condition.

The rTaste study (an agent reads a new seed paper, registers five MVEs with a registered event each, gives
each a probability and a rank 1-5; every MVE is executed and re-run; auditors and judges label it) is
published as one table, the ``rtaste`` config, one row per MVE. The pydantic models validate rows and the
condition they form; :func:`rtaste_features` is the same schema as ``datasets.Features``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

if TYPE_CHECKING:
    import datasets

#: How a registered event relates its statistic to the threshold.
RELATIONS: tuple[str, ...] = ("greater", "less", "in_interval")
#: How the agent was organised: one context, or two proposers, a critic and a lead.
ORGANISATIONS: tuple[str, ...] = ("single_researcher", "research_team")
#: The novelty judges' labels of an MVE against the literature.
NOVELTY_LABELS: tuple[str, ...] = ("equivalent", "close_variant", "distinct")
#: Whether an executor delivered the MVE.
OUTCOME_STATUSES: tuple[str, ...] = ("delivered", "failed")

#: How to cite the rTaste study (metric cards, report).
CITATION = """\
@misc{rtaste,
  title = {rTaste: Do Research Agents Have Taste? Evaluating Early Stage Research Judgment},
  year  = {2026}
}
"""

N_MVES = 5
N_AUDITORS = 3
N_NOVELTY_JUDGES = 2
N_REVIEWERS = 3
VALUE_MAX = 3

_FROZEN = ConfigDict(extra="forbid", frozen=True)


def _check_probability(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not (
            0.0 <= value <= 1.0):
        raise ValueError(f"probability {value!r} is not a number between 0 and 1")
    return float(value)


def _check_organisation(value: str) -> str:
    if value not in ORGANISATIONS:
        raise ValueError(f"unknown organisation {value!r}; use one of {', '.join(ORGANISATIONS)}")
    return value


def _check_rank(value: int) -> int:
    if not 1 <= value <= N_MVES:
        raise ValueError(f"rank {value} is outside 1-{N_MVES}")
    return value


Text = Annotated[str, Field(min_length=1)]
Probability = Annotated[float, BeforeValidator(_check_probability)]
Organisation = Annotated[str, AfterValidator(_check_organisation)]
Rank = Annotated[int, AfterValidator(_check_rank)]


class RegisteredEvent(BaseModel):
    """The event an MVE registers before it runs: ``statistic`` ``relation`` ``threshold``, in ``unit``.

    ``greater`` and ``less`` are strict and take one number; ``in_interval`` is closed and takes
    ``[low, high]`` with low <= high. A one-element list counts as a single number, so the release can store
    every threshold as a list.
    """

    model_config = _FROZEN

    statistic: Text
    relation: str
    threshold: float | tuple[float, float]
    unit: Text

    @field_validator("relation")
    @classmethod
    def _known_relation(cls, value: str) -> str:
        if value not in RELATIONS:
            raise ValueError(f"unknown relation {value!r}; use one of {', '.join(RELATIONS)}")
        return value

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold_shape(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            if len(value) == 1:
                value = value[0]
            elif len(value) != 2:
                raise ValueError(f"threshold must be a number or [low, high], got {len(value)} numbers")
        for number in value if isinstance(value, list | tuple) else (value,):
            if isinstance(number, bool) or not isinstance(number, int | float) or not math.isfinite(number):
                raise ValueError(f"threshold {number!r} is not a finite number")
        return value

    @model_validator(mode="after")
    def _threshold_fits_relation(self) -> RegisteredEvent:
        interval = isinstance(self.threshold, tuple)
        if self.relation == "in_interval" and not interval:
            raise ValueError(f"relation 'in_interval' needs the threshold as [low, high], "
                             f"got the single number {self.threshold:g}")
        if self.relation != "in_interval" and interval:
            raise ValueError(f"relation {self.relation!r} needs one threshold number, got the interval "
                             f"{list(self.threshold)}; use 'in_interval' for an interval")
        if interval and self.threshold[0] > self.threshold[1]:
            raise ValueError(f"interval threshold {list(self.threshold)} has low > high")
        return self

    def threshold_list(self) -> list[float]:
        """The threshold as stored in the release: ``[x]`` or ``[low, high]``."""
        return list(self.threshold) if isinstance(self.threshold, tuple) else [self.threshold]


class MVERegistration(BaseModel):
    """One registered MVE, written before anything runs."""

    model_config = _FROZEN

    hypothesis: Text
    nearest_prior_work: str
    inputs: str
    method: Text
    event: RegisteredEvent
    evaluation_plan: str
    resources: str
    follow_up: str


class Condition(BaseModel):
    """One agent run on one seed paper: a model in an organisation, exactly five registrations in the order
    written, a probability (0-1) that each registered event occurs, ranks 1-5 forming a permutation
    (1 = the agent's first choice), and the run's cost in US dollars."""

    model_config = _FROZEN

    condition_id: Text
    model: Text
    organisation: Organisation
    seed_paper: Text
    registrations: tuple[MVERegistration, ...]
    probabilities: tuple[Probability, ...]
    ranks: tuple[Rank, ...]
    cost_usd: float = Field(ge=0.0, allow_inf_nan=False)

    @field_validator("registrations")
    @classmethod
    def _five(cls, value: tuple[MVERegistration, ...]) -> tuple[MVERegistration, ...]:
        if len(value) != N_MVES:
            raise ValueError(f"a condition needs exactly {N_MVES} registrations, got {len(value)}")
        return value

    @field_validator("probabilities")
    @classmethod
    def _five_probabilities(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if len(value) != N_MVES:
            raise ValueError(f"a condition needs {N_MVES} probabilities, got {len(value)}")
        return value

    @field_validator("ranks")
    @classmethod
    def _permutation(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if sorted(value) != list(range(1, N_MVES + 1)):
            raise ValueError(f"ranks {list(value)} are not a permutation of 1-{N_MVES}")
        return value


class JudgePrediction(BaseModel):
    """A judge's probability for one registered event; the judge saw only the seed paper and the five
    registrations (no tools, none of the agent's reasoning)."""

    model_config = _FROZEN

    judge_model: Text
    probability: Probability


class Outcome(BaseModel):
    """What running the MVE gave: the executor's reported value and the value of the protected re-run
    (which alone decides the event), both in ``value_unit``; ``None`` where there is none."""

    model_config = _FROZEN

    status: str
    executor: str
    attempts: int = Field(ge=1)
    executor_value: float | None = Field(default=None, allow_inf_nan=False)
    rerun_value: float | None = Field(default=None, allow_inf_nan=False)
    value_unit: Text

    @field_validator("status")
    @classmethod
    def _known_status(cls, value: str) -> str:
        if value not in OUTCOME_STATUSES:
            raise ValueError(f"unknown status {value!r}; use one of {', '.join(OUTCOME_STATUSES)}")
        return value


class Audit(BaseModel):
    """The labels of one MVE: three auditors' faithful and valid verdicts and 0-3 research value, two
    novelty judges' labels, the obviousness flag, and (optional, may be empty) three reviewers' answers to
    the same fixed questions."""

    model_config = _FROZEN

    faithful: tuple[bool, ...]
    valid: tuple[bool, ...]
    value: tuple[int, ...]
    novelty: tuple[str, ...]
    obvious: bool
    reviewer_answers: tuple[tuple[str, ...], ...] = ()

    @field_validator("faithful", "valid", "value")
    @classmethod
    def _three_auditors(cls, value: tuple, info: ValidationInfo) -> tuple:
        if len(value) != N_AUDITORS:
            raise ValueError(f"{info.field_name} needs one entry per auditor ({N_AUDITORS}), got {len(value)}")
        return value

    @field_validator("value")
    @classmethod
    def _value_range(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(not 0 <= v <= VALUE_MAX for v in value):
            raise ValueError(f"research values {list(value)} must be integers 0-{VALUE_MAX}")
        return value

    @field_validator("novelty")
    @classmethod
    def _novelty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(value) != N_NOVELTY_JUDGES:
            raise ValueError(f"novelty needs one label per judge ({N_NOVELTY_JUDGES}), got {len(value)}")
        unknown = [v for v in value if v not in NOVELTY_LABELS]
        if unknown:
            raise ValueError(f"unknown novelty label {unknown[0]!r}; use one of {', '.join(NOVELTY_LABELS)}")
        return value

    @field_validator("reviewer_answers")
    @classmethod
    def _reviewers(cls, value: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
        if value and (len(value) != N_REVIEWERS or len({len(v) for v in value}) != 1):
            raise ValueError(f"reviewer_answers needs {N_REVIEWERS} lists of equal length (or none)")
        return value


class MVERecord(BaseModel):
    """One row of the release: an MVE with its condition's fields (repeated on each of the five rows),
    its place in the written order (``position`` 1-5), the agent's probability and rank, the judges'
    probabilities, the outcome and the audit."""

    model_config = _FROZEN

    mve_id: Text
    condition_id: Text
    seed_paper: Text
    seed_summary: str
    model: Text
    organisation: Organisation
    cost_usd: float = Field(ge=0.0, allow_inf_nan=False)
    position: int = Field(ge=1, le=N_MVES)
    registration: MVERegistration
    probability: Probability
    rank: Rank
    judge_predictions: tuple[JudgePrediction, ...] = ()
    outcome: Outcome
    audit: Audit

    def to_row(self) -> dict[str, Any]:
        """The row as stored in the release (thresholds as lists), matching :func:`rtaste_features`."""
        row = self.model_dump(mode="json")
        row["registration"]["event"]["threshold"] = self.registration.event.threshold_list()
        return row


def rtaste_features() -> datasets.Features:
    """The ``datasets.Features`` of one release row (:class:`MVERecord`); the ``rtaste`` config's schema."""
    from datasets import Features, Value

    string, number = Value("string"), Value("float64")
    return Features({
        "mve_id": string,
        "condition_id": string,
        "seed_paper": string,
        "seed_summary": string,
        "model": string,
        "organisation": string,
        "cost_usd": number,
        "position": Value("int32"),
        "registration": {
            "hypothesis": string,
            "nearest_prior_work": string,
            "inputs": string,
            "method": string,
            "event": {"statistic": string, "relation": string, "threshold": [number], "unit": string},
            "evaluation_plan": string,
            "resources": string,
            "follow_up": string,
        },
        "probability": number,
        "rank": Value("int32"),
        "judge_predictions": [{"judge_model": string, "probability": number}],
        "outcome": {
            "status": string,
            "executor": string,
            "attempts": Value("int32"),
            "executor_value": number,
            "rerun_value": number,
            "value_unit": string,
        },
        "audit": {
            "faithful": [Value("bool")],
            "valid": [Value("bool")],
            "value": [Value("int32")],
            "novelty": [string],
            "obvious": Value("bool"),
            "reviewer_answers": [[string]],
        },
    })


def condition_of(rows: list[MVERecord]) -> Condition:
    """The :class:`Condition` that five rows of one ``condition_id`` form, in written order.

    Raises ``ValueError`` when the rows disagree on a condition field or do not fill positions 1-5 once each.
    """
    first = rows[0]
    for field in ("model", "organisation", "seed_paper", "cost_usd"):
        values = {getattr(r, field) for r in rows}
        if len(values) > 1:
            raise ValueError(f"its rows disagree on {field}: {sorted(map(str, values))}")
    rows = sorted(rows, key=lambda r: r.position)
    positions = [r.position for r in rows]
    if len(rows) == N_MVES and positions != list(range(1, N_MVES + 1)):
        raise ValueError(f"positions {positions} do not number the five MVEs 1-{N_MVES} once each")
    return Condition(condition_id=first.condition_id, model=first.model, organisation=first.organisation,
                     seed_paper=first.seed_paper, registrations=tuple(r.registration for r in rows),
                     probabilities=tuple(r.probability for r in rows), ranks=tuple(r.rank for r in rows),
                     cost_usd=first.cost_usd)
