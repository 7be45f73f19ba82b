"""The nine tools over the mirror, and their frozen evidence."""

import json
import time

import pytest

from scitaste_hf.agent.evidence import FILE, FrozenToolBox
from scitaste_hf.agent.tools import TOOL_NAMES, TOOL_SCHEMAS, PaperRef, ToolBox
from scitaste_hf.cli import main
from scitaste_hf.sources import ADSClient, OpenAlexClient


@pytest.fixture(scope="module")
def papers(world):
    physics = next(i for i in range(world.n_candidates) if i in world.bibcode and len(world.citers(i)) >= 3)
    others = [i for i in range(world.n_candidates) if world.discipline(i) != "physics"][:3]
    refs = {world.bibcode[physics]: PaperRef(world.bibcode[physics], "physics", None, world.doi(physics))}
    for i in others:
        refs[f"SYN-{i}"] = PaperRef(f"SYN-{i}", world.discipline(i), world.work_id(i), world.doi(i))
    return refs, physics, others


def _toolbox(mirror, papers):
    return ToolBox(OpenAlexClient(base_url=f"{mirror}/openalex", cache_dir=None),
                   ADSClient(base_url=f"{mirror}/ads/v1", token="t", cache_dir=None), papers)


def test_schemas_are_openai_functions():
    assert [s["function"]["name"] for s in TOOL_SCHEMAS] == list(TOOL_NAMES) and len(TOOL_NAMES) == 9
    for schema in TOOL_SCHEMAS:
        assert schema["type"] == "function" and schema["function"]["parameters"]["required"] == ["bibcode"]


def test_tools_return_raw_evidence_of_the_world(mirror, world, papers):
    refs, physics, others = papers
    toolbox = _toolbox(mirror, refs)
    bib = world.bibcode[physics]
    history = toolbox.call("citation_history", {"bibcode": bib})
    assert history["source"] == "ads" and history["total"] == len(world.citers(physics))
    assert sum(history["by_year"].values()) == len(world.citers(physics))
    citing = toolbox.call("citing_works", json.dumps({"bibcode": bib}))
    # ADS lists only the references it holds (those with a bibcode), so a shared reference without one is not seen
    own = {r for r in world.references(physics).tolist() if r in world.bibcode}
    expected = sum(bool(own & set(world.references(int(c)).tolist())) for c in world.citers(physics))
    assert citing["count"] == len(world.citers(physics)) and citing["also_cite_references"] == expected
    other = others[0]
    refs_out = toolbox.call("references", {"bibcode": f"SYN-{other}"})
    assert refs_out["count"] == len(world.references(other))
    topics = toolbox.call("concepts_topics", {"bibcode": f"SYN-{other}"})
    assert 0.5 <= topics["topics"][0]["score"] <= 1.0  # the primary topic's score
    journal = toolbox.call("journal_profile", {"bibcode": f"SYN-{other}"})
    assert journal["journal"].endswith("(synthetic)") and journal["two_year_mean_citedness"] > 0
    for name in TOOL_NAMES:  # nothing derived from the gold labels
        out = json.dumps(toolbox.call(name, {"bibcode": f"SYN-{other}"}))
        assert "innovation_score" not in out and "dimension_scores" not in out


def test_bad_calls_answer_errors_for_the_model(mirror, papers):
    toolbox = _toolbox(mirror, papers[0])
    assert "unknown tool" in toolbox.call("rank_paper", {"bibcode": "x"})["error"]
    assert "JSON object" in toolbox.call("references", "{not json")["error"]
    assert "unknown bibcode" in toolbox.call("references", {"bibcode": "NOPE"})["error"]
    assert "unknown bibcode" in toolbox.call("references", {})["error"]


def test_freeze_then_answer_identically_and_fast(mirror, papers, tmp_path):
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.schema import DIMENSIONS, record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    refs, _, _ = papers
    records = [{**dict.fromkeys(record_features()), "bibcode": b, "discipline": p.discipline,
                "openalex_id": p.openalex_id, "doi": p.doi, "title": "t", "abstract": "a", "year": 2000,
                "innovation_score": 50.0, "dimension_scores": dict.fromkeys(DIMENSIONS, 50.0)} for b, p in refs.items()]
    dataset = write_dataset(tmp_path / "ds", {"selected": records, "backup": records[:1]}, DEFAULT_WEIGHTS,
                            synthetic=True)
    out = tmp_path / "evidence"
    assert main(["evidence", "freeze", "--dataset", str(dataset), "--out", str(out), "--mirror-url", mirror]) == 0
    frozen = FrozenToolBox.load(out)
    assert len(frozen.evidence) == 9 * len(refs)
    live = _toolbox(mirror, refs)
    bib = next(iter(refs))
    for name in TOOL_NAMES:
        assert frozen.call(name, {"bibcode": bib}) == json.loads(json.dumps(live.call(name, {"bibcode": bib})))
    assert "unknown bibcode" in frozen.call("references", {"bibcode": "NOPE"})["error"]
    start = time.perf_counter()
    for _ in range(1000):
        frozen.call("references", {"bibcode": bib})
    assert (out / FILE).is_file() and "tool_evidence" in (out / "README.md").read_text()
    assert not (out / ".cache").exists()  # the response cache serves a resumed freeze, not the dataset
    per_call = (time.perf_counter() - start) / 1000
    print(f"frozen tool call: {per_call * 1e6:.1f} us")  # a figure, not a timed assertion


def test_freeze_without_evidence_folder_is_a_clear_error(tmp_path):
    from scitaste_hf.errors import ScitasteError

    with pytest.raises(ScitasteError, match="run `scitaste evidence freeze` first"):
        FrozenToolBox.load(tmp_path)


def test_freeze_stops_on_a_service_failure_and_writes_nothing(papers, tmp_path):
    import socket

    from scitaste_hf.agent.evidence import freeze
    from scitaste_hf.errors import ScitasteError

    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    refs = papers[0]
    toolbox = ToolBox(OpenAlexClient(base_url=f"{dead}/openalex", max_retries=0),
                      ADSClient(base_url=f"{dead}/ads/v1", token="a-long-ads-token", max_retries=0), refs,
                      strict=True)
    start = time.monotonic()
    with pytest.raises(ScitasteError) as err:
        freeze(toolbox, refs, tmp_path / "ev", source="mirror", workers=2)
    # The first failure stops the freeze (not a count of failed calls after trying every paper).
    assert "Connection refused" in str(err.value) and "tool calls failed" not in str(err.value)
    assert time.monotonic() - start < 30 and not (tmp_path / "ev").exists()
    # The same outage reaches a model as the tool's error when not freezing.
    lenient = ToolBox(toolbox.openalex, toolbox.ads, refs)
    assert "failed" in lenient.call("paper_metadata", {"bibcode": next(iter(refs))})["error"]


def test_freeze_refuses_evidence_that_is_mostly_errors(mirror, papers, tmp_path):
    from scitaste_hf.agent.evidence import freeze
    from scitaste_hf.errors import ScitasteError

    # Papers the mirror does not know (the wrong world): every tool answers "not found", which is evidence for
    # one paper but, for all of them, a sign of the wrong source.
    unknown = {f"X{k}": PaperRef(f"X{k}", "biology", f"W{k}", None) for k in (1, 2, 3)}
    toolbox = ToolBox(OpenAlexClient(base_url=f"{mirror}/openalex"), None, unknown, strict=True)
    with pytest.raises(ScitasteError, match=r"27 of 27 tool calls failed .*Nothing was written"):
        freeze(toolbox, unknown, tmp_path / "ev", source="mirror")
    assert not (tmp_path / "ev").exists()


@pytest.mark.parametrize("extra, message", [
    (["--workers", "0"], "argument --workers: must be >= 1, got 0"),
    (["--dataset-is-predictions"], "has no bibcode or discipline"),
])
def test_freeze_arguments_are_checked_before_any_request(tmp_path, capsys, extra, message):
    predictions = tmp_path / "pure_qa.jsonl"
    predictions.write_text(json.dumps({"bibcode": "B1", "innovation_score": 50}) + "\n")
    args = ["evidence", "freeze", "--dataset", str(predictions), "--out", str(tmp_path / "ev"),
            "--mirror-url", "http://127.0.0.1:9"]
    code = None
    try:
        code = main(args + [e for e in extra if not e.startswith("--dataset")])
    except SystemExit as exc:  # argparse's own usage error
        code = exc.code
    assert code not in (0, None)
    assert message in capsys.readouterr().err and not (tmp_path / "ev").exists()


@pytest.mark.parametrize("arguments", ["[" * 100_000, '{"bibcode": ' * 5_000, '{"bibcode": ' + "1" * 5000 + "}",
                                       "not json", "[1, 2]", 42])
def test_arguments_that_are_no_object_are_the_models_error(arguments):
    # a model's tool-call arguments nested past the decoder's limit raised RecursionError and ended the run
    from scitaste_hf.agent.tools import requested_bibcode

    result = requested_bibcode("references", arguments, {"P1"})
    assert result == {"error": 'arguments must be a JSON object like {"bibcode": "..."}'}


def _dataset(tmp_path, refs):
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.schema import DIMENSIONS, record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    records = [{**dict.fromkeys(record_features()), "bibcode": b, "discipline": p.discipline,
                "openalex_id": p.openalex_id, "doi": p.doi, "title": "t", "abstract": "a", "year": 2000,
                "innovation_score": 50.0, "dimension_scores": dict.fromkeys(DIMENSIONS, 50.0)} for b, p in refs.items()]
    return write_dataset(tmp_path / "ds", {"selected": records, "backup": records[:1]}, DEFAULT_WEIGHTS,
                         synthetic=True)


def test_a_dataset_folder_serves_its_evidence_as_the_tool_evidence_config(mirror, papers, tmp_path, capsys,
                                                                          monkeypatch):
    """Frozen into the dataset folder by default, the evidence is the dataset's `tool_evidence` config: datasets
    loads it by name, the default config stays the two splits, and the tasks' loader reads it that way."""
    import datasets

    from scitaste_hf.adapters.lmeval.models import _tools
    from scitaste_hf.adapters.lmeval.tasks import toolbox
    from scitaste_hf.agent.evidence import EVIDENCE_DIR

    refs, _, _ = papers
    dataset = _dataset(tmp_path, refs)
    assert main(["evidence", "freeze", "--dataset", str(dataset), "--mirror-url", mirror]) == 0
    assert "it is the dataset's tool_evidence config" in capsys.readouterr().out
    assert (dataset / EVIDENCE_DIR / FILE).is_file()
    assert set(datasets.load_dataset(str(dataset))) == {"selected", "backup"}
    rows = datasets.load_dataset(str(dataset), "tool_evidence", split="train")
    assert len(rows) == 9 * len(refs) and {r["bibcode"] for r in rows} == set(refs)
    assert {r["tool"] for r in rows} == set(TOOL_NAMES)
    direct = FrozenToolBox.load(dataset / EVIDENCE_DIR).evidence

    calls = []
    real = datasets.load_dataset
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert FrozenToolBox.load(dataset).evidence == direct
    assert toolbox(str(dataset)).evidence == direct
    assert calls == [(str(dataset), "tool_evidence")] * 2  # through the config, not the folder beside the data
    assert _tools(str(dataset / EVIDENCE_DIR)).evidence == direct  # an evidence folder, read as before


def test_a_card_from_before_the_config_still_finds_the_folder(papers, tmp_path):
    from scitaste_hf.agent.evidence import EVIDENCE_DIR, freeze

    class Tools:
        def call(self, name, arguments):
            return {"tool": name}

    refs, _, _ = papers
    dataset = _dataset(tmp_path, refs)
    freeze(Tools(), refs, dataset / EVIDENCE_DIR, source="stub")
    card = dataset / "README.md"
    text = card.read_text()
    card.write_text(text[:text.index("- config_name: tool_evidence")] + text[text.index("dataset_info:"):])
    assert len(FrozenToolBox.load(dataset).evidence) == 9 * len(refs)


def test_evidence_of_a_hub_dataset_without_the_hub_is_one_line(tmp_path, monkeypatch):
    from scitaste_hf.adapters.lmeval.tasks import toolbox
    from scitaste_hf.errors import ScitasteError

    monkeypatch.chdir(tmp_path)
    assert toolbox(str(tmp_path / "no-such-dataset")) is None  # a missing folder: tool modes stop later
    with pytest.raises(ScitasteError, match=r"HF_HUB_OFFLINE is set, so the tool evidence of org/bench cannot be "
                                            r"fetched from the Hub; pass evidence_dir=") as err:
        toolbox("org/bench")
    assert "\n" not in str(err.value)


def test_freeze_of_a_records_file_needs_out(tmp_path, capsys):
    records = tmp_path / "gold.jsonl"
    records.write_text(json.dumps({"bibcode": "B1", "discipline": "physics"}) + "\n")
    assert main(["evidence", "freeze", "--dataset", str(records), "--mirror-url", "http://127.0.0.1:9"]) == 2
    assert "--out DIR is needed when --dataset is a records file" in capsys.readouterr().err
