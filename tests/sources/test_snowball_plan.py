"""The snowball planner: pure computation, checked against the listings a synthetic OpenAlex would return."""

from __future__ import annotations

import math
import random

import pytest
from replay_server import SyntheticWorks

from scitaste_hf.sources.snowball import MAX_OR_VALUES, plan_snowball


def _graph_inputs(graph: SyntheticWorks, ks: list[int]):
    ids = [f"W{k}" for k in ks]
    refs = [[f"W{r}" for r in graph.references[k]] for k in ks]
    return ids, refs, [len(graph.citers[k]) for k in ks]


def _execute(graph: SyntheticWorks, plan, page: int = 200) -> tuple[set[str], set[str], int]:
    """References, citers and requests (pages) of the plan's listings on the synthetic graph."""
    refs: set[str] = set()
    citers: set[str] = set()
    requests = 0
    for kind, flt in plan.filters():
        key, values = flt.split(":", 1)
        nums = [int(v[1:]) for v in values.split("|")]
        assert len(nums) <= MAX_OR_VALUES
        listed = graph.listing(key, nums)
        requests += max(1, math.ceil(len(listed) / page))
        (refs if kind == "references" else citers).update(f"W{k}" for k in listed)
    return refs, citers, requests


@pytest.mark.parametrize("pools", [(300, 400), (40, 80), (10, 20)])
def test_plan_returns_every_reference_and_citer_within_ten_percent_of_the_bound(pools):
    graph = SyntheticWorks(500, seed=3, ref_pool=pools[0], citer_pool=pools[1])
    ks = list(range(1, 501))
    plan = plan_snowball(*_graph_inputs(graph, ks))
    refs, citers, requests = _execute(graph, plan)
    want_refs = {f"W{r}" for k in ks for r in graph.references[k]}
    want_citers = {f"W{c}" for k in ks for c in graph.citers[k]}
    assert refs == want_refs and citers == want_citers
    bound = math.ceil(len(want_refs) / 200) + math.ceil(len(want_citers) / 200)
    # Fields of 125 cannot fit in one listing of 100; the plan still stays close to the bound.
    assert requests <= 1.10 * bound, (requests, bound)


def test_fields_stay_together_whatever_the_input_order():
    graph = SyntheticWorks(240, seed=1, field_size=80, ref_pool=40, citer_pool=80)
    ks = list(range(1, 241))
    random.Random(0).shuffle(ks)
    plan = plan_snowball(*_graph_inputs(graph, ks))
    fields = [{(int(w[1:]) - 1) // 80 for w in group} for group in plan.reference_listings]
    assert sorted(len(g) for g in plan.reference_listings) == [80, 80, 80]
    assert all(len(f) == 1 for f in fields)
    assert {frozenset(g) for g in plan.citer_listings} == {
        frozenset(w for w in group if graph.citers[int(w[1:])]) for group in plan.reference_listings}


def test_a_left_over_work_gets_its_few_new_references_by_id():
    shared = [f"W{9000 + i}" for i in range(150)]
    ids = [f"W{i}" for i in range(1, 102)]
    refs = [[*shared, f"W{8000 + i}"] for i in range(100)] + [[*shared[:10], "W7777"]]
    plan = plan_snowball(ids, refs, [1] * 101)
    assert plan.reference_listings == (tuple(ids[:100]),)
    assert plan.reference_ids == ("W7777",)
    assert [len(g) for g in plan.citer_listings] == [100, 1]


def test_focal_and_known_works_are_not_fetched_again():
    ids = ["W1", "W2", "W3"]
    plan = plan_snowball(ids, [["W2", "W50"], ["W3"], []], [0, 0, 4], known=["W50"])
    # W1's references are W2 (focal) and W50 (known), W2's is W3 (focal): nothing to list, nothing to fetch.
    assert plan.reference_listings == () and plan.reference_ids == ()
    assert plan.citer_listings == (("W3",),)
    assert plan.filters() == [("citers", "cites:W3")]


def test_many_left_over_ids_go_in_batches_of_one_hundred():
    shared = [f"W{5000 + i}" for i in range(600)]
    ids = [f"W{i}" for i in range(1, 101)] + ["W999"]
    refs = [shared] * 100 + [[*shared, *(f"W{7000 + i}" for i in range(150))]]
    plan = plan_snowball(ids, refs, [0] * 101)
    kinds = [flt.split(":")[0] for _, flt in plan.filters()]
    # The work with the most references seeds the first listing; the last focal work's 600 are all covered.
    assert plan.reference_listings[0][0] == "W999"
    assert kinds.count("cited_by") == 1 and kinds.count("openalex") == 0


@pytest.mark.parametrize("args, message", [
    ((["W1", "W2"], [[]], [0, 0]), "parallel"),
    ((["W1", "W1"], [[], []], [0, 0]), "repeat"),
])
def test_bad_input_is_one_clear_error(args, message):
    with pytest.raises(ValueError, match=message):
        plan_snowball(*args)
