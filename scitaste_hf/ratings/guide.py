"""The rating guide: what an expert rates on each slider, written from the index's definitions
(docs/index-dimensions.md). This module is its one home: the Space's Annotate tab and docs/ratings.md (a generated
block) show it from here.

An expert rates the paper itself, from its title, abstract, year and venue; the index measures the same dimension
from bibliometric records. Each entry says both, so that a rater knows what the number will be compared with
without being shown the paper's number.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from scitaste_hf.schema import DIMENSION_LETTERS, DIMENSIONS

#: The eight numbers an expert gives, in the order of an answer's vector: the overall innovation score, then the
#: seven dimensions.
NUMBERS: tuple[str, ...] = ("innovation_score", *DIMENSIONS)

#: How every slider reads: scores are relative to the discipline, like the index's percentiles and ranks.
SCALE = ("0-100, relative to papers of the same discipline: 50 is a typical paper, 90 is among the top tenth, 10 "
         "among the bottom tenth.")


class Guide(NamedTuple):
    """One slider: its label, what the index measures for it, and what the expert is asked to judge."""

    label: str
    index: str
    rate: str


#: The guide for each of :data:`NUMBERS`.
GUIDE: Mapping[str, Guide] = MappingProxyType({
    "innovation_score": Guide(
        "Overall innovativeness",
        "the weighted sum of the seven dimensions below",
        "your overall judgement of how new and consequential the contribution is; not a sum of the sliders below"),
    "citation_impact": Guide(
        "Citation impact",
        "the paper's citations, log-scaled against the most cited paper of the pool and as a percentile",
        "how much later work in the field builds, or will build, on this paper"),
    "knowledge_breadth": Guide(
        "Knowledge breadth",
        "the number of references, the distinct fields and journals they come from, and the span of their years",
        "how wide a body of earlier work, across fields and decades, the paper draws on"),
    "semantic_novelty": Guide(
        "Semantic novelty",
        "text-embedding distances from the paper to its nearest papers and to the centre of its references, and "
        "how many fields its topics and references span",
        "how unlike existing work the paper's content is, and how distant the fields it bridges"),
    "disruptiveness": Guide(
        "Disruptiveness",
        "the CD index: whether later papers cite this one instead of its references (disruptive) or together "
        "with them (consolidating); and the count of such disruptive citations",
        "whether the paper redirects its field, making earlier work less needed, rather than extending a line"),
    "conceptual_innovation": Guide(
        "Conceptual innovation",
        "the strength and number of the concepts the paper is tagged with, the score of its primary topic and the "
        "number of subfields its topics span",
        "how new the concepts, methods or framing are, or how new their combination"),
    "team_collaboration": Guide(
        "Team collaboration",
        "the number of authors and of their distinct countries",
        "how large and how international a collaboration the work reflects (authors are not shown: judge from the "
        "work, such as a multi-site study or a single argument; stay near 50 when the paper does not tell)"),
    "journal_impact": Guide(
        "Journal impact",
        "the venue's impact factor as a percentile of the pool's journals, with its JCR quartile and CAS zone",
        "the standing of the venue in the discipline"),
})


def label(number: str) -> str:
    """A slider's label with the paper's letter of its dimension ("C. Semantic novelty"); the overall score has
    none."""
    letter = DIMENSION_LETTERS.get(number)
    return f"{letter}. {GUIDE[number].label}" if letter else GUIDE[number].label


def guide_markdown() -> str:
    """The whole guide as Markdown: the scale, then per slider what to rate and what the index measures."""
    rows = [f"- **{label(n)}**: rate {GUIDE[n].rate}. *The index measures* {GUIDE[n].index}." for n in NUMBERS]
    return f"Every slider: {SCALE}\n\n" + "\n".join(rows)
