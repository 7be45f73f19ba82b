"""The parameters both simulated worlds share: the benchmark-size world (:mod:`scitaste_hf.simworld.world`) and the
streamed world of any size (:mod:`scitaste_hf.simworld.stream`) draw journals, people, topics and words the same
way, so these are set once, here. What only one of them draws (the benchmark world's candidates and the works
around them, the streamed world's look-back window) stays in its module.
"""

from __future__ import annotations

from datetime import date

#: The first publication year of a world's works: every work of the streamed world, the works around the
#: candidates of the benchmark world (whose candidates start later, at its ``CANDIDATE_FIRST_YEAR``).
WORLD_FIRST_YEAR = 1965
#: The last publication year of a world's candidates (the streamed world: of every work).
LAST_YEAR = 2024
#: Day 0 of the worlds' day numbers (``date`` arrays count days since it).
EPOCH = date(1970, 1, 1)
#: The root of every OpenAlex id the worlds render.
OPENALEX = "https://openalex.org/"
#: Journals of a cell outside the ADS route (a cell of an ADS-route discipline has one per bibstem).
JOURNALS_PER_CELL = 16
#: Mean and spread of the log impact factor of every cell's journals.
JOURNAL_IMPACT = (1.0, 0.8)
#: Noise of a paper's placement beyond its journal trait (with it, G is a weaker stand-in for A).
JOURNAL_NOISE = 0.38
#: Institutions of a world.
INSTITUTIONS = 400
#: Share of references outside the discipline = Phi(a + b * novelty trait).
FOREIGN_REFERENCES = (-1.6, 0.6)
#: log team size = a + b * team trait; share of co-authors abroad = Phi(a + b * team trait). The spread gives team
#: size more distinct values for the forest to split F on.
TEAM, ABROAD = (1.4, 0.85), (-0.8, 0.6)
#: Topics from other disciplines = round(a + b * novelty trait).
FOREIGN_TOPICS = (0.8, 1.1)
#: Keywords of another discipline in the title and abstract = round(a + b * novelty trait).
FOREIGN_WORDS = (0.6, 1.1)
