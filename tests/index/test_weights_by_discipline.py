"""Field-specific weights: `weights derive --by discipline` (recovery, the transfer table, the verdict), `weights
fit --by discipline`, and per-discipline weights files wherever weights apply (the index's composite, Part B)."""

import argparse
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.stats import norm, spearmanr

from scitaste_hf.cli import weights as cli
from scitaste_hf.errors import ScitasteError
from scitaste_hf.index import JournalTable, compute_index
from scitaste_hf.index.weights import (
    MIN_RECORDS_BY_DISCIPLINE,
    SHARED,
    SHARED_SPEARMAN_MIN,
    SHARED_WAPE_MAX,
    derive_by_discipline,
    load_records_by_discipline,
    transfer,
)
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.weights import (
    DEFAULT_WEIGHTS,
    DisciplineWeights,
    composite,
    composites,
    load_weights,
    parse_weights,
    validate_weights,
    vector_for,
)

#: Latent loadings of a synthetic discipline, as in the simulated world (scitaste_hf.simworld.latent): B..F load
#: on a common factor, A (citations) and G (journal) on the common and a venue factor.
PHYSICS = {"bf": 0.8, "ac": 0.9, "av": 0.34, "gc": -0.13, "gv": 0.97}
FINANCE = {"bf": 0.6, "ac": 0.5, "av": 0.6, "gc": 0.5, "gv": 0.6}
#: Each generator's true vector, in percent: what the paper's derivation (ensemble) gives on 20,000 of its
#: records, its population value (computed once; the derivation is deterministic for given records).
TRUE = {
    "physics": {"citation_impact": 31.7, "knowledge_breadth": 11.1, "semantic_novelty": 11.8, "disruptiveness": 10.0,
                "conceptual_innovation": 11.0, "team_collaboration": 10.2, "journal_impact": 14.2},
    "finance": {"citation_impact": 39.0, "knowledge_breadth": 4.4, "semantic_novelty": 3.9, "disruptiveness": 4.4,
                "conceptual_innovation": 4.4, "team_collaboration": 4.6, "journal_impact": 39.4},
}
#: The world issue's recovery tolerance (issue 17): +-3 points for A and G, +-4 for B-F.
TOLERANCE = {k: 3.0 if k in ("citation_impact", "journal_impact") else 4.0 for k in DIMENSIONS}


def latent_dims(n, seed, bf, ac, av, gc, gv):
    """Dimension scores (0-100, 2 decimals) of ``n`` records of one synthetic discipline."""
    rng = np.random.default_rng(seed)
    common, venue = rng.standard_normal(n), rng.standard_normal(n)

    def mix(loadings, factors):
        own = np.sqrt(max(0.0, 1.0 - sum(x * x for x in loadings)))
        return sum(w * f for w, f in zip(loadings, factors)) + own * rng.standard_normal(n)

    columns = [mix((ac, av), (common, venue)), *(mix((bf,), (common,)) for _ in range(5)),
               mix((gc, gv), (common, venue))]
    return np.round(100 * norm.cdf(np.column_stack(columns)), 2)


def world(parts):
    """Records of several disciplines: ``parts`` maps discipline -> (loadings, n, seed)."""
    dims = np.vstack([latent_dims(n, seed, **loadings) for loadings, n, seed in parts.values()])
    labels = np.array([d for d, (_, n, _) in parts.items() for _ in range(n)], dtype=object)
    return dims, labels


def write_records(path, dims, disciplines, weights=None):
    """A Parquet record set; composites from ``weights`` (per discipline when a DisciplineWeights)."""
    rows = [dict(zip(DIMENSIONS, map(float, row))) for row in dims]
    pq.write_table(pa.table({
        "discipline": list(disciplines), "dimension_scores": rows,
        "innovation_score": [composite(r, weights, d) for r, d in zip(rows, disciplines)]}), path)
    return path


def run_cli(*argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(list(argv)))


def vector(**weights):
    """A weight vector: the given dimensions, the rest sharing what is left equally."""
    rest = [k for k in DIMENSIONS if k not in weights]
    left = 1.0 - sum(weights.values())
    return {k: weights.get(k, left / len(rest)) for k in DIMENSIONS}


A_HEAVY = vector(citation_impact=0.6, journal_impact=0.1)
G_HEAVY = vector(citation_impact=0.1, journal_impact=0.5)


# -- the weights file ------------------------------------------------------------------------------------------

def test_a_file_holds_one_vector_or_one_per_discipline(tmp_path):
    single = tmp_path / "one.json"
    single.write_text(json.dumps({"weights": A_HEAVY}))
    assert load_weights(str(single)) == validate_weights(A_HEAVY)
    per = tmp_path / "per.json"
    per.write_text(json.dumps({"weights": {"physics": A_HEAVY, "finance": G_HEAVY, "default": dict(DEFAULT_WEIGHTS)}}))
    loaded = load_weights(str(per))
    assert isinstance(loaded, DisciplineWeights) and list(loaded.vectors) == ["physics", "finance"]
    assert vector_for(loaded, "physics") == A_HEAVY and vector_for(loaded, "finance") == G_HEAVY
    assert vector_for(loaded, "biology") == dict(DEFAULT_WEIGHTS) == vector_for(loaded, None)
    assert loaded.to_json()["default"] == dict(DEFAULT_WEIGHTS)
    # raw contributions: each vector normalised by its own sum
    raw = parse_weights({"raw": {"physics": {k: 2.0 for k in DIMENSIONS}, "finance": {k: 5.0 for k in DIMENSIONS}}})
    assert vector_for(raw, "physics") == vector_for(raw, "finance") == pytest.approx({k: 1 / 7 for k in DIMENSIONS})
    # a file with only the default is that one vector
    assert parse_weights({"weights": {"default": A_HEAVY}}) == A_HEAVY


@pytest.mark.parametrize(("data", "message"), [
    ({"weights": {"physics": A_HEAVY, "finance": {**G_HEAVY, "journal_impact": 0.9}}},
     "weights file f.json, finance: weights must sum to 1"),
    ({"weights": {"physics": A_HEAVY, "citation_impact": 0.3}}, "mixes numbers and per-discipline vectors"),
    ({"weights": {"Physics": A_HEAVY}}, "discipline 'Physics'; write 'physics'"),
    ({"weights": {" ": A_HEAVY}}, "empty discipline name"),
    ({"weights": {"physics": [0.5, 0.5]}}, "f.json: weight vector must have exactly .*; unknown physics"),
    ({"raw": {"physics": dict.fromkeys(DIMENSIONS, 0)}}, "f.json, physics: 'raw' must map keys to positive numbers"),
    ({"vectors": {}}, "must hold a 'weights' or a 'raw' object"),
])
def test_bad_files_are_one_line_errors(data, message):
    with pytest.raises(ScitasteError, match=message) as caught:
        parse_weights(data, "f.json")
    assert "\n" not in str(caught.value)


def test_a_discipline_without_a_vector_and_no_default_is_named():
    weights = parse_weights({"weights": {"physics": A_HEAVY}}, "f.json")
    with pytest.raises(ScitasteError, match=r"f\.json has no vector for discipline 'finance' and no 'default'"):
        vector_for(weights, "finance")


def test_one_vector_code_refuses_per_discipline_weights():
    weights = parse_weights({"weights": {"physics": A_HEAVY}}, "f.json")
    with pytest.raises(ScitasteError, match=r"f\.json holds one weight vector per discipline"):
        validate_weights(weights)
    with pytest.raises(ScitasteError, match="physics: weights must sum to 1"):
        DisciplineWeights({"physics": dict.fromkeys(DIMENSIONS, 0.5)})


def test_composite_uses_the_records_discipline():
    dims = dict(zip(DIMENSIONS, [80.0, 10, 20, 30, 40, 50, 5.0]))
    weights = DisciplineWeights({"physics": A_HEAVY, "finance": G_HEAVY})
    assert composite(dims, weights, "physics") == composite(dims, A_HEAVY) == round(
        sum(A_HEAVY[k] * dims[k] for k in DIMENSIONS), 2)
    assert composite(dims, weights, "finance") == composite(dims, G_HEAVY)
    assert composite(dims, weights, "physics") - composite(dims, weights, "finance") == pytest.approx(57.5 - 22.5)


# -- the index's composite -------------------------------------------------------------------------------------

JOURNALS = JournalTable([{"name": "J", "impact_factor": 3.0, "jcr_quartile": "Q2", "cas_zone": 1}])


@pytest.fixture()
def four(build):
    papers = [{"id": f"P{i}", "date": f"201{i}-01-01", "citation_count": c, "embedding": [1.0, i / 4],
               "journal": "J" if i % 2 else None, "author_count": i + 1, "countries": ["US"] * (i % 3)}
              for i, c in enumerate([5, 0, 2, 9])]
    return build(papers, [("P3", "P0"), ("P2", "P0"), ("P1", "R1"), ("P3", "R1")],
                 [{"id": "R1", "date": "2005-01-01", "embedding": [0.0, 1.0]}])


def test_composites_of_many_records_are_each_records_composite():
    # awkward floats: two-decimal scores whose weighted sums land on rounding ties, zeros, the extremes, and
    # disciplines interleaved, with and without a vector of their own
    rng = np.random.default_rng(7)
    n = 5000
    columns = {k: np.round(rng.uniform(0, 100, n), 2) for k in DIMENSIONS}
    columns["disruptiveness"][:50] = 0.0
    columns["citation_impact"][50:100] = 100.0
    columns["journal_impact"][100:150] = 0.005
    labels = rng.choice(["physics", "finance", "biology"], n)
    for weights, disciplines in ((None, None), (A_HEAVY, None),
                                 (DisciplineWeights({"physics": A_HEAVY, "finance": G_HEAVY}, dict(DEFAULT_WEIGHTS)),
                                  labels)):
        many = composites(columns, weights, disciplines)
        one = [composite({k: columns[k][i] for k in DIMENSIONS}, weights, None if disciplines is None else
                         disciplines[i]) for i in range(n)]
        assert many == one  # float for float, not approximately
    with pytest.raises(ScitasteError, match="got 2 disciplines for 5000 records"):
        composites(columns, None, ["physics", "finance"])


def test_the_index_composite_uses_each_papers_disciplines_vector(four):
    weights = DisciplineWeights({"physics": A_HEAVY, "finance": G_HEAVY}, default=dict(DEFAULT_WEIGHTS))
    labels = ["physics", "finance", None, "physics"]
    rows = compute_index(four, JOURNALS, weights=weights, disciplines=labels).to_pylist()
    plain = compute_index(four, JOURNALS).to_pylist()
    for row, label, same in zip(rows, labels, plain):
        dims = {k: row[k] for k in DIMENSIONS}
        assert dims == {k: same[k] for k in DIMENSIONS}  # the weights change the composite only
        assert row["innovation_score"] == composite(dims, {"physics": A_HEAVY, "finance": G_HEAVY}.get(
            label, DEFAULT_WEIGHTS))
    assert rows[2]["innovation_score"] == plain[2]["innovation_score"]
    assert rows[0]["innovation_score"] != plain[0]["innovation_score"]


def test_the_index_needs_the_disciplines_for_per_discipline_weights(four):
    weights = DisciplineWeights({"physics": A_HEAVY}, source="w.json")
    with pytest.raises(ScitasteError, match=r"w\.json holds one weight vector per discipline; the index needs"):
        compute_index(four, JOURNALS, weights=weights)
    with pytest.raises(ScitasteError, match="no vector for discipline 'finance'"):
        compute_index(four, JOURNALS, weights=weights, disciplines=["physics", "finance", "physics", "physics"])
    with pytest.raises(ScitasteError, match="got 2 disciplines for 4 papers"):
        compute_index(four, JOURNALS, weights=weights, disciplines=["physics", "physics"])


# -- weights fit --by discipline -------------------------------------------------------------------------------

def test_fit_recovers_each_disciplines_vector(tmp_path):
    dims, labels = world({"physics": (PHYSICS, 120, 1), "finance": (FINANCE, 120, 2), "biology": (PHYSICS, 120, 3)})
    truth = DisciplineWeights({"physics": A_HEAVY, "finance": G_HEAVY}, default=dict(DEFAULT_WEIGHTS))
    path = write_records(tmp_path / "r.parquet", dims, labels, truth)
    assert run_cli("fit", "--records", str(path), "--by", "discipline", "--json", str(tmp_path / "fit.json")) == 0
    result = json.loads((tmp_path / "fit.json").read_text())
    assert list(result["weights"]) == ["physics", "biology", "finance"]  # the benchmark's order
    for discipline, expected in (("physics", A_HEAVY), ("finance", G_HEAVY), ("biology", DEFAULT_WEIGHTS)):
        assert result["weights"][discipline] == pytest.approx(dict(expected), abs=3e-4)
        assert result["disciplines"][discipline]["residual_rmse"] < 0.005
    # The pooled fit cannot: no single vector made these composites.
    dims_all, score, _ = load_records_by_discipline(path, need_score=True)
    from scitaste_hf.index.weights import fit_weights
    assert fit_weights(dims_all, score)["residual_rmse"] > 1.0
    # The fitted file is a per-discipline weights file that reproduces the composites.
    refit = load_weights(str(tmp_path / "fit.json"))
    assert all(abs(composite(dict(zip(DIMENSIONS, row)), refit, d) - s) <= 0.011
               for row, d, s in zip(dims_all, labels, score))


# -- the transfer statistics -----------------------------------------------------------------------------------

def test_transfer_of_a_vector_onto_itself_loses_nothing():
    dims, _ = world({"physics": (PHYSICS, 200, 4)})
    own = np.array([A_HEAVY[k] for k in DIMENSIONS])
    cell = transfer(dims, own, own, n_resamples=200)
    assert cell["spearman"]["value"] == pytest.approx(1.0) and cell["spearman"]["interval"] == pytest.approx([1, 1])
    assert cell["top_decile_overlap"]["value"] == 1.0 and cell["top_decile_overlap"]["interval"] == [1.0, 1.0]
    assert cell["mean_abs_difference"]["value"] == 0.0 and cell["wape"]["interval"] == [0.0, 0.0]


def test_transfer_point_values_match_a_direct_computation():
    dims, _ = world({"finance": (FINANCE, 300, 5)})
    own, other = (np.array([v[k] for k in DIMENSIONS]) for v in (G_HEAVY, A_HEAVY))
    cell = transfer(dims, own, other, n_resamples=300, seed=3)
    x, y = dims @ own, dims @ other
    top_x, top_y = set(np.argsort(-x)[:30]), set(np.argsort(-y)[:30])
    assert cell["spearman"]["value"] == pytest.approx(spearmanr(x, y).statistic)
    assert cell["top_decile_overlap"]["value"] == len(top_x & top_y) / 30
    assert cell["mean_abs_difference"]["value"] == pytest.approx(np.abs(x - y).mean())
    assert cell["wape"]["value"] == pytest.approx(np.abs(x - y).sum() / x.sum())
    for stat in ("spearman", "top_decile_overlap", "mean_abs_difference", "wape"):
        lo, hi = cell[stat]["interval"]
        assert lo <= cell[stat]["value"] <= hi and lo < hi
    assert cell["n"] == 300


def test_a_resampled_top_decile_counts_each_drawn_copy():
    from scitaste_hf.index.weights import _top_counts

    values = np.array([5.0, 9.0, 1.0, 7.0])
    counts = np.array([[0, 1, 3, 0], [2, 0, 0, 2]])
    # resample 1 draws 9, 1, 1, 1: its top 2 are 9 and one 1; resample 2 draws 5, 5, 7, 7: its top 2 are the 7s
    assert _top_counts(values, counts, 2).tolist() == [[0, 1, 1, 0], [0, 0, 0, 2]]


def test_too_few_records_in_a_discipline_is_one_line_naming_it(tmp_path):
    dims, labels = world({"physics": (PHYSICS, 80, 1), "finance": (FINANCE, MIN_RECORDS_BY_DISCIPLINE - 1, 2)})
    path = write_records(tmp_path / "r.parquet", dims, labels)
    with pytest.raises(ScitasteError, match=f"discipline 'finance' has {MIN_RECORDS_BY_DISCIPLINE - 1} records; "
                                            f"deriving weights per discipline needs at least "
                                            f"{MIN_RECORDS_BY_DISCIPLINE}"):
        run_cli("derive", "--records", str(path), "--by", "discipline")


@pytest.mark.parametrize(("column", "message"), [
    (None, "have no discipline column; --by discipline needs one"),
    (["physics", None, "finance"], "1 record(s) have no discipline, first at row 1"),
])
def test_records_without_disciplines_are_refused(tmp_path, column, message):
    dims, _ = world({"physics": (PHYSICS, 3, 1)})
    table = {"dimension_scores": [dict(zip(DIMENSIONS, map(float, row))) for row in dims]}
    if column is not None:
        table["discipline"] = pa.array(column, pa.string())
    pq.write_table(pa.table(table), tmp_path / "r.parquet")
    with pytest.raises(ScitasteError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_records_by_discipline(tmp_path / "r.parquet", need_score=False)


def test_the_transfer_bootstrap_options_need_by_discipline(tmp_path):
    with pytest.raises(ScitasteError, match="--n-resamples and --seed set the transfer table's bootstrap"):
        run_cli("derive", "--records", str(tmp_path), "--n-resamples", "10")


# -- weights derive --by discipline on synthetic disciplines (slow: the paper's derivation, many times) --------

@pytest.mark.slow
def test_derive_by_discipline_recovers_each_vector_and_shows_the_loss(tmp_path, capsys):
    dims, labels = world({"physics": (PHYSICS, 1000, 11), "finance": (FINANCE, 1000, 12)})
    path = write_records(tmp_path / "r.parquet", dims, labels)
    out = tmp_path / "derived.json"
    assert run_cli("derive", "--records", str(path), "--by", "discipline", "--n-resamples", "400",
                   "--json", str(out)) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    for discipline, truth in TRUE.items():
        derived = result["disciplines"][discipline]
        assert derived["n_records"] == 1000
        for key in DIMENSIONS:
            assert abs(100 * derived["weights"][key] - truth[key]) <= TOLERANCE[key], (discipline, key)
    # The true vectors differ far beyond the tolerance (G by 25 points), and the derived ones do too.
    assert 100 * (result["disciplines"]["finance"]["weights"]["journal_impact"]
                  - result["disciplines"]["physics"]["weights"]["journal_impact"]) > 20
    # The loss: each discipline's vector reproduces the other's composites worse than the shared one, which is
    # partly the other's own; and the shared vector misses finance's by more than Scheme 2's top grade band.
    shared = result["transfer"][SHARED]
    for source, target in (("physics", "finance"), ("finance", "physics")):
        other = result["transfer"][source][target]
        assert other["wape"]["interval"][0] > shared[target]["wape"]["interval"][1] > SHARED_WAPE_MAX
        assert other["spearman"]["interval"][1] < shared[target]["spearman"]["interval"][0] < 1.0
        assert other["top_decile_overlap"]["value"] < shared[target]["top_decile_overlap"]["value"] < 1.0
    assert shared["finance"]["wape"]["interval"][0] > SHARED_WAPE_MAX
    assert result["verdict"]["shared_defensible"] is False and "finance" in result["verdict"]["failing"]
    assert "NOT defensible" in printed and "rule: the shared vector is defensible when" in printed
    # The JSON is a per-discipline weights file: each discipline's vector, the shared one as the default.
    loaded = load_weights(str(out))
    assert vector_for(loaded, "finance") == result["disciplines"]["finance"]["weights"]
    assert vector_for(loaded, "biology") == result["shared"]["weights"]


@pytest.mark.slow
def test_derive_by_discipline_finds_no_loss_where_disciplines_agree(tmp_path):
    dims, labels = world({"physics": (PHYSICS, 400, 21), "finance": (PHYSICS, 400, 22)})
    result = derive_by_discipline(dims, labels, "rf", n_resamples=300)
    for cell in result["transfer"][SHARED].values():
        assert cell["spearman"]["interval"][0] >= SHARED_SPEARMAN_MIN
        assert cell["wape"]["interval"][1] < SHARED_WAPE_MAX
    assert result["verdict"] == {**result["verdict"], "shared_defensible": True, "failing": {}}
