"""The seven dimensions of the Academic Taste Index (docs/index-dimensions.md), each a pure function of the population.

A and G are closed-form scores. B..F first build a sub-parameter matrix (one row per paper, NaN where a value
is undefined, for example the reference age range of a paper without dated references) that
:func:`~scitaste_hf.index.normalise.pca_score` turns into 0-100.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy import sparse

from scitaste_hf.index.cd import UNDATED, CDResult
from scitaste_hf.index.journals import TIER_SCORES, JournalTable
from scitaste_hf.index.normalise import percentile
from scitaste_hf.index.population import Embeddings, Population, string_codes

#: Sub-parameter names of dimensions B..F, in matrix column order.
SUBPARAMETERS: dict[str, tuple[str, ...]] = {
    "knowledge_breadth": ("reference_count", "reference_fields", "reference_journals", "reference_age_range"),
    "semantic_novelty": ("nn_distance", "knn10_distance", "topic_fields", "topic_field_entropy",
                         "reference_centroid_distance", "bridge_score", "reference_dispersion"),
    "disruptiveness": ("cd_index", "disruptive_citations"),
    "conceptual_innovation": ("core_concept_score", "concept_count", "core_topic_score", "topic_span"),
    "team_collaboration": ("country_count", "author_count"),
}
#: Neighbours averaged by the ``knn10_distance`` sub-parameter.
NEIGHBOURS = 10
#: Numbers held at once by one block of dimension C's work (similarities, or reference vectors per paper and
#: field): bounds its memory whatever the population's size.
BLOCK_VALUES = 1 << 23
#: Fewest rows in one block of the nearest-neighbour search.
MIN_ROWS = 64


def _distinct_per_row(rows: np.ndarray, codes: np.ndarray, n_rows: int) -> np.ndarray:
    """Number of distinct non-negative codes per row."""
    keep = codes >= 0
    pairs = np.unique(np.stack([rows[keep], codes[keep]]), axis=1)
    return np.bincount(pairs[0], minlength=n_rows).astype(float)


def _list_items(values: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Row number of each item of a list array, and the items."""
    return (pc.list_parent_indices(values).to_numpy(zero_copy_only=False).astype(np.int64),
            pc.list_flatten(values))


def _row_max(rows: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """Largest non-NaN value per row; NaN for a row without one."""
    out = np.full(n_rows, -np.inf)
    keep = ~np.isnan(values)
    np.maximum.at(out, rows[keep], values[keep])
    out[np.isneginf(out)] = np.nan
    return out


def citation_impact(citations: np.ndarray) -> np.ndarray:
    """Dimension A: 0.5 * 100 * log(1 + c) / log(1 + c_max) + 0.5 * percentile(c).

    Parameters
    ----------
    citations : array-like of int, shape (N,)
        Total citations of each paper of the population, >= 0.

    Returns
    -------
    ndarray of float, shape (N,)
        When no paper is cited the log part is 0 for everyone.
    """
    c = np.asarray(citations, dtype=float)
    top = np.log1p(c.max()) if c.size else 0.0
    log_part = 100.0 * np.log1p(c) / top if top > 0 else np.zeros_like(c)
    return 0.5 * log_part + 0.5 * percentile(c)


def journal_impact(journals: Sequence[str | None], table: JournalTable) -> np.ndarray:
    """Dimension G: 0.70 * percentile(impact factor) + 0.15 * JCR quartile score + 0.15 * CAS zone score.

    The percentile places a paper's journal among the distinct journals observed in the population that have
    an impact factor; a journal without one (or not in the table) scores 0 there. Q1/zone 1 score 100, Q2 75,
    Q3 50, Q4 25, unknown 0.

    Parameters
    ----------
    journals : sequence of str or None, length N
        Each paper's journal key (ISSN or name).
    table : JournalTable
        The journal data.

    Returns
    -------
    ndarray of float, shape (N,)
    """
    entries = [table.lookup(key) for key in journals]
    impact = np.array([np.nan if e is None or e.impact_factor is None else e.impact_factor for e in entries])
    observed = {e: e.impact_factor for e in entries if e is not None and e.impact_factor is not None}
    pct = np.where(np.isnan(impact), 0.0, percentile(np.nan_to_num(impact), np.fromiter(observed.values(), float)))
    quartile = np.array([TIER_SCORES[int(e.jcr_quartile[1]) - 1] if e and e.jcr_quartile else 0.0 for e in entries])
    zone = np.array([TIER_SCORES[e.cas_zone - 1] if e and e.cas_zone else 0.0 for e in entries])
    return 0.70 * pct + 0.15 * quartile + 0.15 * zone


def knowledge_breadth_parameters(population: Population) -> np.ndarray:
    """Sub-parameters of B: reference count, distinct reference fields, distinct reference journals, and
    reference age range (max year - min year; NaN without a dated reference).

    Parameters
    ----------
    population : Population

    Returns
    -------
    ndarray of float, shape (N, 4)
    """
    n = population.n_papers
    rows, refs = population.references()
    count = np.bincount(rows, minlength=n).astype(float)
    fields = _distinct_per_row(rows, population.field[refs], n)
    journals = _distinct_per_row(rows, population.journal[refs], n)
    days = population.times[refs]
    dated = days != UNDATED
    years = days[dated].astype("datetime64[D]").astype("datetime64[Y]").astype(np.int64)
    newest = _row_max(rows[dated], years.astype(float), n)
    oldest = -_row_max(rows[dated], -years.astype(float), n)
    return np.column_stack([count, fields, journals, newest - oldest])


def _unit_rows(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows scaled to unit length, and a mask of the rows that had a non-zero length."""
    norms = np.linalg.norm(vectors, axis=1)
    valid = norms > 1e-12
    unit = np.zeros_like(vectors)
    unit[valid] = vectors[valid] / norms[valid, None]
    return unit, valid


def _group_sum(groups: np.ndarray, rows: np.ndarray, vectors: np.ndarray, n_groups: int) -> np.ndarray:
    """Sum of ``vectors[rows]`` per group number, without materialising ``vectors[rows]``."""
    summer = sparse.csr_matrix((np.ones(rows.size, dtype=vectors.dtype), (groups, rows)),
                               shape=(n_groups, vectors.shape[0]))
    return np.asarray(summer @ vectors, dtype=np.float64)


def nearest_distances(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine distance of each row to the nearest other row, and mean distance to the k nearest others.

    The rows are compared block by block through a matrix product, keeping only each row's k largest
    similarities, so memory stays linear in the number of rows. The arithmetic is that of scikit-learn's
    brute-force cosine search, which this replaced (rows renormalised, products in the rows' precision), and
    the distances equal its own to one rounding of a float32 product (bit for bit when one block holds every row;
    a BLAS may round a shorter block's products differently, as OpenBLAS's Haswell kernel does for a block's last
    rows): ``1 - similarity`` orders the rows as the similarity does, so the k largest similarities give the k
    smallest distances whichever of several equally near rows is taken. A row
    is never its own neighbour, even when other rows share its vector (scikit-learn, searching a large
    population in chunks, drops the nearest of those instead when more than k of them are as near as the row
    itself; the distances then differ in the last place).

    Parameters
    ----------
    vectors : ndarray of float, shape (m, d)
        Unit vectors (float32 for the index's embeddings).
    k : int
        Neighbours, 1 <= k < m.

    Returns
    -------
    (ndarray, ndarray), each of shape (m,) and the dtype of ``vectors``
        Distance to the nearest other row, and the mean of the distances to the k nearest in increasing order.
    """
    # scikit-learn's normalize(vectors), step for step (importing it cost each index process about 1 s of CPU): the
    # rows' float norms by einsum, a norm under 10 eps taken as 1.
    unit = np.array(vectors, dtype=np.result_type(vectors, np.float32))
    norms = np.sqrt(np.einsum("ij,ij->i", unit, unit))
    norms[norms < 10 * np.finfo(norms.dtype).eps] = 1.0
    unit /= norms[:, None]
    m = unit.shape[0]
    nearest = np.empty(m, dtype=unit.dtype)
    mean = np.empty(m, dtype=unit.dtype)
    # A single-row product goes through the BLAS's matrix-vector routine, whose sums round differently; blocks
    # of at least MIN_ROWS rows gave scikit-learn's distances at every block size tested.
    step = max(MIN_ROWS, BLOCK_VALUES // m)
    for start in range(0, m, step):
        stop = min(m, start + step)
        similarity = unit[start:stop] @ unit.T
        similarity[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        top = np.partition(similarity, m - k, axis=1)[:, m - k:]
        dist = np.sort(np.clip(1 - top, 0.0, 2.0), axis=1)
        nearest[start:stop] = dist[:, 0]
        mean[start:stop] = dist.mean(axis=1)
    return nearest, mean


def reference_parameters(paper_row: np.ndarray, rows: np.ndarray, ref_row: np.ndarray, ref_field: np.ndarray,
                         unit: np.ndarray) -> np.ndarray:
    """Dimension C's reference sub-parameters of a block of papers: distance of the paper to its references'
    centroid, the bridge score between the references' fields, and the references' dispersion.

    Each paper's values depend on its own references only, so a population computed block by block gives the
    same values as in one piece, with the memory of a block.

    Parameters
    ----------
    paper_row : ndarray of int, shape (n,)
        Each paper's row in ``unit``, -1 without an embedding.
    rows : ndarray of int, shape (r,)
        Paper (0..n-1) of each reference link, in increasing order.
    ref_row : ndarray of int, shape (r,)
        The reference's row in ``unit``, -1 without an embedding (such a reference is left out).
    ref_field : ndarray of int, shape (r,)
        The reference's field code, -1 when unknown.
    unit : ndarray of float32, shape (m, d)
        Unit vectors (a memory map will do: only the rows referenced are read).

    Returns
    -------
    ndarray of float, shape (n, 3)
        NaN where a value needs a missing embedding or reference.
    """
    n = paper_row.shape[0]
    out = np.full((n, 3), np.nan)
    keep = ref_row >= 0
    rows, ref_row, ref_field = rows[keep], ref_row[keep], ref_field[keep]
    count = np.bincount(rows, minlength=n)
    has = count > 0
    centroid = _group_sum(rows, ref_row, unit, n)
    centroid[has] /= count[has, None]
    direction, direction_ok = _unit_rows(centroid)
    length = np.linalg.norm(centroid, axis=1)
    paper_ok = direction_ok & (paper_row >= 0)
    paper_unit = np.asarray(unit[paper_row[paper_ok]], dtype=np.float64)
    out[paper_ok, 0] = np.clip(1.0 - np.einsum("ij,ij->i", paper_unit, direction[paper_ok]), 0.0, 2.0)
    # Mean of 1 - cos(u_r, c) over the references equals 1 - |c| when c is the mean of the unit vectors u_r.
    out[direction_ok, 2] = np.maximum(1.0 - length[direction_ok], 0.0)
    fielded = ref_field >= 0
    group_keys, group_of = np.unique(np.stack([rows[fielded], ref_field[fielded]]), axis=1, return_inverse=True)
    group_unit, group_ok = _unit_rows(_group_sum(group_of.ravel(), ref_row[fielded], unit, group_keys.shape[1]))
    owner = group_keys[0][group_ok]
    summed = _group_sum(owner, np.flatnonzero(group_ok), group_unit, n)
    m = np.bincount(owner, minlength=n).astype(float)
    # Mean pairwise distance of m unit vectors: sum_{i<j} u_i.u_j = (|sum u|^2 - m) / 2.
    pair_mean = np.divide((summed ** 2).sum(axis=1) - m, m * (m - 1), out=np.zeros(n), where=m > 1)
    out[:, 1] = np.where(m > 1, 1.0 - pair_mean, np.where(m == 1, 0.0, np.nan))
    return out


def semantic_novelty_parameters(population: Population, embeddings: Embeddings) -> np.ndarray:
    """Sub-parameters of C (cosine distances of document embeddings).

    Columns: distance to the nearest paper of the population; mean distance to the 10 nearest (fewer when
    the population is smaller); number of distinct fields among the paper's topics; Shannon entropy (nats) of
    the topic count per field; distance of the paper to the centroid of its references; bridge score, the
    mean pairwise distance between the centroids of the paper's references grouped by field (0 with one
    field); and the dispersion of the references, their mean distance to their centroid. A value that needs a
    missing embedding, topic or reference is NaN.

    Parameters
    ----------
    population : Population
    embeddings : Embeddings
        Embeddings of the papers and their references (others are not used).

    Returns
    -------
    ndarray of float, shape (N, 7)
    """
    n = population.n_papers
    unit = embeddings.vectors
    paper_row = embeddings.row[:n]
    out = np.full((n, 7), np.nan)

    papers_ok = np.flatnonzero(paper_row >= 0)
    k = min(NEIGHBOURS, papers_ok.size - 1)
    if k >= 1:
        out[papers_ok, 0], out[papers_ok, 1] = nearest_distances(unit[paper_row[papers_ok]], k)

    rows, items = _list_items(population.papers.column("topics").combine_chunks())
    fields = string_codes(pc.struct_field(items, "field"))[0]
    out[:, 2] = _distinct_per_row(rows, fields, n)
    named = fields >= 0
    pairs, per_field = np.unique(np.stack([rows[named], fields[named]]), axis=1, return_counts=True)
    topics_named = np.bincount(rows[named], minlength=n)
    share = per_field / topics_named[pairs[0]]
    entropy = np.bincount(pairs[0], weights=-share * np.log(share), minlength=n)
    out[:, 3] = np.where(topics_named > 0, entropy, np.nan)

    rows, refs = population.references()
    ref_row, ref_field = embeddings.row[refs], population.field[refs]
    first_link = np.searchsorted(rows, np.arange(n + 1))
    links = max(1, BLOCK_VALUES // max(1, unit.shape[1]))
    start = 0
    while start < n:
        # At least one paper per block, however many references it has.
        stop = max(start + 1, int(np.searchsorted(first_link, first_link[start] + links, "right")) - 1)
        a, b = first_link[start], first_link[stop]
        out[start:stop, 4:] = reference_parameters(paper_row[start:stop], rows[a:b] - start, ref_row[a:b],
                                                   ref_field[a:b], unit)
        start = stop
    return out


def disruptiveness_parameters(cd: CDResult) -> np.ndarray:
    """Sub-parameters of D: the CD index (NaN without citers, imputed by the pipeline) and the number of
    disruptive citations (citers that cite the paper but none of its references).

    Parameters
    ----------
    cd : CDResult
        CD of every paper of the population, in population order.

    Returns
    -------
    ndarray of float, shape (N, 2)
    """
    return np.column_stack([cd.cd, cd.n_i.astype(float)])


def conceptual_innovation_parameters(population: Population) -> np.ndarray:
    """Sub-parameters of E: core-concept score (largest concept score), concept count, core-topic score (score
    of the primary, first, topic) and topic span (distinct subfields among the topics).

    Parameters
    ----------
    population : Population

    Returns
    -------
    ndarray of float, shape (N, 4)
    """
    n = population.n_papers
    concepts = population.papers.column("concept_scores").combine_chunks()
    rows, scores = _list_items(concepts)
    scores = scores.fill_null(np.nan).to_numpy(zero_copy_only=False).astype(float)
    core_concept = _row_max(rows, scores, n)
    concept_count = np.bincount(rows[~np.isnan(scores)], minlength=n).astype(float)
    topics = population.papers.column("topics").combine_chunks()
    has_topics = pc.fill_null(pc.list_value_length(topics), 0).to_numpy(zero_copy_only=False) > 0
    primary = pc.struct_field(pc.list_element(topics.filter(pa.array(has_topics)), 0), "score")
    core_topic = np.full(n, np.nan)
    core_topic[has_topics] = primary.fill_null(np.nan).to_numpy(zero_copy_only=False)
    rows, items = _list_items(topics)
    span = _distinct_per_row(rows, string_codes(pc.struct_field(items, "subfield"))[0], n)
    return np.column_stack([core_concept, concept_count, core_topic, span])


def team_collaboration_parameters(population: Population) -> np.ndarray:
    """Sub-parameters of F: distinct author countries and author count (NaN when unknown).

    Parameters
    ----------
    population : Population

    Returns
    -------
    ndarray of float, shape (N, 2)
    """
    n = population.n_papers
    rows, countries = _list_items(population.papers.column("countries").combine_chunks())
    country_count = _distinct_per_row(rows, string_codes(countries)[0], n)
    authors = population.papers.column("author_count").combine_chunks().cast(pa.float64()).fill_null(np.nan)
    return np.column_stack([country_count, authors.to_numpy(zero_copy_only=False)])
