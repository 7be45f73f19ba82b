"""What a release folder says about itself, written by the builder and read by ``scitaste release diff``.

A release is a dataset folder that ``scitaste build`` wrote (docs/dataset.md#files-and-splits). Beside the two
splits it carries:

- its provenance in the dataset card's YAML front matter under :data:`PROVENANCE_KEY`: the as-of date, the weights
  and the taxonomy it was built with, and the code version that built it (:func:`provenance`);
- :data:`CITATION_COUNTS_FILE`: each paper's citation count at the as-of date, the raw value of dimension A, which
  the records themselves do not carry (their schema is the benchmark's and stays the same).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError, short_repr
from scitaste_hf.schema import DIMENSIONS, SCORE_MAX, SCORE_MIN, SPLITS
from scitaste_hf.taxonomy import Taxonomy
from scitaste_hf.weights import DisciplineWeights

#: The key of the release's provenance in the card's front matter.
PROVENANCE_KEY = "scitaste_release"
#: Bibcode -> citation count at the release's as-of date (the raw value of dimension A), beside the splits.
CITATION_COUNTS_FILE = "citation_counts.json"
#: Largest citation count read. The most cited papers have some hundreds of thousands; below a billion, the sum of a
#: million papers' counts stays exact in the float64 arithmetic of the drift (2**53 is about 9e15).
MAX_CITATIONS = 10**9
#: The counts of what the index was computed on, in a provenance's ``graph`` (:func:`provenance`).
GRAPH_KEYS = ("papers", "works_around", "citations")
# A card's YAML front matter, as huggingface_hub.DatasetCard finds it.
_FRONT_MATTER = re.compile(r"\A\s*---[\r\n]+([\S\s]*?)[\r\n]+---(?:\r\n|\n|$)")


def taxonomy_digest(taxonomy: Taxonomy) -> str:
    """SHA-256 of every cell of a taxonomy (ids, names, keywords, classes, subfields), in file order: two releases
    were built with the same taxonomy exactly when their digests agree."""
    cells = [asdict(c) for c in taxonomy.cells]
    return hashlib.sha256(json.dumps(cells, sort_keys=True).encode()).hexdigest()


def weights_record(weights: Mapping[str, float] | DisciplineWeights) -> dict[str, Any]:
    """Weights as a release records them: one vector, or ``per_discipline`` vectors and their ``default``."""
    if isinstance(weights, DisciplineWeights):
        return {"per_discipline": {d: dict(v) for d, v in weights.vectors.items()},
                "default": dict(weights.default) if weights.default is not None else None}
    return dict(weights)


def provenance(as_of: date | None, weights: Mapping[str, float] | DisciplineWeights, taxonomy: Taxonomy,
               graph: Mapping[str, int]) -> dict[str, Any]:
    """The provenance a build records in its card (see the module's description).

    Parameters
    ----------
    as_of : date or None
        The ``--as-of`` date; None for a build of the services' present state.
    weights : mapping or DisciplineWeights
        The weights the composites were computed with.
    taxonomy : Taxonomy
        The taxonomy the papers were collected and labelled with.
    graph : mapping
        What the index was computed on: ``papers`` (the pool scored), ``works_around`` (their references and
        citers) and ``citations`` (the pool's citation counts summed).

    Returns
    -------
    dict
        ``as_of`` (ISO date or None), ``code_version``, ``weights``, ``taxonomy`` (``sha256``, see
        :func:`taxonomy_digest`, and ``disciplines``: discipline -> its sub-discipline ids) and ``graph``.
    """
    from scitaste_hf import __version__

    disciplines: dict[str, list[str]] = {}
    for cell in taxonomy.cells:
        disciplines.setdefault(cell.discipline, []).append(cell.id)
    return {"as_of": as_of.isoformat() if as_of else None, "code_version": f"scitaste-hf {__version__}",
            "weights": weights_record(weights),
            "taxonomy": {"sha256": taxonomy_digest(taxonomy), "disciplines": disciplines}, "graph": dict(graph)}


@dataclass(frozen=True)
class Release:
    """A release folder as read: its records per split, its provenance (empty for a folder written before
    releases recorded it), its as-of date (None for a build of the services' present state) and its citation
    counts (empty without :data:`CITATION_COUNTS_FILE`)."""

    path: Path
    splits: dict[str, list[dict[str, Any]]]
    provenance: dict[str, Any]
    as_of: date | None
    citations: dict[str, int]

    def records(self) -> dict[str, dict[str, Any]]:
        """Every paper of both splits by bibcode, each with the split it is in (``split``)."""
        return {r["bibcode"]: {**r, "split": s} for s in SPLITS for r in self.splits[s]}


def read_release(path: str | Path, name: str = "release") -> Release:
    """Read a release folder.

    Parameters
    ----------
    path : path
        A folder that ``scitaste build`` wrote.
    name : str
        What error messages call it (``OLD``, ``NEW``).

    Raises
    ------
    ScitasteError
        When ``path`` is not a release folder (no ``README.md`` and Parquet splits), a split cannot be read,
        or its provenance or citation counts are malformed.
    """
    from scitaste_hf.records import load_records

    folder = Path(path)
    files = {s: sorted((folder / "data").glob(f"{s}-*.parquet")) for s in SPLITS}
    if not folder.is_dir() or not (folder / "README.md").is_file() or not all(files.values()):
        raise ScitasteError(f"{name} {folder} is not a release folder (README.md and data/<split>-*.parquet for "
                            f"{', '.join(SPLITS)}, as scitaste build writes)")
    for part in (f for paths in files.values() for f in paths):
        if not part.is_file():  # a FIFO would be handed to datasets.load_dataset as a folder
            raise ScitasteError(f"{name} {part} is not a regular file")
    splits: dict[str, list[dict[str, Any]]] = {s: [] for s in files}
    first: dict[str, str] = {}  # bibcode -> where it was read: a paper is in one split, once
    for split, paths in files.items():
        for f in paths:
            for i, r in enumerate(load_records(f), start=1):
                where = f"{name} {f}: record {i} ({r['bibcode']})"
                if r["bibcode"] in first:  # records() would keep one of them, and every count would be off
                    raise ScitasteError(f"{where} repeats the paper of {first[r['bibcode']]}; a release holds each "
                                        "paper once")
                first[r["bibcode"]] = f"{split} record {i} of {f.name}"
                splits[split].append(_checked(r, where))
    card = f"{name} {folder}/README.md"
    recorded = _provenance(_front_matter(folder / "README.md", name).get(PROVENANCE_KEY), card)
    citations = _citations(folder / CITATION_COUNTS_FILE, name)
    try:
        # YAML reads an unquoted date as a date already (made an ISO string by _provenance); a string is parsed
        as_of = recorded.get("as_of") and date.fromisoformat(str(recorded["as_of"]))
    except ValueError:
        raise ScitasteError(f"{card}: as_of {recorded['as_of']!r} is not an ISO date") from None
    return Release(folder, splits, recorded, as_of or None, citations)


def _score(value: Any) -> bool:
    """Whether ``value`` is a score: a number from SCORE_MIN to SCORE_MAX (a finite 1e308 overflowed the drift)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and SCORE_MIN <= value <= SCORE_MAX


def _checked(record: dict[str, Any], where: str) -> dict[str, Any]:
    """A record with what the diff reads of it: a discipline, a composite and dimension scores from SCORE_MIN to
    SCORE_MAX, and an integer year or none (a paper without a year is not counted as published after an as-of date)."""
    discipline = record.get("discipline")
    if not isinstance(discipline, str) or not discipline:
        raise ScitasteError(f"{where}: discipline must be a non-empty string, got {short_repr(discipline)}")
    year = record.get("year")
    if year is not None and (isinstance(year, bool) or not isinstance(year, int)):
        raise ScitasteError(f"{where}: year must be an integer or null, got {short_repr(year)}")
    if not _score(record.get("innovation_score")):
        raise ScitasteError(f"{where}: innovation_score must be a number from {SCORE_MIN:g} to {SCORE_MAX:g}, got "
                            f"{short_repr(record.get('innovation_score'))}")
    scores = record.get("dimension_scores")
    if not isinstance(scores, dict) or not all(k in scores for k in DIMENSIONS):
        raise ScitasteError(f"{where}: dimension_scores must map each of the {len(DIMENSIONS)} dimensions to its "
                            f"score, got {short_repr(scores)}")
    for key in DIMENSIONS:
        if not _score(scores[key]):
            raise ScitasteError(f"{where}: dimension_scores.{key} must be a number from {SCORE_MIN:g} to "
                                f"{SCORE_MAX:g}, got "
                                f"{short_repr(scores[key])}")
    return record


def _front_matter(card: Path, name: str) -> dict[str, Any]:
    """The card's YAML front matter (empty without one), read within the bounds of every user-given file."""
    from scitaste_hf.bounded_load import parse_yaml, read_text

    match = _FRONT_MATTER.match(read_text(card, name))
    meta = parse_yaml(match.group(1), f"{name} {card}'s card metadata") if match else None
    if meta is not None and not isinstance(meta, dict):
        raise ScitasteError(f"{name} {card}: the card metadata must be a mapping, got {type(meta).__name__}")
    return meta or {}


def _json_data(value: Any, where: str) -> Any:
    """``value`` as JSON holds it: a date as its ISO string, NaN and infinities as null (strict JSON has neither);
    any other type YAML can build (a set, bytes, a key that is not a string) refused."""
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise ScitasteError(f"{where}: key {short_repr(key)} is not a string")
        return {k: _json_data(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_json_data(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, date):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float):
        return value
    raise ScitasteError(f"{where}: a {type(value).__name__}, which JSON cannot hold")


def _provenance(recorded: Any, card: str) -> dict[str, Any]:
    """The provenance of a card's front matter (empty when it has none), checked where the diff computes with it
    (``as_of``, ``graph``) and made JSON data (:func:`_json_data`)."""
    if recorded is None:
        return {}
    if not isinstance(recorded, dict):
        raise ScitasteError(f"{card}: {PROVENANCE_KEY} must be a mapping, got {short_repr(recorded)}")
    graph = recorded.get("graph")
    if graph is not None:
        if not isinstance(graph, dict):
            raise ScitasteError(f"{card}: {PROVENANCE_KEY}.graph must be a mapping of {', '.join(GRAPH_KEYS)} to "
                                f"counts, got {short_repr(graph)}")
        for key in GRAPH_KEYS:
            count = graph.get(key)
            if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
                raise ScitasteError(f"{card}: {PROVENANCE_KEY}.graph.{key} must be a count, got {short_repr(count)}")
    return _json_data(recorded, f"{card}: {PROVENANCE_KEY}")


def _citations(path: Path, name: str) -> dict[str, int]:
    """The citation counts beside the splits (empty without the file)."""
    from scitaste_hf.bounded_load import load_json

    if not path.exists():
        return {}
    counts = load_json(path, name)
    if not isinstance(counts, dict):
        raise ScitasteError(f"{name} {path} must hold a JSON object of bibcode -> citation count")
    for bibcode, count in counts.items():
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_CITATIONS:
            raise ScitasteError(f"{name} {path}: {bibcode!r} must be a citation count (0 to {MAX_CITATIONS:,}), "
                                f"got {short_repr(count)}")
    return counts
