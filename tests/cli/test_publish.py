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

    from scitaste_hf.cli.publish import folder_files
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
        for path in folder_files(folder):
            pushed = out / "test-org" / name / path.relative_to(folder)
            assert pushed.read_bytes() == path.read_bytes(), pushed
    wrong = subprocess.run([scitaste, "publish", "metrics", "--org", "test-org"],
                           env={**env, "HF_TOKEN": "wrong"}, capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and wrong.stderr.startswith("scitaste: error: pushing test-org/")
    assert wrong.stderr.count("\n") == 1


def test_publish_dataset(fake_hub, tmp_path, capsys):
    """A built dataset folder goes to a dataset repo; the work directory and hidden files stay home."""
    import subprocess
    import sys
    from pathlib import Path

    from dataset_builder.layout import write_dataset
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import DEFAULT_WEIGHTS, record_features

    gold = load_records(Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "examples" / "gold.jsonl")
    full = [{**dict.fromkeys(record_features()), **r} for r in gold[:8]]
    folder = write_dataset(tmp_path / "ds", {"selected": full[:4], "backup": full[4:]}, DEFAULT_WEIGHTS,
                           synthetic=True)
    (folder / ".cache").mkdir()
    (folder / ".cache" / "x.json").write_text("{}")
    assert main(["publish", "dataset", "--path", str(folder), "--repo-id", "org/bench", "--dry-run"]) == 0
    listed = capsys.readouterr().out
    assert "datasets/org/bench" in listed and "data/selected-00000-of-00001.parquet" in listed
    assert ".cache" not in listed
    env, out = fake_hub
    scitaste = str(Path(sys.executable).with_name("scitaste"))
    proc = subprocess.run([scitaste, "publish", "dataset", "--path", str(folder), "--repo-id", "org/bench"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for name in ("README.md", "data/selected-00000-of-00001.parquet", "data/backup-00000-of-00001.parquet"):
        assert (out / "org" / "bench" / name).read_bytes() == (folder / name).read_bytes()
    assert not (out / "org" / "bench" / ".cache").exists()


def test_publish_argument_errors(tmp_path, capsys):
    assert main(["publish", "metrics"]) == 2
    assert main(["publish", "dataset", "--path", str(tmp_path), "--repo-id", "org/x"]) == 2
    assert main(["publish", "dataset", "--path", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "scitaste: error: publish metrics needs --org ORG"
    assert "is not a built dataset" in err[1] and "needs --path DIR and --repo-id" in err[2]


def test_dry_run_refuses_what_a_real_push_would(tmp_path, capsys):
    from pathlib import Path

    from dataset_builder.layout import write_dataset
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import DEFAULT_WEIGHTS, record_features

    assert main(["publish", "metrics", "--org", "bad org", "--dry-run"]) == 2
    gold = load_records(Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "examples" / "gold.jsonl")
    full = [{**dict.fromkeys(record_features()), **r} for r in gold[:4]]
    folder = write_dataset(tmp_path / "ds", {"selected": full[:2], "backup": full[2:]}, DEFAULT_WEIGHTS,
                           synthetic=True)
    assert main(["publish", "dataset", "--path", str(folder), "--repo-id", "me/d s!", "--dry-run"]) == 2
    split = folder / "data" / "selected-00000-of-00001.parquet"
    split.write_bytes(split.read_bytes()[:200])  # a copy cut short
    assert main(["publish", "dataset", "--path", str(folder), "--repo-id", "me/ds", "--dry-run"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("scitaste: error: ") for line in err)
    assert "not a Hub repo id" in err[0] and "'bad org/" in err[0] and "'me/d s!'" in err[1]
    assert "selected-00000-of-00001.parquet is not a readable Parquet file" in err[2]
