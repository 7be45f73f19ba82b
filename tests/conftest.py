"""Test-wide settings: no test may reach the internet, and Hugging Face caches stay inside the test run; which
tests are opt-in and which are slow."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

# Set before any test imports datasets/evaluate/huggingface_hub, which read these at import time.
_CACHE = tempfile.mkdtemp(prefix="scitaste-hf-tests-")
os.environ.setdefault("HF_HOME", _CACHE)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_EVALUATE_OFFLINE"] = "1"
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ.pop("HF_TOKEN", None)

#: Tests that need something the suite does not install; each runs only when `-m` names it (`pytest -m llm`).
OPT_IN = ("llm", "hf", "hub_install")
#: The end-to-end tests (a build, lm-eval, a Space, the demo, a browser: 5-40 s each), left out by
#: `pytest -m "not slow"`, the inner loop; by file, or by test id.
SLOW = ("tests/builder/test_build.py", "tests/builder/test_as_of.py", "tests/builder/test_extended.py",
        "tests/builder/test_source_snapshot.py",
        "tests/scale/test_record_contract.py::test_both_engines_accept_the_same_records_with_the_same_results",
        "tests/demo/test_demo.py",
        "tests/space/test_space_app.py", "tests/space/test_space_browser.py", "tests/space/test_hub_copy_hang.py",
        "tests/tasks/test_dimagent_any_backend.py", "tests/tasks/test_scitaste_tasks.py",
        "tests/tasks/test_samples_to_score.py", "tests/space/test_space_samples_browser.py",
        "tests/tasks/test_groups_and_limit.py::test_stock_lm_eval_runs_the_group_and_a_limit_spans_disciplines",
        "tests/cli/test_one_line_messages.py::test_a_task_typo_and_a_model_args_typo_under_scitaste_eval_are_one_line",
        "tests/cli/test_one_line_messages.py::test_space_refuses_a_taken_port_and_a_wrong_gold_before_serving",
        "tests/cli/test_narrow_terminals.py",
        "tests/agent/test_eval_reliability.py",
        "tests/agent/test_loop_eval.py::test_scitaste_eval_every_mode_with_the_baseline",
        "tests/mirror/test_mirror_faults_scale.py", "tests/rtaste/test_judge_task.py",
        "tests/metrics/test_metric_apps.py",
        "tests/scoring/test_answers.py::test_work_is_linear_in_the_reply", "tests/cli/test_publish.py",
        "tests/metrics/test_metric_modules.py::test_installed_wheel_carries_the_metrics",
        "tests/space/test_space_annotate.py", "tests/space/test_space_annotate_browser.py",
        "tests/space/test_space_hub_signin.py", "tests/ratings/test_report_privacy.py",
        "tests/space/test_space_about.py",
        "tests/space/test_annotate_app.py::test_the_hub_app_has_a_sign_in_button_and_the_local_one_a_name_box",
        "tests/ratings/test_service.py::test_two_processes_opening_a_new_folder_agree_on_one_salt",
        "tests/index/test_weights_by_discipline.py::test_derive_by_discipline_recovers_each_vector_and_shows_the_loss",
        "tests/index/test_weights_by_discipline.py::test_derive_by_discipline_finds_no_loss_where_disciplines_agree",
        "tests/scale/test_snapshot.py", "tests/scale/test_engines_agree.py", "tests/scale/test_resume.py",
        "tests/scale/test_cli_scale.py::test_snapshot_then_index",
        "tests/ratings/test_agreement.py::test_reliability_intervals_cover_the_icc_of_raters_in_general")


def pytest_collection_modifyitems(config, items):
    """Mark the slow tests; skip an opt-in test unless `-m` asks for its marker."""
    chosen = config.getoption("markexpr") or ""
    root = Path(__file__).parent.parent
    for item in items:
        node = f"{Path(item.fspath).relative_to(root).as_posix()}::{item.name.split('[')[0]}"
        if any(node == slow or node.startswith(slow + "::") for slow in SLOW):
            item.add_marker(pytest.mark.slow)
        for name in OPT_IN:
            if item.get_closest_marker(name) and name not in chosen:
                item.add_marker(pytest.mark.skip(reason=f"opt-in: run with pytest -m {name}"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(cmd: list[str], *, log: Path, cwd: Path | None = None, env: dict | None = None,
                 ready: str = "/", timeout: float = 120.0) -> tuple[subprocess.Popen, str]:
    """Start a server process on a free 127.0.0.1 port and wait until ``ready`` answers 200.

    ``{port}`` in ``cmd`` is replaced by the port, which is also passed as GRADIO_SERVER_PORT (with
    GRADIO_SERVER_NAME=127.0.0.1) for Gradio apps that read it. Returns the process and its base URL.
    """
    import httpx

    port = _free_port()
    full_env = {**os.environ, **(env or {}), "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port)}
    with open(log, "w") as fh:
        proc = subprocess.Popen([part.replace("{port}", str(port)) for part in cmd], cwd=cwd, env=full_env,
                                stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-3000:]}")
        try:
            if httpx.get(url + ready, timeout=2).status_code == 200:
                return proc, url + "/"
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"server did not start in {timeout:.0f} s: {log.read_text()[-3000:]}")


def stop_server(proc: subprocess.Popen) -> None:
    """Terminate a server started by :func:`start_server` and reap it."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def servers():
    """:func:`start_server` and :func:`stop_server` for tests and fixtures of any scope."""
    return start_server, stop_server


def start_scripted_chat(script: dict, folder: Path, name: str = "chat") -> tuple[subprocess.Popen, str, Path]:
    """Start the scripted OpenAI-compatible chat server (tests/fixtures/scripted_chat.py, whose docstring describes
    ``script``) on 127.0.0.1; stop it with :func:`stop_server`.

    Returns the process, its base URL without a trailing slash, and the JSONL file that every request is appended
    to (created empty, so that a test can count requests before the first one).
    """
    path, log = folder / f"{name}-script.json", folder / f"{name}-requests.jsonl"
    path.write_text(json.dumps(script))
    log.touch()
    proc, url = start_server([sys.executable, str(Path(__file__).parent / "fixtures" / "scripted_chat.py"), "{port}",
                              str(path), str(log)], log=folder / f"{name}.log", ready="/health")
    return proc, url.rstrip("/"), log


@pytest.fixture(scope="session")
def scripted_chat():
    """:func:`start_scripted_chat`, for tests and fixtures of any scope."""
    return start_scripted_chat


@pytest.fixture()
def fake_hub(tmp_path):
    """A Hub stand-in (tests/fixtures/fake_hub.py) on 127.0.0.1: yields the environment that points
    huggingface_hub at it (with a valid token) and the folder where it writes what is committed."""
    out = tmp_path / "hub"
    out.mkdir()
    token = "hf_test_secret_token"
    server, url = start_server([sys.executable, str(Path(__file__).parent / "fixtures" / "fake_hub.py"), "{port}",
                                str(out), token], log=tmp_path / "hub.log", ready="/health")
    try:
        yield {**os.environ, "HF_ENDPOINT": url.rstrip("/"), "HF_TOKEN": token, "HF_HUB_OFFLINE": "0",
               "HF_HUB_DISABLE_XET": "1"}, out
    finally:
        stop_server(server)


#: The small simulated world that mirror-backed tests share: 470 candidates, seed 5.
MIRROR_PAPERS, MIRROR_SEED = 470, 5


@pytest.fixture(scope="session")
def world():
    """The same world the shared mirror serves (same papers and seed), for expected values."""
    from scitaste_hf.simworld.world import generate

    return generate(MIRROR_PAPERS, MIRROR_SEED)


@pytest.fixture(scope="session")
def mirror(servers, tmp_path_factory):
    """`scitaste mirror serve` over that world on 127.0.0.1; yields its base URL (no trailing slash)."""
    start, stop = servers
    scitaste = str(Path(sys.executable).with_name("scitaste"))
    proc, url = start([scitaste, "mirror", "serve", "--papers", str(MIRROR_PAPERS), "--seed", str(MIRROR_SEED),
                       "--port", "{port}"], log=tmp_path_factory.mktemp("mirror") / "log.txt", ready="/health")
    yield url.rstrip("/")
    stop(proc)


@pytest.fixture(scope="session")
def brier():
    """The rtaste_brier evaluate module."""
    from scitaste_hf import load_metric

    return load_metric("rtaste_brier")


@pytest.fixture(scope="session")
def ranking():
    """The rtaste_ranking evaluate module."""
    from scitaste_hf import load_metric

    return load_metric("rtaste_ranking")
