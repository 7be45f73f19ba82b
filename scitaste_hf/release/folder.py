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
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import SPLITS, DisciplineWeights
from scitaste_hf.taxonomy import Taxonomy

#: The key of the release's provenance in the card's front matter.
PROVENANCE_KEY = "scitaste_release"
#: Bibcode -> citation count at the release's as-of date (the raw value of dimension A), beside the splits.
CITATION_COUNTS_FILE = "citation_counts.json"


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
    import yaml
    from huggingface_hub import DatasetCard

    from scitaste_hf.records import load_records

    folder = Path(path)
    files = {s: sorted((folder / "data").glob(f"{s}-*.parquet")) for s in SPLITS}
    if not folder.is_dir() or not (folder / "README.md").is_file() or not all(files.values()):
        raise ScitasteError(f"{name} {folder} is not a release folder (README.md and data/<split>-*.parquet for "
                            f"{', '.join(SPLITS)}, as scitaste build writes)")
    splits = {s: [r for f in paths for r in load_records(f)] for s, paths in files.items()}
    try:
        meta = DatasetCard.load(folder / "README.md").data.to_dict()
    except (ValueError, yaml.YAMLError) as exc:  # front matter that is not YAML, or not a mapping
        problem = str(exc).splitlines()[0]
        raise ScitasteError(f"{name} {folder}/README.md: unreadable card metadata ({problem})") from None
    recorded = meta.get(PROVENANCE_KEY) or {}
    if not isinstance(recorded, dict):
        raise ScitasteError(f"{name} {folder}/README.md: {PROVENANCE_KEY} must be a mapping")
    citations: dict[str, int] = {}
    counts_file = folder / CITATION_COUNTS_FILE
    if counts_file.is_file():
        try:
            citations = json.loads(counts_file.read_text("utf-8"))
        except json.JSONDecodeError as exc:
            raise ScitasteError(f"{counts_file} is not valid JSON: {exc.msg}") from None
        if not isinstance(citations, dict) or not all(isinstance(v, int) for v in citations.values()):
            raise ScitasteError(f"{counts_file} must hold a JSON object of bibcode -> citation count")
    try:
        # YAML reads an unquoted date as a date already; a string is parsed
        as_of = recorded.get("as_of") and date.fromisoformat(str(recorded["as_of"]))
    except ValueError:
        raise ScitasteError(f"{name} {folder}/README.md: as_of {recorded['as_of']!r} is not an ISO date") from None
    return Release(folder, splits, recorded, as_of or None, citations)
