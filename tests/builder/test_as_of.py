"""`scitaste build --as-of` against the offline mirror: two releases five years apart differ as a later one must
(citations only grow, newer papers only appear, the graph does not shrink), each paper's citation count is the
world's count of citers published by the date, the requests carry the date filter, a release as of the world's
present is the default build byte for byte, the card records the provenance, and `scitaste release diff` reports
the direction and a stored run's change with an interval."""

import json
import subprocess
import sys
from datetime import date
from pathlib import Path

import httpx
import numpy as np
import pyarrow.parquet as pq
import pytest

from scitaste_hf.schema import SPLITS
from scitaste_hf.weights import DEFAULT_WEIGHTS

SCITASTE = str(Path(sys.executable).with_name("scitaste"))
#: The world's present (simworld TODAY) and five years before it.
OLD, NEW = date(2020, 12, 31), date(2025, 12, 31)
QUOTAS = ["--per-discipline", "60", "--selected-per-discipline", "10"]
#: The first test waits for three builds (a minute each on a busy machine), beyond the suite's 300 s per test.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _requests(url: str) -> list[tuple[str, dict[str, str]]]:
    """Path and query of every request the mirror has seen."""
    from urllib.parse import parse_qsl

    return [(r["path"], dict(parse_qsl(r["query"]))) for r in httpx.get(f"{url}/_control/log", timeout=10)
            .json()["requests"]]


def _build(url: str, out: Path, *extra: str) -> tuple[Path, list[str]]:
    before = len(_requests(url))
    done = subprocess.run([SCITASTE, "build", "--source", "mirror", "--mirror-url", url, "--out", str(out),
                           "--seed", "3", *QUOTAS, *extra], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, _requests(url)[before:]


@pytest.fixture(scope="module")
def releases(mirror, tmp_path_factory):
    """The default build and the builds as of OLD and NEW, each with the requests it sent."""
    root = tmp_path_factory.mktemp("as-of")
    return {"default": _build(mirror, root / "default"),
            OLD: _build(mirror, root / "old", "--as-of", OLD.isoformat()),
            NEW: _build(mirror, root / "new", "--as-of", NEW.isoformat())}


def _records(folder: Path) -> dict[str, dict]:
    return {r["bibcode"]: {**r, "split": s} for s in SPLITS
            for r in pq.read_table(folder / "data" / f"{s}-00000-of-00001.parquet").to_pylist()}


def _card(folder: Path) -> dict:
    from huggingface_hub import DatasetCard

    return DatasetCard.load(folder / "README.md").data.to_dict()["scitaste_release"]


def test_two_releases_five_years_apart_differ_in_the_expected_direction(releases, world):
    old, new = releases[OLD][0], releases[NEW][0]
    a, b = _records(old), _records(new)
    ca, cb = (json.loads((f / "citation_counts.json").read_text()) for f in (old, new))
    assert set(ca) == set(a) and set(cb) == set(b)
    shared = set(a) & set(b)
    assert len(shared) > 100
    # citations only grow, and most shared papers did gain some in five years
    assert all(cb[k] >= ca[k] for k in shared)
    assert sum(cb[k] > ca[k] for k in shared) > len(shared) / 2
    # newer papers only appear: none of the old release is from after its date, the new one has some
    assert max(r["year"] for r in a.values()) <= OLD.year
    assert any(r["year"] > OLD.year for r in b.values())
    # the later graph holds no fewer papers, works or citations
    ga, gb = _card(old)["graph"], _card(new)["graph"]
    assert gb["papers"] >= ga["papers"] and gb["works_around"] > ga["works_around"]
    assert gb["citations"] > ga["citations"]
    # each count is the world's: the citers published by the date
    index = {k: v for f in (old, new) for k, v in json.loads((f / "openalex_bibcode_map.json").read_text()).items()}
    for counts, day, records in ((ca, OLD, a), (cb, NEW, b)):
        cut = (day - date(1970, 1, 1)).days
        for k in records:
            i = world.index_of(index[k])
            assert counts[k] == int((world.date[world.citers(i)] <= cut).sum()), k


def test_the_as_of_filter_reaches_every_listing(releases):
    """Candidates, references and citers are all asked for up to the date; only the physics papers' own records,
    looked up by DOI, are not (their exact date decides, in the quality check)."""
    filters = [q["filter"] for path, q in releases[OLD][1] if path == "/openalex/works" and "filter" in q]
    kinds = {f.split(":", 1)[0] for f in filters}
    assert {"primary_topic.subfield.id", "cites", "cited_by"} <= kinds
    assert all(f.endswith(",to_publication_date:2020-12-31") for f in filters if not f.startswith("doi:"))
    ads = [q["q"] for path, q in releases[OLD][1] if path.startswith("/ads/")]
    assert ads and all("year:[1995 TO 2020]" in q for q in ads)
    assert not any("to_publication_date" in q.get("filter", "") for _, q in releases["default"][1])


def test_a_release_as_of_the_present_is_the_default_build(releases):
    default, new = releases["default"][0], releases[NEW][0]
    for name in ("data/selected-00000-of-00001.parquet", "data/backup-00000-of-00001.parquet",
                 "openalex_bibcode_map.json", "citation_counts.json"):
        assert (default / name).read_bytes() == (new / name).read_bytes(), name
    from scitaste_hf import __version__
    from scitaste_hf.release.folder import taxonomy_digest
    from scitaste_hf.taxonomy import load_taxonomy

    recorded = _card(default)
    assert recorded["as_of"] is None and _card(new)["as_of"] == "2025-12-31"
    assert recorded["code_version"] == f"scitaste-hf {__version__}"
    assert recorded["weights"] == pytest.approx(dict(DEFAULT_WEIGHTS))
    assert recorded["taxonomy"]["sha256"] == taxonomy_digest(load_taxonomy())
    assert len(recorded["taxonomy"]["disciplines"]["medicine"]) == 7
    text = (new / "README.md").read_text()
    assert "| as of | 2025-12-31: the services as they stood on that date" in text
    assert f"| code | scitaste-hf {__version__} |" in text


def test_release_diff_reports_the_direction_and_a_runs_change(releases, tmp_path):
    old, new = releases[OLD][0], releases[NEW][0]
    a = _records(old)
    # a run that reproduces the old gold exactly: perfect on the old release, worse where the gold drifted
    run = tmp_path / "old-gold.jsonl"
    run.write_text("".join(json.dumps({"bibcode": k, "innovation_score": r["innovation_score"],
                                       "dimension_scores": r["dimension_scores"]}) + "\n"
                           for k, r in a.items() if r["split"] == "selected"))
    out = tmp_path / "diff.json"
    done = subprocess.run([SCITASTE, "release", "diff", str(old), str(new), "--runs", str(run), "--json", str(out),
                           "--n-resamples", "200"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "NEW differs as a later release must" in " ".join(done.stdout.split())
    report = json.loads(out.read_text())
    direction = report["direction"]
    assert direction["as_expected"] is True and direction["citations_fell"] == 0
    assert direction["newer_papers_in_old"] == 0 and direction["newer_papers_in_new"] > 0
    assert report["citations"]["fell"] == 0 and report["citations"]["mean_change"]["interval"][0] > 0
    assert report["drift"]["citation_impact"]["per_paper"]["spearman"]["interval"] is not None
    (scored,) = report["runs"]
    assert scored["n"] == sum(r["split"] == "selected" and k in _records(new) for k, r in a.items())
    s1 = scored["scheme1"]
    assert s1["old"]["value"] == pytest.approx(100.0)
    assert s1["change"]["value"] < 0 and s1["change"]["interval"][1] < 0 and s1["change"]["resolved"] is True
    assert s1["new"]["value"] == pytest.approx(s1["old"]["value"] + s1["change"]["value"])
    assert np.isfinite(scored["scheme2"]["change"]["interval"]).all()


def test_a_refresh_against_the_previous_release_keeps_its_selection(releases, mirror):
    """`--previous OLD` on the NEW release (its collected and scored stages reused): the same papers scored, but
    the old selected papers still in the pool are selected again, where a plain redraw keeps a fraction; the
    summary says how many."""
    old, new = releases[OLD][0], releases[NEW][0]
    sticky = new.parent / "new-refresh"
    done = subprocess.run([SCITASTE, "build", "--source", "mirror", "--mirror-url", mirror,
                           "--out", str(sticky), "--work-dir", f"{new}.work", "--resume", "--seed", "3", *QUOTAS,
                           "--as-of", NEW.isoformat(), "--previous", str(old)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    before, plain, refreshed = _records(old), _records(new), _records(sticky)
    assert len(refreshed) == len(plain) and "sample" not in done.stderr.split("resumed")[0]

    def again(release):
        return sum(b in release and release[b]["split"] == "selected" for b, r in before.items()
                   if r["split"] == "selected")

    old_selected = sum(r["split"] == "selected" for r in before.values())
    still_scored = sum(b in refreshed or b in plain for b, r in before.items() if r["split"] == "selected")
    assert again(plain) < 0.6 * old_selected and again(refreshed) >= max(again(plain) + 10, 0.8 * still_scored)
    assert f"selected again {again(refreshed)}" in " ".join(done.stdout.split()).replace("│", "").replace("  ", " ")
    # the refresh drifts the same papers' scores as the plain release: only the draw differs
    shared = set(refreshed) & set(plain)
    assert all(refreshed[b]["innovation_score"] == plain[b]["innovation_score"] for b in shared)
    bad = subprocess.run([SCITASTE, "build", "--mirror-url", "http://127.0.0.1:9", "--out", str(new.parent / "x"),
                          "--previous", str(new.parent / "missing")], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--previous" in bad.stderr


def test_a_rebuild_with_weights_per_discipline(releases, mirror):
    """`--weights` with one vector per discipline on the default release's collected stages: the same dimension
    scores (the sample, stratified by the composite, differs in physics), each composite from its discipline's
    vector, and the card shows and records the vectors; a discipline without a vector (and no default) stops the
    build with one line before anything is fetched."""
    from huggingface_hub import DatasetCard

    from scitaste_hf.schema import DIMENSIONS
    from scitaste_hf.weights import composite

    default = releases["default"][0]
    physics = {d: 0.1 for d in DIMENSIONS} | {"citation_impact": 0.4}
    weights = {"weights": {"physics": physics, "default": dict(DEFAULT_WEIGHTS)}}
    (path := default.parent / "weights.json").write_text(json.dumps(weights))
    out = default.parent / "weighted"
    done = subprocess.run([SCITASTE, "build", "--source", "mirror", "--mirror-url", mirror, "--out", str(out),
                           "--work-dir", f"{default}.work", "--resume", "--seed", "3", *QUOTAS,
                           "--weights", str(path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    before, after = _records(default), _records(out)
    assert len(after) == len(before) and {b for b, r in before.items() if r["discipline"] != "physics"} == {
        b for b, r in after.items() if r["discipline"] != "physics"}
    for bibcode, record in after.items():
        vector = physics if record["discipline"] == "physics" else DEFAULT_WEIGHTS
        assert record["innovation_score"] == composite(record["dimension_scores"], vector)
        if bibcode in before:
            assert record["dimension_scores"] == before[bibcode]["dimension_scores"]
    moved = [b for b, r in after.items() if b in before and r["innovation_score"] != before[b]["innovation_score"]]
    assert len(moved) > 20 and all(after[b]["discipline"] == "physics" for b in moved)
    assert _card(out)["weights"]["per_discipline"]["physics"] == pytest.approx(physics)
    text = DatasetCard.load(out / "README.md").text
    assert "| A | `citation_impact` | 0.400000 | " in text and "one weight vector per discipline" in text
    (path := default.parent / "physics-only.json").write_text(json.dumps({"weights": {"physics": physics}}))
    bad = subprocess.run([SCITASTE, "build", "--mirror-url", mirror, "--out", str(default.parent / "y"),
                          "--weights", str(path)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "mathematics" in bad.stderr, \
        bad.stderr
