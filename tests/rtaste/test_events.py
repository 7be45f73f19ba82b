"""Event resolution from the re-run value, units, and re-run agreement."""

import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.events import event_occurred, rerun_agreement, resolve, to_unit
from scitaste_hf.rtaste.schema import MVERecord, RegisteredEvent


def _event(relation, threshold, unit="fraction"):
    return RegisteredEvent(statistic="s", relation=relation, threshold=threshold, unit=unit)


@pytest.mark.parametrize(("relation", "threshold", "value", "expected"), [
    ("greater", 0.05, 0.07, True),
    ("greater", 0.05, 0.05, False),  # strict
    ("less", 0.05, 0.04, True),
    ("less", 0.05, 0.05, False),
    ("in_interval", [0.2, 0.4], 0.2, True),  # closed at both ends
    ("in_interval", [0.2, 0.4], 0.4, True),
    ("in_interval", [0.2, 0.4], 0.41, False),
    ("greater", 0.05, None, None),
])
def test_relations(relation, threshold, value, expected):
    assert event_occurred(_event(relation, threshold), value, "fraction") is expected


def test_threshold_units():
    # "greater than 5 percentage points" against a re-run that reports a fraction.
    assert event_occurred(_event("greater", 5, "percentage_points"), 0.07, "fraction") is True
    assert event_occurred(_event("greater", 5, "percentage_points"), 0.04, "fraction") is False
    assert event_occurred(_event("less", 30, "percent"), 0.25, "fraction") is True
    assert to_unit(0.07, "fraction", "percent") == pytest.approx(7.0)
    assert event_occurred(_event("less", 30, "seconds"), 29.0, "seconds") is True
    with pytest.raises(ScitasteError, match="cannot compare a value in 'tokens' with a threshold in 'seconds'"):
        event_occurred(_event("less", 30, "seconds"), 29.0, "tokens")


def test_only_a_delivered_rerun_decides(make_row):
    assert resolve(MVERecord.model_validate(make_row(rerun=1.0, reported=0.0))) is True
    assert resolve(MVERecord.model_validate(make_row(rerun=0.0, reported=1.0))) is False
    assert resolve(MVERecord.model_validate(make_row(status="failed"))) is None


def test_rerun_agreement_counts(make_row):
    records = [MVERecord.model_validate(r) for r in (
        make_row(position=1, rerun=0.7, reported=0.7),
        make_row(position=2, rerun=0.7, reported=0.7 + 1e-12),  # float rounding only: the same value
        make_row(position=3, rerun=0.7, reported=0.6),  # differs, same event (both > 0.5)
        make_row(position=4, rerun=0.7, reported=0.4),  # differs, other event
        make_row(position=5, status="failed"),  # nothing to compare
    )]
    assert rerun_agreement(records) == {"n_compared": 4, "n_same_value": 2, "n_same_event": 3}
