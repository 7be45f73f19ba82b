"""What a build produced, as tables: counts per discipline, sub-discipline, journal tier and decade, score
quantiles, failures by reason, where each fused field came from, and the listings that ended short of the count
their service announced. The same tables feed the command's final summary and the dataset card (which gets no
timings, so that equal builds give equal cards).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from scitaste_hf.schema import JOURNAL_TIERS, SPLITS
from scitaste_hf.taxonomy import Taxonomy

Table = tuple[tuple[str, ...], list[tuple[Any, ...]]]


def _counts(result: Any, key: Any, order: list[Any]) -> list[tuple[Any, ...]]:
    per = {s: Counter(key(r) for r in result.splits[s]) for s in SPLITS}
    return [(k, *(per[s][k] for s in SPLITS)) for k in order if any(per[s][k] for s in SPLITS)]


def tables(result: Any, taxonomy: Taxonomy) -> dict[str, Table]:
    """The summary tables of a build.

    Parameters
    ----------
    result : BuildResult
    taxonomy : Taxonomy

    Returns
    -------
    dict
        Title -> (column names, rows).
    """
    head = ("", *SPLITS)
    records = [r for s in SPLITS for r in result.splits[s]]
    decades = sorted({r["year"] // 10 * 10 for r in records})
    out: dict[str, Table] = {
        "discipline": (head, _counts(result, lambda r: r["discipline"], list(taxonomy.names))),
        "sub-discipline": (head, _counts(result, lambda r: r["subcategory_id"], [c.id for c in taxonomy.cells])),
        "journal tier": (head, _counts(result, lambda r: r["journal_tier"] or "(none)",
                                       [*JOURNAL_TIERS, "(none)"])),
        "decade": (head, _counts(result, lambda r: f"{r['year'] // 10 * 10}s", [f"{d}s" for d in decades])),
    }
    rows = []
    for s in SPLITS:
        scores = np.array([r["innovation_score"] for r in result.splits[s]], dtype=float)
        if scores.size:
            rows.append((s, *(f"{q:.2f}" for q in np.quantile(scores, [0, 0.25, 0.5, 0.75, 1]))))
    out["innovation score"] = (("split", "min", "q25", "median", "q75", "max"), rows)
    reasons = Counter(f["reason"] for f in result.failures)
    out["failures"] = (("reason", "papers"), sorted(reasons.items()))
    out["short"] = (("sub-discipline or discipline", "available", "quota"),
                    [tuple(x) for x in [*result.short_cells, *result.short_disciplines]])
    out["field sources"] = (("field", "sources"), [(k, ", ".join(f"{s} {n}" for s, n in sorted(v.items())))
                                                   for k, v in sorted(result.provenance.items())])
    journal = [("figures from", result.journal_table)]
    if not result.journal_partitions:
        from scitaste_hf.builder.journals import PARTITIONS_MISSING

        journal.append(("partitions", PARTITIONS_MISSING))
    out["journal impact"] = (("", "journal table"), journal)
    out["citation graph"] = (("", "count"), [("papers scored", result.graph["papers"]),
                                             ("works around them (references and citers)",
                                              result.graph["works_around"]),
                                             ("citations of the papers scored", result.graph["citations"])])
    # Always shown, 0 included: a count of records a service announced but never delivered is what tells a
    # complete build from one whose citation lists (and so its CD index) are cut short.
    out["listings"] = (("", "count"), [("ended short of the count the service announced", result.short_listings)])
    if result.previous_selected is not None:
        before, again = result.previous_selected
        out["previous release"] = (("", "papers"), [("selected in the previous release", before),
                                                     ("selected again", again)])
    if result.source:
        from scitaste_hf.builder.snapshot_source import source_rows

        out = {"source": (("", "snapshot"), source_rows(result.source, taxonomy)), **out}
    return out


def card_summary(result: Any, taxonomy: Taxonomy) -> str:
    """The build's tables as Markdown for the dataset card's construction section."""
    parts = ["\n### This build\n"]
    for title, (columns, rows) in tables(result, taxonomy).items():
        if not rows:
            continue
        parts.append(f"\n**{title}**\n\n| {' | '.join(columns)} |\n|{'---|' * len(columns)}")
        parts.extend(f"| {' | '.join(str(v) for v in row)} |" for row in rows)
        parts.append("")
    return "\n".join(parts)
