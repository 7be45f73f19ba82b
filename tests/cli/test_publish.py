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
