"""`scitaste rtaste report`, through the command module's own parser until the core registers it."""

import argparse
import json

import pytest

import scitaste_hf.cli
from scitaste_hf.cli import rtaste
from scitaste_hf.errors import ScitasteError

#: The registry entry the core's CORE_COMMANDS is to carry.
REGISTRY_LINE = ("rtaste", "scitaste_hf.cli.rtaste", "score research-taste agents' registered experiments (rTaste)")


def _run(argv):
    parser = argparse.ArgumentParser(prog="scitaste rtaste")
    rtaste.add_arguments(parser)
    return rtaste.run(parser.parse_args(argv))


def test_report_of_the_bundled_release(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert _run(["report", "--json", str(out), "--n-resamples", "200"]) == 0
    printed = capsys.readouterr().out
    assert "SYNTHETIC" in printed
    for text in ("synthetic-model-a", "single_researcher", "same-model judge", "base rate", "agent's rank 1",
                 "first-written MVE", "120 MVEs, 24 conditions, 4 seed papers"):
        assert text in printed
    result = json.loads(out.read_text())
    assert result["n_mves"] == 120 and result["inputs"]["n_resamples"] == 200
    assert set(result["brier"]) >= {"agent", "same_model_judge", "judge_mean", "base_rate", "agent_minus_judge"}
    assert len(result["brier"]["agent"]["interval"]) == 2


def test_report_of_a_release_file(tmp_path, capsys, make_condition):
    rows = (make_condition("A", occurred=[1, 0, 1, 0, 1], probabilities=[0.5] * 5, seed_paper="p1",
                           judges={"m1": [0.5] * 5})
            + make_condition("B", occurred=[0, 0, 0, 0, 1], probabilities=[0.5] * 5, seed_paper="p2",
                             judges={"m1": [0.5] * 5}))
    data = tmp_path / "release.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "r.json"
    assert _run(["report", "--data", str(data), "--json", str(out), "--n-resamples", "0"]) == 0
    assert "SYNTHETIC" not in capsys.readouterr().out
    brier = json.loads(out.read_text())["brier"]
    assert brier["agent"] == {"estimate": 0.25, "interval": None, "clipped": False, "n": 10,
                              "n_groups": 2}
    assert brier["agent_minus_judge"]["estimate"] == 0.0


def test_bad_release_is_an_error_and_leaves_no_output(tmp_path, make_condition):
    rows = make_condition("A", occurred=[1, 0, 1, 0, 1], probabilities=[0.5] * 5)
    rows[0]["rank"] = 2
    data = tmp_path / "bad.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "r.json"
    with pytest.raises(ScitasteError, match=r"condition 'A': ranks: ranks \[2, 2, 3, 4, 5\] are not a permutation"):
        _run(["report", "--data", str(data), "--json", str(out)])
    assert not out.exists()
    with pytest.raises(ScitasteError, match="--n-resamples must be >= 0"):
        _run(["report", "--n-resamples", "-1"])


def test_command_module_stays_light():
    import subprocess
    import sys

    code = ("import sys, scitaste_hf.cli.rtaste; "
            "print(sorted(m for m in ('numpy', 'datasets', 'rich') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


def test_through_the_scitaste_entry_point(tmp_path, capsys, monkeypatch):
    if not any(name == "rtaste" for name, *_ in scitaste_hf.cli.CORE_COMMANDS):
        monkeypatch.setattr(scitaste_hf.cli, "CORE_COMMANDS", (*scitaste_hf.cli.CORE_COMMANDS, REGISTRY_LINE))
    out = tmp_path / "r.json"
    assert scitaste_hf.cli.main(["rtaste", "report", "--n-resamples", "0", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["n_conditions"] == 24
    capsys.readouterr()
    assert scitaste_hf.cli.main(["rtaste", "report", "--data", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip() == f"scitaste: error: rTaste release not found: {tmp_path / 'missing'}"


def test_an_unwritable_json_output_is_refused_before_the_report(tmp_path, monkeypatch):
    import scitaste_hf.rtaste.release as release

    def never(*args, **kwargs):
        raise AssertionError("the release was read before the output was checked")

    monkeypatch.setattr(release, "load_release", never)
    with pytest.raises(ScitasteError, match=r"^folder .*/missing does not exist$"):
        _run(["report", "--json", str(tmp_path / "missing" / "r.json")])
    with pytest.raises(ScitasteError, match="is a folder; give a file name"):
        _run(["report", "--json", str(tmp_path)])
