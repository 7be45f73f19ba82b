"""Deciding whether a registered event occurred, and how often the re-run confirms the executor.

The value of the protected re-run alone decides the event (the executor's own result files are deleted
first); the executor's reported value only serves to measure how often the two agree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.schema import MVERecord, RegisteredEvent

#: Units that convert into each other, as multiples of a fraction: a threshold of 5 percentage points
#: compares with a re-run value of 0.07 (a fraction). Any other unit must match the value's unit exactly.
UNIT_SCALES: dict[str, float] = {"fraction": 1.0, "percent": 0.01, "percentage_points": 0.01}

# Two reported values are "the same" when they differ by float rounding only, not by a re-run's noise.
_SAME_VALUE_RTOL = 1e-9


def to_unit(value: float, unit: str, target: str) -> float:
    """``value`` in ``unit`` expressed in ``target``.

    Parameters
    ----------
    value : float
        The number to convert.
    unit : str
        Its unit; ``fraction``, ``percent`` and ``percentage_points`` convert into each other.
    target : str
        The unit wanted.

    Raises
    ------
    ScitasteError
        When the units differ and are not both convertible.
    """
    if unit == target:
        return value
    if unit in UNIT_SCALES and target in UNIT_SCALES:
        return value * UNIT_SCALES[unit] / UNIT_SCALES[target]
    raise ScitasteError(f"cannot compare a value in {unit!r} with a threshold in {target!r}: use the same unit, "
                        f"or two of {', '.join(UNIT_SCALES)}")


def event_occurred(event: RegisteredEvent, value: float | None, value_unit: str) -> bool | None:
    """Whether ``value`` satisfies the registered ``event``; ``None`` when there is no value.

    Parameters
    ----------
    event : RegisteredEvent
        The registration's event: ``greater`` (value > threshold), ``less`` (value < threshold) or
        ``in_interval`` (low <= value <= high).
    value : float or None
        The re-run value of the event's statistic.
    value_unit : str
        The unit of ``value``; converted to the threshold's unit (see :func:`to_unit`).
    """
    if value is None or math.isnan(value):
        return None
    x = to_unit(float(value), value_unit, event.unit)
    if event.relation == "greater":
        return x > event.threshold
    if event.relation == "less":
        return x < event.threshold
    low, high = event.threshold  # in_interval: the schema admits no other relation
    return low <= x <= high


def resolve(record: MVERecord) -> bool | None:
    """Whether the MVE's registered event occurred on the re-run; ``None`` when the MVE failed or has no
    re-run value (it is then left out of every Brier score)."""
    outcome = record.outcome
    if outcome.status != "delivered":
        return None
    return event_occurred(record.registration.event, outcome.rerun_value, outcome.value_unit)


def rerun_agreement(records: Iterable[MVERecord]) -> dict[str, int]:
    """How often the protected re-run reproduces the executor's reported value.

    Parameters
    ----------
    records : iterable of MVERecord
        The MVEs; only those with both an executor value and a re-run value are compared.

    Returns
    -------
    dict
        ``n_compared``; ``n_same_value`` (equal up to float rounding); ``n_same_event`` (both values decide
        the registered event the same way).
    """
    compared = same_value = same_event = 0
    for record in records:
        reported, rerun = record.outcome.executor_value, record.outcome.rerun_value
        if reported is None or rerun is None:
            continue
        compared += 1
        same_value += math.isclose(reported, rerun, rel_tol=_SAME_VALUE_RTOL, abs_tol=0.0)
        event, unit = record.registration.event, record.outcome.value_unit
        same_event += event_occurred(event, reported, unit) == event_occurred(event, rerun, unit)
    return {"n_compared": compared, "n_same_value": same_value, "n_same_event": same_event}
