"""The study folder: where each stage of the rTaste protocol reads its inputs and writes its outputs.

One folder holds a study (docs/rtaste-protocol.md#the-study-folder)::

    STUDY/
      seeds/SEED.json               a seed paper: title, abstract, optional full_text   (the user's)
      conditions/CONDITION.json     propose: a Condition, or a failed one with its reason, and the calls' tokens
      seal.json                     seal: the digest of every sealed condition and of each of its five MVEs
      judges/CONDITION.json         judge: each judge model's five probabilities (or its failure), and their mean
      mves/CONDITION/POSITION/      the executor's delivery: mve.json and the code   (the user's executor)
      reruns/CONDITION/POSITION.json  rerun: the protected re-run's value, or why there is none
      audits/CONDITION.json         the five MVEs' labels, in the release's Audit shape   (by hand for now)
      release.jsonl                 release: the release table that ``scitaste rtaste report`` reads

Every file is written whole or not at all (:func:`scitaste_hf.output.write_json_atomic`), so a stage that is
stopped leaves the study as it was before the item it was on, and a stage run again skips what is done (or, with
``force``, replaces it). A stage's records are the release schema's own models (:mod:`scitaste_hf.rtaste.schema`)
dumped as JSON, so each validates against it.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from scitaste_hf.errors import InvalidInput, ScitasteError
from scitaste_hf.output import write_json_atomic
from scitaste_hf.rtaste.schema import N_MVES, Condition

SEEDS, CONDITIONS, SEAL, JUDGES, MVES, RERUNS, AUDITS, RELEASE = (
    "seeds", "conditions", "seal.json", "judges", "mves", "reruns", "audits", "release.jsonl")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_name(name: str, what: str) -> str:
    """``name`` when it can be a file name of the study (letters, digits, ``.``, ``_``, ``-``; no path)."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise InvalidInput(f"{what} {name!r} is not a plain name (letters, digits, '.', '_', '-', at most 128)")
    return name


def condition_id(seed: str, model: str, organisation: str, repeat: int = 1) -> str:
    """The id of one agent run: seed paper, model and organisation (and, for a repeat run after the first, ``.rK``),
    made a plain file name."""
    name = f"{seed}.{model}.{organisation}" + (f".r{repeat}" if repeat > 1 else "")
    return check_name(re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-"), "condition")


def read_json(path: Path, what: str, kind: type = dict, *, missing_ok: bool = False) -> Any:
    """A JSON file of the study, with a one-line error naming it when it is missing (an empty ``kind`` instead with
    ``missing_ok``: a stage's record not written yet), does not parse, or is not a ``kind`` (an object: every record
    of the study but the hand-written audits, a list)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        if missing_ok:
            return kind()
        raise ScitasteError(f"{what} not found: {path}") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidInput(f"{path}: not JSON ({type(exc).__name__})") from None
    if not isinstance(data, kind):  # a record edited by hand: every stage reads its fields by name
        raise InvalidInput(f"{path}: not a JSON {'object' if kind is dict else 'list'} ({what})")
    return data


def read_seed(path: Path) -> tuple[str, dict[str, Any]]:
    """A seed paper file's id (its stem) and its paper, which needs a non-empty ``title`` and ``abstract``.

    Raises
    ------
    ScitasteError
        One line: the id is not a plain name, or the file is not JSON or not such a paper.
    """
    seed = check_name(path.stem, "seed paper")
    paper = read_json(path, "seed paper")
    if not isinstance(paper, dict) or not all(isinstance(paper.get(k), str) and paper[k].strip()
                                              for k in ("title", "abstract")):
        raise InvalidInput(f"{path}: a seed paper needs a non-empty 'title' and 'abstract'")
    return seed, paper


def write(path: Path, data: Any) -> None:
    """Write a record of the study atomically, making its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, data)


class Study:
    """A study folder (see the module's docstring for the layout)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise ScitasteError(f"study folder not found: {self.root}")

    def seeds(self) -> dict[str, dict[str, str]]:
        """The seed papers by id (the file's stem), each with a non-empty ``title`` and ``abstract``."""
        folder = self.root / SEEDS
        found = dict(read_seed(path) for path in sorted(folder.glob("*.json"))) if folder.is_dir() else {}
        if not found:
            raise ScitasteError(f"no seed papers in {folder}: add SEED.json files with a title and an abstract")
        return found

    def condition_path(self, cid: str) -> Path:
        """Where propose writes condition ``cid``."""
        return self.root / CONDITIONS / f"{check_name(cid, 'condition')}.json"

    def proposals(self) -> dict[str, dict[str, Any]]:
        """Every proposal record by condition id, failed ones included."""
        folder = self.root / CONDITIONS
        return {p.stem: read_json(p, "proposal") for p in sorted(folder.glob("*.json"))} if folder.is_dir() else {}

    def conditions(self) -> dict[str, tuple[Condition, str]]:
        """The proposed (not failed) conditions by id, each validated, with its seed paper's summary."""
        found = {}
        for cid, record in self.proposals().items():
            if record.get("status") != "ok":
                continue
            try:
                found[cid] = (Condition.model_validate(record["condition"]), record["seed_summary"])
            except (ValidationError, KeyError, TypeError) as exc:
                raise InvalidInput(f"{self.condition_path(cid)}: not a condition of the release schema "
                                   f"({type(exc).__name__})") from None
        return found

    def path(self, *parts: str) -> Path:
        """A path inside the study."""
        return self.root.joinpath(*parts)


def canonical(data: Any) -> bytes:
    """The bytes a digest is taken of: sorted keys, no spaces, so the same content always gives the same digest."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def mve_digest(condition: Condition, position: int) -> str:
    """SHA-256 of one MVE's registration, probability and rank (``position`` 1-5, written order)."""
    k = position - 1
    return hashlib.sha256(canonical({
        "condition_id": condition.condition_id, "position": position,
        "registration": condition.registrations[k].model_dump(mode="json"),
        "probability": condition.probabilities[k], "rank": condition.ranks[k]})).hexdigest()


def seed_digest(paper: dict[str, Any], summary: str) -> str:
    """SHA-256 of the seed paper a condition was proposed on and of the summary its judges are shown, so that
    neither changes after the seal: the same-model judge must see what the proposer saw."""
    return hashlib.sha256(canonical({"paper": paper, "summary": summary})).hexdigest()


def condition_digest(condition: Condition) -> dict[str, Any]:
    """The seal of a condition: a digest of the whole condition and one per MVE."""
    return {"digest": hashlib.sha256(canonical(condition.model_dump(mode="json"))).hexdigest(),
            "mves": [mve_digest(condition, p) for p in range(1, N_MVES + 1)]}
