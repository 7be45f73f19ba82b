import numpy as np
import pytest

from scitaste_hf.index import dimensions
from scitaste_hf.index.cd import CDResult
from scitaste_hf.index.dimensions import (
    citation_impact,
    conceptual_innovation_parameters,
    disruptiveness_parameters,
    journal_impact,
    knowledge_breadth_parameters,
    nearest_distances,
    semantic_novelty_parameters,
    team_collaboration_parameters,
)
from scitaste_hf.index.journals import JournalTable
from scitaste_hf.index.population import Embeddings


def paper(pid, **extra):
    return {"id": pid, "date": "2021-01-01", "citation_count": 0, **extra}


def test_citation_impact_blends_log_scale_and_percentile():
    # c = 0, 1, 3: log part 0, 50 log2/log4 = 25, 50; percentile part 0, 16.67, 33.33.
    assert citation_impact(np.array([0, 1, 3])).tolist() == pytest.approx([0.0, 25 + 50 / 3, 50 + 100 / 3])
    assert citation_impact(np.array([0, 0])).tolist() == [0.0, 0.0]
    assert citation_impact(np.array([12])).tolist() == [50.0]


def test_journal_impact_blends_percentile_quartile_and_zone():
    table = JournalTable([
        {"name": "Journal One", "issn": "1111-1111", "impact_factor": 10.0, "jcr_quartile": "Q1", "cas_zone": 2},
        {"name": "Journal Two", "issn": "2222-2222", "impact_factor": 5.0, "jcr_quartile": "Q3"},
        {"name": "Journal Three", "jcr_quartile": "Q2"},
    ])
    keys = ["1111-1111", "journal  two", "Journal Three", "Unknown Journal", None, "JOURNAL ONE"]
    # Observed journals with an impact factor: 10 and 5, so percentiles 50 and 0.
    expected = [0.7 * 50 + 0.15 * 100 + 0.15 * 75, 0.15 * 50, 0.15 * 75, 0.0, 0.0, 0.7 * 50 + 15 + 0.15 * 75]
    assert journal_impact(keys, table).tolist() == pytest.approx(expected)


def test_openalex_proxy_table_is_labelled_and_has_no_tiers():
    table = JournalTable.from_openalex_sources([
        {"issn_l": "0028-0836", "display_name": "Nature", "summary_stats": {"2yr_mean_citedness": 16.26}},
        {"issn_l": "1234-5678", "display_name": "Small", "summary_stats": {"2yr_mean_citedness": 1.5}},
    ])
    assert table.proxy and "proxy" in table.label
    assert journal_impact(["0028-0836", "Small"], table).tolist() == pytest.approx([35.0, 0.0])


@pytest.mark.parametrize(
    ("entry", "message"),
    [({"name": "X", "jcr_quartile": "Q5"}, "Q1..Q4"), ({"name": "X", "cas_zone": 0}, "1..4"),
     ({"name": "X", "impact_factor": -1.0}, "impact_factor")],
)
def test_bad_journal_entries_are_rejected(entry, message):
    from scitaste_hf.errors import ScitasteError

    with pytest.raises(ScitasteError, match=message):
        JournalTable([entry])
    with pytest.raises(ScitasteError, match="twice"):
        JournalTable([{"name": "X"}, {"name": "x"}])


def test_knowledge_breadth_counts_fields_journals_and_age_range(build):
    pop = build(
        [paper("P1"), paper("P2")],
        [("P1", "R1"), ("P1", "R2"), ("P1", "R3")],
        [{"id": "R1", "date": "2000-05-01", "journal": "A", "field": "X"},
         {"id": "R2", "date": "2010-01-01", "journal": "A", "field": "Y"},
         {"id": "R3"}],
    )
    b = knowledge_breadth_parameters(pop)
    assert b[0].tolist() == [3.0, 2.0, 1.0, 10.0]
    # No references: counts are 0 and the age range is undefined (imputed later).
    assert b[1, :3].tolist() == [0.0, 0.0, 0.0] and np.isnan(b[1, 3])


def test_semantic_novelty_on_hand_placed_embeddings(build):
    s2 = np.sqrt(0.5)
    pop = build(
        [paper("P1", embedding=[1.0, 0.0], topics=[{"field": "X", "subfield": "a", "score": 0.9},
                                                   {"field": "X", "subfield": "b", "score": 0.8},
                                                   {"field": "Y", "subfield": "c", "score": 0.1}]),
         paper("P2", embedding=[0.0, 1.0], topics=[]),
         paper("P3", embedding=[s2, s2]),
         paper("P4")],
        [("P1", "R1"), ("P1", "R2"), ("P1", "R5"), ("P2", "R1"), ("P2", "R4"), ("P4", "R1")],
        [{"id": "R1", "field": "X", "embedding": [1.0, 0.0]},
         {"id": "R2", "field": "Y", "embedding": [0.0, 1.0]},
         {"id": "R5", "field": "Z", "embedding": [-1.0, 0.0]},
         {"id": "R4", "field": "X", "embedding": [2.0, 0.0]}],
    )
    c = semantic_novelty_parameters(pop, pop.embeddings)
    near = 1 - s2  # cosine distance between an axis and the diagonal
    # P4 has no embedding: out of the neighbour search, its own distances NaN.
    assert c[:3, 0].tolist() == pytest.approx([near, near, near])
    assert c[:3, 1].tolist() == pytest.approx([(near + 1) / 2, (near + 1) / 2, near])
    assert np.isnan(c[3, :2]).all()
    # Topic fields X, X, Y: 2 fields, entropy of (2/3, 1/3).
    assert c[0, 2:4].tolist() == pytest.approx([2.0, -(2 / 3 * np.log(2 / 3) + 1 / 3 * np.log(1 / 3))])
    assert c[1, 2] == 0.0 and np.isnan(c[1, 3]) and c[2, 2] == 0.0
    # P1 references (1,0), (0,1), (-1,0): centroid (0, 1/3); the paper is orthogonal to it, dispersion 1 - 1/3,
    # field centroids X, Y, Z at pairwise distances 1, 2, 1.
    assert c[0, 4:].tolist() == pytest.approx([1.0, 4 / 3, 2 / 3])
    # P2 references lie on one axis in one field: centroid (1, 0), bridge 0, dispersion 0.
    assert c[1, 4:].tolist() == pytest.approx([1.0, 0.0, 0.0])
    # P3 has no references; P4 has one but no embedding of its own.
    assert np.isnan(c[2, 4:]).all()
    assert np.isnan(c[3, 4]) and c[3, 5:].tolist() == [0.0, 0.0]


def test_semantic_novelty_population_of_one_has_no_neighbours(build):
    pop = build([paper("P1", embedding=[1.0, 0.0])])
    assert np.isnan(semantic_novelty_parameters(pop, pop.embeddings)[0, :2]).all()


def test_disruptiveness_keeps_null_cd():
    result = CDResult(cd=np.array([0.5, np.nan]), n_i=np.array([3, 0]), n_j=np.array([1, 0]), n_k=np.array([4, 2]))
    d = disruptiveness_parameters(result)
    assert d[0].tolist() == [0.5, 3.0] and np.isnan(d[1, 0]) and d[1, 1] == 0.0


def test_conceptual_innovation_uses_primary_topic_not_best(build):
    pop = build([
        paper("P1", concept_scores=[0.3, 0.9, 0.5],
              topics=[{"field": "X", "subfield": "s1", "score": 0.7}, {"field": "X", "subfield": "s2", "score": 0.99},
                      {"field": "Y", "subfield": "s1", "score": 0.5}]),
        paper("P2", concept_scores=[], topics=[]),
        paper("P3"),
    ])
    e = conceptual_innovation_parameters(pop)
    assert e[0].tolist() == pytest.approx([0.9, 3.0, 0.7, 2.0])
    for row in (1, 2):
        assert np.isnan(e[row, 0]) and e[row, 1] == 0.0 and np.isnan(e[row, 2]) and e[row, 3] == 0.0


def test_team_collaboration_counts_distinct_countries(build):
    pop = build([paper("P1", countries=["US", "US", "DE", None], author_count=4), paper("P2")])
    f = team_collaboration_parameters(pop)
    assert f[0].tolist() == [2.0, 4.0] and f[1, 0] == 0.0 and np.isnan(f[1, 1])


def test_journal_table_reads_csv_and_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scitaste_hf.errors import ScitasteError

    csv = tmp_path / "journals.csv"
    csv.write_text("issn,name,impact_factor,jcr_quartile,cas_zone\n1111-1111,One,4.5,Q2,3\n,Two,,,\n")
    table = JournalTable.read(csv)
    assert table.label == "journals.csv" and not table.proxy
    assert table.lookup("one").impact_factor == 4.5 and table.lookup("1111-1111").cas_zone == 3
    assert table.lookup("Two").jcr_quartile is None
    pq.write_table(pa.table({"issn": ["2222-2222"], "name": ["Three"], "impact_factor": [1.0],
                             "jcr_quartile": ["Q9"], "cas_zone": [1]}), tmp_path / "j.parquet")
    with pytest.raises(ScitasteError, match="jcr_quartile must be"):
        JournalTable.read(tmp_path / "j.parquet")
    with pytest.raises(ScitasteError, match="not found"):
        JournalTable.read(tmp_path / "none.csv")
    (tmp_path / "short.csv").write_text("name,impact_factor\nX,1\n")
    with pytest.raises(ScitasteError, match="lacks column"):
        JournalTable.read(tmp_path / "short.csv")
    (tmp_path / "blank.csv").write_text("issn,name,impact_factor,jcr_quartile,cas_zone\n,,1.0,,\n")
    with pytest.raises(ScitasteError, match="neither an issn nor a name"):
        JournalTable.read(tmp_path / "blank.csv")


def test_identical_embeddings_are_each_others_nearest_neighbour(build):
    pop = build([paper("P1", embedding=[1.0, 0.0]), paper("P2", embedding=[2.0, 0.0]),
                 paper("P3", embedding=[0.0, 1.0])])
    c = semantic_novelty_parameters(pop, pop.embeddings)
    assert c[:, 0].tolist() == pytest.approx([0.0, 0.0, 1.0])
    assert c[:, 1].tolist() == pytest.approx([0.5, 0.5, 1.0])


def sklearn_distances(vectors, k):
    """The search that nearest_distances replaced: scikit-learn's brute-force cosine neighbours."""
    from sklearn.neighbors import NearestNeighbors

    dist = np.clip(NearestNeighbors(n_neighbors=k, metric="cosine", algorithm="brute").fit(vectors)
                   .kneighbors(return_distance=True)[0], 0.0, 2.0)
    return dist[:, 0], dist.mean(axis=1)


@pytest.mark.parametrize("block_values", [1, 700, 1 << 23])
def test_nearest_distances_equal_scikit_learn_to_one_rounding(monkeypatch, block_values):
    # Ties on purpose: 14 copies of one vector (more than k + 1, scikit-learn's corner case), copies of another
    # at different lengths, vectors on a coarse grid whose similarities repeat; blocks of the fewest rows allowed
    # (the last one shorter) up to all.
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(300, 24)).astype(np.float32)
    vectors[10:24] = vectors[9]
    vectors[40:43] = vectors[39] * np.array([[2.0], [0.5], [3.0]], dtype=np.float32)
    vectors[100:200] = np.round(vectors[100:200])
    unit = Embeddings.from_rows(300, np.arange(300), vectors).vectors
    monkeypatch.setattr(dimensions, "BLOCK_VALUES", block_values)
    for k in (1, 10, 299):
        nearest, mean = nearest_distances(unit, k)
        expected_nearest, expected_mean = sklearn_distances(unit, k)
        if block_values >= 300 * 300:
            # One block: the same product as scikit-learn's, so the same bits.
            assert nearest.tobytes() == expected_nearest.tobytes()
            assert mean.tobytes() == expected_mean.tobytes()
        else:
            # Shorter blocks: the BLAS may round a block's last rows differently (OpenBLAS's Haswell kernel does),
            # never by more than one rounding of a similarity near 1.
            eps = np.finfo(np.float32).eps
            assert np.abs(nearest - expected_nearest).max() <= eps
            assert np.abs(mean - expected_mean).max() <= eps
    assert nearest_distances(unit, 10)[0][9:24].max() < 1e-6


def random_population(seed, n=60):
    rng = np.random.default_rng(seed)
    fields = ["A", "B", "C", None]
    refs = [{"id": f"R{i}", "field": fields[i % 4], "embedding": None if i % 7 == 0 else rng.normal(size=8).tolist()}
            for i in range(80)]
    papers = [paper(f"P{i}", embedding=None if i % 9 == 0 else rng.normal(size=8).tolist(),
                    topics=[{"field": fields[j % 3], "subfield": "s", "score": 0.5} for j in range(i % 4)])
              for i in range(n)]
    # Paper i cites (i % 6) * 3 references, so some cite none and blocks end at every kind of paper.
    edges = [(f"P{i}", f"R{r}") for i in range(n) for r in rng.choice(80, (i % 6) * 3, replace=False)]
    return papers, edges, refs


@pytest.mark.parametrize("block_values", [1, 40, 333])
def test_semantic_novelty_in_blocks_equals_one_block(build, monkeypatch, block_values):
    pop = build(*random_population(block_values))
    whole = semantic_novelty_parameters(pop, pop.embeddings)
    monkeypatch.setattr(dimensions, "BLOCK_VALUES", block_values)
    blocked = semantic_novelty_parameters(pop, pop.embeddings)
    assert blocked.tobytes() == whole.tobytes()
    assert np.isfinite(whole[:, 5]).sum() > 10 and np.isnan(whole[:, 4]).sum() > 5
