"""``run``: every stage of the protocol on a folder of seed papers, resumable, with progress and costs.

The seed papers are copied into the study folder (a seed paper already there must be the same: a proposed
condition rests on it), then propose (each agent model in each organisation), seal, judge, the toy executor where
the seed-paper folder ships toy MVEs (:mod:`~scitaste_hf.rtaste_protocol.toy`), rerun, the budget mode when asked
for, audit, calibrate, novelty, review and release run in turn. Each stage skips what the study already holds, so a
run that was stopped, or that stopped itself, is resumed by running it again: nothing finished is asked or run twice.
A run whose MVEs are not all delivered stops after the re-run and says so; the user's executor delivers them and the
run is started again.
``run.json`` records each stage's counts and seconds, and every model call's tokens and cost by stage.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scitaste_hf.agent.chat import ChatClient
from scitaste_hf.errors import InvalidInput, ScitasteError
from scitaste_hf.output import write_bytes_atomic
from scitaste_hf.rtaste.schema import N_AUDITORS, N_NOVELTY_JUDGES, N_REVIEWERS, ORGANISATIONS
from scitaste_hf.rtaste_protocol.assemble import write_release
from scitaste_hf.rtaste_protocol.budget import BUDGET, shares
from scitaste_hf.rtaste_protocol.budget import budget as spend
from scitaste_hf.rtaste_protocol.calibrate import CALIBRATION, calibrate
from scitaste_hf.rtaste_protocol.judges import judge
from scitaste_hf.rtaste_protocol.labels import AUDITORS, NOVELTY, REVIEWS, audit, novelty, review
from scitaste_hf.rtaste_protocol.limits import Limits
from scitaste_hf.rtaste_protocol.propose import Prices, check_repeats, propose
from scitaste_hf.rtaste_protocol.rerun import rerun
from scitaste_hf.rtaste_protocol.seal import seal
from scitaste_hf.rtaste_protocol.study import CONDITIONS, JUDGES, RELEASE, SEEDS, Study, read_json, read_seed, write
from scitaste_hf.rtaste_protocol.toy import TOY_FILE, deliver_toy, has_toy_mves

#: The run's record in the study folder.
RUN_FILE = "run.json"


@dataclass(frozen=True)
class Roles:
    """The models of a run, each a chat client by name: the agents (the proposers, each also its own same-model
    judge), further judges, the three auditors, the listing models, the matcher, the two novelty judges and the
    three reviewers."""

    agents: dict[str, ChatClient]
    auditors: dict[str, ChatClient]
    novelty_judges: dict[str, ChatClient]
    reviewers: dict[str, ChatClient]
    judges: dict[str, ChatClient] = field(default_factory=dict)
    listers: dict[str, ChatClient] = field(default_factory=dict)
    matcher: ChatClient | None = None

    def __post_init__(self) -> None:
        for role, models, needed in (("auditors", self.auditors, N_AUDITORS),
                                     ("novelty judges", self.novelty_judges, N_NOVELTY_JUDGES),
                                     ("reviewers", self.reviewers, N_REVIEWERS)):
            if len(models) != needed:
                raise InvalidInput(f"the study has {needed} {role}; {len(models)} given")
        if not self.agents:
            raise InvalidInput("a run needs at least one agent model")

    def all_judges(self) -> dict[str, ChatClient]:
        """The agents (the same-model judges) and the further judges."""
        return {**self.agents, **self.judges}


def import_seeds(root: Path, folder: Path) -> dict[str, int]:
    """Copy the seed papers of ``folder`` (its ``seeds/``, or the folder itself) into the study ``root``.

    Raises
    ------
    ScitasteError
        When the folder holds no seed paper, one that is not a seed paper (nothing is copied then), or one that
        differs from the study's copy of the same id.
    """
    source = folder / SEEDS if (folder / SEEDS).is_dir() else folder
    papers = sorted(p for p in source.glob("*.json") if p.name != TOY_FILE) if source.is_dir() else []
    if not papers:
        raise ScitasteError(f"no seed papers in {source}: add SEED.json files with a title and an abstract")
    for paper in papers:  # all checked before any is copied: a study keeps no paper it could not run on
        read_seed(paper)
    counts = {"copied": 0, "kept": 0}
    for paper in papers:
        target = root / SEEDS / paper.name
        if target.exists():
            if target.read_bytes() != paper.read_bytes():
                raise ScitasteError(f"seed paper {paper.stem} differs from the study's copy {target}: a study's seed "
                                    "papers are fixed once it runs; use another --study folder")
            counts["kept"] += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(target, paper.read_bytes())
        counts["copied"] += 1
    return counts


def _calls(study: Study) -> dict[str, list[dict[str, Any]]]:
    """Every recorded model call of the study, by stage."""
    def records(stage: str) -> list[dict[str, Any]]:
        folder = study.path(stage)
        return [read_json(p, stage) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []

    found: dict[str, list[dict[str, Any]]] = {"propose": [c for r in records(CONDITIONS) for c in r["calls"]]}
    found["judge"] = [c for r in records(JUDGES) for j in r["judges"].values() for c in j["calls"]]
    found[BUDGET] = [c for r in records(BUDGET) for c in r["calls"]]
    for stage in (AUDITORS, NOVELTY, REVIEWS):
        found[stage] = [c for r in records(stage) for a in r[stage].values() for c in a["calls"]]
    planted = [read_json(p, CALIBRATION) for p in sorted(study.path(CALIBRATION).glob("*/*.json"))]
    found[CALIBRATION] = [c for r in planted for a in r.get(AUDITORS, {}).values() for c in a["calls"]]
    return found


def costs(study: Study, prices: Prices) -> dict[str, dict[str, Any]]:
    """Calls, prompt and completion tokens and US dollars of each stage's recorded model calls, and their total."""
    table = {}
    for stage, calls in _calls(study).items():
        table[stage] = {"calls": len(calls), "prompt_tokens": sum(c["prompt_tokens"] for c in calls),
                        "completion_tokens": sum(c["completion_tokens"] for c in calls), "usd": prices.cost(calls)}
    table["total"] = {k: sum(row[k] for row in table.values()) for k in ("calls", "prompt_tokens",
                                                                          "completion_tokens", "usd")}
    return table


def run_protocol(root: str | Path, seed_papers: str | Path, roles: Roles, *,
                 organisations: tuple[str, ...] = ORGANISATIONS[:1], arxiv: Any = None, prices: Prices | None = None,
                 limits: Limits | None = None, repeats: int = 1, budget: tuple[int, int] | None = None,
                 say: Callable[[str], None] = print) -> dict[str, Any]:
    """Run (or resume) every stage on the seed papers of ``seed_papers`` in the study folder ``root``.

    Parameters
    ----------
    root : path
        The study folder; made when missing.
    seed_papers : path
        A folder of ``SEED.json`` seed papers (or one holding them in ``seeds/``), with, optionally, toy MVEs for
        the toy executor (the bundled study's ``toy_mves.json`` and ``toy_mve.py``).
    roles : Roles
        The models.
    organisations : tuple of str
        The organisations each agent is run in.
    arxiv : ArxivClient, optional
        The literature tool of the proposers and the novelty judges; none skips the searches.
    prices : Prices, optional
        For the conditions' ``cost_usd`` and the run's costs (default: all calls cost 0).
    limits : Limits, optional
        The re-run's limits.
    repeats : int
        How many times each agent is run on each seed paper in each organisation.
    budget : (int, int), optional
        Units and rounds of the budget mode (:mod:`~scitaste_hf.rtaste_protocol.budget`), run after the re-run;
        none skips it.
    say : callable
        Where the progress lines go.

    Returns
    -------
    dict
        ``stages`` (each stage's counts and seconds), ``costs`` (:func:`costs`), ``release`` (the release file,
        or ``None`` when the run stopped before it) and ``waiting`` (MVEs no executor has delivered).
    """
    root, folder, prices = Path(root), Path(seed_papers), prices or Prices()
    check_repeats(repeats)  # the arguments are refused before anything is copied, asked or run
    if budget is not None:
        shares(*budget)
    root.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"stages": {}, "costs": {}, "release": None, "waiting": 0}
    study = Study(root)
    stages: list[tuple[str, Callable[[], dict[str, Any]]]] = [("seeds", lambda: import_seeds(root, folder))]
    for name, client in roles.agents.items():
        for organisation in organisations:
            stages.append((f"propose {name} {organisation}", lambda c=client, o=organisation: propose(
                study, c, organisation=o, arxiv=arxiv, prices=prices, repeats=repeats)))
    stages += [("seal", lambda: seal(study)), ("judge", lambda: judge(study, roles.all_judges()))]
    if has_toy_mves(folder):
        stages.append(("toy executor", lambda: deliver_toy(study, folder)))
    stages.append(("rerun", lambda: rerun(study, limits)))
    if budget is not None:
        stages.append(("budget", lambda: spend(study, roles.agents, units=budget[0], rounds=budget[1])))
    stages += [("audit", lambda: audit(study, roles.auditors)),
               ("calibrate", lambda: calibrate(study, roles.auditors, limits)),
               ("novelty", lambda: novelty(study, roles.listers or roles.agents,
                                           roles.matcher or next(iter(roles.novelty_judges.values())),
                                           roles.novelty_judges, arxiv=arxiv)),
               ("review", lambda: review(study, roles.reviewers)),
               ("release", lambda: {k: v for k, v in write_release(study).items() if k != "failed"})]
    for number, (name, step) in enumerate(stages, start=1):
        if name in ("budget", "audit") and record["stages"]["rerun"]["not_delivered"]:
            record["waiting"] = record["stages"]["rerun"]["not_delivered"]
            say(f"rtaste run: {record['waiting']} MVEs await the executor: deliver them as "
                f"{root / 'mves' / 'CONDITION' / 'POSITION'}/ (docs/rtaste-protocol.md) and run again")
            write(root / RUN_FILE, record)
            break
        started = time.monotonic()
        done = step()
        record["stages"][name] = {**done, "seconds": round(time.monotonic() - started, 2)}
        say(f"rtaste run [{number}/{len(stages)}] {name}: " + ", ".join(f"{k} {v}" for k, v in done.items())
            + f" ({record['stages'][name]['seconds']:.1f} s)")
        if name == "seal":
            for cid, proposal in study.proposals().items():
                if proposal.get("status") != "ok":
                    say(f"rtaste run: failed proposal {cid}: {proposal.get('reason', '')}")
            if not study.conditions():
                raise ScitasteError("no condition to run: every proposal failed (listed above); `scitaste rtaste "
                                    "propose STUDY --force` asks again")
        if name == "release":
            record["release"] = str(root / RELEASE)
        record["costs"] = costs(study, prices)
        write(root / RUN_FILE, record)
    total = record["costs"]["total"]
    say(f"rtaste run: {total['calls']} model calls, {total['prompt_tokens']:,} prompt and "
        f"{total['completion_tokens']:,} completion tokens, ${total['usd']:.4f} ("
        + ", ".join(f"{k} ${v['usd']:.4f}" for k, v in record["costs"].items() if k != "total") + ")")
    return record
