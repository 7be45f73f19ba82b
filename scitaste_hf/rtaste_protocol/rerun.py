"""The protected re-run: the one value that decides a registered event.

An executor (the user's own) delivers each MVE as a folder, ``mves/CONDITION/POSITION/``, holding its code and
``mve.json``: the evaluation ``command`` (run by ``/bin/sh -c`` in the folder), the ``executor``'s name, its
``status`` (``delivered`` or ``failed``), ``attempts``, its ``reported_value`` and ``value_unit``, and the
``result_files`` it wrote (globs inside the folder). The re-run

1. reads the executor's value and a digest of the folder, then copies the folder to a fresh temporary place and
   deletes ``mve.json`` and the result files from the copy, so that nothing the executor reported is there;
2. runs the command there in its own session and process group, with a minimal environment (no credentials),
   under limits: wall time, address space (``RLIMIT_AS``), the size of any one file it writes, its standard
   output among them (``RLIMIT_FSIZE``), the size of its folder (watched while it runs), and no network;
3. kills the whole group when the command ends or runs out of time, and every process that still carries the
   run's token in its environment (a child that left the group with ``setsid``);
4. reads the statistic from exactly one ``RTASTE_STATISTIC=<number>`` line of the output, in ``value_unit``, and
   resolves the event from that value alone (:func:`scitaste_hf.rtaste.events.event_occurred`).

A command that fails, hangs, breaks a limit, prints no statistic or two, or changes the delivered folder leaves
the MVE unresolved with the reason, and so out of every Brier score. Where the kernel allows user namespaces
(``unshare`` of util-linux, no root needed), the command also runs in new network and PID namespaces: no network
at all, and every process it started dies with it. Elsewhere only Python programs are kept off the network (a
``sitecustomize`` that refuses sockets), and the record says which (``enforced``); what is enforced and what is
not: docs/rtaste-protocol.md#the-protected-re-run.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scitaste_hf.errors import InvalidInput, ScitasteError, first_line
from scitaste_hf.rtaste.events import event_occurred
from scitaste_hf.rtaste.schema import N_MVES, OUTCOME_STATUSES
from scitaste_hf.rtaste_protocol.limits import Limits
from scitaste_hf.rtaste_protocol.seal import sealed_conditions
from scitaste_hf.rtaste_protocol.study import MVES, RERUNS, Study, mve_digest, read_json, write

#: The executor's file in an MVE folder.
MVE_FILE = "mve.json"
#: The one line of output that carries the re-run's statistic.
STATISTIC_PREFIX = "RTASTE_STATISTIC="
#: The environment variable that marks every process of one re-run, so that a child that left the process
#: group is still found and killed.
TOKEN_VARIABLE = "RTASTE_RERUN_TOKEN"
#: Seconds between two checks of a running re-run's wall time and folder size.
POLL_S = 0.05
_TAIL = 2000
_UNSHARE = ("--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child")
_NETWORK_GUARD = '''\
import socket

def _refuse(*args, **kwargs):
    raise OSError(101, "network is blocked in the rTaste re-run")

socket.socket.connect = socket.socket.connect_ex = socket.socket.sendto = _refuse
socket.create_connection = socket.getaddrinfo = _refuse
'''


class Delivery(BaseModel):
    """An executor's ``mve.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str = Field(min_length=1)
    executor: str = Field(min_length=1)
    status: str = "delivered"
    attempts: int = Field(default=1, ge=1)
    reported_value: float | None = Field(default=None, allow_inf_nan=False)
    value_unit: str = Field(min_length=1)
    result_files: tuple[str, ...] = ()


def read_delivery(folder: Path) -> Delivery:
    """The executor's ``mve.json`` of an MVE folder, validated (a one-line error naming the field)."""
    raw = read_json(folder / MVE_FILE, "the executor's mve.json")
    try:
        delivery = Delivery.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise InvalidInput(f"{folder / MVE_FILE}: {'.'.join(map(str, error['loc']))}: {error['msg']}") from None
    if delivery.status not in OUTCOME_STATUSES:
        raise InvalidInput(f"{folder / MVE_FILE}: status {delivery.status!r} is not one of "
                           f"{', '.join(OUTCOME_STATUSES)}")
    bad = [g for g in delivery.result_files if not g or Path(g).is_absolute() or ".." in Path(g).parts]
    if bad:
        raise InvalidInput(f"{folder / MVE_FILE}: result file {bad[0]!r} is not a path inside the folder")
    return delivery


@functools.cache
def namespaces() -> bool:
    """Whether this machine lets an unprivileged process make user, network and PID namespaces."""
    tool = shutil.which("unshare")
    if tool is None:
        return False
    try:
        return subprocess.run([tool, *_UNSHARE, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _tree_digest(folder: Path) -> str:
    """A digest of every path and file under ``folder`` (links as their targets' names, never followed)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode("utf-8", "surrogateescape") + b"\0")
        if path.is_symlink():
            digest.update(os.readlink(path).encode("utf-8", "surrogateescape"))
        elif path.is_file():
            with open(path, "rb") as fh:
                digest.update(hashlib.file_digest(fh, "sha256").digest())
    return digest.hexdigest()


def _folder_size(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass  # a file the command removed between the listing and the look
    return total


def limited(limits: Limits):
    """A ``preexec_fn`` that holds a command to ``limits``' memory and file size (and writes no core)."""

    def apply() -> None:
        memory, output = limits.memory_mb << 20, limits.output_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (output, output))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def _tokened(token: str) -> list[int]:
    """The processes whose environment carries ``token`` (those this user may read)."""
    found, needle = [], f"{TOKEN_VARIABLE}={token}".encode()
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue  # gone, or not ours
    return found


def kill_all(group: int, token: str) -> int:
    """Kill the process group and every process with the run's token; the number of strays found by token."""
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    strays: set[int] = set()
    for _ in range(50):  # a process may fork while it is being killed: sweep until none is left
        alive = [p for p in _tokened(token) if p != os.getpid()]
        if not alive:
            break
        for pid in alive:
            strays.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)
    return len(strays)


def read_statistic(stdout: bytes) -> tuple[float | None, str | None]:
    """The statistic of a command's output (its one ``STATISTIC_PREFIX`` line), or ``None`` and why there is none."""
    lines = [line.strip()[len(STATISTIC_PREFIX):] for line in stdout.decode("utf-8", "replace").splitlines()
             if line.strip().startswith(STATISTIC_PREFIX)]
    if not lines:
        return None, f"printed no {STATISTIC_PREFIX}<number> line"
    if len(lines) > 1:
        return None, f"printed {len(lines)} statistics ({STATISTIC_PREFIX} lines); exactly one decides the event"
    try:
        value = float(lines[0])
    except ValueError:
        return None, f"its statistic {lines[0][:40]!r} is not a number"
    if not math.isfinite(value):
        return None, f"its statistic {lines[0][:40]!r} is not a finite number"
    return value, None


def _describe_exit(code: int) -> str:
    if code >= 0:
        return f"exited with status {code}"
    name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
    hint = {"SIGXFSZ": " (a file or its output grew past the output limit)",
            "SIGKILL": " (killed; memory past the limit?)", "SIGSEGV": " (memory past the limit?)"}.get(name, "")
    return f"was killed by {name}{hint}"


def run_protected(folder: Path, limits: Limits, *, work_parent: str | Path | None = None) -> dict[str, Any]:
    """Re-run one delivered MVE folder under protection (the module's docstring says how).

    Parameters
    ----------
    folder : Path
        The executor's MVE folder (with ``mve.json``); it is only read.
    limits : Limits
    work_parent : path, optional
        Where the fresh temporary place is made (default the system's temporary folder); removed after.

    Returns
    -------
    dict
        ``value`` (the statistic, or None), ``reason`` (why there is none, else None), ``exit``, ``wall_s``,
        ``strays_killed``, ``enforced`` (what was enforced, in words), ``stderr_tail``.
    """
    delivery = read_delivery(folder)
    isolated = namespaces()
    enforced = {"wall_time": f"{limits.wall_s:g} s, the process group killed whole",
                "memory": f"RLIMIT_AS {limits.memory_mb} MB per process",
                "output": f"RLIMIT_FSIZE {limits.output_mb} MB per file written, standard output included",
                "disk": f"{limits.disk_mb} MB in the run's folder (watched; files written elsewhere are not)",
                "network": "none: a new network namespace" if isolated else
                "Python programs only (sitecustomize refuses sockets); other programs are not kept off it",
                "processes": "a new PID namespace (all die with the command) and a sweep by token" if isolated else
                "the process group, and a sweep of /proc by token"}
    result: dict[str, Any] = {"value": None, "reason": None, "exit": None, "wall_s": 0.0, "strays_killed": 0,
                              "enforced": enforced, "stderr_tail": ""}
    size = _folder_size(folder)
    if size > limits.disk_mb << 20:
        result["reason"] = f"the delivered folder holds {size >> 20} MB, more than the disk limit"
        return result
    before = _tree_digest(folder)
    place = Path(tempfile.mkdtemp(prefix="rtaste-rerun-", dir=work_parent))
    try:
        work = place / "work"
        try:
            shutil.copytree(folder, work, symlinks=True)
        except (OSError, shutil.Error) as exc:  # a named pipe or a socket in the folder, an unreadable file
            result["reason"] = f"the delivered folder cannot be copied: {first_line(exc)[:200]}"
            return result
        (work / MVE_FILE).unlink()
        for pattern in delivery.result_files:
            for path in list(work.glob(pattern)):
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink(missing_ok=True)
        token = uuid.uuid4().hex
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "TMPDIR": str(work),
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", TOKEN_VARIABLE: token}
        if not isolated:
            guard = place / "guard"
            guard.mkdir()
            (guard / "sitecustomize.py").write_text(_NETWORK_GUARD)
            env["PYTHONPATH"] = str(guard)
        command = ["/bin/sh", "-c", delivery.command]
        if isolated:
            command = [shutil.which("unshare"), *_UNSHARE, "--", *command]
        started = time.monotonic()
        with open(place / "stdout", "wb") as out, open(place / "stderr", "wb") as err:
            proc = subprocess.Popen(command, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True, preexec_fn=limited(limits))
            try:
                while proc.poll() is None:
                    if time.monotonic() - started > limits.wall_s:
                        result["reason"] = f"ran past the wall-time limit of {limits.wall_s:g} s"
                        break
                    if _folder_size(work) > limits.disk_mb << 20:
                        result["reason"] = f"wrote more than the disk limit of {limits.disk_mb} MB in its folder"
                        break
                    time.sleep(POLL_S)
            finally:
                result["strays_killed"] = kill_all(proc.pid, token)
                proc.wait()
        result["wall_s"] = round(time.monotonic() - started, 3)
        result["exit"] = proc.returncode
        stdout = (place / "stdout").read_bytes()[:limits.output_mb << 20]
        result["stderr_tail"] = (place / "stderr").read_bytes()[-_TAIL:].decode("utf-8", "replace")
        if result["reason"] is None and _tree_digest(folder) != before:
            result["reason"] = "the delivered folder changed during the re-run"
        if result["reason"] is None and proc.returncode != 0:
            result["reason"] = f"the command {_describe_exit(proc.returncode)}"
        if result["reason"] is None:
            result["value"], result["reason"] = read_statistic(stdout)
    finally:
        shutil.rmtree(place, ignore_errors=True)
    return result


def rerun(study: Study, limits: Limits | None = None, *, force: bool = False,
          work_parent: str | Path | None = None) -> dict[str, int]:
    """Re-run every delivered MVE of the study's sealed conditions and write ``reruns/CONDITION/POSITION.json``.

    An MVE already re-run for its sealed registration is skipped unless ``force``; one not delivered yet (no
    folder) is left for a later run. Nothing runs on an unsealed or changed study
    (:func:`~scitaste_hf.rtaste_protocol.seal.sealed_conditions`).

    Returns
    -------
    dict
        Counts: ``resolved``, ``unresolved``, ``failed`` (the executor's own failure), ``skipped``,
        ``not_delivered``.
    """
    limits = limits or Limits()
    counts = dict.fromkeys(("resolved", "unresolved", "failed", "skipped", "not_delivered"), 0)
    for cid, (condition, _) in sealed_conditions(study).items():
        for position in range(1, N_MVES + 1):
            folder = study.path(MVES, cid, str(position))
            out = study.path(RERUNS, cid, f"{position}.json")
            digest = mve_digest(condition, position)
            if not (folder / MVE_FILE).is_file():
                counts["not_delivered"] += 1
                continue
            if not force and out.exists() and read_json(out, "re-run").get("digest") == digest:
                counts["skipped"] += 1
                continue
            record = rerun_one(folder, condition.registrations[position - 1].event, limits, digest=digest,
                               work_parent=work_parent)
            write(out, record)
            counts[record["status"]] += 1
    return counts


def rerun_one(folder: Path, event, limits: Limits, *, digest: str,
              work_parent: str | Path | None = None) -> dict[str, Any]:
    """The re-run record of one MVE folder against its registered ``event``.

    ``status`` is ``resolved`` (the event decided by the re-run's value), ``unresolved`` (no value, ``reason``
    says why) or ``failed`` (the executor reported its own failure; nothing is run).
    """
    delivery = read_delivery(folder)
    record: dict[str, Any] = {"digest": digest, "executor": delivery.executor, "attempts": delivery.attempts,
                              "executor_value": delivery.reported_value, "value_unit": delivery.value_unit,
                              "limits": asdict(limits), "rerun_value": None, "occurred": None,
                              "executor_occurred": None, "same_event": None}
    if delivery.status == "failed":
        return {**record, "status": "failed", "reason": "the executor reported that it failed to deliver"}
    run = run_protected(folder, limits, work_parent=work_parent)
    record.update({k: run[k] for k in ("exit", "wall_s", "strays_killed", "enforced", "stderr_tail")})
    reason = run["reason"]
    if reason is None:
        try:
            record["occurred"] = event_occurred(event, run["value"], delivery.value_unit)
            if delivery.reported_value is not None:
                record["executor_occurred"] = event_occurred(event, delivery.reported_value, delivery.value_unit)
                record["same_event"] = record["occurred"] == record["executor_occurred"]
        except ScitasteError as exc:
            reason = first_line(exc)
    record["rerun_value"] = run["value"] if reason is None else None
    record["occurred"] = record["occurred"] if reason is None else None
    return {**record, "status": "unresolved" if reason else "resolved", "reason": reason}


def rerun_outcome_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The release's :class:`~scitaste_hf.rtaste.schema.Outcome` fields of a re-run record: a resolved or
    unresolved MVE is ``delivered`` (unresolved ones have no ``rerun_value``, so they are out of every Brier
    score); the executor's own failure is ``failed``."""
    return {"status": "failed" if record["status"] == "failed" else "delivered", "executor": record["executor"],
            "attempts": record["attempts"], "executor_value": record["executor_value"],
            "rerun_value": record["rerun_value"], "value_unit": record["value_unit"]}

