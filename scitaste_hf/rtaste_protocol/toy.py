"""The bundled synthetic study and its toy executor, so that the whole protocol runs offline in minutes.

``scitaste_hf/data/rtaste_study/`` holds three synthetic seed papers (``seeds/``), one toy MVE program
(``toy_mve.py``: a nearest-centroid classifier on two Gaussian classes, standard library only, a second or less)
and, per seed paper, five scenarios for it (``toy_mves.json``). The toy executor stands in for a lab's own: for
the registration at position p of a sealed condition it delivers the seed paper's p-th scenario, whatever the
registration says (the study exercises the protocol, not an agent's science). A delivery is the folder the
protected re-run expects (docs/rtaste-protocol.md#the-protected-re-run): ``eval.py``, its ``settings.json``, the
``registration.json`` it implemented, and ``mve.json`` with the value the executor's own run printed. The
command's ``{python}`` is the executor's own interpreter (the toy needs only the standard library).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from importlib import resources
from pathlib import Path
from typing import Any

from scitaste_hf.errors import InvalidInput
from scitaste_hf.rtaste_protocol.limits import DEFAULT_LIMITS
from scitaste_hf.rtaste_protocol.rerun import MVE_FILE, TOKEN_VARIABLE, kill_all, limited, read_statistic
from scitaste_hf.rtaste_protocol.seal import sealed_conditions
from scitaste_hf.rtaste_protocol.study import MVES, Study, read_json, write

#: The toy executor's scenarios in a seed-paper folder, and the program they configure.
TOY_FILE, TOY_PROGRAM = "toy_mves.json", "toy_mve.py"
#: The toy executor's name in ``mve.json``.
EXECUTOR = "toy-executor"
#: Seconds the toy executor's own run of an MVE may take before it reports a failed delivery.
EXECUTOR_WALL_S = 60


def example_study_dir() -> Path:
    """The bundled synthetic study's seed papers and toy MVEs (synthetic: not study data)."""
    return Path(str(resources.files("scitaste_hf").joinpath("data/rtaste_study")))


def has_toy_mves(folder: Path) -> bool:
    """Whether a seed-paper folder ships toy MVEs for the toy executor."""
    return (folder / TOY_FILE).is_file() and (folder / TOY_PROGRAM).is_file()


def _scenarios(folder: Path) -> dict[str, Any]:
    spec = read_json(folder / TOY_FILE, "toy MVEs")
    if not (isinstance(spec, dict) and isinstance(spec.get("command"), str) and isinstance(spec.get("seeds"), dict)
            and isinstance(spec.get("value_unit"), str)):
        raise InvalidInput(f"{folder / TOY_FILE}: needs 'command', 'value_unit' and 'seeds' (seed -> scenarios)")
    return spec


def _deliver(place: Path, program: Path, spec: dict[str, Any], scenario: dict[str, Any],
             registration: dict[str, Any]) -> None:
    """Write one toy delivery into ``place`` and run it once as the executor (its reported value)."""
    shutil.copyfile(program, place / "eval.py")
    write(place / "settings.json", scenario)
    write(place / "registration.json", registration)
    command = spec["command"].replace("{python}", shlex.quote(sys.executable))
    # A session and a token of its own, killed whole when it ends or times out, so that no child of a scenario's
    # command outlives the delivery; its output goes to a file (a child holding a pipe would hold the read).
    token = uuid.uuid4().hex
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(["/bin/sh", "-c", command], cwd=place, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.DEVNULL, env={**os.environ, TOKEN_VARIABLE: token},
                                start_new_session=True, preexec_fn=limited(DEFAULT_LIMITS))
        try:
            proc.wait(timeout=EXECUTOR_WALL_S)
        except subprocess.TimeoutExpired:
            pass
        finally:
            kill_all(proc.pid, token)
            proc.wait()
        out.seek(0)
        value = read_statistic(out.read(DEFAULT_LIMITS.output_mb << 20))[0] if proc.returncode == 0 else None
    write(place / MVE_FILE, {"command": command, "executor": EXECUTOR, "value_unit": spec["value_unit"],
                             "status": "delivered" if value is not None else "failed", "attempts": 1,
                             "reported_value": value})


def deliver_toy(study: Study, folder: Path) -> dict[str, int]:
    """Deliver the toy MVEs of every sealed condition whose seed paper has scenarios in ``folder``.

    Each delivery is made in a hidden folder beside its place and renamed into it when whole, so a stopped run
    leaves no half delivery that the re-run would take; an MVE folder already there is kept.

    Returns
    -------
    dict
        ``delivered``, ``skipped`` (already there) and ``no_toy`` (conditions whose seed paper has none) counts.
    """
    spec = _scenarios(folder)
    counts = {"delivered": 0, "skipped": 0, "no_toy": 0}
    for cid, (condition, _) in sealed_conditions(study).items():
        scenarios = spec["seeds"].get(condition.seed_paper)
        if not isinstance(scenarios, list) or len(scenarios) != len(condition.registrations):
            counts["no_toy"] += 1
            continue
        for position, (registration, scenario) in enumerate(zip(condition.registrations, scenarios), start=1):
            target = study.path(MVES, cid, str(position))
            if target.exists():  # delivered, or a folder of someone else's: never replaced
                counts["skipped"] += 1
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            for stale in target.parent.glob(f".{position}.*"):  # a delivery a stopped run left half made
                shutil.rmtree(stale, ignore_errors=True)
            place = Path(tempfile.mkdtemp(prefix=f".{position}.", dir=target.parent))
            try:
                _deliver(place, folder / TOY_PROGRAM, spec, scenario, registration.model_dump(mode="json"))
                place.rename(target)
            finally:
                shutil.rmtree(place, ignore_errors=True)
            counts["delivered"] += 1
    return counts
