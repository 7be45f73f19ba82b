"""The protected re-run against hostile MVE folders: each is bounded, resolved or unresolved for the stated reason,
and leaves no process behind. Every command is a real process; the network test listens on 127.0.0.1."""

import json
import os
import socket
import sys
import uuid
from pathlib import Path

import pytest

from scitaste_hf.rtaste.schema import RegisteredEvent
from scitaste_hf.rtaste_protocol import rerun as rerun_module
from scitaste_hf.rtaste_protocol.limits import Limits
from scitaste_hf.rtaste_protocol.rerun import rerun_one, run_protected

EVENT = RegisteredEvent(statistic="accuracy", relation="greater", threshold=0.5, unit="fraction")
FAST = Limits(wall_s=20, memory_mb=2048, output_mb=2, disk_mb=8)


def _alive(marker: str) -> list[int]:
    """The processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


_MARKERS: list[str] = []


@pytest.fixture(autouse=True)
def no_process_left_behind():
    """After every test, no process of any MVE it ran is alive."""
    _MARKERS.clear()
    yield
    assert [m for m in _MARKERS if _alive(m)] == []


def _mve(tmp_path: Path, script: str, *, reported=0.8, result_files=("results.json",)) -> Path:
    """An MVE folder whose command runs ``script`` with a marker in its command line (every process it forks
    carries it); the executor left results.json (its own result file) beside the code."""
    marker = f"rtaste-test-{uuid.uuid4().hex}"
    _MARKERS.append(marker)
    folder = tmp_path / "mve"
    folder.mkdir(parents=True)
    (folder / "eval.py").write_text(script)
    (folder / "results.json").write_text(json.dumps({"accuracy": reported}))
    (folder / "mve.json").write_text(json.dumps({
        "command": f"{sys.executable} eval.py {marker}", "executor": "hostile", "reported_value": reported,
        "value_unit": "fraction", "result_files": list(result_files)}))
    return folder


@pytest.fixture(params=["namespaces", "no namespaces"])
def isolation(request, monkeypatch):
    """Each test runs with the namespaces where the machine allows them, and once without (as where it does not)."""
    if request.param == "namespaces" and not rerun_module.namespaces():
        pytest.skip("this machine allows no unprivileged user namespaces")
    if request.param == "no namespaces":
        monkeypatch.setattr(rerun_module, "namespaces", lambda: False)
    return request.param


def test_an_honest_mve_is_resolved_from_the_rerun_alone_with_the_executor_files_gone(tmp_path):
    folder = _mve(tmp_path, "import os\n"
                                    "gone = not os.path.exists('results.json') and not os.path.exists('mve.json')\n"
                                    "print('RTASTE_STATISTIC=' + ('0.7' if gone else '0.1'))\n")
    record = rerun_one(folder, EVENT, FAST, digest="d")
    assert (record["status"], record["rerun_value"], record["occurred"]) == ("resolved", 0.7, True)
    assert (record["executor_value"], record["executor_occurred"], record["same_event"]) == (0.8, True, True)
    assert (folder / "results.json").exists()  # the delivered folder itself is only read


def test_a_command_that_sleeps_for_ever_is_killed_at_the_wall_time(tmp_path, isolation):
    folder = _mve(tmp_path, "import time\ntime.sleep(1000)\n")
    record = rerun_one(folder, EVENT, Limits(wall_s=1), digest="d")
    assert record["status"] == "unresolved" and "wall-time limit of 1 s" in record["reason"]
    assert record["wall_s"] < 10 and record["rerun_value"] is None


def test_children_left_behind_are_killed_and_the_statistic_stands(tmp_path, isolation):
    # one child stays in the group, one leaves it with setsid (a double fork, as a daemon does)
    folder = _mve(tmp_path, "import os, time\n"
                                    "if os.fork() == 0:\n    time.sleep(1000)\n"
                                    "if os.fork() == 0:\n    os.setsid()\n"
                                    "    if os.fork() == 0:\n        time.sleep(1000)\n    os._exit(0)\n"
                                    "time.sleep(0.3)\nprint('RTASTE_STATISTIC=0.2')\n")
    record = rerun_one(folder, EVENT, FAST, digest="d")
    assert (record["status"], record["rerun_value"], record["occurred"]) == ("resolved", 0.2, False)
    assert record["same_event"] is False  # the executor reported 0.8, which would have decided it otherwise
    if isolation == "no namespaces":
        assert record["strays_killed"] >= 1  # the setsid child, found by the run's token


def test_filling_the_disk_past_the_limit_is_stopped(tmp_path):
    folder = _mve(tmp_path, "import os\nk = 0\nwhile True:\n"
                                    "    open(f'f{k}', 'wb').write(os.urandom(1 << 20))\n    k += 1\n")
    record = rerun_one(folder, EVENT, Limits(wall_s=20, output_mb=2, disk_mb=3), digest="d")
    assert record["status"] == "unresolved" and "disk limit of 3 MB" in record["reason"]


def test_one_file_past_the_output_limit_stops_the_writer(tmp_path):
    # Python ignores SIGXFSZ, so the write past RLIMIT_FSIZE fails with EFBIG instead of killing it
    folder = _mve(tmp_path, "import os\nwith open('big', 'wb') as fh:\n"
                                    "    for _ in range(10):\n        fh.write(os.urandom(1 << 20))\n"
                                    "print('RTASTE_STATISTIC=0.9')\n")
    record = rerun_one(folder, EVENT, Limits(wall_s=20, output_mb=2, disk_mb=50), digest="d")
    assert (record["status"], record["reason"]) == ("unresolved", "the command exited with status 1")
    assert "File too large" in record["stderr_tail"]


def test_the_network_is_out_of_reach(tmp_path, isolation):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        folder = _mve(tmp_path, "import socket\ntry:\n"
                                        f"    socket.create_connection(('127.0.0.1', {port}), timeout=3).close()\n"
                                        "    print('RTASTE_STATISTIC=1')\n"
                                        "except OSError:\n    print('RTASTE_STATISTIC=0')\n")
        record = rerun_one(folder, EVENT, FAST, digest="d")
        with pytest.raises(TimeoutError):
            listener.accept()
    assert (record["status"], record["rerun_value"]) == ("resolved", 0.0)
    assert ("namespace" in record["enforced"]["network"]) == (isolation == "namespaces")


def test_rewriting_the_executor_value_file_in_the_copy_changes_nothing(tmp_path):
    folder = _mve(tmp_path, "import json\n"
                                    "json.dump({'reported_value': 0.99}, open('mve.json', 'w'))\n"
                                    "json.dump({'accuracy': 0.99}, open('results.json', 'w'))\n"
                                    "print('RTASTE_STATISTIC=0.3')\n")
    record = rerun_one(folder, EVENT, FAST, digest="d")
    assert (record["status"], record["rerun_value"], record["executor_value"]) == ("resolved", 0.3, 0.8)
    assert json.loads((folder / "mve.json").read_text())["reported_value"] == 0.8


def test_rewriting_the_delivered_folder_leaves_the_mve_unresolved(tmp_path):
    folder = tmp_path / "mve"
    target = folder / "mve.json"
    folder = _mve(tmp_path, "import json, sys\n"
                                    f"path = {str(target)!r}\n"
                                    "data = json.load(open(path))\ndata['reported_value'] = 0.3\n"
                                    "json.dump(data, open(path, 'w'))\nprint('RTASTE_STATISTIC=0.3')\n")
    record = rerun_one(folder, EVENT, FAST, digest="d")
    assert record["status"] == "unresolved" and record["reason"] == "the delivered folder changed during the re-run"
    assert record["executor_value"] == 0.8  # read before the command ran


@pytest.mark.parametrize(("script", "reason"), [
    ("print('RTASTE_STATISTIC=0.6')\nprint('RTASTE_STATISTIC=0.4')\n", "printed 2 statistics"),
    ("print('accuracy 0.6')\n", "printed no RTASTE_STATISTIC=<number> line"),
    ("print('RTASTE_STATISTIC=nan')\n", "is not a finite number"),
    ("print('RTASTE_STATISTIC=0.9')\nraise SystemExit(3)\n", "the command exited with status 3"),
])
def test_an_mve_without_one_clean_statistic_is_unresolved(tmp_path, script, reason):
    folder = _mve(tmp_path, script)
    record = rerun_one(folder, EVENT, FAST, digest="d")
    assert record["status"] == "unresolved" and reason in record["reason"] and record["occurred"] is None


def test_a_value_in_another_unit_is_unresolved_not_guessed(tmp_path):
    folder = _mve(tmp_path, "print('RTASTE_STATISTIC=0.9')\n")
    event = RegisteredEvent(statistic="latency", relation="less", threshold=2.0, unit="seconds")
    record = rerun_one(folder, event, FAST, digest="d")
    assert record["status"] == "unresolved" and "cannot compare a value in 'fraction'" in record["reason"]


def test_an_executor_failure_is_recorded_without_running(tmp_path):
    folder = _mve(tmp_path, "raise SystemExit('must not run')\n")
    data = json.loads((folder / "mve.json").read_text())
    (folder / "mve.json").write_text(json.dumps({**data, "status": "failed"}))
    record = rerun_one(folder, EVENT, FAST, digest="d")
    assert record["status"] == "failed" and "exit" not in record


def test_run_protected_cleans_its_temporary_place(tmp_path):
    folder = _mve(tmp_path, "print('RTASTE_STATISTIC=0.5')\n")
    work = tmp_path / "work"
    work.mkdir()
    assert run_protected(folder, FAST, work_parent=work)["value"] == 0.5
    assert list(work.iterdir()) == []


def test_a_folder_that_cannot_be_copied_or_is_too_large_is_unresolved_without_running(tmp_path):
    piped = _mve(tmp_path / "a", "print('RTASTE_STATISTIC=0.9')\n")
    os.mkfifo(piped / "pipe")  # copying would block on reading it
    record = rerun_one(piped, EVENT, FAST, digest="d")
    assert record["status"] == "unresolved" and "cannot be copied" in record["reason"] and "exit" in record
    large = _mve(tmp_path / "b", "print('RTASTE_STATISTIC=0.9')\n")
    (large / "data.bin").write_bytes(b"\0" * (2 << 20))
    record = rerun_one(large, EVENT, Limits(disk_mb=1), digest="d")
    assert record["status"] == "unresolved" and "more than the disk limit" in record["reason"]
    assert record["exit"] is None  # nothing ran
