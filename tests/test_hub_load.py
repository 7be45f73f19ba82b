"""scitaste_hf.net.hub.load_dataset, the one translation of datasets.load_dataset's Hub failures, through both of its
callers (the gold records and the frozen tool evidence), against the fake Hub on 127.0.0.1 (tests/fixtures)."""

import json
import subprocess
import sys

import httpx
import pytest

pytestmark = pytest.mark.slow

#: Each caller on one source, in a fresh interpreter (huggingface_hub reads HF_ENDPOINT when imported): what it
#: returned, or the ScitasteError's message, as JSON; a traceback fails the test.
PROBE = """
import json, sys
from scitaste_hf.agent.evidence import FrozenToolBox
from scitaste_hf.errors import ScitasteError
from scitaste_hf.records import load_records

out = {}
for name, call in (("records", lambda: load_records(sys.argv[1], "selected")),
                   ("evidence", lambda: FrozenToolBox.find(sys.argv[1]))):
    try:
        out[name] = {"returned": repr(call())}
    except ScitasteError as exc:
        out[name] = {"error": str(exc)}
print(json.dumps(out))
"""


def _both(env, source, tmp_path, **more: str) -> dict[str, str]:
    """Each caller's one-line error for ``source``; datasets is online unless ``more`` says otherwise (the suite
    runs it offline)."""
    env = {**env, "HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "0", **more}
    done = subprocess.run([sys.executable, "-c", PROBE, source], capture_output=True, text=True, timeout=300,
                          env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    assert all("error" in a for a in answers.values()), answers
    return {name: a["error"] for name, a in answers.items()}


def _fault(env, mode: str) -> None:
    httpx.post(env["HF_ENDPOINT"] + "/_fault", json={"mode": mode}, timeout=10).raise_for_status()


def test_a_dataset_the_hub_does_not_have_is_one_line_for_both(fake_hub, tmp_path):
    env, _ = fake_hub
    errors = _both(env, "org/missing", tmp_path)
    for message in errors.values():
        assert message.startswith("no dataset at org/missing: ") and "\n" not in message, errors
    assert errors["records"] == errors["evidence"]


def test_datasets_offline_with_nothing_cached_is_one_line_for_both(fake_hub, tmp_path):
    """The Hub answers the probe, but datasets may not ask it (its own ConnectionError)."""
    env, _ = fake_hub
    assert _both(env, "org/missing", tmp_path, HF_DATASETS_OFFLINE="1") == {
        "records": "Couldn't reach 'org/missing' on the Hub (OfflineModeIsEnabled); give a local dataset folder or "
                   "a .jsonl/.parquet file instead",
        "evidence": "Couldn't reach 'org/missing' on the Hub (OfflineModeIsEnabled); pass evidence_dir=... a local "
                    "evidence folder",
    }


@pytest.mark.parametrize(("mode", "reason"), [("close", "RemoteProtocolError"), ("hang", "ReadTimeout")])
def test_a_hub_that_fails_is_one_line_naming_what_and_instead(fake_hub, tmp_path, mode, reason):
    env, _ = fake_hub
    _fault(env, mode)
    try:
        errors = _both(env, "org/missing", tmp_path)
    finally:
        _fault(env, "ok")
    at = f"cannot reach the Hugging Face Hub at {env['HF_ENDPOINT']}"
    assert errors == {
        "records": f"{at} for dataset org/missing ({reason}); give a local dataset folder or a .jsonl/.parquet "
                   "file instead",
        "evidence": f"{at} for the tool evidence of org/missing ({reason}); pass evidence_dir=... a local "
                    "evidence folder",
    }


def test_offline_is_one_line_before_any_request(fake_hub, tmp_path):
    env, _ = fake_hub
    _fault(env, "hang")  # a request would hang: none is sent
    try:
        errors = _both(env, "org/missing", tmp_path, HF_HUB_OFFLINE="1")
        held = httpx.get(env["HF_ENDPOINT"] + "/_fault", timeout=10).json()["held"]
    finally:
        _fault(env, "ok")
    assert errors == {
        "records": "HF_HUB_OFFLINE is set, so dataset org/missing cannot be fetched from the Hub; give a local "
                   "dataset folder or a .jsonl/.parquet file instead",
        "evidence": "HF_HUB_OFFLINE is set, so the tool evidence of org/missing cannot be fetched from the Hub; pass "
                    "evidence_dir=... a local evidence folder",
    }
    assert held == 0
