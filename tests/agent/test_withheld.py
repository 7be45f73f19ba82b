"""Per-tool attribution, the withholding side: a tool whose frozen evidence is withheld answers as a live tool whose
service has no data on the paper; the task parameter that asks for it, and the generated drop-one tasks."""

import json
from pathlib import Path

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
