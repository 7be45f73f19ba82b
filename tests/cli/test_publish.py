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


def test_push_to_a_hub_server(tmp_path):
    """The real huggingface_hub upload against a Hub stand-in on 127.0.0.1: every metric file arrives intact."""
    import json
    import os
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    import httpx

    from scitaste_hf.cli.publish import metric_files
    from scitaste_hf.resources import metric_names, metric_path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "fake_hub.py"
    server = subprocess.Popen([sys.executable, str(fixture), str(port), str(tmp_path), "secret-token"])
    try:
        for _ in range(100):
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        env = {**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{port}", "HF_TOKEN": "secret-token",
               "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_XET": "1"}
        scitaste = str(Path(sys.executable).with_name("scitaste"))
        proc = subprocess.run([scitaste, "publish", "metrics", "--org", "test-org"], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "secret-token" not in proc.stdout + proc.stderr
        created = [json.loads(line) for line in (tmp_path / "created.jsonl").read_text().splitlines()]
        assert {(c["organization"], c["name"], c["type"], c["sdk"]) for c in created} == {
            ("test-org", name, "space", "gradio") for name in metric_names()}
        for name in metric_names():
            folder = metric_path(name)
            for path in metric_files(folder):
                pushed = tmp_path / "test-org" / name / path.relative_to(folder)
                assert pushed.read_bytes() == path.read_bytes(), pushed
        wrong = subprocess.run([scitaste, "publish", "metrics", "--org", "test-org"],
                               env={**env, "HF_TOKEN": "wrong"}, capture_output=True, text=True, timeout=120)
        assert wrong.returncode == 2 and wrong.stderr.startswith("scitaste: error: pushing test-org/")
        assert wrong.stderr.count("\n") == 1
    finally:
        server.terminate()
        server.wait(timeout=10)
