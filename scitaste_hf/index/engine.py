"""The whole Academic Taste Index of a population: seven dimensions and the composite (docs/index-dimensions.md)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from scitaste_hf.errors import ScitasteError
from scitaste_hf.index.dimensions import (
    SUBPARAMETERS,
    citation_impact,
    conceptual_innovation_parameters,
    disruptiveness_parameters,
    journal_impact,
    knowledge_breadth_parameters,
    semantic_novelty_parameters,
    team_collaboration_parameters,
)
from scitaste_hf.index.embed import Embedder, WordLlamaEmbedder
from scitaste_hf.index.journals import JournalTable
from scitaste_hf.index.normalise import pca_score
from scitaste_hf.index.population import Embeddings, Population
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.weights import DisciplineWeights, Weights, composites, vector_for


def work_embeddings(population: Population, embedder: Embedder | None = None) -> Embeddings:
    """Embeddings of the papers and their references: the precomputed ones when the population carries them,
    otherwise the embedder's (a work without text, and any other work, gets none).

    Parameters
    ----------
    population : Population
    embedder : Embedder, optional
        Used only without precomputed embeddings; :class:`~scitaste_hf.index.embed.WordLlamaEmbedder` when
        None.

    Returns
    -------
    Embeddings
    """
    if population.embeddings is not None:
        return population.embeddings
    embedder = embedder or WordLlamaEmbedder()
    _, refs = population.references()
    needed = np.union1d(np.arange(population.n_papers), refs)
    texts = population.texts.take(pa.array(needed)).to_pylist()
    has_text = np.array([bool(t and t.strip()) for t in texts])
    vectors = embedder.embed([t for t, ok in zip(texts, has_text) if ok]) if has_text.any() else np.zeros((0, 1))
    return Embeddings.from_rows(len(population.ids), needed[has_text], vectors)


def compute_index(
    population: Population,
    journals: JournalTable,
    *,
    embedder: Embedder | None = None,
    weights: Weights | None = None,
    cd_window_days: int | None = None,
    disciplines: Sequence[str | None] | None = None,
) -> pa.Table:
    """Score every paper of the population.

    Parameters
    ----------
    population : Population
        The reference population (the candidate pool of the build).
    journals : JournalTable
        Journal data for dimension G.
    embedder : Embedder, optional
        Document embedder for dimension C when the population has no precomputed embeddings; the offline
        default :class:`~scitaste_hf.index.embed.WordLlamaEmbedder` when None.
    weights : mapping of dimension key to weight, or DisciplineWeights, optional
        The composite's weights (see :func:`scitaste_hf.weights.load_weights`); the packaged default
        (docs/index-dimensions.md#weights) when None. Per-discipline weights need ``disciplines``.
    cd_window_days : int, optional
        Count only citers within this many days after the paper for the CD index (CD_t); all when None.
    disciplines : sequence of str or None, optional
        Each paper's discipline, in population order (None where unknown: the weights' default vector), which
        picks its vector from per-discipline weights (docs/weights.md#per-discipline-weights).

    Returns
    -------
    pyarrow.Table
        One row per paper, in population order: ``id``, the seven dimensions (0-100, rounded to 2 decimals so
        that a published record's composite can be recomputed from its own dimensions), ``innovation_score``,
        then the raw values: ``cd_index``, ``n_i`` (the disruptive citations), ``n_j``, ``n_k`` and one
        ``<dimension>.<sub-parameter>`` column per sub-parameter of B, C, E and F (before imputation, NaN where
        undefined). The schema metadata
        ``journal_table`` and ``journal_impact_proxy`` say where the journal figures come from.

    Raises
    ------
    ScitasteError
        On a bad weight vector, per-discipline weights without ``disciplines``, a paper whose discipline has no
        vector, or ``disciplines`` of another length than the papers.
    """
    n = population.n_papers
    if isinstance(weights, DisciplineWeights) and disciplines is None:
        raise ScitasteError(f"{weights.source} holds one weight vector per discipline; the index needs each "
                            "paper's discipline to apply them")
    if disciplines is not None and len(disciplines) != n:
        raise ScitasteError(f"got {len(disciplines)} disciplines for {n} papers")
    # Every discipline's vector checked before the work, not after it.
    for discipline in dict.fromkeys([None] if disciplines is None else disciplines):
        vector_for(weights, discipline)
    cd = population.graph.cd(np.arange(n), cd_window_days)
    parameters = {
        "knowledge_breadth": knowledge_breadth_parameters(population),
        "semantic_novelty": semantic_novelty_parameters(population, work_embeddings(population, embedder)),
        "disruptiveness": disruptiveness_parameters(cd),
        "conceptual_innovation": conceptual_innovation_parameters(population),
        "team_collaboration": team_collaboration_parameters(population),
    }
    scores = {key: pca_score(matrix) for key, matrix in parameters.items()}
    scores["citation_impact"] = citation_impact(
        population.papers.column("citation_count").to_numpy(zero_copy_only=False))
    scores["journal_impact"] = journal_impact(population.papers.column("journal").to_pylist(), journals)
    dims = {key: np.round(scores[key], 2) for key in DIMENSIONS}
    columns = {"id": population.papers.column("id"), **dims,
               "innovation_score": composites(dims, weights, disciplines),
               "cd_index": cd.cd, "n_i": cd.n_i, "n_j": cd.n_j, "n_k": cd.n_k}
    for key, matrix in parameters.items():
        if key == "disruptiveness":
            continue  # its raw values are the cd_index and n_i columns already there
        for j, name in enumerate(SUBPARAMETERS[key]):
            columns[f"{key}.{name}"] = matrix[:, j]
    # Journal figures may be a proxy (docs/index-dimensions.md#g-journal-impact); the label travels with the scores.
    return pa.table(columns).replace_schema_metadata(
        {"journal_table": journals.label, "journal_impact_proxy": str(journals.proxy).lower()})
