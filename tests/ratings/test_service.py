"""The ratings service and its store: assignment, blind display, hostile input, replays, concurrency, pseudonyms, the
expert_ratings export and the Hub copy."""

import itertools
import os
import threading

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.net.guard import SubmissionError
from scitaste_hf.ratings import NUMBERS, RatingError, Ratings, RatingStore, blind, check_scores
from scitaste_hf.ratings.service import BLIND_FIELDS
from scitaste_hf.schema import DIMENSIONS, DISCIPLINES


def _gold(per_discipline=6, disciplines=DISCIPLINES[:2]):
    rng = np.random.default_rng(0)
    return [{"bibcode": f"{d[:3]}{i:03d}", "discipline": d, "title": f"Paper {i} of {d}", "abstract": "Text.",
             "year": 2000 + i, "journal_name": "Journal", "journal_tier": "Q1", "doi": None,
             "innovation_score": round(float(rng.uniform(10, 90)), 2),
             "dimension_scores": {k: round(float(rng.uniform(5, 95)), 2) for k in DIMENSIONS}}
            for d in disciplines for i in range(per_discipline)]


GOLD = _gold()
PHYSICS = [r["bibcode"] for r in GOLD if r["discipline"] == "physics"]


@pytest.fixture()
def ratings(tmp_path):
    service = Ratings(tmp_path / "data", GOLD, rate_limit=(10_000, 3600))
    yield service
    service.close()


def _rate(service, rater, discipline="physics", value=50.0):
    paper = service.next_paper(rater, discipline)
    return paper, service.rate(rater, paper["bibcode"], [value] * len(NUMBERS))


def test_a_rater_sees_only_the_blind_fields(ratings):
    paper = ratings.next_paper("local:ann", "physics")
    assert set(paper) == set(BLIND_FIELDS) and "innovation_score" not in paper and "journal_tier" not in paper
    record = next(r for r in GOLD if r["bibcode"] == paper["bibcode"])
    assert paper == {k: record[k] for k in BLIND_FIELDS} == blind(record)


def _assignment_order_holds(ratings, raters, seed):
    """Raters arrive in a shuffled order and rate until they have seen everything; at every assignment: never a
    paper twice, never a fourth rating while a paper open to the rater has fewer than three, and never a new paper
    while one open to the rater is part-way to three (panels are completed first, issue 35)."""
    rng = np.random.default_rng(seed)
    done = set()
    history = []
    while len(done) < len(raters):
        rater = raters[rng.integers(len(raters))]
        if rater in done:
            continue
        counts = {b: 0 for b in PHYSICS}
        for row in ratings.store.ratings():
            counts[row["bibcode"]] += 1
        seen = {b for r, b in history if r == rater}
        paper = ratings.next_paper(rater, "physics")
        if paper is None:
            assert seen == set(PHYSICS)  # nothing left only once the rater has seen every paper
            done.add(rater)
            continue
        assert paper["bibcode"] not in seen  # never the same paper twice
        open_counts = [counts[b] for b in PHYSICS if b not in seen]
        given = counts[paper["bibcode"]]
        if any(c < 3 for c in open_counts):
            assert given == max(c for c in open_counts if c < 3)
        else:
            assert given == min(open_counts)
        history.append((rater, paper["bibcode"]))
        ratings.rate(rater, paper["bibcode"], [float(rng.integers(0, 101))] * len(NUMBERS))
    return history


def test_every_paper_gets_three_raters_before_any_gets_a_fourth(ratings):
    raters = [f"local:r{i}" for i in range(8)]
    history = _assignment_order_holds(ratings, raters, 5)
    assert [sum(b == p for _, b in history) for p in PHYSICS] == [len(raters)] * len(PHYSICS)


def test_a_small_panel_completes_papers_of_three_first(ratings):
    """Four raters taking turns: 13 ratings complete four papers of three (the issue's panel put 13 ratings on 13
    papers, and no statistic came before about 150 ratings a discipline)."""
    raters = ["local:a", "local:b", "local:c", "local:d"]
    for k in range(13):
        paper = ratings.next_paper(raters[k % 4], "physics")
        ratings.rate(raters[k % 4], paper["bibcode"], [50.0] * len(NUMBERS))
    counts = sorted(sum(r["bibcode"] == b for r in ratings.store.ratings()) for b in PHYSICS)
    assert counts == [0] * (len(PHYSICS) - 5) + [1, 3, 3, 3, 3]


def test_concurrent_raters_open_panels_of_three(ratings):
    """Raters who start together (each paper held open, none rated yet) share papers three at a time: with 6
    papers, the first 18 go three to a paper, and at most three hold a paper before every paper has three."""
    taken = [ratings.next_paper(f"local:r{i}", "physics")["bibcode"] for i in range(18)]
    assert sorted(taken.count(b) for b in PHYSICS) == [3] * len(PHYSICS)
    assert all(taken[:k].count(b) <= 3 for k in range(18) for b in PHYSICS)
    assert len(set(taken[:3])) == 1 and len(set(taken[:6])) == 2  # a panel is filled before the next opens


def test_an_open_paper_is_shown_again_and_a_lease_runs_out(tmp_path):
    store = RatingStore(tmp_path, lease=100.0)
    papers = ["a", "b"]
    assert store.assign("x", "physics", papers, now=0.0) == store.assign("x", "physics", papers, now=1.0)
    first = store.assign("x", "physics", papers, now=2.0)
    # with panels of one, another rater is steered away from x's open paper while the lease holds, not after
    assert store.assign("y", "physics", papers, now=50.0, panel=1) != first
    store.release("y")
    assert store.assign("z", "physics", papers, now=500.0, panel=1) in papers
    store.close()


def test_switching_discipline_releases_the_open_paper(ratings):
    paper = ratings.next_paper("local:ann", "physics")
    ratings.next_paper("local:ann", "mathematics")
    with pytest.raises(RatingError, match=f"you released {paper['bibcode']}; it cannot be rated any more"):
        ratings.rate("local:ann", paper["bibcode"], [50.0] * 8)
    assert ratings.next_paper("local:ann", "physics")["bibcode"] != paper["bibcode"]


def test_a_replay_is_a_no_op_and_a_changed_rating_is_refused(ratings):
    paper, first = _rate(ratings, "local:ann", value=61.0)
    again = ratings.rate("local:ann", paper["bibcode"], [61.0] * 8)
    assert (again.rating_id, again.duplicate, first.duplicate) == (first.rating_id, True, False)
    assert again.message == f"this rating of {paper['bibcode']} was already stored; nothing changed"
    with pytest.raises(RatingError, match=f"you already rated {paper['bibcode']}; a rating is final"):
        ratings.rate("local:ann", paper["bibcode"], [62.0] * 8)
    assert [r["innovation_score"] for r in ratings.store.ratings()] == [61.0]


def test_only_the_raters_open_paper_can_be_rated_or_skipped(ratings):
    mine = ratings.next_paper("local:ann", "physics")["bibcode"]
    other = next(b for b in PHYSICS if b != mine)
    with pytest.raises(RatingError, match=f"{other} is not a paper assigned to you"):
        ratings.rate("local:ann", other, [50.0] * 8)
    with pytest.raises(RatingError, match=f"{mine} is not a paper assigned to you"):
        ratings.rate("local:bob", mine, [50.0] * 8)  # someone else's paper
    with pytest.raises(RatingError, match=f"{other} is not your open paper; nothing to skip"):
        ratings.skip("local:ann", other)
    ratings.skip("local:ann", mine)
    ratings.skip("local:ann", mine)  # a replayed skip changes nothing
    with pytest.raises(RatingError, match=f"you skipped {mine}"):
        ratings.rate("local:ann", mine, [50.0] * 8)
    assert ratings.next_paper("local:ann", "physics")["bibcode"] not in (mine,)
    assert ratings.store.ratings() == []


@pytest.mark.parametrize(("scores", "message"), [
    ([50.0] * 7, "a rating has 8 numbers, got 7"),
    ([float("nan")] + [50.0] * 7, "innovation_score must be a number from 0 to 100"),
    ([50.0, float("inf")] + [50.0] * 6, "citation_impact must be a number from 0 to 100"),
    ([50.0] * 7 + [100.5], "journal_impact must be a number from 0 to 100"),
    ([-1] + [50.0] * 7, "innovation_score must be a number from 0 to 100"),
    (["50"] + [50.0] * 7, "innovation_score must be a number from 0 to 100"),
    ([True] + [50.0] * 7, "innovation_score must be a number from 0 to 100"),
    ([10**400] + [50.0] * 7, "innovation_score must be a number from 0 to 100"),
    ("fifty", "a rating is 8 numbers, got str"),
    ({"innovation_score": 50.0}, "a rating has exactly the keys"),
    (None, "a rating is 8 numbers, got NoneType"),
])
def test_bad_numbers_are_refused_and_nothing_is_stored(ratings, scores, message):
    paper = ratings.next_paper("local:ann", "physics")
    with pytest.raises(RatingError, match=message):
        ratings.rate("local:ann", paper["bibcode"], scores)
    assert ratings.store.ratings() == []


def test_a_rating_may_be_a_mapping_of_the_eight_numbers():
    assert check_scores({n: i for i, n in enumerate(NUMBERS)}) == tuple(float(i) for i in range(8))


@pytest.mark.parametrize(("name", "message"), [
    ("<img src=x onerror=alert(1)>", "your name: 1-100 letters"), ("", "type your name first"),
    ("x" * 101, "your name: 1-100 letters"), ("  ", "type your name first"), (None, "type your name first"),
])
def test_a_typed_name_is_plain_text(name, message):
    with pytest.raises(ScitasteError, match=message):
        Ratings.rater(local_name=name)


def test_rater_ids(ratings):
    assert Ratings.rater(username="ann", local_name="ignored") == "hf:ann"
    assert Ratings.rater(local_name="  Ann Lee ") == "local:Ann Lee"
    with pytest.raises(RatingError, match="choose a discipline: physics, mathematics"):
        ratings.next_paper("local:ann", "astrology")
    with pytest.raises(RatingError, match="no paper to rate: ask for the next paper first"):
        ratings.rate("local:ann", "", [50.0] * 8)
    with pytest.raises(RatingError, match="that paper is not one of the benchmark's"):
        ratings.rate("local:ann", "x" * 10_000, [50.0] * 8)


def test_a_flood_is_rate_limited(tmp_path):
    service = Ratings(tmp_path, GOLD, rate_limit=(3, 3600))
    for _ in range(3):
        _rate(service, "local:ann")
    with pytest.raises(SubmissionError, match="too many ratings: at most 3 per 3600 s"):
        _rate(service, "local:ann")
    _rate(service, "local:bob")  # another rater is not held back
    assert len(service.store.ratings()) == 4
    service.close()


def test_stop_releases_the_open_paper_at_once(ratings):
    paper = ratings.next_paper("local:ann", "physics")
    _rate(ratings, "local:bob")
    assert ratings.stop("local:ann") == 0 and ratings.stop("local:bob") == 1
    # released: it counts as taken no more, so the next rater gets it (it has no rating yet) ...
    others = [ratings.next_paper(f"local:r{i}", "physics")["bibcode"] for i in range(5)]
    assert paper["bibcode"] in others
    # ... but never ann again
    seen = {ratings.next_paper("local:ann", "physics")["bibcode"]}
    assert paper["bibcode"] not in seen


def test_concurrent_raters_in_two_stores_on_one_folder(tmp_path):
    """Raters in 8 threads, half through a second store on the same folder (another process's connection), all
    rating at once: every accepted rating is stored once, no paper is given to two raters beyond its turn, and every
    paper ends with the same number of raters."""
    first, second = (Ratings(tmp_path, GOLD, rate_limit=(10_000, 3600)) for _ in range(2))
    errors, accepted = [], []
    start = threading.Barrier(8)

    def work(k):
        service = first if k % 2 else second
        rater = f"local:r{k}"
        try:
            start.wait()
            while (paper := service.next_paper(rater, "physics")) is not None:
                accepted.append((rater, service.rate(rater, paper["bibcode"], [float(k)] * 8).rating_id))
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rows = first.store.ratings()
    assert sorted(r["id"] for r in rows) == sorted(i for _, i in accepted) and len(rows) == 8 * len(PHYSICS)
    assert len({(r["rater"], r["bibcode"]) for r in rows}) == len(rows)
    for service in (first, second):
        service.close()


def test_the_salt_is_secret_shared_and_stable(tmp_path):
    import hashlib

    a, b = RatingStore(tmp_path / "one"), RatingStore(tmp_path / "one")
    other = RatingStore(tmp_path / "two")
    pseudonym = a.pseudonym("hf:ann")
    assert pseudonym == b.pseudonym("hf:ann") != other.pseudonym("hf:ann")  # a folder's own salt
    assert pseudonym.startswith("rater-") and len(pseudonym) == 6 + 16
    assert pseudonym[6:] not in hashlib.sha256(b"hf:ann").hexdigest()  # keyed: not the bare hash
    salt = tmp_path / "one" / "ratings.salt"
    assert salt.stat().st_mode & 0o777 == 0o600 and len(salt.read_bytes()) == 32
    assert not [p for p in (tmp_path / "one").iterdir() if p.name.startswith(".ratings.salt")]
    for store in (a, b, other):
        store.close()
    salt.write_bytes(b"short")
    with pytest.raises(ScitasteError, match=r"ratings\.salt is not a salt of 32 bytes"):
        RatingStore(tmp_path / "one")


@pytest.mark.slow
def test_two_processes_opening_a_new_folder_agree_on_one_salt(tmp_path):
    import subprocess
    import sys

    code = ("import sys; from scitaste_hf.ratings import RatingStore; "
            "print(RatingStore(sys.argv[1]).pseudonym('hf:ann'))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "data")], stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    outputs = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert len(outputs) == 1 and outputs.pop().startswith("rater-")


def test_the_export_is_a_datasets_configuration_without_raw_ids(ratings, tmp_path):
    import datasets

    for rater, value in itertools.product(("hf:ann-zq7", "local:Bob Xylo"), (10.0, 20.0)):
        _rate(ratings, rater, value=value)
    out = ratings.export(tmp_path / "export-service")
    # a folder name of this test's own: datasets caches a local folder's dataset by the folder's name and its card
    # (not its files' contents), so another test's export of as many ratings under the same name would be read instead
    loaded = datasets.load_dataset(str(out), "expert_ratings", split="train")
    assert loaded.num_rows == 4 and set(loaded.column_names) == {"rater", "bibcode", "discipline", "rated_on",
                                                                 "innovation_score", "dimension_scores"}
    assert sorted(set(loaded["rater"])) == sorted({ratings.pseudonym("hf:ann-zq7"),
                                                   ratings.pseudonym("local:Bob Xylo")})
    row = loaded[0]
    stored = next(r for r in ratings.store.ratings() if r["bibcode"] == row["bibcode"]
                  and ratings.pseudonym(r["rater"]) == row["rater"])
    assert row["innovation_score"] == stored["innovation_score"] and row["rated_on"] == stored["rated_at"][:10]
    assert row["dimension_scores"] == {k: stored[k] for k in DIMENSIONS}
    files = [p for p in out.rglob("*") if p.is_file()]
    salt = (tmp_path / "data" / "ratings.salt").read_bytes()
    for path in files:
        data = path.read_bytes()
        assert b"zq7" not in data and b"xylo" not in data.lower() and salt not in data  # no raw id, no salt
    first = {p.relative_to(out): p.read_bytes() for p in files}
    ratings.export(tmp_path / "export-service")
    assert {p.relative_to(out): p.read_bytes() for p in files} == first  # the same ratings, the same bytes
    # one more rating exported into the same folder is read, not datasets' cache of the four before it
    _rate(ratings, "hf:ann-zq7")
    ratings.export(out)
    assert datasets.load_dataset(str(out), "expert_ratings", split="train").num_rows == 5


def test_ratings_are_copied_to_the_hub_and_a_failed_copy_stays_pending(tmp_path):
    calls, fail = [], threading.Event()

    def mirror(store):
        pending = store.copy_pending()
        files, message = store.hub_files(pending)
        calls.append(([name for name, _ in files], message))
        if fail.is_set():
            return False
        store.copy_done(pending)
        return True

    fail.set()
    service = Ratings(tmp_path, GOLD, mirror=mirror)
    _, result = _rate(service, "local:ann")
    assert result.message.endswith("; its copy to the Hub dataset repo is pending and will be retried")
    assert service.store.copy_pending() == [result.rating_id]
    fail.clear()
    _, second = _rate(service, "local:ann")
    assert second.message == f"rating of {service.store.ratings()[-1]['bibcode']} stored"
    assert service.store.copy_pending() == []
    assert calls[-1] == (["expert_ratings/expert_ratings-00000-of-00001.parquet", "README.md"],
                         "Add 2 expert rating(s)")
    service.close()


def test_a_replay_does_not_copy_again(tmp_path):
    calls = []
    service = Ratings(tmp_path, GOLD, mirror=lambda store: calls.append(store.copy_pending()) or True)
    paper, _ = _rate(service, "local:ann")
    before = len(calls)
    service.rate("local:ann", paper["bibcode"], [50.0] * 8)
    assert len(calls) == before
    service.close()


def test_the_folder_holds_the_store_and_the_salt(ratings, tmp_path):
    assert sorted(p.name for p in (tmp_path / "data").iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        "ratings.salt", "ratings.sqlite"]
    assert os.access(tmp_path / "data" / "ratings.sqlite", os.R_OK)


def test_the_ratings_database_is_readable_by_its_owner_only(tmp_path):
    """ratings.sqlite holds the raw hf:/local: ids: 0600 like the salt, with its WAL and shared-memory files, even
    under a umask that would leave them readable by all; a file an older version left 0644 is tightened."""
    old = os.umask(0o022)
    try:
        service = Ratings(tmp_path / "data", GOLD)
        _rate(service, "local:ann")
        files = sorted((tmp_path / "data").glob("ratings.*"))
        assert {p.name for p in files} >= {"ratings.sqlite", "ratings.sqlite-wal", "ratings.sqlite-shm", "ratings.salt"}
        assert {p.name: oct(p.stat().st_mode & 0o777) for p in files} == {p.name: "0o600" for p in files}
        service.close()  # SQLite removes its side files with the last connection
        files = [p for p in files if p.exists()]
        for p in files:
            p.chmod(0o644)
        Ratings(tmp_path / "data", GOLD).close()
        assert {oct(p.stat().st_mode & 0o777) for p in files if p.name != "ratings.salt"} == {"0o600"}
    finally:
        os.umask(old)


def test_a_lost_salt_is_not_replaced_while_ratings_are_stored(tmp_path):
    """A new salt beside stored ratings would give every rater a new pseudonym, unlike those already published: the
    store refuses to open, and creates nothing."""
    service = Ratings(tmp_path / "data", GOLD)
    _rate(service, "local:ann")
    published = service.pseudonym("local:ann")
    service.close()
    salt = tmp_path / "data" / "ratings.salt"
    kept = salt.read_bytes()
    salt.unlink()
    with pytest.raises(ScitasteError, match=r"ratings\.salt is missing but .*ratings\.sqlite holds ratings; restore "
                                            r"the salt from a backup"):
        Ratings(tmp_path / "data", GOLD)
    assert not salt.exists()
    salt.write_bytes(kept)  # restored: the same pseudonyms
    service = Ratings(tmp_path / "data", GOLD)
    assert service.pseudonym("local:ann") == published
    service.close()


def test_an_open_paper_that_left_the_gold_set_is_released(tmp_path):
    """The Space restarted with new gold labels that drop the paper a rater has open: asking for the next paper
    releases it and gives one of the current papers (it used to fail with a KeyError on every request)."""
    service = Ratings(tmp_path / "data", GOLD)
    opened = service.next_paper("local:ann", "physics")["bibcode"]
    service.close()
    fewer = [r for r in GOLD if r["bibcode"] != opened]
    service = Ratings(tmp_path / "data", fewer)
    paper = service.next_paper("local:ann", "physics")
    assert paper is not None and paper["bibcode"] != opened and paper["bibcode"] in PHYSICS
    assert service.next_paper("local:ann", "physics") == paper  # the new one is the open one now
    with pytest.raises(RatingError, match="that paper is not one of the benchmark's"):
        service.rate("local:ann", opened, [50.0] * len(NUMBERS))
    service.close()


def test_the_report_leaves_out_and_counts_ratings_of_papers_that_left_the_gold_set(tmp_path):
    """The report of a Space whose gold labels changed: the ratings of the papers still in it are reported, the
    others counted and named in the summary (the report used to fail for every paper)."""
    from scitaste_hf.ratings.report import summary

    service = Ratings(tmp_path / "data", GOLD)
    for rater in ("local:ann", "local:bob", "local:cy"):
        while service.next_paper(rater, "physics") is not None:
            _rate(service, rater, value=float(len(rater)))
    service.close()
    dropped = PHYSICS[:2]
    service = Ratings(tmp_path / "data", [r for r in GOLD if r["bibcode"] not in dropped])
    report = service.report(n_resamples=20)
    # 4 complete panels left, fewer than a release's 5: the 12 ratings wait
    assert report["n_ratings_outside_gold"] == 6 and report["n_ratings_waiting"] == 12 and report["n_ratings"] == 0
    assert "6 rating(s) of papers not in the gold set are left out" in summary(report)
    service.close()
