"""The prospective split (docs/prospective.md): the papers published in the months before a build's date, too young
for citation-based gold, released with every field of a record except the gold, and resolved later, as of each
resolution date, against the papers of their own age.

- :class:`Window` is the publication window of a prospective split: the ``months`` months up to the build's date.
- :func:`split_young` takes the window's papers out of a build's pool before the index, so that they enter neither
  the retrospective splits nor the population that the retrospective papers are normalised against.
- :func:`blank_records` writes them as records of the benchmark schema with the gold left empty.
- A resolution (``scitaste resolve``) rebuilds the window's papers alone as of its date: the cohort
  (:attr:`Window.cohort_filter`) is the index's whole population, so every paper is normalised against papers
  published in the same window and measured on the same day.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from scitaste_hf.errors import InvalidInput
from scitaste_hf.schema import PROSPECTIVE

__all__ = ["GOLD_FIELDS", "MAX_MONTHS", "PROSPECTIVE", "Window", "blank_records", "months_before", "split_young"]
#: The record fields a prospective paper has no value for until it is resolved: its gold.
GOLD_FIELDS = ("innovation_score", "dimension_scores")
#: Most months a prospective window may span (a paper older than this has citations to be judged by).
MAX_MONTHS = 60


def months_before(day: date, months: int) -> date:
    """The day ``months`` calendar months before ``day`` (the last day of the month where that month is shorter)."""
    year, month = divmod(day.year * 12 + day.month - 1 - months, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


@dataclass(frozen=True)
class Window:
    """The publication window of a prospective split: after ``start``, up to and including ``end`` (the date of the
    build that released it)."""

    start: date
    end: date

    @classmethod
    def before(cls, end: date, months: int) -> Window:
        """The ``months`` months up to ``end``.

        Raises
        ------
        InvalidInput
            When ``months`` is not a whole number between 1 and :data:`MAX_MONTHS`.
        """
        if isinstance(months, bool) or not isinstance(months, int) or not 1 <= months <= MAX_MONTHS:
            raise InvalidInput(f"prospective months must be a whole number from 1 to {MAX_MONTHS}, got {months!r}")
        return cls(months_before(end, months), end)

    def holds(self, day: str | None) -> bool:
        """Whether a paper published on ``day`` (ISO text; None: undated) is in the window."""
        return bool(day) and self.start.isoformat() < day[:10] <= self.end.isoformat()

    @property
    def cohort_filter(self) -> str:
        """The OpenAlex filter that lists the window's works."""
        return (f"from_publication_date:{(self.start + timedelta(days=1)).isoformat()},"
                f"to_publication_date:{self.end.isoformat()}")

    @property
    def years(self) -> tuple[int, int]:
        """The publication years the window touches (what a listing by year, NASA ADS's, asks for)."""
        return (self.start + timedelta(days=1)).year, self.end.year

    def record(self) -> dict[str, str]:
        """The window as the card records it."""
        return {"published_after": self.start.isoformat(), "published_by": self.end.isoformat()}


def split_young(papers: Sequence[Mapping[str, Any]], window: Window
                ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """The papers published before ``window`` and those published in it, each in the order of ``papers``.

    Raises
    ------
    InvalidInput
        When the window holds none of ``papers``: a split of no paper would be released, and sealed runs refused,
        with nothing to say why.
    """
    old, young = [], []
    for p in papers:
        (young if window.holds(p.get("date")) else old).append(p)
    if not young:
        raise InvalidInput(f"the prospective window (after {window.start.isoformat()}, up to {window.end.isoformat()}) "
                           f"holds none of the build's {len(papers)} papers: give more --prospective-months or a "
                           "later --as-of")
    return old, young


def blank_records(papers: Sequence[Mapping[str, Any]], tiers: Sequence[str | None]) -> list[dict[str, Any]]:
    """The prospective records: every field of the benchmark schema (:data:`scitaste_hf.schema.RECORD_FIELDS`)
    from the labelled paper, its journal tier from ``tiers`` (the journal's standing, not the paper's citations),
    and :data:`GOLD_FIELDS` empty."""
    from scitaste_hf.schema import RECORD_FIELDS

    features = [k for k in RECORD_FIELDS if k not in GOLD_FIELDS]
    return [{**{k: p.get(k) for k in features}, "year": int(p["year"]), "journal_tier": tier,
             **dict.fromkeys(GOLD_FIELDS)} for p, tier in zip(papers, tiers)]
