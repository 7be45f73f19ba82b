"""`scitaste publish`: the plan it prints, its refusal without a token, and what a Hub stand-in receives: the
metric and leaderboard Spaces with the wheel they install, and a dataset with its frozen tool evidence."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scitaste_hf.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
WHEEL = "scitaste_hf-0.1.0-py3-none-any.whl"


def test_dry_run_lists_both_metric_spaces(capsys, monkeypatch):
    from scitaste_hf.cli import publish

    def no_build(*_):
        raise AssertionError("a dry run builds no wheel")

    monkeypatch.setattr(publish, "write_wheel", no_build)
    assert main(["publish", "metrics", "--org", "my-org", "--dry-run"]) == 0
    out = capsys.readouterr().out
    for name in ("scitaste_wape", "scitaste_scheme1"):
        assert f"spaces/my-org/{name}" in out
    for file in ("scitaste_wape.py", "scitaste_scheme1.py", "app.py", "README.md", "requirements.txt", WHEEL):
        assert f"  {file}\n" in out
    assert "__pycache__" not in out and "pushing" not in out
    assert main(["publish", "space", "--repo-id", "my-org/board", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would push" in out and "spaces/my-org/board" in out
    assert [line.strip() for line in out.splitlines() if line.startswith("  ")] == [
        "README.md", "app.py", "requirements.txt", WHEEL, "screenshot.png"]


def test_without_token_is_a_one_line_error(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "no-token"))
    assert main(["publish", "metrics", "--org", "my-org"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scitaste: error: no Hugging Face token") and err.count("\n") == 1


def _pyproject_requirements(*groups: str) -> list[str]:
    """The dependencies (``""``) and extras of pyproject.toml, as a pushed requirements.txt must name them."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [str(Requirement(r)) for g in groups
            for r in (project["optional-dependencies"][g] if g else project["dependencies"])]


def _check_space(pushed: Path, folder: Path, url: str) -> None:
    """A pushed Space holds the app's files, its card with the Python it needs, and a requirements.txt that names
    the wheel pushed beside it (by its URL in the Space's repo) and pyproject.toml's dependencies."""
    import re

    from scitaste_hf.cli.publish import folder_files

    for path in folder_files(folder):
        name = path.relative_to(folder).as_posix()
        if name not in ("README.md", "requirements.txt"):
            assert (pushed / name).read_bytes() == path.read_bytes(), name
    card = (pushed / "README.md").read_text()
    assert re.search(r'^python_version: "3\.11"$', card.split("---")[1], re.MULTILINE)
    assert card.replace('python_version: "3.11"\n', "") == (folder / "README.md").read_text()
    lines = [line for line in (pushed / "requirements.txt").read_text().splitlines() if not line.startswith("#")]
    assert lines[0] == f"scitaste-hf[space] @ {url}/{WHEEL}"
    assert lines[1:] == sorted(_pyproject_requirements("", "space"))
    assert (pushed / WHEEL).is_file()


def _check_wheel(wheel: Path) -> None:
    """The wheel holds the package: every file of scitaste_hf/ (the builder included), the metrics, tasks and Space
    bundled as pyproject.toml says, byte for byte, with its metadata and a RECORD that matches."""
    import base64
    import hashlib
    import zipfile
    from email.parser import Parser

    from packaging.requirements import Requirement

    from scitaste_hf.cli.publish import folder_files

    expected = {f"{name}/{p.relative_to(ROOT / name).as_posix()}": p for name in ("scitaste_hf",)
                for p in folder_files(ROOT / name)}
    expected |= {f"scitaste_hf/_bundled/{name}/{p.relative_to(ROOT / name).as_posix()}": p
                 for name in ("metrics", "lm_eval_tasks", "space") for p in folder_files(ROOT / name)}
    assert "scitaste_hf/cli/publish.py" in expected and "scitaste_hf/builder/layout.py" in expected
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = "scitaste_hf-0.1.0.dist-info"
        assert names - set(expected) == {f"{info}/{n}" for n in ("METADATA", "WHEEL", "RECORD", "entry_points.txt")}
        assert set(expected) <= names
        for name, path in expected.items():
            assert archive.read(name) == path.read_bytes(), name
        meta = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        assert (meta["Name"], meta["Version"], meta["Requires-Python"]) == ("scitaste-hf", "0.1.0", ">=3.11")
        declared = [Requirement(r) for r in meta.get_all("Requires-Dist")]
        # an installed copy's metadata may list them in another order than pyproject.toml
        assert sorted(str(r) for r in declared if r.marker is None or "extra" not in str(r.marker)) == \
            sorted(_pyproject_requirements(""))
        assert "scitaste = scitaste_hf.cli:main" in archive.read(f"{info}/entry_points.txt").decode()
        for line in archive.read(f"{info}/RECORD").decode().splitlines():
            name, digest, size = line.split(",")
            if name != f"{info}/RECORD":
                data = archive.read(name)
                assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
                    b"=").decode() and int(size) == len(data), name


def test_push_to_a_hub_server(fake_hub):
    """The real huggingface_hub upload against a Hub stand-in on 127.0.0.1: every metric file arrives intact, with
    the wheel the Space installs and the requirements.txt that names it."""
    from scitaste_hf.resources import metric_names, metric_path

    env, out = fake_hub
    proc = subprocess.run([SCITASTE, "publish", "metrics", "--org", "test-org"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert env["HF_TOKEN"] not in proc.stdout + proc.stderr
    created = [json.loads(line) for line in (out / "created.jsonl").read_text().splitlines()]
    assert {(c["organization"], c["name"], c["type"], c["sdk"]) for c in created} == {
        ("test-org", name, "space", "gradio") for name in metric_names()}
    for name in metric_names():
        pushed = out / "test-org" / name
        _check_space(pushed, metric_path(name), f"{env['HF_ENDPOINT']}/spaces/test-org/{name}/resolve/main")
        assert (pushed / WHEEL).read_bytes() == (out / "test-org" / metric_names()[0] / WHEEL).read_bytes()
    _check_wheel(out / "test-org" / "scitaste_wape" / WHEEL)
    wrong = subprocess.run([SCITASTE, "publish", "metrics", "--org", "test-org"],
                           env={**env, "HF_TOKEN": "wrong"}, capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and wrong.stderr.startswith("scitaste: error: pushing test-org/")
    assert wrong.stderr.count("\n") == 1


def test_publish_leaderboard_space(fake_hub):
    """`publish space`: the leaderboard app, its card, the wheel and the requirements.txt that names it."""
    from scitaste_hf.resources import bundled_dir

    env, out = fake_hub
    proc = subprocess.run([SCITASTE, "publish", "space", "--repo-id", "test-org/board"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    created = [json.loads(line) for line in (out / "created.jsonl").read_text().splitlines()]
    assert [(c["organization"], c["name"], c["type"], c["sdk"]) for c in created] == [
        ("test-org", "board", "space", "gradio")]
    pushed = out / "test-org" / "board"
    _check_space(pushed, bundled_dir("space"), f"{env['HF_ENDPOINT']}/spaces/test-org/board/resolve/main")
    assert sorted(p.name for p in pushed.iterdir()) == ["README.md", "app.py", "requirements.txt", WHEEL,
                                                        "screenshot.png"]
    _check_wheel(pushed / WHEEL)


def _freeze_stub(dataset: Path, bibcodes: list[str]) -> Path:
    """Frozen evidence in ``dataset/tool_evidence``, written by :func:`freeze` over a stand-in toolbox."""
    from scitaste_hf.agent.evidence import EVIDENCE_DIR, freeze

    class Tools:
        def call(self, name, arguments):
            return {"tool": name, "bibcode": arguments["bibcode"]}

    return freeze(Tools(), bibcodes, dataset / EVIDENCE_DIR, source="stub", workers=2)


def test_publish_dataset(fake_hub, tmp_path, capsys):
    """A built dataset folder goes to a dataset repo with its frozen tool evidence, which the pushed copy serves as
    its `tool_evidence` config; the work directory and hidden files stay home."""
    import datasets

    from scitaste_hf.agent.evidence import FILE, FrozenToolBox
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    gold = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")
    full = [{**dict.fromkeys(record_features()), **r} for r in gold[:8]]
    folder = write_dataset(tmp_path / "ds", {"selected": full[:4], "backup": full[4:]}, DEFAULT_WEIGHTS,
                           synthetic=True)
    (folder / ".cache").mkdir()
    (folder / ".cache" / "x.json").write_text("{}")
    assert main(["publish", "dataset", "--path", str(folder), "--repo-id", "org/bench", "--dry-run"]) == 0
    listed = capsys.readouterr().out
    assert "datasets/org/bench" in listed and "data/selected-00000-of-00001.parquet" in listed
    assert ".cache" not in listed and "no frozen tool evidence" in listed
    _freeze_stub(folder, [r["bibcode"] for r in full[:4]])
    assert main(["publish", "dataset", "--path", str(folder), "--repo-id", "org/bench", "--dry-run"]) == 0
    listed = capsys.readouterr().out
    assert f"  tool_evidence/{FILE}\n" in listed and "no frozen tool evidence" not in listed
    env, out = fake_hub
    proc = subprocess.run([SCITASTE, "publish", "dataset", "--path", str(folder), "--repo-id", "org/bench"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert 'datasets.load_dataset("org/bench", "tool_evidence")' in proc.stdout
    pushed = out / "org" / "bench"
    for name in ("README.md", "data/selected-00000-of-00001.parquet", "data/backup-00000-of-00001.parquet",
                 f"tool_evidence/{FILE}"):
        assert (pushed / name).read_bytes() == (folder / name).read_bytes()
    assert not (pushed / ".cache").exists() and not (pushed / "tool_evidence" / ".cache").exists()
    # What the repo holds loads as the Hub would serve it: the default config is the two splits, the evidence its own.
    assert set(datasets.load_dataset(str(pushed))) == {"selected", "backup"}
    rows = datasets.load_dataset(str(pushed), "tool_evidence", split="train")
    assert len(rows) == 4 * 9 and set(rows.column_names) >= {"bibcode", "tool", "payload", "fetched_at"}
    frozen = FrozenToolBox.load(pushed)
    assert frozen.call("references", {"bibcode": full[0]["bibcode"]}) == {"tool": "references",
                                                                          "bibcode": full[0]["bibcode"]}


def test_publish_dataset_refuses_evidence_its_card_does_not_declare(tmp_path, capsys):
    """Evidence beside a card written before the tool_evidence config existed would be pushed and never load."""
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    gold = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")
    full = [{**dict.fromkeys(record_features()), **r} for r in gold[:4]]
    folder = write_dataset(tmp_path / "ds", {"selected": full[:2], "backup": full[2:]}, DEFAULT_WEIGHTS,
                           synthetic=True)
    _freeze_stub(folder, [r["bibcode"] for r in full[:2]])
    card = folder / "README.md"
    text = card.read_text()
    start = text.index("- config_name: tool_evidence")
    card.write_text(text[:start] + text[text.index("dataset_info:"):])
    assert main(["publish", "dataset", "--path", str(folder), "--repo-id", "me/ds", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scitaste: error: ") and err.count("\n") == 1
    assert "declares no tool_evidence config" in err


def test_publish_argument_errors(tmp_path, capsys):
    assert main(["publish", "metrics"]) == 2
    assert main(["publish", "dataset", "--path", str(tmp_path), "--repo-id", "org/x"]) == 2
    assert main(["publish", "dataset", "--path", str(tmp_path)]) == 2
    assert main(["publish", "space", "--dry-run"]) == 2
    assert main(["publish", "space", "--repo-id", "board", "--dry-run"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "scitaste: error: publish metrics needs --org ORG"
    assert "is not a built dataset" in err[1] and "needs --path DIR and --repo-id" in err[2]
    assert err[3] == "scitaste: error: publish space needs --repo-id ORG/NAME"
    assert err[4] == "scitaste: error: --repo-id must be ORG/NAME, got 'board'"


def test_dry_run_refuses_what_a_real_push_would(tmp_path, capsys):
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    assert main(["publish", "metrics", "--org", "bad org", "--dry-run"]) == 2
    gold = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")
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


def test_a_hub_that_never_answers_ends_the_push_with_one_line(fake_hub):
    """huggingface_hub's client has no timeout of its own: a Hub that answers the reachability probe and then holds
    the repo's creation for good must end the push, with one line, once the Hub timeout has passed."""
    import httpx

    env, _ = fake_hub
    httpx.post(f"{env['HF_ENDPOINT']}/_fault", json={"mode": "hold", "match": "/repos/create"}, timeout=5)
    code = ("import sys, scitaste_hf.net.hub as hub; hub.HUB_TIMEOUT = 2.0; from scitaste_hf.cli import main; "
            "sys.exit(main(['publish', 'metrics', '--org', 'test-org']))")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    held = httpx.get(f"{env['HF_ENDPOINT']}/_fault", timeout=5).json()["held"]
    httpx.post(f"{env['HF_ENDPOINT']}/_fault", json={"mode": "ok"}, timeout=5)
    assert held == 1  # the push did reach the Hub and got no answer
    assert proc.returncode == 2 and proc.stderr.startswith("scitaste: error: pushing test-org/"), proc.stderr
    assert proc.stderr.count("\n") == 1
