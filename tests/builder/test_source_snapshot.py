"""`scitaste build --source snapshot PATH` on a small simulated OpenAlex snapshot, with no service: the splits are
full where the pool allows and every record has a sub-discipline, the candidates are what the services' listings
would give, each record's scores are `scitaste index`'s for the same works in the same snapshot, a build stopped in
its index stage resumes to the same bytes, and bad input is refused with one line."""

import json
import math
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from scitaste_hf.builder.classify import keyword_hits
from scitaste_hf.builder.collect import CANDIDATE_MARGIN, YEARS, cell_limit
from scitaste_hf.builder.pipeline import Build, BuildConfig
from scitaste_hf.builder.sample import quotas
from scitaste_hf.cli import main
from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS, SPLITS
from scitaste_hf.simworld.stream import UPDATED_DATES
from scitaste_hf.snapshot.layout import find_entity
from scitaste_hf.snapshot.reader import iter_records
from scitaste_hf.sources.openalex import parse_work
from scitaste_hf.taxonomy import load_taxonomy

pytestmark = pytest.mark.slow

WORKS, WORLD_SEED = 3000, 3
PER_DISCIPLINE, SELECTED, SEED = 60, 12, 1
SETTINGS = ["--per-discipline", str(PER_DISCIPLINE), "--selected-per-discipline", str(SELECTED), "--seed", str(SEED)]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    root = tmp_path_factory.mktemp("snapshot")
    from scitaste_hf.snapshot.writer import write_snapshot

    write_snapshot(root, WORKS, seed=WORLD_SEED, part_records=1000)
    return root


@pytest.fixture(scope="module")
def built(snapshot, tmp_path_factory):
    """One build from the command line, shared by the tests."""
    out = tmp_path_factory.mktemp("build") / "ds"
    assert main(["build", "--source", "snapshot", str(snapshot), "--out", str(out), *SETTINGS]) == 0
    return out


def _splits(out: Path) -> dict[str, list[dict]]:
    return {s: pq.read_table(out / "data" / f"{s}-00000-of-00001.parquet").to_pylist() for s in SPLITS}


def _checkpoint(out: Path, stage: str) -> dict:
    (path,) = (Path(f"{out}.work") / "stages").glob(f"{stage}-*.json")
    return json.loads(path.read_text())


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_splits_are_full_and_every_record_has_a_sub_discipline(built):
    taxonomy = load_taxonomy()
    splits = _splits(built)
    pool = Counter(p["discipline"] for p in _checkpoint(built, "label")["papers"])
    # Every discipline's checked pool fills its selected quota; the backup holds the rest up to the discipline's.
    assert all(pool[d] >= SELECTED for d in taxonomy.names)
    assert Counter(r["discipline"] for r in splits["selected"]) == dict.fromkeys(taxonomy.names, SELECTED)
    assert Counter(r["discipline"] for r in splits["backup"]) == {
        d: min(PER_DISCIPLINE, pool[d]) - SELECTED for d in taxonomy.names}
    assert len(splits["selected"]) == 72 and len(splits["backup"]) > 150
    for r in (r for s in SPLITS for r in splits[s]):
        cell = taxonomy.get(r["subcategory_id"])
        assert cell.discipline == r["discipline"] and r["subcategory_name"] == cell.name
        assert r["bibcode"] == f"STB.{taxonomy.discipline(r['discipline']).code}.{r['openalex_id']}"
        assert r["arxiv_id"] is None
    # Physics: only the keyword and title stages can label; what neither labels is counted and in no split.
    labelled = _checkpoint(built, "label")
    assert {p["label_stage"] for p in labelled["papers"] if p["discipline"] == "physics"} == {"keywords", "title"}
    unclassified = [f["bibcode"] for f in labelled["failures"] if f["reason"] == "unclassified"]
    assert unclassified and all(b.startswith("STB.PHYS.") for b in unclassified)
    assert not set(unclassified) & {r["bibcode"] for s in SPLITS for r in splits[s]}


def test_the_card_records_the_snapshot(built, snapshot):
    import yaml

    card = (built / "README.md").read_text()
    release = yaml.safe_load(card.split("---")[1])["scitaste_release"]
    source = release["source"]
    assert source["kind"] == "openalex-snapshot" and source["path"] == Path(snapshot).resolve().name
    assert source["date"] == max(UPDATED_DATES) and source["works"] == WORKS and source["synthetic"] is True
    assert release["as_of"] is None and release["graph"]["papers"] + release["graph"]["works_around"] == WORKS
    assert "no request sent" in card and "keyword and title stages only" in card
    assert "Synthetic demo build" in card and "written as an OpenAlex snapshot" in card
    assert "NASA ADS metadata" not in card


def test_candidates_are_the_services_listings(built, snapshot):
    """A by-construction cell gets the subfield's most-cited articles matching its keywords, then the rest of the
    subfield; physics' discipline-wide listing is its most-cited articles of the collection years."""
    taxonomy = load_taxonomy()
    works = [parse_work(d) for d in iter_records(find_entity(snapshot))]
    works = sorted((w for w in works if w.type == "article" and w.primary_topic),
                   key=lambda w: (-(w.cited_by_count or 0), w.id))
    collected = _checkpoint(built, "collect")
    cell = taxonomy.of("chemistry")[0]
    sharing = sum(c.openalex_subfield == cell.openalex_subfield for c in taxonomy.of("chemistry"))
    n = cell_limit(quotas(PER_DISCIPLINE, [c.id for c in taxonomy.of("chemistry")])[cell.id], sharing)
    mine = [w for w in works if w.primary_topic.subfield_id == str(cell.openalex_subfield)]
    matching = [w.id for w in mine if keyword_hits(f"{w.title} {w.abstract}", cell.keywords)]
    expected = (matching[:n] + [w.id for w in mine if w.id not in matching])[:n]
    assert [w["id"] for w in collected["cells"][cell.id]] == expected and len(expected) == n
    physics = {str(c.openalex_subfield) for c in taxonomy.of("physics")}
    top = [w.id for w in works if w.primary_topic.subfield_id in physics and YEARS[0] <= w.publication_year <= YEARS[1]]
    found = {w["id"] for w in collected["ads_works"]["physics"]}
    assert set(top[:math.ceil(PER_DISCIPLINE * CANDIDATE_MARGIN)]) <= found < set(top)


def test_scores_equal_scitaste_index_on_the_same_works(built, snapshot, tmp_path):
    pool = sorted({p["openalex_id"] for p in _checkpoint(built, "label")["papers"]})
    ids = tmp_path / "pool.txt"
    ids.write_text("\n".join(pool) + "\n")
    assert main(["index", "--works", str(snapshot), "--focal", str(ids), "--out", str(tmp_path / "ix"), "--quiet"]) == 0
    index = {r["id"]: r for r in pq.read_table(tmp_path / "ix" / "index.parquet").to_pylist()}
    records = [r for s in SPLITS for r in _splits(built)[s]]
    assert len(index) == len(pool) and len(records) < len(pool)
    for r in records:
        row = index[r["openalex_id"]]
        assert r["dimension_scores"] == {d: row[d] for d in DIMENSIONS}, r["bibcode"]
        assert r["innovation_score"] == row["innovation_score"]


def test_a_build_stopped_in_its_index_stage_resumes_to_the_same_bytes(built, snapshot, tmp_path, monkeypatch):
    from scitaste_hf.scale import duck

    out = tmp_path / "ds"
    config = BuildConfig(out=out, source="snapshot", snapshot=snapshot, seed=SEED, per_discipline=PER_DISCIPLINE,
                         selected_per_discipline=SELECTED, resume=True)

    def killed(*args, **kwargs):
        raise ScitasteError("killed")

    monkeypatch.setattr(duck.DuckIndex, "semantic", killed)
    with pytest.raises(ScitasteError, match=r"killed -- stage index stopped.*--resume"):
        Build(config).run()
    assert not out.exists()
    embedded = Path(f"{out}.work") / "snapshot-index" / "stages" / "embed.done.json"
    stamp = embedded.stat().st_mtime_ns
    monkeypatch.undo()
    result = Build(config).run()
    assert result.stages_resumed == ["collect", "label"] and result.requests == 0
    assert embedded.stat().st_mtime_ns == stamp  # the index engine's finished stages were not redone
    assert _files(out) == _files(built)
    # --overwrite replaces the dataset folder it wrote.
    assert Build(replace(config, overwrite=True)).run().stages_resumed == ["collect", "label", "index", "sample"]
    assert _files(out) == _files(built)


@pytest.mark.parametrize("args, message", [
    (["--source", "snapshot", "{tmp}/nowhere"], "no snapshot at"),
    (["--source", "snapshot", "{tmp}"], "no OpenAlex works snapshot at"),
    (["--source", "snapshot", "{bad}"], "Not a gzipped file"),
    (["--source", "snapshot"], "--source snapshot needs the snapshot's folder"),
    (["--source", "mirror", "{snapshot}"], "only a snapshot takes a PATH"),
    (["--source", "snapshot", "{snapshot}", "--mirror-url", "http://127.0.0.1:9"], "--mirror-url is for --source "
                                                                                    "mirror"),
    (["--source", "snapshot", "{snapshot}", "--as-of", "2020-01-01"], "--as-of is not supported with --source "
                                                                       "snapshot"),
    (["--source", "snapshot", "{snapshot}", "--max-retries", "2"], "--max-retries is for the services"),
])
def test_bad_input_is_one_line(args, message, snapshot, tmp_path, capsys):
    bad = tmp_path / "bad"
    part = bad / "data" / "works" / "updated_date=2025-01-01" / "part_000.gz"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"not gzip")
    argv = [a.format(tmp=tmp_path / "empty", bad=bad, snapshot=snapshot) for a in args]
    (tmp_path / "empty").mkdir()
    assert main(["build", *argv, "--out", str(tmp_path / "ds")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("scitaste: error: ") and message in err, err
    assert not (tmp_path / "ds").exists()
