"""The composite's weights: one vector of the seven dimensions, or one per discipline; validated, loaded and
applied (docs/weights.md). The packaged default is ``config/weights_default.json``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

from scitaste_hf.errors import InvalidInput, ScitasteError
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.taxonomy import packaged_disciplines


def validate_weights(weights: Mapping[str, float], *, tolerance: float = 1e-6) -> dict[str, float]:
    """Check a weight vector and return it as a plain dict in dimension order.

    Parameters
    ----------
    weights : mapping of dimension key to weight
        Exactly the seven keys of :data:`DIMENSIONS`, each finite and non-negative, summing to 1.
    tolerance : float
        Allowed absolute deviation of the sum from 1.

    Raises
    ------
    ScitasteError
        On a missing or unknown key, a negative or non-finite weight, or a sum that is not 1; and on
        :class:`DisciplineWeights`, which only a caller that knows each record's discipline can apply
        (:func:`vector_for`).
    """
    if isinstance(weights, DisciplineWeights):
        # Every place that applies one vector to all records passes through here: a per-discipline file reaching
        # one of them says so instead of failing on the discipline names as unknown dimension keys.
        raise InvalidInput(f"{weights.source} holds one weight vector per discipline, and this applies one vector "
                            "to every record; give a file with a single vector")
    missing = [k for k in DIMENSIONS if k not in weights]
    unknown = sorted(set(weights) - set(DIMENSIONS))
    if missing or unknown:
        parts = [f"missing {', '.join(missing)}"] if missing else []
        parts += [f"unknown {', '.join(unknown)}"] if unknown else []
        raise InvalidInput(f"weight vector must have exactly the seven dimension keys: {'; '.join(parts)}")
    out = {}
    for key in DIMENSIONS:
        value = weights[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise InvalidInput(f"weight {key}={value!r} must be a finite number >= 0")
        out[key] = float(value)
    total = sum(out.values())
    if abs(total - 1.0) > tolerance:
        raise InvalidInput(f"weights must sum to 1, got {total:.6f}")
    return out


#: The entry of a per-discipline weights file that serves the disciplines it does not name.
DEFAULT_VECTOR = "default"


@dataclass(frozen=True)
class DisciplineWeights:
    """One weight vector per discipline, and optionally a default for the others
    (docs/weights.md#per-discipline-weights). Build it with :func:`parse_weights` or :func:`load_weights`, which
    validate every vector.

    Attributes
    ----------
    vectors : mapping of discipline to weight vector
    default : weight vector or None
        For a discipline without a vector of its own; None makes such a discipline an error.
    source : str
        What error messages call these weights (the file).
    """

    vectors: Mapping[str, Mapping[str, float]]
    default: Mapping[str, float] | None = None
    source: str = "the weights"

    def __post_init__(self) -> None:
        for discipline, vector in [*self.vectors.items(), (DEFAULT_VECTOR, self.default)]:
            if vector is not None:
                try:
                    validate_weights(vector)
                except ScitasteError as exc:
                    raise InvalidInput(f"{self.source}, {discipline}: {exc}") from None

    def check_disciplines(self, names: Sequence[str], what: str = "the taxonomy") -> None:
        """Refuse a vector for a discipline outside ``names``: a misspelt name would silently hand its papers to
        the default vector."""
        unknown = [d for d in self.vectors if d not in names]
        if unknown:
            raise InvalidInput(f"{self.source}: no discipline {unknown[0]!r} in {what} ({', '.join(names)})")

    def to_json(self) -> dict[str, dict[str, float]]:
        """The ``weights`` object of a per-discipline weights file: discipline -> vector, then ``default``."""
        out = {d: dict(v) for d, v in self.vectors.items()}
        return out | ({DEFAULT_VECTOR: dict(self.default)} if self.default is not None else {})


#: What every ``weights=`` accepts: one vector for all records, or one per discipline.
Weights = Mapping[str, float] | DisciplineWeights


def _vector(data: object, kind: str, where: str) -> dict[str, float]:
    """One vector of a weights file: ``weights`` as given, ``raw`` normalised by its sum."""
    if not isinstance(data, Mapping):
        raise InvalidInput(f"{where} must be an object of the seven dimension keys")
    if kind == "raw":
        numbers = [v for v in data.values() if isinstance(v, int | float) and not isinstance(v, bool)]
        total = sum(numbers)
        if len(numbers) != len(data) or total <= 0:
            raise InvalidInput(f"{where}: 'raw' must map keys to positive numbers")
        if not math.isfinite(total):  # each number a float, their sum beyond one: every share would read as 0
            raise InvalidInput(f"{where}: the 'raw' numbers sum beyond a float's range; scale them down")
        data = {k: v / total for k, v in data.items()}
    try:
        return validate_weights(data)
    except ScitasteError as exc:
        raise InvalidInput(f"{where}: {exc}") from None


def parse_weights(data: object, source: str = "the weights") -> dict[str, float] | DisciplineWeights:
    """Validate the content of a weights file (docs/weights.md#per-discipline-weights).

    Parameters
    ----------
    data : object
        The parsed JSON: ``{"weights": W}`` (already normalised) or ``{"raw": W}`` (each vector normalised by its
        sum), where ``W`` is one vector (dimension key -> number) or a mapping discipline -> vector, with an
        optional ``"default"`` vector for the disciplines it does not name.
    source : str
        What error messages call the data (the file).

    Returns
    -------
    dict or DisciplineWeights
        The single vector, or the vectors by discipline (a mapping holding only ``default`` is that one vector).

    Raises
    ------
    ScitasteError
        On any malformed vector (named by its discipline), a mapping that mixes numbers and vectors, an empty or
        mis-cased discipline name.
    """
    kind = next((k for k in ("weights", "raw") if isinstance(data, Mapping) and isinstance(data.get(k), Mapping)),
                None)
    if kind is None:
        raise InvalidInput(f"weights file {source} must hold a 'weights' or a 'raw' object")
    body = data[kind]
    nested = [isinstance(v, Mapping) for v in body.values()]
    if not any(nested):
        return _vector(body, kind, f"weights file {source}")
    if not all(nested):
        raise InvalidInput(f"weights file {source}: '{kind}' mixes numbers and per-discipline vectors")
    vectors = {}
    for discipline, vector in body.items():
        name = discipline.strip() if isinstance(discipline, str) else ""
        if not name:
            raise InvalidInput(f"weights file {source}: a vector has an empty discipline name")
        # A mis-cased name would never match a record's discipline and silently hand its papers to the default.
        if discipline != name.lower() and name.lower() in (*packaged_disciplines(), DEFAULT_VECTOR):
            raise InvalidInput(f"weights file {source}: discipline {discipline!r}; write {name.lower()!r}")
        vectors[discipline] = _vector(vector, kind, f"weights file {source}, {discipline}")
    default = vectors.pop(DEFAULT_VECTOR, None)
    if not vectors:
        return default
    return DisciplineWeights(MappingProxyType(vectors), default, source)


def vector_for(weights: Weights | None, discipline: str | None) -> dict[str, float]:
    """The vector that applies to a record of ``discipline``.

    Parameters
    ----------
    weights : mapping, DisciplineWeights or None
        One vector (for every discipline), vectors by discipline, or None for :data:`DEFAULT_WEIGHTS`.
    discipline : str or None
        The record's discipline; None (unknown) takes the default vector.

    Raises
    ------
    ScitasteError
        On a bad vector, or a discipline that has no vector where the weights have no default.
    """
    if weights is None:
        return dict(DEFAULT_WEIGHTS)
    if not isinstance(weights, DisciplineWeights):
        return validate_weights(weights)
    vector = weights.vectors.get(discipline, weights.default)
    if vector is None:
        named = f"discipline {discipline!r}" if discipline is not None else "a record without a discipline"
        raise InvalidInput(f"{weights.source} has no vector for {named} and no {DEFAULT_VECTOR!r} vector; it has "
                            f"{', '.join(weights.vectors)}")
    return dict(vector)


def load_weights(path: str | None = None) -> dict[str, float] | DisciplineWeights:
    """Load weights from a JSON file (:func:`parse_weights`), or the packaged default vector when ``path`` is None.

    The default is ``config/weights_default.json``: which of its figures are published and which are this
    package's assumption is docs/index-dimensions.md#published-and-assumed.
    """
    from scitaste_hf.bounded_load import parse_json, read_text

    if path is None:
        text = resources.files("scitaste_hf").joinpath("config/weights_default.json").read_text("utf-8")
    elif not os.path.exists(path):
        raise ScitasteError(f"weights file not found: {path}")
    else:
        text = read_text(path, "weights file")
    # an integer too large for a float reads as inf (refused as not finite), not an OverflowError
    data = parse_json(text, f"weights file {path}", parse_int=float)
    return parse_weights(data, str(path) if path is not None else "config/weights_default.json")


#: Default weights (docs/index-dimensions.md#weights; B..F split equally: an assumption, see :func:`load_weights`).
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(load_weights())


def default_config() -> dict:
    """The packaged default weights file, ``config/weights_default.json``, as parsed JSON: the figures' one home
    (its raw contributions, its notes, and the interval the package gives its weights)."""
    return json.loads(resources.files("scitaste_hf").joinpath("config/weights_default.json").read_text("utf-8"))


def default_contributions() -> tuple[dict[str, float], tuple[str, ...]]:
    """The packaged default's raw contributions (:func:`default_config`) and the dimensions whose contribution is
    this package's assumption rather than the paper's: the equal split, the one value that repeats."""
    raw = default_config()["raw"]
    values = list(raw.values())
    return raw, tuple(k for k in DIMENSIONS if values.count(raw[k]) > 1)


def weights_note() -> str:
    """One sentence on the default weights: the raw contributions the paper publishes, and the total it gives for
    the others, which the default splits equally; for every text that states them (the Space, the dataset card)."""
    raw, assumed = default_contributions()
    published = " and ".join(f"{k.replace('_', ' ')} ({raw[k]:g})" for k in DIMENSIONS if k not in assumed)
    return (f"The paper publishes the contributions of {published} of {sum(raw.values()):g}, and only the total of "
            f"the other {len(assumed)} dimensions ({sum(raw[k] for k in assumed):g}), which the default splits "
            "equally (an assumption, shown wherever weights are shown).")


def composite(dimension_scores: Mapping[str, float], weights: Weights | None = None,
              discipline: str | None = None) -> float:
    """The innovation score: the weighted sum of the seven dimensions, rounded to 2 decimals
    (docs/index-dimensions.md#composite), with the vector of the record's ``discipline`` when ``weights`` are per
    discipline (:func:`vector_for`)."""
    w = vector_for(weights, discipline)
    return round(sum(w[k] * float(dimension_scores[k]) for k in DIMENSIONS), 2)


def composites(dimension_scores: Mapping[str, Sequence[float]], weights: Weights | None = None,
               disciplines: Sequence[str | None] | None = None) -> list[float]:
    """:func:`composite` of many records at once, equal to it record for record.

    Parameters
    ----------
    dimension_scores : mapping
        Each dimension of :data:`~scitaste_hf.schema.DIMENSIONS` -> its scores, one a record.
    weights : mapping or DisciplineWeights, optional
        As in :func:`composite`.
    disciplines : sequence of str or None, optional
        Each record's discipline (None: one vector for all).

    Returns
    -------
    list of float
        The innovation scores. The same products are summed in the same order as :func:`composite` sums them, and
        rounded by Python's ``round``, so that each is the float :func:`composite` gives; only the vector is looked
        up once a discipline instead of once a record (an index of 10^5 papers: 0.43 s -> 0.05 s).
    """
    import numpy as np

    columns = {k: np.asarray(dimension_scores[k], dtype=float) for k in DIMENSIONS}
    n = columns[DIMENSIONS[0]].shape[0]
    labels = [None] * n if disciplines is None else list(disciplines)
    if len(labels) != n:
        raise InvalidInput(f"got {len(labels)} disciplines for {n} records")
    codes = {d: j for j, d in enumerate(dict.fromkeys(labels))}
    code = np.fromiter((codes[d] for d in labels), dtype=np.int64, count=n)
    total = np.zeros(n)
    for discipline, j in codes.items():
        w, rows = vector_for(weights, discipline), code == j
        acc = np.zeros(int(rows.sum()))  # sum() starts at 0, and 0 + -0.0 is 0.0
        for k in DIMENSIONS:
            acc = acc + w[k] * columns[k][rows]
        total[rows] = acc
    return [round(v, 2) for v in total.tolist()]
