"""scitaste_dimagent under stock lm_eval: round 1 rendered into the conversation (text, or tool messages where the
template renders them), the same parsing and metrics as `scitaste eval`, and one line for a task a model cannot run."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from stock_samples import MESSAGES_TASK, rules  # the scripted replies: every kind of answer the parser meets
from stock_samples import include as task_folder

from scitaste_hf.adapters.lmeval.tasks import ANY_MODEL, METRICS, OVERALL, TASKS, load_docs
from scitaste_hf.agent.tools import TOOL_NAMES
from scitaste_hf.modes import MODE_SPECS
from scitaste_hf.prompts import ANSWER_INSTRUCTION
from scitaste_hf.records import load_records

ROOT = Path(__file__).resolve().parents[2]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
GOLD = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(scope="module")
def server(servers, scripted_chat, tmp_path_factory):
    proc, url, log = scripted_chat({"rules": rules(GOLD), "default": "no rule"},
                                   tmp_path_factory.mktemp("anybackend_server"))
    yield url, log
    servers[1](proc)


def _sent(log, since):
    return [json.loads(line) for line in log.read_text().splitlines()[since:]]


def _lm_eval(url, data, out, tasks, include):
    """Stock lm_eval (not `scitaste eval`): lm-eval's own local-chat-completions model."""
    return subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "local-chat-completions",
         "--model_args", f"model=scripted,base_url={url}/v1/chat/completions,num_concurrent=8,max_retries=1,"
                         "tokenizer_backend=None",
         "--apply_chat_template", "--include_path", str(include), "--tasks", tasks,
         "--metadata", json.dumps({"data_dir": str(data)}), "--output_path", str(out)],
        cwd=out.parent, capture_output=True, text=True, timeout=400)


@pytest.fixture(scope="module")
def include(tmp_path_factory):
    """The task folder, plus a variant of scitaste_dimagent that asks for tool messages, as a user would write it."""
    return task_folder(tmp_path_factory.mktemp("include"))


def _results(out, task="scitaste_dimagent"):
    return json.loads(sorted(out.rglob("results_*.json"))[-1].read_text())["results"][task]


def _same(a, b):
    """The same metrics reported (the overall ones, and the per-discipline ones of the run's disciplines), with the
    same values."""
    reported = [m for m in METRICS if f"{m},none" in a]
    assert set(OVERALL) <= set(reported) and reported == [m for m in METRICS if f"{m},none" in b]
    return all((math.isnan(a[f"{m},none"]) and math.isnan(b[f"{m},none"])) or a[f"{m},none"] == pytest.approx(
        b[f"{m},none"], abs=1e-9) for m in reported)


def test_stock_lm_eval_runs_dimagent_like_scitaste_eval(evidence_dataset, stand_in_evidence, stock_samples, server,
                                                         tmp_path):
    url, log = server
    # 1. stock lm_eval with an API model (the run's stock run of tests/conftest.py, the same replies as this file's
    # server): round 1 as text in one user message (default), or as tool messages
    data, _, stock_results, stock_requests = stock_samples
    assert data == evidence_dataset
    sent = _sent(stock_requests, 0)
    assert len(sent) == 600 and all("tools" not in body for body in sent)
    text_sent = [b for b in sent if len(b["messages"]) == 1]
    stock = {b["messages"][1]["content"]: b["messages"] for b in sent if len(b["messages"]) > 1}
    assert len(text_sent) == 300 and len(stock) == 300
    bibcode = GOLD[7]["bibcode"]
    content = next(b for b in text_sent if f"Identifier: {bibcode}\n" in b["messages"][0]["content"])["messages"][0][
        "content"]
    for name in TOOL_NAMES:  # every tool's frozen result is in the prompt
        assert json.dumps(stand_in_evidence.call(name, {"bibcode": bibcode}), sort_keys=True) in content
    assert content.endswith(ANSWER_INSTRUCTION)
    # 2. scitaste eval with scitaste-agent over the same endpoint sends the very conversation of the messages task
    # (with lm-eval's --apply_chat_template too, which a user may copy from a stock command)
    args = [SCITASTE, "eval", "--model", "scitaste-agent", "--model_args",
            f"base_url={url}/v1,model=scripted,num_concurrent=8,max_retries=1", "--apply_chat_template",
            "--tasks", "scitaste_dimagent",
            "--metadata", json.dumps({"data_dir": str(evidence_dataset)}), "--output_path", str(tmp_path / "agent"),
            "--use_cache", str(tmp_path / "cache")]
    second = len(log.read_text().splitlines())
    agent_run = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert agent_run.returncode == 0, agent_run.stderr[-3000:]
    agent = {b["messages"][1]["content"]: b["messages"] for b in _sent(log, second)}
    assert len(agent) == 300 and stock == agent
    assert [m["role"] for m in next(iter(agent.values()))] == ["system", "user", "assistant", *["tool"] * 9, "user"]
    # the same answers parsed the same way: every metric equal, three papers in ten failing in each run
    text, messages, ours = (stock_results["scitaste_dimagent"], stock_results[MESSAGES_TASK],
                            _results(tmp_path / "agent"))
    assert _same(text, ours) and _same(messages, ours)
    assert ours["coverage,none"] == pytest.approx(0.7)
    # 3. --use_cache: a second run sends nothing and reports the same
    third = len(log.read_text().splitlines())
    again = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(log.read_text().splitlines()) == third and _same(_results(tmp_path / "agent"), ours)


def test_what_a_model_cannot_run_stops_with_one_line(evidence_dataset, server, include, tmp_path):
    pytest.importorskip("lm_eval", reason="needs lm-eval: pip install 'scitaste-hf[lmeval]'")
    from scitaste_hf.adapters.lmeval.models import AgentLM
    from scitaste_hf.errors import TaskUnavailable

    url, log = server
    before = len(log.read_text().splitlines())
    run = _lm_eval(url, evidence_dataset, tmp_path / "out", "scitaste_native_search", include)
    line = run.stderr.strip().splitlines()[-1]
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert line.startswith("scitaste_native_search needs the provider's own web search") and \
        "scitaste_pure_qa or scitaste_dimagent" in line
    assert len(log.read_text().splitlines()) == before  # nothing was sent
    # in this process no scitaste model is alive yet: a stock model would be asked
    for mode, needs in (("dimagent_v3_native", "web search"), ("dimagent_v3_live", "live tool loop")):
        with pytest.raises(TaskUnavailable, match=needs):
            load_docs(str(evidence_dataset), scitaste_task_mode=mode)
    # scitaste-agent runs the live loop; the search modes only with a profile that has search
    agent = AgentLM(f"{url}/v1", "scripted")
    assert len(load_docs(str(evidence_dataset), scitaste_task_mode="dimagent_v3_live")["test"]) == 300
    with pytest.raises(TaskUnavailable, match="web search"):
        load_docs(str(evidence_dataset), scitaste_task_mode="native_search")
    searching = AgentLM(f"{url}/v1", "scripted", profile="openai")
    assert len(load_docs(str(evidence_dataset), scitaste_task_mode="native_search")["test"]) == 300
    del agent, searching


def test_a_tool_mode_without_evidence_stops_before_any_paper(tmp_path):
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.errors import TaskUnavailable
    from scitaste_hf.schema import record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    rows = [{**dict.fromkeys(record_features()), **r} for r in GOLD[:12]]
    data = write_dataset(tmp_path / "ds", {"selected": rows, "backup": rows}, DEFAULT_WEIGHTS, synthetic=True)
    with pytest.raises(TaskUnavailable, match="frozen tool evidence"):
        load_docs(str(data), scitaste_task_mode="dimagent_v3")
    docs = load_docs(str(data), scitaste_task_mode="pure_qa")["test"]
    assert set(docs["scitaste_mode"]) == {"pure_qa"} and len(docs) == 12
    # evidence frozen for another dataset (none of these papers): one line, not nine errors per paper
    other = [{**r, "bibcode": f"OTHER{k}"} for k, r in enumerate(rows)]
    elsewhere = write_dataset(tmp_path / "other", {"selected": other, "backup": other}, DEFAULT_WEIGHTS,
                              synthetic=True)
    from scitaste_hf.agent.evidence import EVIDENCE_DIR, freeze

    freeze(type("Tools", (), {"call": lambda self, name, arguments: {"tool": name}})(), [r["bibcode"] for r in rows],
           elsewhere / EVIDENCE_DIR, source="another dataset's")
    with pytest.raises(TaskUnavailable, match="lacks 12 of the 12 papers"):
        load_docs(str(elsewhere), scitaste_task_mode="dimagent_v3")
    with pytest.raises(TaskUnavailable, match="evidence_as must be one of"):
        load_docs(str(data), evidence_as="bogus")


def test_modes_that_share_a_prompt_do_not_share_lm_evals_cache_key(evidence_dataset):
    """lm-eval keys --use_cache by a request's arguments: a mode only scitaste's models run carries its name there,
    and a few-shot request is refused (the examples would be other papers with their gold labels)."""
    pytest.importorskip("lm_eval", reason="needs lm-eval: pip install 'scitaste-hf[lmeval]'")
    from lm_eval.tasks import TaskManager

    from scitaste_hf.adapters.lmeval.models import BaselineLM
    from scitaste_hf.errors import TaskUnavailable

    baseline = BaselineLM(data_dir=str(evidence_dataset))  # may run every mode
    tasks = TaskManager(include_path=subprocess.run([SCITASTE, "tasks-path"], capture_output=True, text=True,
                                                    check=True).stdout.strip(),
                        metadata={"data_dir": str(evidence_dataset)}).load(list(TASKS.values()))["tasks"]
    keys = {}
    for name, task in tasks.items():
        doc = task.test_docs()[0]
        request = task.construct_requests(doc, task.fewshot_context(doc, num_fewshot=0), metadata=(name, 0, 1))
        keys[name] = json.dumps(request.arguments, sort_keys=True)
        with pytest.raises(TaskUnavailable, match="zero-shot"):
            task.fewshot_context(doc, num_fewshot=2)
    assert len(set(keys.values())) == len(TASKS)
    for stock in ANY_MODEL:  # what stock models get carries no mode
        assert "scitaste_mode" not in keys[stock]
    del baseline


def test_each_task_yaml_names_its_mode():
    import yaml

    folder = ROOT / "lm_eval_tasks" / "scitaste"
    for mode, spec in MODE_SPECS.items():
        config = yaml.safe_load((folder / f"{spec.task}.yaml").read_text())
        assert config["task"] == TASKS[mode] and config["dataset_kwargs"] == {"scitaste_task_mode": mode}
    group = yaml.safe_load((folder / "scitaste.yaml").read_text())
    assert group["task"] == [s.task for s in MODE_SPECS.values() if s.tools != "live"]
    # the task folder's README lists every task with its mode, and marks the group's as the paper's
    rows = re.findall(r"^\| `(scitaste_\w+)`( \(\*paper\*\))? \| `(\w+)` \|", (folder / "README.md").read_text(), re.M)
    assert {task: mode for task, _, mode in rows} == {s.task: m for m, s in MODE_SPECS.items()}
    assert sorted(task for task, paper, _ in rows if paper) == sorted(group["task"])


def _hf_template(source):
    """What lm-eval's hf and vllm models hand the task: the tokenizer's apply_chat_template as a callable."""
    import jinja2.sandbox

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(source)

    def apply(messages, add_generation_prompt=True):
        return template.render(messages=messages, add_generation_prompt=add_generation_prompt)

    return apply


def _api_template(messages, add_generation_prompt=True):
    from lm_eval.models.api_models import JsonChatStr

    return JsonChatStr(json.dumps(messages))


@pytest.mark.parametrize("evidence_as", ["auto", "messages", "text"])
def test_the_rendering_follows_the_template(evidence_dataset, stand_in_evidence, chat_templates, evidence_as):
    pytest.importorskip("lm_eval", reason="needs lm-eval: pip install 'scitaste-hf[lmeval]'")
    from scitaste_hf.adapters.lmeval.chat_task import _as_messages
    from scitaste_hf.adapters.lmeval.tasks import doc_to_text
    from scitaste_hf.errors import TaskUnavailable

    doc = load_docs(str(evidence_dataset), scitaste_task_mode="dimagent_v3", evidence_as=evidence_as)["test"][3]
    result = json.dumps(stand_in_evidence.call("references", {"bibcode": doc["bibcode"]}), sort_keys=True)
    tools = _as_messages(doc, _hf_template(chat_templates["tools"]), "Be brief.") if evidence_as != "text" else None
    if evidence_as != "text":  # a template with tool roles: rendered as tool messages, every result shown
        assert tools.count("<tool_response>") == 9 and f"<tool_response>{result}</tool_response>" in tools
        assert tools.startswith("<|system|>Be brief.\n\nYou are a senior") and '"arguments": {"bibcode"' in tools
    api = _as_messages(doc, _api_template, None) if evidence_as != "text" else None
    if evidence_as == "messages":  # an API model asked for messages: OpenAI tool messages
        assert [m["role"] for m in json.loads(api.prompt)][2:4] == ["assistant", "tool"]
        with pytest.raises(TaskUnavailable, match="cannot render tool messages"):
            _as_messages(doc, _hf_template(chat_templates["strict"]), None)
        with pytest.raises(TaskUnavailable, match="drops tool calls"):
            _as_messages(doc, _hf_template(chat_templates["dropping"]), None)
    elif evidence_as == "auto":  # the server's template is unseen; templates without tool roles: text instead
        assert api is None
        assert _as_messages(doc, _hf_template(chat_templates["strict"]), None) is None
        assert _as_messages(doc, _hf_template(chat_templates["dropping"]), None) is None
    text = doc_to_text(doc)
    assert result in text and text.count('({"bibcode": ') == 9 and text.endswith(ANSWER_INSTRUCTION)
