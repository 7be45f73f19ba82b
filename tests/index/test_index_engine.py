import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.index import JournalTable, WordLlamaEmbedder, compute_index, work_embeddings
from scitaste_hf.index.normalise import pca_score
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.weights import composite, load_weights

FIXTURES = Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "recorded" / "openalex"
JOURNALS = JournalTable([{"name": "J", "impact_factor": 3.0, "jcr_quartile": "Q2", "cas_zone": 1},
                         {"name": "K", "impact_factor": 1.0}])


def paper(pid, date, citations, vec, **extra):
    return {"id": pid, "date": date, "citation_count": citations, "embedding": vec, **extra}


@pytest.fixture()
def three(build):
    return build(
        [paper("P1", "2019-01-01", 4, [1.0, 0.0], journal="J", author_count=2, countries=["US", "FR"]),
         paper("P2", "2019-06-01", 0, [0.0, 1.0], journal="K", author_count=5, countries=["US"]),
         paper("P3", "2020-01-01", 1, [0.6, 0.8], author_count=1)],
        [("P2", "R1"), ("P3", "P1"), ("P3", "R1"), ("C1", "P1"), ("P1", "R2")],
        [{"id": "R1", "date": "2010-01-01", "embedding": [1.0, 1.0]},
         {"id": "R2", "date": "2015-01-01", "embedding": [0.0, 1.0]},
         {"id": "C1", "date": "2021-01-01"}],
    )


def test_compute_index_scores_and_composite(three):
    table = compute_index(three, JOURNALS)
    rows = table.to_pylist()
    assert [r["id"] for r in rows] == ["P1", "P2", "P3"]
    # A: c = 4, 0, 1 -> 50 + 0.5 * 66.67, 0, 50 log2/log5 + 0.5 * 33.33.
    assert [r["citation_impact"] for r in rows] == pytest.approx(
        [round(50 + 100 / 3, 2), 0.0, round(50 * np.log(2) / np.log(5) + 50 / 3, 2)])
    # G: J (IF 3, Q2, zone 1) -> 0.7 * 50 + 0.15 * 75 + 0.15 * 100; K -> 0; no journal -> 0.
    assert [r["journal_impact"] for r in rows] == [61.25, 0.0, 0.0]
    # F: countries 2, 1, 0 standardise to 1.22, 0, -1.22 and authors 2, 5, 1 to -0.39, 1.37, -0.98; they
    # correlate positively, so PC1 is their sum: 0.83, 1.37, -2.21.
    assert [r["team_collaboration"] for r in rows] == [50.0, 100.0, 0.0]
    assert table.schema.metadata[b"journal_impact_proxy"] == b"false"
    for r in rows:
        assert r["innovation_score"] == composite({k: r[k] for k in DIMENSIONS})
        assert all(0.0 <= r[k] <= 100.0 for k in DIMENSIONS)
    # P1 (reference R2) is cited by P3 and C1, neither of which cites R2: n_i = 2, CD = 1.
    assert (rows[0]["n_i"], rows[0]["n_j"], rows[0]["n_k"], rows[0]["cd_index"]) == (2, 0, 0, 1.0)


def test_null_cd_is_imputed_with_the_column_mean(three):
    table = compute_index(three, JOURNALS)
    cd = np.array(table.column("cd_index").to_pylist(), dtype=float)
    assert np.isnan(cd[1:]).all()  # P2 and P3 are uncited: null, not 0
    n_i = np.array(table.column("n_i").to_pylist(), dtype=float)
    # The dimension is exactly the PCA pipeline on the raw matrix with NaN imputed to the column mean.
    expected = np.round(pca_score(np.column_stack([cd, n_i])), 2)
    assert table.column("disruptiveness").to_pylist() == expected.tolist()
    assert table.column("disruptiveness").to_pylist() == [100.0, 25.0, 25.0]


def test_weights_come_from_configuration(three, tmp_path):
    path = tmp_path / "w.json"
    weights = dict.fromkeys(DIMENSIONS, 0.0) | {"citation_impact": 1.0}
    path.write_text(json.dumps({"weights": weights}))
    table = compute_index(three, JOURNALS, weights=load_weights(str(path)))
    assert table.column("innovation_score").to_pylist() == table.column("citation_impact").to_pylist()


@pytest.mark.parametrize(("weights", "message"), [
    (dict.fromkeys(DIMENSIONS, 0.1), "sum to 1"),
    ({k: 1 / 6 for k in DIMENSIONS[:6]}, "missing journal_impact"),
])
def test_bad_weight_vectors_are_rejected(three, weights, message):
    with pytest.raises(ScitasteError, match=message):
        compute_index(three, JOURNALS, weights=weights)


def test_population_of_one(build):
    pop = build([paper("P1", "2020-01-01", 3, [1.0, 0.0], journal="J")])
    row = compute_index(pop, JOURNALS).to_pylist()[0]
    assert [row[k] for k in DIMENSIONS] == [50.0, 50.0, 50.0, 50.0, 50.0, 50.0, 0.7 * 0 + 0.15 * 75 + 15]
    assert np.isnan(row["cd_index"])


def test_recorded_snowball_scores(snowball):
    source = json.loads((FIXTURES / "entity_S137773608.json").read_text())["response"]["body"]
    table = compute_index(snowball, JournalTable.from_openalex_sources([source]), embedder=StubEmbedder())
    rows = {r["id"]: r for r in table.to_pylist()}
    # W3046863325 is cited 5 times (log part 100, percentile 50), W3045921891 never; a population of two.
    assert rows["W3046863325"]["citation_impact"] == 75.0 and rows["W3045921891"]["citation_impact"] == 0.0
    assert rows["W3046863325"]["cd_index"] == pytest.approx(0.2)
    # 6 and 37 references: the paper with more references is broader on every B sub-parameter it has.
    assert rows["W3045921891"]["knowledge_breadth.reference_count"] == 37.0
    assert rows["W3045921891"]["knowledge_breadth"] == 100.0 and rows["W3046863325"]["knowledge_breadth"] == 0.0


class StubEmbedder:
    """Deterministic embeddings from a text hash, so that the pipeline runs without a model."""

    def embed(self, texts):
        return np.array([[len(t), sum(map(ord, t)) % 97 + 1.0, 1.0] for t in texts], dtype=np.float32)


def test_work_embeddings_embed_papers_and_references_only(build):
    pop = build([{"id": "P1", "date": "2020-01-01", "citation_count": 0, "text": "abc"},
                 {"id": "P2", "date": "2020-01-01", "citation_count": 0, "text": "  "}],
                [("P1", "R1"), ("C1", "P1")],
                [{"id": "R1", "text": "de"}, {"id": "C1", "text": "citer text"}])
    emb = work_embeddings(pop, StubEmbedder())
    # Rows are unit vectors of the stub's raw vectors; an empty text and a work that is neither paper nor
    # reference (the citer C1) get none.
    assert emb.row.tolist() == [0, -1, 1, -1]
    raw = np.array([[3.0, 294 % 97 + 1.0, 1.0], [2.0, 201 % 97 + 1.0, 1.0]])
    assert emb.vectors == pytest.approx(raw / np.linalg.norm(raw, axis=1, keepdims=True))


def test_default_embedder_runs_offline_from_the_wheel(monkeypatch):
    pytest.importorskip("wordllama")
    import socket

    def no_network(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    vectors = WordLlamaEmbedder().embed(["photonic quantum lattice", "quantum photonic lattices", "yeast cells"])
    assert vectors.shape == (3, 256)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    # Paraphrases are closer than unrelated topics.
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    assert WordLlamaEmbedder(dim=64).embed(["photonic lattice"]).shape == (1, 64)
    with pytest.raises(ScitasteError, match="could not be loaded"):
        WordLlamaEmbedder(dim=100).embed(["photonic lattice"])


def test_the_default_embedder_leaves_the_applications_logging_alone():
    pytest.importorskip("wordllama")
    # A fresh interpreter: wordllama configures the root logger only on its first import.
    code = ("import logging; from scitaste_hf.index import WordLlamaEmbedder; "
            "WordLlamaEmbedder().embed(['a photonic lattice']); root = logging.getLogger(); "
            "print(root.level, len(root.handlers))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(logging.WARNING), "0"]


def test_citations_dated_before_the_paper_count_for_impact_not_for_cd(build):
    # E1 cites P1 but is dated a year earlier (a preprint-era citation); P1 reports one citation.
    pop = build([paper("P1", "2020-01-01", 1, [1.0, 0.0]), paper("P2", "2020-01-01", 0, [0.0, 1.0])],
                [("E1", "P1")], [{"id": "E1", "date": "2019-01-01"}])
    rows = compute_index(pop, JOURNALS).to_pylist()
    # c = 1, 0: log part 100 and 0, percentile 50 and 0.
    assert rows[0]["citation_impact"] == 75.0 and rows[1]["citation_impact"] == 0.0
    assert np.isnan(rows[0]["cd_index"]) and rows[0]["n_i"] == 0


def test_sentence_transformer_embedder_plumbing(monkeypatch):
    import sys
    import types

    from scitaste_hf.index import SentenceTransformerEmbedder

    calls = {}

    class FakeModel:
        def __init__(self, name, device=None):
            calls["init"] = (name, device)

        def encode(self, texts, **kwargs):
            calls["encode"] = kwargs
            return [[1.0, 0.0] for _ in texts]

    monkeypatch.setitem(sys.modules, "sentence_transformers", types.SimpleNamespace(SentenceTransformer=FakeModel))
    vectors = SentenceTransformerEmbedder("local/specter2", device="cpu").embed(["a", "b"])
    assert vectors.shape == (2, 2) and vectors.dtype == np.float32
    assert calls["init"] == ("local/specter2", "cpu") and calls["encode"]["normalize_embeddings"] is True
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ScitasteError, match="pip install sentence-transformers"):
        SentenceTransformerEmbedder().embed(["a"])
