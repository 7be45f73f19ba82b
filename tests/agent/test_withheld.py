"""Per-tool attribution, the withholding side: a tool whose frozen evidence is withheld answers as a live tool whose
service has no data on the paper; the task parameter that asks for it, and the generated drop-one tasks."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from scitaste_hf.adapters.lmeval.tasks import (
    TASKS,
    WITHHELD_GROUP,
    WITHHELD_MODE,
    doc_to_text,
    load_docs,
    withheld_task,
    withheld_tasks,
)
from scitaste_hf.agent.evidence import FrozenToolBox
from scitaste_hf.agent.tools import NO_DATA, TOOL_NAMES
from scitaste_hf.errors import InvalidInput, TaskUnavailable

ROOT = Path(__file__).resolve().parents[2]


def _box() -> FrozenToolBox:
    return FrozenToolBox({(b, t): {"tool": t, "bibcode": b, "count": k} for b in ("A", "B")
                          for k, t in enumerate(TOOL_NAMES)})


def test_a_withheld_tool_answers_that_its_service_has_no_data_and_the_others_are_unchanged():
    full = _box()
    without = full.withholding("citation_baseline")
    assert without.call("citation_baseline", {"bibcode": "A"}) == {"error": f"citation_baseline failed: {NO_DATA}"}
    for tool in TOOL_NAMES:
        if tool != "citation_baseline":
            assert without.call(tool, {"bibcode": "B"}) == full.call(tool, {"bibcode": "B"})
    # the failures of a bad call come first, as for any tool; the full box is left as it was
    assert "unknown bibcode" in without.call("citation_baseline", {"bibcode": "C"})["error"]
    assert full.call("citation_baseline", {"bibcode": "A"})["count"] == TOOL_NAMES.index("citation_baseline")
    assert without.withholding("").withheld is None and full.withholding(None) is full
    with pytest.raises(InvalidInput, match="'citations' is not a tool; the tools are paper_metadata"):
        full.withholding("citations")


def test_the_task_parameter_withholds_a_tool_in_the_prompt_and_records_it(evidence_dataset):
    docs = load_docs(str(evidence_dataset), scitaste_task_mode=WITHHELD_MODE, withhold="journal_profile")["test"]
    doc = docs[0]
    assert doc["withheld"] == "journal_profile"
    prompt = doc_to_text(doc)
    assert f'"error": "journal_profile failed: {NO_DATA}"' in prompt
    # every other tool's evidence is the frozen one, as in the full task's prompt
    full = load_docs(str(evidence_dataset), scitaste_task_mode=WITHHELD_MODE)["test"][0]
    assert full["withheld"] == "" and full["bibcode"] == doc["bibcode"]
    assert NO_DATA not in doc_to_text(full)
    frozen = FrozenToolBox.load(evidence_dataset).call("journal_profile", {"bibcode": doc["bibcode"]})
    assert json.dumps(frozen) in doc_to_text(full) and json.dumps(frozen) not in prompt
    # the drop-one task's own field, as its YAML names it, is the same parameter
    same = load_docs(str(evidence_dataset), scitaste_task_mode=WITHHELD_MODE,
                     scitaste_task_withhold="journal_profile")["test"][0]
    assert doc_to_text(same) == prompt


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"scitaste_task_mode": "pure_qa", "withhold": "references"}, "pure_qa has no tools to withhold"),
    ({"scitaste_task_mode": WITHHELD_MODE, "withhold": "nope"}, "'nope' is not a tool"),
    ({"scitaste_task_mode": WITHHELD_MODE, "withhold": "references", "scitaste_task_withhold": "authorship"},
     "this task withholds authorship; --metadata cannot withhold references"),
])
def test_a_withholding_that_cannot_be_is_one_line_before_any_paper(kwargs, message):
    with pytest.raises(TaskUnavailable, match=message):
        load_docs("/nonexistent", **kwargs)


def test_the_drop_one_tasks_are_the_generated_files_one_per_tool():
    folder = ROOT / "lm_eval_tasks" / "scitaste"
    files = withheld_tasks()
    for name, text in files.items():
        assert (folder / name).read_text("utf-8") == text, f"{name} is stale: run python docs/generate.py"
    group = yaml.safe_load(files[f"{WITHHELD_GROUP}.yaml"])
    assert group["task"] == [withheld_task(t) for t in TOOL_NAMES] and len(group["task"]) == 9
    for tool in TOOL_NAMES:
        config = yaml.safe_load(files[f"{withheld_task(tool)}.yaml"])
        assert config["dataset_kwargs"] == {"scitaste_task_mode": WITHHELD_MODE, "scitaste_task_withhold": tool}
        assert config["task"].startswith(TASKS[WITHHELD_MODE]) and config["include"] == "_scitaste_template.yaml"


@pytest.fixture(scope="module")
def built_with_evidence(once, mirror):
    """A build of the shared mirror's world and its frozen evidence, made once per run (slow: a minute or two)."""
    from world_build import built_with_evidence

    return built_with_evidence(once, mirror)


@pytest.mark.slow
def test_the_offline_baseline_loses_what_it_reads_from_a_withheld_tool_and_nothing_else(built_with_evidence):
    from world_build import baseline_run

    from scitaste_hf.analysis import analyse
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import DIMENSIONS
    from scitaste_hf.scoring import score_run
    from scitaste_hf.scoring.stats import Counts, Ranked, spearman

    data = built_with_evidence
    gold, backup = load_records(data), load_records(data, "backup")
    full = baseline_run(data, gold)
    runs = [full, *(baseline_run(data, gold, tool) for tool in ("citation_baseline", "paper_metadata",
                                                                "citation_history"))]
    report = analyse(runs, gold, backup=backup, n_resamples=300)
    effect = {a["tool"]: a for a in report["attribution"]}
    cut = effect["citation_baseline"]["statistics"]
    # citation impact is read from citation_baseline: without it the answer is the middle for every paper, so its
    # Spearman falls to no association, by the full run's own Spearman, and clearly so
    ones = Counts(np.ones((1, len(gold))))
    k = 1 + DIMENSIONS.index("citation_impact")
    P = np.array([full.predictions[r["bibcode"]].vector() for r in gold])
    G = np.array([[r["innovation_score"], *(r["dimension_scores"][d] for d in DIMENSIONS)] for r in gold])
    rho = float(spearman(Ranked(P[:, k]), Ranked(G[:, k]), ones)[0])
    assert rho > 0.25
    assert cut["spearman_citation_impact"]["difference"] == pytest.approx(rho)
    assert cut["spearman_citation_impact"]["interval"][0] > 0.1
    assert cut["spearman_citation_impact"]["interval"][0] > cut["spearman_citation_impact"]["detectable"] / 2
    # ... and every other dimension's answer is the same, so their Spearman is unchanged to the last bit
    without = runs[1].predictions
    for r in gold:
        a, b = full.predictions[r["bibcode"]], without[r["bibcode"]]
        assert b.dimension_scores.citation_impact == 50.0
        assert [getattr(a.dimension_scores, d) for d in DIMENSIONS if d != "citation_impact"] == \
            [getattr(b.dimension_scores, d) for d in DIMENSIONS if d != "citation_impact"]
    for key in (f"spearman_{d}" for d in DIMENSIONS if d != "citation_impact"):
        assert cut[key]["difference"] == 0.0 and cut[key]["interval"] == [0.0, 0.0]
    # the baseline never reads paper_metadata or citation_history: withholding either changes no score
    scored = score_run(gold, full.predictions, backup=backup, n_resamples=200)
    for run in runs[2:]:
        assert run.predictions == full.predictions
        assert score_run(gold, run.predictions, backup=backup, n_resamples=200) == scored
        assert all(v["difference"] == 0.0 for v in effect[run.withheld]["statistics"].values())


def test_the_inspect_tasks_take_the_same_parameter(evidence_dataset):
    pytest.importorskip("inspect_ai", reason="needs inspect-ai: pip install '.[inspect]'")
    from scitaste_hf.adapters.inspect.tasks import scitaste_task

    task = scitaste_task(WITHHELD_MODE, str(evidence_dataset), withhold="references", limit=2)
    for sample in task.dataset:
        results = {m.function: m.text for m in sample.input if m.role == "tool"}
        assert json.loads(results["references"]) == {"error": f"references failed: {NO_DATA}"}
        assert "error" not in json.loads(results["authorship"]) and sample.metadata["withheld"] == "references"
    with pytest.raises(TaskUnavailable, match="pure_qa has no tools to withhold"):
        scitaste_task("pure_qa", str(evidence_dataset), withhold="references")


def test_a_live_run_without_a_tool_does_not_share_lm_evals_cache_key_with_the_full_run(evidence_dataset):
    pytest.importorskip("lm_eval", reason="needs lm-eval: pip install '.[lmeval]'")
    import subprocess
    import sys

    from lm_eval.tasks import TaskManager

    from scitaste_hf.adapters.lmeval.models import BaselineLM

    live = TASKS["dimagent_v3_live"]
    folder = subprocess.run([str(Path(sys.executable).with_name("scitaste")), "tasks-path"], capture_output=True,
                            text=True, check=True).stdout.strip()
    baseline = BaselineLM(data_dir=str(evidence_dataset))  # may run the live loop
    keys = []
    for withhold in ("", "references"):
        metadata = {"data_dir": str(evidence_dataset), **({"withhold": withhold} if withhold else {})}
        task = TaskManager(include_path=folder, metadata=metadata).load([live])["tasks"][live]
        doc = task.test_docs()[0]
        request = task.construct_requests(doc, task.fewshot_context(doc, num_fewshot=0), metadata=(live, 0, 1))
        keys.append(request.arguments)
    assert keys[0][0] == keys[1][0]  # the same prompt: the live loop shows no evidence before the model calls
    assert keys[1][1]["scitaste_withheld"] == "references" and "scitaste_withheld" not in keys[0][1]
    del baseline
