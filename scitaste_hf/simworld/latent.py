"""The hidden traits of the simulated candidates, from which the world draws their raw evidence.

Every candidate has a standard-normal trait per dimension B..F that shares a common factor ``q`` (a paper that cites
broadly also tends to be novel, disruptive, conceptually rich and written by a larger team), a citation trait
(dimension A's evidence) and a journal trait (dimension G's). The two last ones also share a venue factor, and both
load on the common factor as well: a paper's journal goes with its citations as a whole, the part B..F explain
included, so that A is what tells most about G and G adds to B..F what they miss of A. The citation trait also loads
a little on each trait B..F's own part (:data:`SPECIFIC`, the part the trait does not share with ``q``), so that
each of B..F carries something about A that the others do not: the paper's random forest then has a reason to split
on every one of them, not only on whichever best stands in for ``q``, and the RF R2 of A from B-G comes close to the
paper's 0.74 (0.71-0.74 on world seeds 0-4; 0.67-0.70 in the world tuned without them). The specific loadings are
small and unequal on purpose: the better a dimension measures its trait (concepts and team size best, novelty and
disruption worst), the more its own part tells the forest, so novelty and disruption get the most, and breadth,
whose evidence the forest favoured most, the least. With these loadings, and the world's citation counts and
unlisted journals (:mod:`scitaste_hf.simworld.world`), the released records of a default build have the regression
structure of the paper's random-forest derivation (its Table 4), which :mod:`scitaste_hf.simworld.calibration`
checks (bench/bench_calibration.py): 74 of its 75 cells on world seeds 0-4 (bench/README.md).

The world turns each trait into counts, scores and links (:mod:`scitaste_hf.simworld.world`); nothing here is a
dimension score.

Field weights (issue 20): a world may give each discipline its own :class:`Loadings` (a packaged preset of
:data:`PRESETS` or a JSON file, :func:`load_field_weights`), so that the weights the paper's derivation finds differ
between disciplines as the paper's limitations section suspects they do in reality. The default world keeps one
set of loadings for all (:data:`DEFAULT`); a preset that gives no specific loadings has none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from scitaste_hf.errors import ScitasteError

#: Loading of each trait B..F on the common factor (disruption's evidence, the disruptive citations, also grows
#: with the citation count, so its trait needs much less of the factor; breadth's and team size's evidence are
#: the least noisy, so theirs are below novelty's).
COMMON = {"breadth": 0.81, "novelty": 0.935, "disruption": 0.15, "concepts": 0.805, "team": 0.895}
#: Citation trait: loadings on the common factor and on the venue factor (with :data:`SPECIFIC`, nearly all of it:
#: the citation count is a near-deterministic function of the trait, so noise here would only lower the R2 of A).
CITATION_COMMON, CITATION_VENUE = 0.85, 0.508
#: Journal trait: loadings on the common factor and on the venue factor (the rest is its own noise): its venue part
#: is what G tells of A beyond B..F (G's derived weight), its common part goes with A as a whole (A's weight).
JOURNAL_COMMON, JOURNAL_VENUE = 0.638, 0.52
#: The traits B..F, in the order of the index's dimensions.
TRAITS = tuple(COMMON)
#: Citation trait: loading on each trait B..F's own part (see the module's docstring). A hundredth on novelty moves
#: its derived weight by about 3 points, on concepts by about 1.5 (default builds of seeds 0-4, issue 32).
SPECIFIC = {"breadth": 0.037, "novelty": 0.083, "disruption": 0.071, "concepts": 0.042, "team": 0.043}


@dataclass(frozen=True)
class Traits:
    """Standard-normal traits of ``n`` candidates."""

    breadth: np.ndarray
    novelty: np.ndarray
    disruption: np.ndarray
    concepts: np.ndarray
    team: np.ndarray
    citation: np.ndarray
    journal: np.ndarray


@dataclass(frozen=True)
class Loadings:
    """How one discipline's traits load on the common and the venue factor, and the citation trait on each trait
    B..F's own part."""

    #: Each trait B..F's loading on the common factor.
    common: Mapping[str, float]
    #: The citation trait's loadings on the common and the venue factor.
    citation: tuple[float, float]
    #: The journal trait's loadings on the common and the venue factor.
    journal: tuple[float, float]
    #: The citation trait's loading on each trait B..F's own part (what the trait does not share); none: zero.
    specific: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(TRAITS, 0.0))


#: The loadings of the default world, every discipline alike.
DEFAULT = Loadings(COMMON, (CITATION_COMMON, CITATION_VENUE), (JOURNAL_COMMON, JOURNAL_VENUE), SPECIFIC)
#: Packaged field weights, by name: JSON files beside this module (see :func:`load_field_weights`).
PRESETS = {"distinct": "field_weights_distinct.json"}


@dataclass(frozen=True)
class FieldWeights:
    """Per-discipline loadings of a world, and what is known of the weights each gives.

    ``true_weights`` (discipline -> dimension -> percent) is, for a packaged preset, the vector the paper's
    derivation converges to on a large sample of that discipline's structure, measured as ``measured`` says; a
    file of one's own may leave both empty.
    """

    name: str
    disciplines: Mapping[str, Loadings]
    true_weights: Mapping[str, Mapping[str, float]]
    measured: str

    def for_discipline(self, discipline: str) -> Loadings:
        """The loadings of ``discipline``; an error naming it when the field weights do not cover it."""
        try:
            return self.disciplines[discipline]
        except KeyError:
            raise ScitasteError(f"field weights {self.name!r} give no loadings for discipline {discipline!r}; "
                                f"they cover {', '.join(self.disciplines)}") from None


def _loading(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 <= value <= 1.0:
        raise ScitasteError(f"{where}: a loading is a number in -1..1, got {value!r}")
    return float(value)


def _pair(value: object, where: str) -> tuple[float, float]:
    if not isinstance(value, list) or len(value) != 2:
        raise ScitasteError(f"{where}: give [common, venue], got {value!r}")
    pair = (_loading(value[0], where), _loading(value[1], where))
    # the trait's own noise takes what the factors leave; it cannot be negative
    if pair[0] ** 2 + pair[1] ** 2 > 1.0:
        raise ScitasteError(f"{where}: the squared loadings {list(pair)} add up to more than 1")
    return pair


def parse_field_weights(data: object, name: str) -> FieldWeights:
    """Validate a field-weights document: ``{"disciplines": {discipline: {"common": {trait: loading, ...},
    "citation": [common, venue], "journal": [common, venue]}}}``, each discipline optionally with ``"specific":
    {trait: loading, ...}`` (the citation trait's loading on each trait's own part; default zero), the document
    optionally with ``true_weights`` and ``measured``; traits are :data:`TRAITS`.

    Raises
    ------
    ScitasteError
        On a missing or unknown key, a loading outside -1..1, or a trait whose squared loadings exceed 1 (the
        citation trait's specific ones included); the message names the discipline.
    """
    if not isinstance(data, dict) or not isinstance(data.get("disciplines"), dict) or not data["disciplines"]:
        raise ScitasteError(f"field weights {name}: expected an object with a non-empty \"disciplines\" object")
    out = {}
    for discipline, entry in data["disciplines"].items():
        where = f"field weights {name}, {discipline}"
        if not isinstance(entry, dict) or not {"common", "citation", "journal"} <= set(entry) <= {
                "common", "citation", "journal", "specific"}:
            raise ScitasteError(f"{where}: give common, citation and journal (and optionally specific)")
        common, specific = entry["common"], entry.get("specific", dict.fromkeys(TRAITS, 0.0))
        for key, value in (("common", common), ("specific", specific)):
            if not isinstance(value, dict) or set(value) != set(TRAITS):
                raise ScitasteError(f"{where}: {key} needs a loading for each of {', '.join(TRAITS)}")
        specific = {t: _loading(specific[t], f"{where}, specific") for t in TRAITS}
        citation = _pair(entry["citation"], f"{where}, citation")
        if sum(x * x for x in (*citation, *specific.values())) > 1.0:
            raise ScitasteError(f"{where}: the citation trait's squared loadings (citation and specific) add up to "
                                "more than 1")
        out[discipline] = Loadings({t: _loading(common[t], where) for t in TRAITS}, citation,
                                   _pair(entry["journal"], f"{where}, journal"), specific)
    return FieldWeights(name, out, data.get("true_weights", {}), data.get("measured", ""))


def load_field_weights(spec: str | Path | None) -> FieldWeights | None:
    """Field weights from a packaged preset's name (:data:`PRESETS`) or a JSON file; None for None (the default
    world).

    Raises
    ------
    ScitasteError
        On a name that is neither a preset nor a readable JSON file, or a document :func:`parse_field_weights`
        rejects.
    """
    if spec is None:
        return None
    from scitaste_hf.bounded_load import load_json

    if str(spec) in PRESETS:
        text = resources.files("scitaste_hf.simworld").joinpath(PRESETS[str(spec)]).read_text("utf-8")
        return parse_field_weights(json.loads(text), str(spec))
    if not Path(spec).exists():
        raise ScitasteError(f"field weights {spec}: neither a preset ({', '.join(PRESETS)}) nor a file")
    return parse_field_weights(load_json(spec, "field weights"), str(spec))


def _mix(rng: np.random.Generator, n: int, loadings: tuple, factors: tuple[np.ndarray, ...]) -> np.ndarray:
    # loadings are numbers, or arrays with one per candidate: the same arithmetic either way
    own = np.sqrt(np.maximum(0.0, 1.0 - sum(x * x for x in loadings)))
    return sum(w * f for w, f in zip(loadings, factors)) + own * rng.standard_normal(n)


def draw(rng: np.random.Generator, n: int, loadings: tuple[Loadings, ...] = (DEFAULT,),
         group: np.ndarray | None = None) -> Traits:
    """The traits of ``n`` candidates (each standard normal).

    Parameters
    ----------
    rng, n
        The generator and the number of candidates.
    loadings, group
        Candidate ``i`` takes ``loadings[group[i]]`` (``group`` None: every candidate the first).
    """
    def per(value) -> float | np.ndarray:
        return value(loadings[0]) if group is None else np.array([value(x) for x in loadings])[group]

    common, venue = rng.standard_normal(n), rng.standard_normal(n)
    b_f, own = {}, {}
    for name in TRAITS:
        loading = per(lambda x, t=name: x.common[t])
        own[name] = rng.standard_normal(n)
        b_f[name] = loading * common + np.sqrt(np.maximum(0.0, 1.0 - loading * loading)) * own[name]
    specific = tuple(per(lambda x, t=name: x.specific[t]) for name in TRAITS)
    return Traits(**b_f,
                  citation=_mix(rng, n, (per(lambda x: x.citation[0]), per(lambda x: x.citation[1]), *specific),
                                (common, venue, *own.values())),
                  journal=_mix(rng, n, (per(lambda x: x.journal[0]), per(lambda x: x.journal[1])), (common, venue)))
