"""`scitaste publish metrics`: the plan it prints and its refusal without a token."""

from scitaste_hf.cli import main


def test_dry_run_lists_both_metric_spaces(capsys):
    assert main(["publish", "metrics", "--org", "my-org", "--dry-run"]) == 0
    out = capsys.readouterr().out
    for name in ("scitaste_wape", "scitaste_scheme1"):
        assert f"spaces/my-org/{name}" in out
    for file in ("scitaste_wape.py", "scitaste_scheme1.py", "app.py", "README.md", "requirements.txt"):
        assert f"  {file}\n" in out
    assert "__pycache__" not in out and "pushing" not in out


def test_without_token_is_a_one_line_error(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "no-token"))
    assert main(["publish", "metrics", "--org", "my-org"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scitaste: error: no Hugging Face token") and err.count("\n") == 1


def test_push_to_a_hub_server(fake_hub):
    """The real huggingface_hub upload against a Hub stand-in on 127.0.0.1: every metric file arrives intact."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from scitaste_hf.cli.publish import metric_files
    from scitaste_hf.resources import metric_names, metric_path

    env, out = fake_hub
    scitaste = str(Path(sys.executable).with_name("scitaste"))
    proc = subprocess.run([scitaste, "publish", "metrics", "--org", "test-org"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert env["HF_TOKEN"] not in proc.stdout + proc.stderr
    created = [json.loads(line) for line in (out / "created.jsonl").read_text().splitlines()]
    assert {(c["organization"], c["name"], c["type"], c["sdk"]) for c in created} == {
        ("test-org", name, "space", "gradio") for name in metric_names()}
    for name in metric_names():
        folder = metric_path(name)
        for path in metric_files(folder):
            pushed = out / "test-org" / name / path.relative_to(folder)
            assert pushed.read_bytes() == path.read_bytes(), pushed
    wrong = subprocess.run([scitaste, "publish", "metrics", "--org", "test-org"],
                           env={**env, "HF_TOKEN": "wrong"}, capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and wrong.stderr.startswith("scitaste: error: pushing test-org/")
    assert wrong.stderr.count("\n") == 1
