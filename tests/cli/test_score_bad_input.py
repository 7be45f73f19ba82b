"""`scitaste score` on input that used to escape as a traceback or a NaN: a clear one-line error before any
work is lost, or a result that never holds NaN."""

import json
import os
import re
from pathlib import Path

import pytest

import scitaste_hf.cli.score as score_command
from scitaste_hf.cli import main
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring.bootstrap import MAX_RESAMPLES, resample_counts


def _answer(score):
    return {"innovation_score": score, "dimension_scores": {k: score for k in DIMENSIONS}}


def _gold(i, score):
    return {"bibcode": f"B{i}", "discipline": "physics", **_answer(score)}


def _jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture()
def files(tmp_path):
    gold = _jsonl(tmp_path / "gold.jsonl", [_gold(i, 10 + 5 * i) for i in range(6)])
    pred = _jsonl(tmp_path / "pred.jsonl", [{"bibcode": f"B{i}", **_answer(12 + 5 * i)} for i in range(6)])
    return pred, gold


def _one_line_error(capsys, pattern):
    err = capsys.readouterr().err
    assert err.startswith("scitaste: error: ") and err.count("\n") == 1, err
    assert re.search(pattern, err), err
    return err


@pytest.fixture()
def no_scoring(monkeypatch):
    """Scoring fails the test: the error must come before any work."""
    def score_run(*args, **kwargs):
        raise AssertionError("scored although the --json destination is unusable")

    monkeypatch.setattr("scitaste_hf.scoring.score_run", score_run)


def test_json_destination_is_checked_before_scoring(files, tmp_path, capsys, no_scoring, monkeypatch):
    pred, gold = files
    both = ["score", "--predictions", str(pred), "--gold", str(gold)]
    folder = tmp_path / "existing"
    folder.mkdir()
    assert main([*both, "--json", str(folder)]) == 2
    _one_line_error(capsys, "existing is a folder; give a file name")
    assert main([*both, "--json", str(tmp_path / "missing" / "r.json")]) == 2
    _one_line_error(capsys, "folder .*missing does not exist")

    # A folder that refuses new files (read-only mount, chattr +i; chmod does not stop root, so simulated).
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path))

    monkeypatch.setattr("tempfile.TemporaryFile", refuse)
    assert main([*both, "--json", str(tmp_path / "r.json")]) == 2
    _one_line_error(capsys, "cannot write to folder .*: Permission denied$")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing", "gold.jsonl", "pred.jsonl"]


def test_weights_that_are_a_folder_or_binary(files, tmp_path, capsys):
    pred, gold = files
    both = ["score", "--predictions", str(pred), "--gold", str(gold), "--n-resamples", "0"]
    assert main([*both, "--weights", str(tmp_path)]) == 2
    _one_line_error(capsys, f"weights file {re.escape(str(tmp_path))} is a folder$")
    binary = tmp_path / "weights.json"
    binary.write_bytes(b"\xff\xfe\x00\x81 not text")
    assert main([*both, "--weights", str(binary)]) == 2
    _one_line_error(capsys, "weights file .*weights.json is not UTF-8 text")


def test_unreadable_predictions_file(files, capsys, monkeypatch):
    pred, gold = files
    read_bytes = Path.read_bytes  # chmod 000 does not stop root, as CI runs

    def denied(self, *args, **kwargs):
        if self == pred:
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_bytes", denied)
    assert main(["score", "--predictions", str(pred), "--gold", str(gold)]) == 2
    _one_line_error(capsys, "cannot read predictions file .*pred.jsonl: Permission denied$")


def test_main_reports_an_oserror_with_its_file_in_one_line(capsys, monkeypatch):
    def run(args):
        raise PermissionError(13, "Permission denied", "/data/out.json")

    monkeypatch.setattr(score_command, "run", run)
    assert main(["score"]) == 2
    _one_line_error(capsys, "^scitaste: error: cannot read/write /data/out.json: Permission denied$")

    def refused(args):  # not about a file the user gave: stays an exception
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(score_command, "run", refused)
    with pytest.raises(ConnectionRefusedError):
        main(["score"])


def test_only_newline_ends_a_line(tmp_path, capsys):
    # U+2028, U+2029 and U+0085 are legal raw in JSON strings; str.splitlines would cut these lines in two.
    reasoning = "first\u2028second\u2029third\x85fourth"
    gold = _jsonl(tmp_path / "gold.jsonl", [{**_gold(i, 10 + 5 * i), "title": f"T{i}\u2028x"} for i in range(4)])
    rows = [json.dumps({"bibcode": f"B{i}", **_answer(12 + 5 * i), "reasoning": reasoning}, ensure_ascii=False)
            for i in range(4)]
    pred = tmp_path / "pred.jsonl"
    pred.write_bytes(("\r\n".join(rows) + "\r\n").encode("utf-8"))  # Windows line ends too
    out = tmp_path / "r.json"
    assert main(["score", "--predictions", str(pred), "--gold", str(gold), "--json", str(out),
                 "--n-resamples", "0"]) == 0
    assert json.loads(out.read_text())["overall"]["n_scored"] == 4
    # Line numbers count "\n" only: the broken third line is line 3.
    pred.write_text("\n".join([*rows[:2], '{"bibcode": "B2", "innovation_score": ']) + "\n", encoding="utf-8")
    assert main(["score", "--predictions", str(pred), "--gold", str(gold)]) == 2
    _one_line_error(capsys, r"pred.jsonl:3: not a JSON line")


def test_deeply_nested_lines(files, tmp_path, capsys):
    pred, gold = files
    deep = '{"a": ' * 1500 + "1" + "}" * 1500
    _jsonl(pred, [deep])
    assert main(["score", "--predictions", str(pred), "--gold", str(gold)]) == 2
    _one_line_error(capsys, r"pred.jsonl:1: not a JSON line \(nested too deeply\)")
    # A model's deeply nested reply is the model's failure: counted, not an error.
    _jsonl(pred, [{"bibcode": "B0", "response": deep}, *({"bibcode": f"B{i}", **_answer(10)} for i in range(1, 6))])
    out = tmp_path / "r.json"
    assert main(["score", "--predictions", str(pred), "--gold", str(gold), "--json", str(out),
                 "--n-resamples", "0"]) == 0
    # its innermost levels are objects, none an answer
    assert json.loads(out.read_text())["overall"]["failures"] == {"schema": 1}
    _jsonl(gold, [_gold(0, 10), deep])
    assert main(["score", "--predictions", str(pred), "--gold", str(gold)]) == 2
    _one_line_error(capsys, r"gold.jsonl:2: not a JSON line \(nested too deeply\)")


@pytest.mark.parametrize(
    ("gold_rows", "message"),
    [
        ([_gold(0, 10), "42"], r"gold.jsonl:2: expected a JSON object, got int"),
        ([_gold(0, 10), {k: v for k, v in _gold(1, 20).items() if k != "bibcode"}], r"gold.jsonl:2: missing 'bibcode'"),
        ([_gold(0, 10), {**_gold(1, 20), "innovation_score": 10**400}],
         r"gold.jsonl has a score outside 0-100 at item 1: an integer too large for a float"),
    ],
)
def test_bad_gold_records(tmp_path, capsys, gold_rows, message):
    gold = _jsonl(tmp_path / "gold.jsonl", gold_rows)
    pred = _jsonl(tmp_path / "pred.jsonl", [{"bibcode": "B0", **_answer(12)}])
    out = tmp_path / "never.json"
    assert main(["score", "--predictions", str(pred), "--gold", str(gold), "--json", str(out)]) == 2
    _one_line_error(capsys, message)
    assert not out.exists()


def _zero_gold_files(tmp_path):
    gold = _jsonl(tmp_path / "gold.jsonl", [_gold(0, 0), _gold(1, 0), _gold(2, 30)])
    pred = _jsonl(tmp_path / "pred.jsonl", [{"bibcode": f"B{i}", **_answer(i + 1)} for i in range(3)])
    return pred, gold


def test_resamples_of_zero_gold_scores_leave_no_nan(tmp_path, capsys):
    pred, gold = _zero_gold_files(tmp_path)
    out = tmp_path / "r.json"
    assert main(["score", "--predictions", str(pred), "--gold", str(gold), "--json", str(out)]) == 0
    text = out.read_text()
    assert "NaN" not in text and "Infinity" not in text
    ci = json.loads(text)["overall"]["scheme2"]["ci"]
    assert 0.9 <= ci["wape"][0] <= ci["wape"][1] <= 1.05 and ci["score"][0] <= ci["score"][1]


def test_an_undefined_interval_is_null_and_shown_as_n_a(tmp_path, capsys):
    pred, gold = _zero_gold_files(tmp_path)
    # A seed whose only resample draws no paper with a nonzero gold score: WAPE is undefined on it.
    seed = next(s for s in range(1000) if resample_counts(3, 1, s)[0, 2] == 0)
    out = tmp_path / "r.json"
    assert main(["score", "--predictions", str(pred), "--gold", str(gold), "--json", str(out),
                 "--n-resamples", "1", "--seed", str(seed)]) == 0
    overall = json.loads(out.read_text())["overall"]
    assert overall["scheme2"]["ci"] == {"wape": None, "score": None}
    assert overall["scheme1"]["ci"]["scheme1"] is not None  # Scheme 1 is defined on every resample
    assert "100.0 [n/a]" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "-1"], "argument --seed: must be >= 0, got -1"),
        (["--seed", "1.5"], "argument --seed: expected a whole number, got '1.5'"),
        (["--n-resamples", "-1"], "argument --n-resamples: must be >= 0, got -1"),
    ],
)
def test_resampling_options_are_checked_while_parsing(capsys, no_scoring, args, message):
    with pytest.raises(SystemExit) as exc:
        main(["score", *args])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"scitaste score: error: {message}"


def test_too_many_resamples_stop_before_any_resampling(files, capsys):
    pred, gold = files
    assert main(["score", "--predictions", str(pred), "--gold", str(gold), "--n-resamples",
                 str(MAX_RESAMPLES + 1)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"scitaste: error: n_resamples must be a whole number between 1 and 100,000, got {MAX_RESAMPLES + 1}"


def test_a_failed_write_names_the_output_and_leaves_nothing(files, tmp_path, capsys, monkeypatch):
    pred, gold = files
    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, fd, *args, **kwargs):
            self.fh = real_fdopen(fd, *args, **kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(28, "No space left on device")  # as write() reports it: no file name

    monkeypatch.setattr("scitaste_hf.output.os.fdopen", FullDisk)
    assert main(["score", "--predictions", str(pred), "--gold", str(gold), "--json", str(tmp_path / "r.json"),
                 "--n-resamples", "0"]) == 2
    _one_line_error(capsys, r"cannot write .*r.json: No space left on device$")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gold.jsonl", "pred.jsonl"]


@pytest.mark.parametrize("line", [
    '{"bibcode": "B2", "innovation_score": ' + "9" * 5000 + ', "dimension_scores": {}}',
    '{"bibcode": "B2", "failure": "timeout", "detail": ' + "1" * 5000 + "}",
])
def test_an_integer_past_the_int_string_limit_is_a_one_line_error(tmp_path, line):
    """Python refuses to turn a string of over 4,300 digits into an int; json raises that as a plain ValueError."""
    import subprocess
    import sys

    gold = _jsonl(tmp_path / "gold.jsonl", [_gold(i, 10 + 5 * i) for i in range(6)])
    lines = [{"bibcode": f"B{i}", **_answer(12 + 5 * i)} for i in range(6)]
    pred = _jsonl(tmp_path / "pred.jsonl", [*lines[:2], line, *lines[3:]])
    proc = subprocess.run([str(Path(sys.executable).with_name("scitaste")), "score", "--predictions", str(pred),
                           "--gold", str(gold)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == f"scitaste: error: {pred}:3: not a JSON line (a number has too many digits)\n"
