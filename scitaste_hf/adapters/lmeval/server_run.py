"""One request of the board's queue evaluated with lm-eval, as ``scitaste worker`` runs it: the request's mode on the
board's gold set (and its frozen evidence), through ``scitaste eval`` in a child process with lm-eval's per-paper cache
(``--use_cache``), under a time limit; returns the samples log, the agent's trace and what was run.

The child is an lm-eval run of its own (a process that the time limit, or the loss of the request's lease, ends at
once, with the processes it started), and it dies with the worker (Linux's parent-death signal), so a worker killed
with ``kill -9`` leaves no evaluation running: the next attempt, in the same folder, replays from the cache every
paper already answered and asks the model only for the others.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scitaste_hf import constants
from scitaste_hf.errors import ScitasteError, first_line

#: Backends of a Hub model: lm-eval's Transformers and vLLM models.
BACKENDS = ("hf", "vllm")
#: Seconds one attempt of a request may take before it ends ``failed``: the default of ``scitaste worker``.
TIME_LIMIT = 6 * 3600.0
#: The child's start: it asks Linux to kill it when its parent (the worker) dies, leaves at once if the parent is
#: already gone, then runs ``scitaste eval`` on its arguments.
_CHILD = ("import ctypes, os, runpy, signal, sys\n"
          "try:\n    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)\nexcept (OSError, AttributeError):\n"
          "    pass\n"
          "if os.getppid() != int(sys.argv[1]):\n    sys.exit(1)\n"
          "sys.argv = ['scitaste', 'eval', *sys.argv[2:]]\nrunpy.run_module('scitaste_hf', run_name='__main__')\n")


class RunFailed(ScitasteError):
    """The evaluation of a request ended without a run; the message is the request's one-line reason."""


class Stopped(Exception):
    """The request's lease was lost (cancelled, or taken over after it expired): the evaluation was stopped."""


@dataclass(frozen=True)
class Evaluation:
    """What one request's evaluation produced: lm-eval's samples log, the agent's trace (None for a Hub model) and
    the provenance the run records."""

    samples: bytes
    trace: bytes | None
    provenance: dict[str, Any]


def _hub_revision(model: str, revision: str) -> str:
    """The commit the Hub gives for ``model`` at ``revision`` (default branch when empty); offline, the revision as
    asked (lm-eval then loads what the local cache holds, or fails saying so)."""
    if constants.hf_hub_offline():
        return revision or "main"
    from huggingface_hub import HfApi

    from scitaste_hf.net.hub import bound_hub_calls

    bound_hub_calls()
    try:
        return HfApi(endpoint=constants.hf_endpoint()).model_info(model, revision=revision or None).sha or revision
    except Exception as exc:  # the Hub's error types differ between huggingface_hub versions
        raise RunFailed(f"model {model}{'@' + revision if revision else ''} on the Hub: {first_line(exc)}") from None


def lm_eval_arguments(request: Mapping[str, Any], gold: str, *, endpoints: Mapping[str, Any], backend: str = "hf",
                      backend_args: str = "") -> tuple[list[str], dict[str, Any], bool]:
    """``scitaste eval``'s model arguments for ``request``, the provenance they make (no key), and whether the model
    is an endpoint (which reads the operator's key)."""
    if request["source"] == "endpoint":
        endpoint = endpoints.get(request["model"])
        if endpoint is None:
            raise RunFailed(f"endpoint {request['model']} is no longer one of the board's endpoints")
        extra = f",{endpoint.model_args}" if endpoint.model_args else ""
        args = ["--model", "scitaste-agent", "--model_args",
                f"base_url={endpoint.base_url},model={endpoint.model},data_dir={gold}{extra}"]
        return args, {"backend": "scitaste-agent", "endpoint": endpoint.name, "served_model": endpoint.model,
                      "model_args": endpoint.model_args, "revision": ""}, True
    if backend not in BACKENDS:
        raise RunFailed(f"backend must be one of {', '.join(BACKENDS)}, not {backend}")
    revision = _hub_revision(request["model"], request["revision"])
    extra = f",{backend_args}" if backend_args else ""
    args = ["--model", backend, "--model_args", f"pretrained={request['model']},revision={revision}{extra}",
            "--apply_chat_template"]
    return args, {"backend": backend, "model_args": backend_args, "revision": revision,
                  "revision_asked": request["revision"]}, False


def _tokens(trace: bytes | None, mode: str) -> dict[str, int] | None:
    """The tokens an endpoint counted for the papers of ``mode`` in the agent's trace (every attempt's: what the
    request cost), None without a trace."""
    if trace is None:
        return None
    total = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    for line in trace.decode("utf-8", "replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("mode") != mode:
            continue
        for usage in entry.get("usage") or []:
            for key in total:
                value = usage.get(key) if isinstance(usage, dict) else None
                if isinstance(value, int):
                    total[key] += value
    return total


def _reason(log: Path) -> str:
    """The line of the child's log that says why it stopped: its last error line, else its last line."""
    lines = [line.strip() for line in log.read_text("utf-8", "replace").splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() or "Error" in line]
    return (errors or lines or ["no output"])[-1][:300]


def _stop(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def evaluate(request: Mapping[str, Any], gold: str, work: Path, *, endpoints: Mapping[str, Any],
             time_limit: float = TIME_LIMIT, backend: str = "hf", backend_args: str = "",
             keep_going: Callable[[], bool] = lambda: True, poll: float = 0.5) -> Evaluation:
    """Run ``request``'s mode with lm-eval on the gold set ``gold`` (a dataset folder, a records file or a Hub id),
    in ``work`` (its cache, output and log; kept between attempts so that one resumes the other).

    ``keep_going`` is asked every ``poll`` seconds (the worker renews its lease there); False stops the child and
    raises :class:`Stopped`.

    Raises
    ------
    RunFailed
        With a one-line reason: the time limit passed, lm-eval stopped with an error (the model failed to load, ran
        out of memory, the endpoint is gone), or it wrote no samples log.
    """
    from scitaste_hf import __version__
    from scitaste_hf.modes import MODE_SPECS
    from scitaste_hf.sources.credentials import resolve_secret

    task = MODE_SPECS[request["mode"]].task
    model_args, provenance, endpoint = lm_eval_arguments(request, gold, endpoints=endpoints, backend=backend,
                                                         backend_args=backend_args)
    out, cache = work / "out", work / "cache"
    out.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    trace_path = out / constants.DEFAULT_TRACE_FILE
    env = {**os.environ, constants.SCITASTE_TRACE: str(trace_path)}
    key = resolve_secret(None, constants.OPENAI_API_KEY) if endpoint else None
    env.pop(constants.OPENAI_API_KEY, None)
    if key:
        env[constants.OPENAI_API_KEY] = key  # the operator's, for the endpoint; never a submitter's
    args = [*model_args, "--tasks", task, "--metadata", json.dumps({"data_dir": gold}), "--output_path", str(out),
            "--log_samples", "--use_cache", str(cache / "lm-eval")]
    started, begun = time.monotonic(), datetime.now(UTC).isoformat(timespec="seconds")
    log = work / f"attempt-{request['attempts']}.log"
    with open(log, "wb") as sink:
        child = subprocess.Popen([sys.executable, "-c", _CHILD, str(os.getpid()), *args], stdout=sink,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=work, env=env,
                                 start_new_session=True)
    try:
        while child.poll() is None:
            if time.monotonic() - started > time_limit:
                _stop(child)
                raise RunFailed(f"did not finish within the time limit of {time_limit:g} s (a hung model or "
                                "endpoint, or one too slow for the board)")
            if not keep_going():
                _stop(child)
                raise Stopped
            time.sleep(poll)
    except BaseException:
        if child.poll() is None:
            _stop(child)
        raise
    if child.returncode != 0:
        raise RunFailed(f"lm-eval stopped (exit {child.returncode}): {_reason(log)}")
    samples = sorted(out.rglob(f"samples_{task}_*.jsonl"), key=lambda p: p.stat().st_mtime)
    results = sorted(out.rglob("results_*.json"), key=lambda p: p.stat().st_mtime)
    if not samples:
        raise RunFailed(f"lm-eval wrote no samples log for {task}: {_reason(log)}")
    task_version = None
    if results:
        task_version = (json.loads(results[-1].read_text("utf-8")).get("versions") or {}).get(task)
    trace = trace_path.read_bytes() if trace_path.is_file() else None
    from importlib.metadata import PackageNotFoundError, version

    try:
        lm_eval_version = version("lm_eval")
    except PackageNotFoundError:
        lm_eval_version = None
    provenance.update({"request": int(request["id"]), "model": request["model"], "source": request["source"],
                       "task": task, "task_version": task_version, "package_version": __version__,
                       "lm_eval_version": lm_eval_version, "attempt": int(request["attempts"]), "started_at": begun,
                       "wall_s": round(time.monotonic() - started, 1), "tokens": _tokens(trace, request["mode"])})
    return Evaluation(samples[-1].read_bytes(), trace, provenance)
