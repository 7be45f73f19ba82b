"""Field weights of the simulated world (issue 20): per-discipline latent loadings, the packaged preset and its
true vectors, and the default world left as it was."""

import json

import numpy as np
import pytest
from scipy.special import ndtr

from scitaste_hf.errors import ScitasteError
from scitaste_hf.index.weights import derive_weights
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.simworld import latent
from scitaste_hf.simworld.world import generate


def test_equal_loadings_for_every_discipline_give_the_default_world(world):
    """The per-discipline path draws the same numbers as the default one: traits drawn with the default loadings
    for every group are the default traits bit for bit, and a world whose disciplines all take them is the
    default world, reference for reference and title for title."""
    group = np.arange(3000) % 6
    plain = latent.draw(np.random.default_rng(5), group.size)
    grouped = latent.draw(np.random.default_rng(5), group.size, (latent.DEFAULT,) * 6, group)
    assert all(np.array_equal(getattr(plain, k), getattr(grouped, k)) for k in (*latent.TRAITS, "citation", "journal"))
    names = dict.fromkeys(c.discipline for c in world.taxonomy.cells)
    same = generate(470, seed=3, field_weights=latent.FieldWeights("same", {d: latent.DEFAULT for d in names}, {}, ""))
    assert np.array_equal(same.ref_idx, world.ref_idx) and np.array_equal(same.journal, world.journal)
    assert same.titles == world.titles


@pytest.mark.parametrize("loadings", ["distinct", "default"])
def test_each_discipline_draws_its_own_loadings(loadings):
    """Traits correlate as the discipline's loadings say: corr(trait, citation) = common x citation's common
    loading + sqrt(1 - common^2) x the citation's specific loading on that trait's own part, corr(trait, trait')
    = the product of their common loadings, corr(citation, journal) = the products of both factors' loadings
    summed. The default world's loadings (specific parts included) beside the preset's (none)."""
    preset = (latent.load_field_weights("distinct") if loadings == "distinct"
              else latent.FieldWeights("default", {"all": latent.DEFAULT}, {}, ""))
    names = list(preset.disciplines)
    group = np.repeat(np.arange(len(names)), 40_000)
    traits = latent.draw(np.random.default_rng(0), group.size, tuple(preset.disciplines.values()), group)
    for k, name in enumerate(names):
        x = preset.disciplines[name]
        mine = group == k
        for trait in latent.TRAITS:
            r = np.corrcoef(getattr(traits, trait)[mine], traits.citation[mine])[0, 1]
            expected = x.common[trait] * x.citation[0] + np.sqrt(1 - x.common[trait] ** 2) * x.specific[trait]
            assert r == pytest.approx(expected, abs=0.02), (name, trait)
        r = np.corrcoef(traits.breadth[mine], traits.team[mine])[0, 1]
        assert r == pytest.approx(x.common["breadth"] * x.common["team"], abs=0.02), name
        r = np.corrcoef(traits.citation[mine], traits.journal[mine])[0, 1]
        assert r == pytest.approx(x.citation[0] * x.journal[0] + x.citation[1] * x.journal[1], abs=0.02), name
        assert np.std(traits.journal[mine]) == pytest.approx(1.0, abs=0.02)


def test_the_preset_gives_visibly_different_true_vectors():
    """The preset's true vectors (measured on the world's index, as its ``measured`` says) differ between the
    disciplines by more than the recovery tolerance, so that recovering them tests something."""
    preset = latent.load_field_weights("distinct")
    true = preset.true_weights
    assert set(true) == set(preset.disciplines) and preset.measured.startswith("bench/bench_field_weights.py")
    for vector in true.values():
        assert sum(vector.values()) == pytest.approx(100, abs=0.35) and list(vector) == list(DIMENSIONS)
    spread = {k: max(v[k] for v in true.values()) - min(v[k] for v in true.values()) for k in DIMENSIONS}
    assert spread["journal_impact"] > 2 * 3 and spread["citation_impact"] > 2 * 3
    assert sum(s > 2 * 4 for k, s in spread.items() if k in DIMENSIONS[1:-1]) >= 2


def latent_records(loadings, n, seed):
    """Dimension scores (0-100) of ``n`` papers of one discipline straight from its traits: A the citation trait,
    B-F theirs, G the journal trait."""
    t = latent.draw(np.random.default_rng(seed), n, (loadings,))
    columns = [t.citation, *(getattr(t, name) for name in latent.TRAITS), t.journal]
    return np.round(100 * ndtr(np.column_stack(columns)), 2)


def test_the_derivation_sees_each_disciplines_structure():
    """On the traits themselves (no index between), the paper's derivation tells the disciplines apart as the
    preset means: finance's citations and journals share the venue factor, so G weighs several times more there
    than in physics (about 33% against 11%), and team collaboration leads medicine's B-F (about 40%)."""
    preset = latent.load_field_weights("distinct").disciplines
    derived = {d: derive_weights(latent_records(preset[d], 300, seed=1), "rf")["weights"]
               for d in ("physics", "finance", "medicine")}
    assert derived["finance"]["journal_impact"] > 2 * derived["physics"]["journal_impact"]
    middle = DIMENSIONS[1:-1]
    assert max(middle, key=derived["medicine"].get) == "team_collaboration"
    assert max(middle, key=derived["physics"].get) != "team_collaboration"


@pytest.mark.parametrize(("document", "message"), [
    ({"disciplines": {}}, "non-empty"),
    ({"disciplines": {"physics": {"common": {t: 0.5 for t in latent.TRAITS}, "citation": [0.9, 0.5],
                                  "journal": [0.0, 0.9]}}}, "physics, citation: the squared loadings"),
    ({"disciplines": {"physics": {"common": {"breadth": 0.5}, "citation": [0.5, 0.5], "journal": [0.0, 0.9]}}},
     "common needs a loading for each"),
    ({"disciplines": {"physics": {"common": {t: 1.5 for t in latent.TRAITS}, "citation": [0.5, 0.5],
                                  "journal": [0.0, 0.9]}}}, "a number in -1..1"),
    ({"disciplines": {"physics": {"common": {t: 0.5 for t in latent.TRAITS}, "citation": [0.6, 0.5],
                                  "specific": {t: 0.3 for t in latent.TRAITS}, "journal": [0.0, 0.9]}}},
     "physics: the citation trait's squared loadings"),
    ({"disciplines": {"physics": {"common": {t: 0.5 for t in latent.TRAITS}, "citation": [0.6, 0.5],
                                  "specific": {"team": 0.3}, "journal": [0.0, 0.9]}}},
     "specific needs a loading for each"),
])
def test_a_field_weights_file_is_checked(tmp_path, document, message):
    path = tmp_path / "fw.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ScitasteError, match=message):
        latent.load_field_weights(str(path))


def test_a_discipline_without_loadings_stops_the_world():
    one = latent.FieldWeights("mine", {"physics": latent.DEFAULT}, {}, "")
    with pytest.raises(ScitasteError, match="no loadings for discipline 'mathematics'"):
        generate(470, seed=0, field_weights=one)


def test_mirror_serve_takes_field_weights_for_the_simulated_world_only():
    import argparse

    from scitaste_hf.cli import mirror

    parser = argparse.ArgumentParser()
    mirror.add_arguments(parser)
    args = parser.parse_args(["serve", "--field-weights", "distinct", "--papers", "470"])
    assert args.field_weights == "distinct"
    recorded = parser.parse_args(["serve", "--world", "recorded", "--field-weights", "distinct"])
    with pytest.raises(ScitasteError, match="--field-weights shapes the simulated world"):
        mirror.run(recorded)
    unknown = parser.parse_args(["serve", "--field-weights", "no-such-preset"])
    with pytest.raises(ScitasteError, match="neither a preset"):
        mirror.run(unknown)
