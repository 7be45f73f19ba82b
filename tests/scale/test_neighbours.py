"""The approximate nearest-paper search (scitaste_hf.scale.neighbours): fixed-size lists, recall against exact
search, the same answer for any number of threads."""

import numpy as np
import pytest

from scitaste_hf.scale import neighbours as nb


@pytest.fixture(scope="module")
def clustered():
    """12,000 unit vectors in overlapping clusters of uneven size, like the embeddings of sub-disciplines."""
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(60, 32))
    members = rng.choice(60, size=12_000, p=rng.dirichlet(np.ones(60)))
    x = centres[members] + rng.normal(size=(12_000, 32))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_lists_have_a_fixed_size_whatever_the_number_of_papers(clustered):
    for m in (6_000, 12_000):
        index, lists = nb.ivf_index(clustered[:m])
        assert abs(index.nlist - m // nb.LIST_SIZE) <= 0.1 * m // nb.LIST_SIZE
        assert index.nprobe == nb.NPROBE and index.quantizer.ntotal == index.nlist == lists.nlist
        assert lists.centroids.shape == (lists.nlist, 32) and lists.first[0] == 0


def test_recall_against_exact_search(clustered):
    sims, keys = nb.approximate_search(clustered, 10)
    exact_sims, exact_keys = nb.exact_search(clustered, 10)
    found = np.mean([len(set(a) & set(b)) for a, b in zip(keys.tolist(), exact_keys.tolist())]) / 10
    # 64 of 187 lists probed, then neighbours' neighbours: most queries find every true neighbour, not all.
    assert 0.99 <= found < 1.0
    assert np.mean(keys[:, 0] == exact_keys[:, 0]) >= 0.99
    # A neighbour found has its exact similarity, so an approximate one is never nearer than the true one.
    assert np.all(sims[:, 0] <= exact_sims[:, 0] + 1e-6)
    report = nb.recall(clustered, keys, sims, sample=clustered.shape[0])
    assert report["sample"] == 12_000 and report["recall_at_k"] == pytest.approx(found)
    sampled = nb.recall(clustered, keys, sims)
    assert sampled["sample"] == nb.RECALL_SAMPLE and abs(sampled["recall_at_k"] - found) < 0.01


def test_same_neighbours_for_any_thread_count_and_per_seed(clustered):
    one = nb.approximate_search(clustered, 10, threads=1)
    two = nb.approximate_search(clustered, 10, threads=2)
    np.testing.assert_array_equal(one[1], two[1])
    np.testing.assert_array_equal(one[0], two[0])
    other = nb.ivf_index(clustered, seed=1)[0]
    same = nb.ivf_index(clustered, seed=0)[0]
    again = nb.ivf_index(clustered, seed=0)[0]
    centroids = [i.quantizer.reconstruct_n(0, i.quantizer.ntotal) for i in (same, again, other)]
    np.testing.assert_array_equal(centroids[0], centroids[1])
    assert centroids[0].shape != centroids[2].shape or not np.array_equal(centroids[0], centroids[2])


def test_auto_is_exact_below_the_limit_and_approximate_from_it(clustered, monkeypatch):
    from scitaste_hf.index.dimensions import nearest_distances

    unit = clustered[:4_000]
    exact = nb.nearest_papers(unit, 10)
    nn, knn = nearest_distances(unit, 10)
    assert exact.method == "exact" and exact.recall is None
    np.testing.assert_array_equal(exact.nn_distance, nn)
    np.testing.assert_array_equal(exact.knn_distance, knn)
    monkeypatch.setattr(nb, "EXACT_LIMIT", 4_000)
    steps = []
    ann = nb.nearest_papers(unit, 10, advance=steps.append)
    assert ann.method == "ann" and sum(steps) == 12_000
    assert ann.recall["sample"] == 1_000 and ann.recall["recall_at_k"] >= 0.99
    # Distances are exact wherever the neighbour was found, and never smaller than the exact ones.
    assert np.median(np.abs(ann.knn_distance - knn)) == pytest.approx(0, abs=1e-6)
    assert np.all(ann.nn_distance >= nn - 1e-6)


def test_the_training_samples_are_a_hash_of_the_id_and_the_coarse_one_is_bounded():
    ids = np.arange(1_000_000) * 7 + 3  # work numbers need not be consecutive
    score = nb.sample_hash(ids, seed=0)
    assert np.array_equal(score, nb.sample_hash(ids.copy(), seed=0))
    assert not np.array_equal(score, nb.sample_hash(ids, seed=1))
    for m in (1_000, 10**6, 2.5 * 10**8):
        train, coarse = nb.sample_fractions(int(m))
        lists = nb.lists_for(int(m))
        assert train == pytest.approx(min(1, max(nb.TRAIN_PER_LIST * lists, nb.MIN_TRAIN) / m)) and coarse <= train
        # the coarse sample (the Spark engine's driver trains on it) stays within 1,024 groups of 64 at any size
        assert coarse * m <= nb.COARSE_GROUPS * nb.COARSE_POINTS + 1e-6
    # uniform: the share below 1/4 is 1/4 within 4 binomial standard deviations
    assert abs(np.mean(score < 0.25) - 0.25) < 4 * np.sqrt(0.25 * 0.75 / ids.size)
    assert score.min() >= 0 and score.max() < 1


def test_a_papers_lists_are_found_through_the_groups_as_one_groups_task_finds_them(clustered, monkeypatch):
    """Lists.probes: the nearest lists among those of the paper's nearest groups, the same as merging what each
    group's own search (the Spark engine's task) finds; with every group probed, the exact nearest lists."""
    _, lists = nb.ivf_index(clustered)
    sizes = np.diff(lists.first)
    x = clustered[:600]
    everywhere = lists.probes(x, 16)
    exact = nb.ranked(np.einsum("bd,ld->bl", x, lists.centroids), 16)[1]
    assert nb.groups_probed(sizes) == sizes.size  # 187 lists in 13 groups: PROBE_LISTS covers them all
    np.testing.assert_array_equal(everywhere, exact)

    monkeypatch.setattr(nb, "PROBE_GROUPS", 3)
    monkeypatch.setattr(nb, "PROBE_LISTS", 1)
    groups = nb.probed_groups(x, lists.coarse, sizes)
    assert groups.shape == (600, 3) and np.all(np.diff(groups, axis=1) > 0)
    hits = {}
    for g in range(sizes.size):
        rows = np.flatnonzero((groups == g).any(axis=1))
        sims, found = nb.group_hits(x[rows], lists.centroids[lists.first[g]:lists.first[g + 1]], lists.first[g], 16)
        for row, s, f in zip(rows, sims, found):
            hits.setdefault(row, []).extend((-a, b) for a, b in zip(s.tolist(), f.tolist()) if b >= 0)
    merged = np.array([[c for _, c in sorted(hits[row])[:16]] for row in range(600)])
    probed = lists.probes(x, 16)
    np.testing.assert_array_equal(probed, merged)
    # three of 13 groups: the nearest list is nearly always among them, the 16 nearest often not all
    assert np.mean(probed[:, 0] == exact[:, 0]) > 0.95 and not np.array_equal(probed, exact)
    # a group's lists are numbered from its first, and every probe lies in a probed group
    owner = np.searchsorted(lists.first, probed, side="right") - 1
    assert all(set(o) <= set(g) for o, g in zip(owner.tolist(), groups.tolist()))


def test_the_groups_probed_stop_growing_at_the_bound():
    for lists in (10, 1_000, 100_000, 4 * 10**6):
        groups = nb.groups_for(lists)
        sizes = np.full(groups, lists // groups)
        probed = nb.groups_probed(sizes)
        assert probed <= groups and probed * lists / groups >= min(lists, nb.PROBE_LISTS) - groups
    assert nb.groups_probed(np.full(nb.COARSE_GROUPS, 4000)) == nb.PROBE_GROUPS
    assert nb.groups_probed(np.array([3, 0, 5])) == 2  # a group without lists is never probed
