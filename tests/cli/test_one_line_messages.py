"""What a newcomer mistypes gets one line naming the option, key or value, never a traceback or a silent default:
`scitaste eval`'s --metadata, --tasks and --model_args, `scitaste score --split` with a file, and `scitaste space`'s
--port and --gold."""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from scitaste_hf.cli import main
from scitaste_hf.cli.eval import _metadata, _tasks_not_found
from scitaste_hf.errors import ScitasteError

ROOT = Path(__file__).resolve().parents[2]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
GOLD = ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl"


def _one_line(capsys, code, expected_code=2):
    err = capsys.readouterr().err
    assert code == expected_code and err.startswith("scitaste: error: ") and err.count("\n") == 1, err
    return err.removeprefix("scitaste: error: ").rstrip("\n")


@pytest.mark.parametrize(("given", "message"), [
    (["{data_dir: DIR}"], r"^--metadata is not valid JSON \(Expecting property name enclosed in double quotes, "
                          r"column 2\): \{data_dir: DIR\}; use double quotes around keys and strings"),
    (["{'data_dir': 'DIR'}"], r"^--metadata is not valid JSON .*use double quotes"),
    (["[1, 2]"], r"^--metadata must be a JSON object or KEY=VALUE words, not \[1, 2\]$"),
    (["data_dir"], r"^--metadata 'data_dir': expected a JSON object or KEY=VALUE words"),
])
def test_a_malformed_metadata_is_one_line(given, message):
    with pytest.raises(ScitasteError, match=message):
        _metadata(["--model", "m", "--metadata", *given, "--tasks", "t"])


def test_metadata_is_read_as_lm_eval_reads_it():
    assert _metadata(["--metadata", '{"data_dir": "D", "k": 1}']) == {"data_dir": "D", "k": 1}
    assert _metadata(["--metadata", "data_dir=D", "evidence_as=text", "--tasks", "t"]) == {
        "data_dir": "D", "evidence_as": "text"}
    assert _metadata(["--metadata=data_dir=D"]) == {"data_dir": "D"} and _metadata(["--tasks", "t"]) == {}


def test_eval_stops_on_bad_metadata_before_asking_the_hub(capsys):
    # it used to be ignored, and the run failed later with "cannot reach the Hugging Face Hub"
    err = _one_line(capsys, main(["eval", "--model", "scitaste-baseline", "--tasks", "scitaste_pure_qa",
                                  "--metadata", "{data_dir: DIR}"]))
    assert "--metadata is not valid JSON" in err and "Hub" not in err


def test_eval_without_tasks_says_so(capsys):
    err = _one_line(capsys, main(["eval", "--model", "scitaste-baseline"]))
    assert err.startswith("--tasks is required")


def test_a_task_typo_names_the_close_tasks():
    line = _tasks_not_found("Tasks not found: scitaste_dimagnet, nothing_like_it")
    assert line.startswith("--tasks: no task named scitaste_dimagnet (did you mean scitaste_dimagent")
    assert "nothing_like_it;" in line and "scitaste_any_model" in line and "\n" not in line


@pytest.mark.parametrize(("model_args", "message"), [
    ("base_url=http://127.0.0.1:9/v1,modle=x", r"^scitaste-agent does not take modle in --model_args; it takes "
                                               r"base_url, model, .*, item_timeout \(modle: did you mean model\?\)$"),
    ("base_url=http://127.0.0.1:9/v1", r"scitaste-agent needs model in --model_args \(e\.g\. --model_args "
                                       r"model=\.\.\.\)"),
])
def test_a_model_args_typo_or_gap_is_one_line(model_args, message):
    pytest.importorskip("lm_eval")
    from scitaste_hf.adapters.lmeval.models import AgentLM

    with pytest.raises(ScitasteError, match=message):
        AgentLM.create_from_arg_string(model_args, {"batch_size": 1, "device": None})


@pytest.mark.slow  # lm-eval's task index, parsed in this process
def test_a_task_typo_under_scitaste_eval_is_one_line(tmp_path, capsys, monkeypatch):
    pytest.importorskip("lm_eval")
    monkeypatch.chdir(tmp_path)
    err = _one_line(capsys, main(["eval", "--model", "scitaste-baseline", "--tasks", "scitaste_pureqa", "--metadata",
                                  json.dumps({"data_dir": str(GOLD)})]))
    assert err.startswith("--tasks: no task named scitaste_pureqa (did you mean scitaste_pure_qa"), err


@pytest.mark.slow
def test_a_model_args_typo_under_the_installed_scitaste_eval_is_one_line(tmp_path):
    """The installed entry point, as a newcomer runs it: the last line is the message, and no traceback."""
    pytest.importorskip("lm_eval")
    run = subprocess.run([SCITASTE, "eval", "--model", "scitaste-agent", "--model_args",
                          "base_url=http://127.0.0.1:9/v1,modle=x", "--tasks", "scitaste_pure_qa", "--metadata",
                          json.dumps({"data_dir": str(GOLD)})], capture_output=True, text=True, cwd=tmp_path,
                         timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert run.stderr.strip().splitlines()[-1].startswith(
        "scitaste: error: scitaste-agent does not take modle in --model_args"), run.stderr[-2000:]


def test_score_refuses_a_split_of_a_gold_file(tmp_path, capsys):
    pred = ROOT / "scitaste_hf" / "data" / "examples" / "predictions.jsonl"
    err = _one_line(capsys, main(["score", "--predictions", str(pred), "--gold", str(GOLD), "--split", "backup"]))
    assert err == (f"--split backup: --gold {GOLD} is a file, which holds one split's records; drop --split, or "
                   "give the dataset folder or Hub id")


def test_space_refuses_a_taken_port_and_a_wrong_gold_before_serving(tmp_path, capsys):
    pytest.importorskip("gradio")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["space", "--data", str(tmp_path), "--port", str(port)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == (f"scitaste: error: --port {port}: the port is in use on 127.0.0.1 (another `scitaste "
                   "space`?); pass a free one\n")
    code = main(["space", "--data", str(tmp_path), "--gold", str(tmp_path / "gold.jsnol")])
    out, err = capsys.readouterr()
    assert code == 2 and "serving on" not in out
    assert err == (f"scitaste: error: --gold {tmp_path / 'gold.jsnol'}: gold file or dataset folder not "
                   f"found: {tmp_path / 'gold.jsnol'}\n")
