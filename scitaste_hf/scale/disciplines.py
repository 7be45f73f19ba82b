"""Each focal paper's discipline for per-discipline weights (docs/scale.md#per-discipline-weights): the taxonomy
discipline whose cell names the OpenAlex subfield of the paper's primary topic."""

from __future__ import annotations

from collections.abc import Sequence

from scitaste_hf.errors import ScitasteError
from scitaste_hf.taxonomy import Taxonomy, load_taxonomy
from scitaste_hf.weights import DEFAULT_VECTOR, DisciplineWeights, Weights


def subfield_disciplines(taxonomy: Taxonomy) -> dict[str, str]:
    """OpenAlex subfield id (``1804``, as ``primary_topic.subfield.id`` ends) -> the discipline of its cells.

    Raises
    ------
    ScitasteError
        When cells of two disciplines name the same subfield (a paper's discipline would be ambiguous).
    """
    out: dict[str, str] = {}
    for cell in taxonomy.cells:
        key = str(cell.openalex_subfield)
        if out.setdefault(key, cell.discipline) != cell.discipline:
            raise ScitasteError(f"the taxonomy's disciplines {out[key]} and {cell.discipline} both name OpenAlex "
                                f"subfield {key}; per-discipline weights need each subfield in one discipline")
    return out


def paper_disciplines(subfields: Sequence[str | None], weights: Weights | None,
                      taxonomy: str | None = None) -> list[str | None] | None:
    """Each paper's discipline when ``weights`` are per discipline, else None (one vector serves every paper).

    Parameters
    ----------
    subfields : sequence of str or None
        Each focal paper's primary-topic subfield id (the id's last segment), None without a primary topic.
    weights : mapping, DisciplineWeights or None
    taxonomy : str, optional
        A packaged taxonomy's name or a taxonomy file (:func:`scitaste_hf.taxonomy.load_taxonomy`); the default
        when None.

    Returns
    -------
    list of str or None, or None
        None for a paper whose subfield is in no cell (the weights' ``default`` vector).

    Raises
    ------
    ScitasteError
        When papers have no vector (a subfield in no cell, or a discipline the weights do not name) and the
        weights have no ``default`` vector: one line with how many.
    """
    if not isinstance(weights, DisciplineWeights):
        return None
    tax = load_taxonomy(taxonomy)
    weights.check_disciplines(tax.names, f"the taxonomy {taxonomy or 'default'}")
    by_subfield = subfield_disciplines(tax)
    labels = [by_subfield.get(s) if s is not None else None for s in subfields]
    if weights.default is None:
        unplaced = sum(label is None for label in labels)
        unnamed = sorted({label for label in labels if label is not None and label not in weights.vectors})
        if unplaced or unnamed:
            parts = [f"{unplaced:,} of {len(labels):,} focal works have a primary-topic subfield in no discipline "
                     "of the taxonomy"] if unplaced else []
            if unnamed:
                count = sum(label in unnamed for label in labels)
                parts.append(f"{count:,} are in {', '.join(unnamed)}, which it names no vector for")
            raise ScitasteError(f"{weights.source} has no {DEFAULT_VECTOR!r} vector and {'; '.join(parts)}")
    return labels
