"""Fusion precedence, labelling, the quality check and the collection queries, on small hand-made records; the
snowball from inside an event loop."""

from datetime import date
from pathlib import Path

import pytest

from scitaste_hf.builder.classify import label
from scitaste_hf.builder.collect import ads_cell_query, cell_limit
from scitaste_hf.builder.fuse import fuse, fuse_candidates, internal_id
from scitaste_hf.builder.pipeline import Build, BuildConfig
from scitaste_hf.builder.quality import check
from scitaste_hf.errors import ScitasteError
from scitaste_hf.taxonomy import load_taxonomy

TAX = load_taxonomy()
ADS = {"bibcode": "2004PhRvB..70.1234S", "title": "ADS title", "year": 2004, "citation_count": 40,
       "abstract": None, "doi": "10.1/x", "pub": "Physical Review B", "pubdate": "2004-05-00",
       "arxiv_class": ["cond-mat.str-el"], "arxiv_id": "cond-mat/0405001", "bibstem": "PhRvB"}
WORK = {"id": "W1", "title": "OpenAlex title", "year": 2005, "cited_by_count": 35, "abstract": "OpenAlex abstract",
        "doi": "10.1/x", "source_name": "Phys. Rev. B", "date": "2004-05-17"}
ARXIV = {"id": "cond-mat/0405001", "title": "arXiv title", "abstract": "arXiv abstract", "primary_class": "quant-ph",
         "doi": None, "date": "2004-04-30"}


def test_fusion_follows_the_precedence_and_records_sources():
    values, sources = fuse({"ads": ADS, "openalex": WORK, "arxiv": ARXIV})
    assert values["title"] == "ADS title" and sources["title"] == "ads"
    assert values["year"] == 2004 and values["citation_count"] == 40
    assert values["abstract"] == "OpenAlex abstract" and sources["abstract"] == "openalex"  # ADS has none
    assert values["date"] == "2004-05-17" and sources["date"] == "openalex"
    assert values["arxiv_class"] == "quant-ph" and sources["arxiv_class"] == "arxiv"
    values, sources = fuse({"ads": ADS, "openalex": None, "arxiv": ARXIV})
    assert values["abstract"] == "arXiv abstract" and values["date"] == "2004-04-30"
    values, sources = fuse({"ads": {**ADS, "abstract": "ADS abstract"}})
    assert values["abstract"] == "ADS abstract" and values["date"] == "2004-05-01" and sources["date"] == "ads"


def test_candidates_are_fused_once_and_labelled():
    cells = {"finance.banking": [{**WORK, "id": "W2", "doi": "10.2/y", "abstract": "bank credit lending"}],
             "finance.asset_pricing": [{**WORK, "id": "W2", "doi": "10.2/y", "abstract": "bank credit lending"}]}
    fused = fuse_candidates({"physics": [ADS]}, {"10.1/x": WORK}, {"cond-mat/0405001": ARXIV}, cells, TAX)
    assert [p["bibcode"] for p in fused] == ["2004PhRvB..70.1234S", "STB.FINA.W2"]
    assert internal_id(TAX.discipline("finance"), "W2") == "STB.FINA.W2"
    assert fused[1]["cells"] == ["finance.banking", "finance.asset_pricing"]
    labelled = {p["bibcode"]: p for p in label(fused, TAX)}
    physics = labelled["2004PhRvB..70.1234S"]
    assert (physics["subcategory_id"], physics["label_stage"]) == ("physics.quantum", "arxiv")  # arXiv class wins
    assert labelled["STB.FINA.W2"]["subcategory_id"] == "finance.banking"


def test_quality_check_drops_with_reasons_and_keeps_the_most_cited_duplicate():
    base = {"title": "A study", "abstract": "text", "year": 2010, "doi": None, "journal_name": "J",
            "citation_count": 1}
    papers = [{**base, "bibcode": "a", "doi": "10.1/d", "citation_count": 5},
              {**base, "bibcode": "b", "doi": "10.1/d", "title": "Other", "citation_count": 9},
              {**base, "bibcode": "c", "title": "A  STUDY!"},
              {**base, "bibcode": "d", "title": "A study", "year": 2011},
              {**base, "bibcode": "e", "abstract": " "},
              {**base, "bibcode": "f", "title": None},
              {**base, "bibcode": "g", "year": 1980, "title": "Old"}]
    kept, failures = check(papers, (1995, 2024))
    assert [p["bibcode"] for p in kept] == ["b", "c", "d"]
    assert {f["bibcode"]: f["reason"] for f in failures} == {
        "a": "duplicate_doi", "e": "missing_abstract", "f": "missing_title", "g": "year_out_of_range"}
    kept, failures = check([*papers[2:4], {**papers[2], "bibcode": "h", "citation_count": 0}], (1995, 2024))
    assert [f["reason"] for f in failures] == ["duplicate_title"]


def test_collection_queries_and_depth():
    cell = TAX.get("physics.quantum")
    q = ads_cell_query(cell, (1995, 2024))
    assert q.startswith("doctype:article AND year:[1995 TO 2024] AND (arxiv_class:(quant-ph) OR bibstem:(")
    assert 'abs:("entanglement" OR "qubit"' in q
    assert cell_limit(125) == 150 and cell_limit(125, sharing=6) == 900


@pytest.mark.parametrize("settings, message", [
    ({"source": "mirror"}, "source 'mirror' needs mirror_url (the URL"),
    ({"source": "web"}, "source must be one of mirror, live, snapshot, got 'web'"),
    ({"source": "snapshot"}, "snapshot (the snapshot's folder) is read exactly when source is 'snapshot'"),
    ({"source": "live", "snapshot": Path("snap")}, "got source 'live' and snapshot snap"),
    ({"source": "snapshot", "snapshot": Path("snap"), "mirror_url": "http://127.0.0.1:1"},
     "mirror_url is for source 'mirror'"),
    ({"source": "snapshot", "snapshot": Path("snap"), "as_of": date(2020, 1, 1)},
     "as_of is not supported with source 'snapshot'"),
    ({"mirror_url": "http://127.0.0.1:1", "per_discipline": 10, "selected_per_discipline": 20},
     "selected_per_discipline between 1 and it, got 10 and 20"),
])
def test_bad_settings_are_one_line_errors_in_the_api_s_words(settings, message, tmp_path):
    """The Python API names its own fields (``scitaste build`` names its flags: test_source_snapshot.py)."""
    with pytest.raises(ScitasteError) as caught:
        Build(BuildConfig(out=tmp_path / "x", **settings))
    assert message in str(caught.value) and "--" not in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_taxonomy_stops_the_build_with_one_line(tmp_path, capsys):
    from scitaste_hf.cli import main

    bad = tmp_path / "taxonomy.yaml"
    bad.write_text("extends: default\nastrology: {sub_disciplines: []}\n")
    code = main(["build", "--mirror-url", "http://127.0.0.1:9", "--out", str(tmp_path / "ds"), "--taxonomy", str(bad)])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"scitaste: error: {bad}: discipline 'astrology' needs a code of 2-8 capital letters (its internal ids are "
        "STB.<code>.<OpenAlex id>), got None"]
    assert not (tmp_path / "ds").exists() and not (tmp_path / "ds.work").exists()
    code = main(["build", "--mirror-url", "http://127.0.0.1:9", "--out", str(tmp_path / "ds"), "--taxonomy", "extnded"])
    assert code == 2
    assert capsys.readouterr().err.strip() == ("scitaste: error: taxonomy 'extnded' not found: neither a packaged one "
                                               "(default, extended) nor a file")


def test_the_snowball_also_runs_from_inside_an_event_loop(mirror):
    """A notebook runs its cells in an event loop; the builder's concurrent snowball must not need a fresh one."""
    import asyncio

    from scitaste_hf.builder import collect
    from scitaste_hf.sources import OpenAlexClient

    oa = OpenAlexClient(base_url=mirror + "/openalex", rate_limit=None)
    focal = [collect.work_dict(w) for w in oa.iter_works("type:article", select=collect.WORK_SELECT, limit=40)]
    plan = collect.snowball_plan(focal)
    expected = collect.snowball(oa, focal, plan)
    assert len(expected) > 40 and not {w["id"] for w in expected} & {w["id"] for w in focal}

    async def in_a_notebook():
        return collect.snowball(oa, focal, plan)

    assert asyncio.run(in_a_notebook()) == expected


def test_an_as_of_check_drops_later_papers_and_papers_without_dated_citations():
    from datetime import date

    base = {"title": "A study", "abstract": "text", "year": 2020, "doi": None, "journal_name": "J",
            "citation_count": 1, "openalex_id": "W1"}
    papers = [{**base, "bibcode": "a", "date": "2020-06-30"},
              {**base, "bibcode": "b", "date": "2020-07-01", "title": "Later"},
              {**base, "bibcode": "c", "date": "2019-01-01", "title": "Not in OpenAlex", "openalex_id": None}]
    kept, failures = check(papers, (1995, 2024), date(2020, 6, 30))
    assert [p["bibcode"] for p in kept] == ["a"]
    assert {f["bibcode"]: f["reason"] for f in failures} == {"b": "after_as_of", "c": "no_dated_citations"}
    kept, failures = check(papers, (1995, 2024))  # without a date neither rule applies
    assert [p["bibcode"] for p in kept] == ["a", "b", "c"] and failures == []


def test_the_as_of_graph_counts_the_citers_published_by_the_date():
    from datetime import date

    from scitaste_hf.builder.score import as_of_graph

    works = {"W1": {"id": "W1", "date": "2010-01-01", "referenced_works": ["W0"]},
             "W2": {"id": "W2", "date": "2016-01-01", "referenced_works": ["W1"]},   # a candidate citing one
             "W3": {"id": "W3", "date": "2021-01-01", "referenced_works": ["W1"]}}   # published after the date
    around = [{"id": "W0", "date": "2001-01-01", "referenced_works": []},
              {"id": "W7", "date": "2015-05-05", "referenced_works": ["W1", "W1", "W2"]},  # a link listed twice
              {"id": "W8", "date": "2020-12-31", "referenced_works": ["W1"]},  # on the day: included
              {"id": "W9", "date": "2021-01-01", "referenced_works": ["W1", "W2"]},
              {"id": "W5", "date": None, "referenced_works": ["W1"]}]
    kept, dated, cited = as_of_graph(works, around, date(2020, 12, 31))
    assert set(kept) == {"W1", "W2"} and [w["id"] for w in dated] == ["W0", "W7", "W8"]
    assert (cited["W1"], cited["W2"], cited["W0"], cited["W3"]) == (3, 1, 1, 0)


def test_an_as_of_date_outside_the_collection_or_in_the_future_is_refused(tmp_path, capsys):
    from datetime import date, timedelta

    from scitaste_hf.builder.collect import published_by
    from scitaste_hf.cli import main

    config = {"out": tmp_path / "x", "mirror_url": "http://127.0.0.1:1"}
    with pytest.raises(ScitasteError, match="as_of 1994-12-31 must lie between 1995-01-01"):
        Build(BuildConfig(**config, as_of=date(1994, 12, 31)))
    with pytest.raises(ScitasteError, match="and today"):
        Build(BuildConfig(**config, as_of=date.today() + timedelta(days=1)))
    assert BuildConfig(**config, as_of=date(2019, 6, 30)).window == (1995, 2019)
    assert BuildConfig(**config).window == (1995, 2024)
    assert published_by(date(2019, 6, 30)) == "to_publication_date:2019-06-30" and published_by(None) is None
    with pytest.raises(SystemExit):
        main(["build", "--mirror-url", "http://127.0.0.1:9", "--out", str(tmp_path / "ds"), "--as-of", "2019-13-01"])
    assert "expected a date YYYY-MM-DD, got '2019-13-01'" in capsys.readouterr().err
