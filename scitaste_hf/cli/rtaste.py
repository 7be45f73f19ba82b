"""rTaste: run the protocol's stages on a study folder, and score research agents' registered-event experiments.

`scitaste rtaste propose|seal|judge|rerun|budget|audit|calibrate|novelty|review|release STUDY` run one stage each on
a study folder (docs/rtaste-protocol.md), resumable and replaceable one at a time; `scitaste rtaste run` runs them all
on a folder of seed papers (by default the bundled synthetic study) and reports; `scitaste rtaste report` prints the
study's headline table from a release in the rTaste schema; without --data it reports the bundled synthetic release
(simulated data, not study results).
"""

from __future__ import annotations

import argparse
from typing import Any

#: The protocol's stages: (action, help).
STAGES = (
    ("propose", "an agent registers five MVEs per seed paper, then forecasts and ranks them (single researcher)"),
    ("seal", "record the digest of every registration, probability and rank before anything runs"),
    ("judge", "judge models forecast each sealed condition's five events (the proposer's model among them)"),
    ("rerun", "re-run each delivered MVE under protection; its value alone decides the event"),
    ("audit", "three auditors, blind to proposer and rank, judge each re-run MVE: faithful, valid, value 0-3, ranks"),
    ("novelty", "obvious follow-up lists, the MVEs that hit them, and two novelty judges' labels (with arXiv)"),
    ("budget", "each condition's model spends a fixed budget on its MVEs in rounds, seeing the first results"),
    ("calibrate", "plant known flaws in copies of delivered MVEs; the auditors' catch and false-positive rates"),
    ("review", "three reviewers answer the fixed questions of each re-run MVE; the answer two give stands"),
    ("release", "join the stages' records into the release table (STUDY/release.jsonl) for `rtaste report`"),
)

RUN_HELP = ("every stage on a folder of seed papers (propose, seal, judge, rerun, the budget mode when asked for, "
            "audit, calibrate, novelty, review, release), resumable, ending in the report")


def _stage_arguments(actions) -> None:
    parsers = {}
    for name, text in STAGES:
        parsers[name] = actions.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        parsers[name].add_argument("study", metavar="STUDY", help="the study folder (docs/rtaste-protocol.md)")
    parsers["run"] = actions.add_parser("run", help=RUN_HELP, description=RUN_HELP[0].upper() + RUN_HELP[1:] + ".")
    run = parsers["run"]
    run.add_argument("--seed-papers", metavar="DIR",
                     help="a folder of SEED.json seed papers (or one with seeds/), with toy MVEs for the toy executor "
                          "where it ships them (default: the bundled synthetic study)")
    run.add_argument("--study", default="rtaste-study", help="the study folder, made or resumed (default: "
                                                             "rtaste-study)")
    run.add_argument("--models", required=True, metavar="M1,M2@URL,...", help="the agents' models")
    run.add_argument("--organisations", default="single_researcher", metavar="O1,O2",
                     help="single_researcher and/or research_team, comma-separated (default: single_researcher)")
    run.add_argument("--judges", default="", metavar="M1,...",
                     help="judges beside the agents' own models (each agent is its own same-model judge)")
    run.add_argument("--listers", default="", metavar="M1,...",
                     help="the models that list obvious follow-ups (default: the agents' models)")
    run.add_argument("--matcher", help="the model that marks the MVEs the lists name (default: the first novelty "
                                       "judge)")
    run.add_argument("--json", metavar="OUT", dest="json_out", help="also write the report as JSON")
    for name in ("propose", "run"):
        parsers[name].add_argument("--repeats", type=int, default=1, metavar="K",
                                   help="run each condition K times, each in fresh contexts; the report gives each "
                                        "metric's spread between the runs (default 1)")
    for name in ("propose", "judge", "budget", "audit", "calibrate", "novelty", "review", "run"):
        parsers[name].add_argument("--base-url", required=True, help="the OpenAI-compatible endpoint, ending in /v1")
        parsers[name].add_argument("--profile", default="default", help="a provider profile (default: default)")
        parsers[name].add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
        parsers[name].add_argument("--max-retries", type=int, default=4,
                                   help="attempts after the first on 429, 5xx and connection errors (default 4)")
    for name in ("propose", "judge", "rerun", "budget", "audit", "calibrate", "novelty", "review"):
        parsers[name].add_argument("--force", action="store_true",
                                   help="do again what is already done (never a sealed registration)")
    propose = parsers["propose"]
    propose.add_argument("--model", required=True, help="the agent's model")
    propose.add_argument("--organisation", choices=("single_researcher", "research_team"),
                         default="single_researcher",
                         help="one researcher in one context, or two proposers, a critic and a lead (default: "
                              "single_researcher)")
    for name in ("propose", "novelty", "run"):
        parsers[name].add_argument("--mirror", metavar="URL", help="search the arXiv of an offline mirror (`scitaste "
                                                                   "mirror serve`) instead of the live service")
        parsers[name].add_argument("--no-search", action="store_true", help="skip the literature search")
    for name in ("propose", "run"):
        parsers[name].add_argument("--usd-per-m-prompt", type=float, default=0.0,
                                   help="US dollars per million prompt tokens, for the costs (default 0)")
        parsers[name].add_argument("--usd-per-m-completion", type=float, default=0.0,
                                   help="US dollars per million completion tokens (default 0)")
    parsers["judge"].add_argument("--judges", required=True, metavar="M1,M2@URL,...",
                                  help="the judge models, comma-separated, each on --base-url or on the endpoint "
                                       "after its @; must include each proposer's model")
    for name in ("audit", "calibrate", "run"):
        parsers[name].add_argument("--auditors", required=True, metavar="A1,A2,A3",
                                   help="the three auditor models, comma-separated (MODEL@URL for another endpoint)")
    for name in ("review", "run"):
        parsers[name].add_argument("--reviewers", required=True, metavar="R1,R2,R3",
                                   help="the three reviewer models, comma-separated (MODEL@URL for another endpoint)")
    novelty = parsers["novelty"]
    novelty.add_argument("--listers", required=True, metavar="M1,...", help="the models that list obvious follow-ups")
    novelty.add_argument("--matcher", required=True, help="the model that marks the MVEs the lists name")
    for name in ("novelty", "run"):
        parsers[name].add_argument("--novelty-judges", required=True, metavar="J1,J2", help="the two novelty judges")
    from scitaste_hf.rtaste_protocol.limits import DEFAULT_LIMITS

    parsers["budget"].add_argument("--models", required=True, metavar="M1,M2@URL,...",
                                   help="the conditions' models (each spends its own conditions' budget)")
    for name in ("budget", "run"):
        parsers[name].add_argument("--budget-units", type=int, default=None if name == "run" else 10, metavar="U",
                                   help="budget units each condition spends on its MVEs"
                                        + (" (run: no budget mode unless given)" if name == "run" else " (default 10)"))
        parsers[name].add_argument("--budget-rounds", type=int, default=2, metavar="R",
                                   help="rounds the budget is spent in, with the results shown between (default 2)")
    parsers["calibrate"].add_argument("--flaws", metavar="F1,F2",
                                      help="the flaws to plant (default: the whole catalogue, docs/rtaste-protocol.md"
                                           "#calibration)")
    for name in ("rerun", "calibrate", "run"):
        for flag, value, text in (("--wall-s", DEFAULT_LIMITS.wall_s, "wall seconds per MVE"),
                                  ("--memory-mb", DEFAULT_LIMITS.memory_mb, "address space per process, MB"),
                                  ("--output-mb", DEFAULT_LIMITS.output_mb,
                                   "largest file it writes, output included, MB"),
                                  ("--disk-mb", DEFAULT_LIMITS.disk_mb, "most its folder may hold, MB")):
            parsers[name].add_argument(flag, type=type(value), default=value, help=f"{text} (default {value:g})")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste rtaste``: the protocol's stages and the ``report`` action."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    _stage_arguments(actions)
    report = actions.add_parser("report", help="print the headline table of an rTaste release",
                                description="Print yield per condition, Brier scores (agent, same-model judge, "
                                            "mean of judges, base rate) and top-1 hit rates, with 95% "
                                            "intervals across seed papers.")
    report.add_argument("--data", metavar="DIR",
                        help="the release: a dataset folder in the Hub layout (config 'rtaste') or a "
                             ".jsonl/.parquet file of rows (default: the bundled synthetic release)")
    report.add_argument("--json", metavar="OUT", dest="json_out",
                        help="also write every number as JSON (only when the whole report succeeded)")
    report.add_argument("--n-resamples", type=int, default=None,
                        help="0: no intervals (default: the bootstrap's N_RESAMPLES; the intervals are t-intervals "
                             "across seed papers)")
    report.add_argument("--seed", type=int, default=0,
                        help="unused: the t-intervals draw nothing at random (default 0)")


def _clients(args: argparse.Namespace, models: list[str]) -> dict:
    """A chat client per model; ``MODEL@URL`` puts one on an endpoint of its own."""
    import math

    from scitaste_hf.agent.chat import make_client
    from scitaste_hf.errors import InvalidInput

    if not (math.isfinite(args.timeout) and args.timeout > 0) or args.max_retries < 0:
        raise InvalidInput("--timeout must be a finite number of seconds > 0 and --max-retries a whole number >= 0")
    clients = {}
    for entry in models:
        model, _, url = entry.partition("@")
        if not model.strip():
            raise InvalidInput(f"{entry!r} names no model (MODEL or MODEL@URL)")
        clients[model] = make_client(url or args.base_url, model, profile=args.profile, timeout=args.timeout,
                                     max_retries=args.max_retries)
    return clients


def _models(text: str, flag: str) -> list[str]:
    from scitaste_hf.errors import InvalidInput

    models = [m.strip() for m in text.split(",") if m.strip()]
    if not models:
        raise InvalidInput(f"{flag} names no model")
    return models


def _arxiv(args: argparse.Namespace):
    """The literature tool's client: the mirror's arXiv, the live one, or none with --no-search."""
    if args.no_search:
        return None
    from scitaste_hf.sources.arxiv import ArxivClient
    from scitaste_hf.sources.endpoints import mirror_clients

    return ArxivClient(**mirror_clients(args.mirror)["arxiv"]) if args.mirror else ArxivClient()


def _limits(args: argparse.Namespace):
    from scitaste_hf.rtaste_protocol.limits import Limits

    return Limits(args.wall_s, args.memory_mb, args.output_mb, args.disk_mb)


def _prices(args: argparse.Namespace):
    from scitaste_hf.rtaste_protocol.propose import Prices

    return Prices(args.usd_per_m_prompt, args.usd_per_m_completion)


def run_all(args: argparse.Namespace) -> int:
    """``scitaste rtaste run``: every stage on the seed papers, then the report of the release it made."""
    from scitaste_hf.errors import InvalidInput
    from scitaste_hf.rtaste.schema import ORGANISATIONS
    from scitaste_hf.rtaste_protocol.run import Roles, run_protocol
    from scitaste_hf.rtaste_protocol.toy import example_study_dir

    organisations = tuple(_models(args.organisations, "--organisations"))
    unknown = [o for o in organisations if o not in ORGANISATIONS]
    if unknown:
        raise InvalidInput(f"unknown organisation {unknown[0]!r}; use one of {', '.join(ORGANISATIONS)}")
    if args.seed_papers is None:
        print("Running the bundled SYNTHETIC study (toy seed papers and MVEs, not study data); use --seed-papers "
              "for your own.")
    agents = _clients(args, _models(args.models, "--models"))
    roles = Roles(agents=agents, auditors=_clients(args, _models(args.auditors, "--auditors")),
                  novelty_judges=_clients(args, _models(args.novelty_judges, "--novelty-judges")),
                  reviewers=_clients(args, _models(args.reviewers, "--reviewers")),
                  judges=_clients(args, _models(args.judges, "--judges")) if args.judges.strip() else {},
                  listers=_clients(args, _models(args.listers, "--listers")) if args.listers.strip() else {},
                  matcher=next(iter(_clients(args, [args.matcher]).values())) if args.matcher else None)
    done = run_protocol(args.study, args.seed_papers or example_study_dir(), roles, organisations=organisations,
                        arxiv=_arxiv(args), prices=_prices(args), limits=_limits(args), repeats=args.repeats,
                        budget=None if args.budget_units is None else (args.budget_units, args.budget_rounds))
    if done["release"] is None:
        return 0
    from scitaste_hf.rtaste_protocol.calibrate import calibration_summary
    from scitaste_hf.rtaste_protocol.study import Study

    print_calibration(calibration_summary(Study(args.study)))
    if args.budget_units is not None:
        _print_budget(Study(args.study))
    return print_report(done["release"], n_resamples=None, json_out=args.json_out)


def print_calibration(summary: dict[str, Any]) -> None:
    """One line per auditor (and their majority): catch rate on planted flaws, false positives on delivered MVEs."""
    for name, rates in summary["raters"].items():
        print(f"calibration {name}: catches {_estimate(rates['catch_rate'])} of {rates['n_planted']} planted flaws, "
              f"flags {_estimate(rates['false_positive_rate'])} of {rates['n_delivered']} delivered MVEs")


def _print_budget(study: Any) -> None:
    """The budget mode's summary in one line per label, once the study's labels are complete."""
    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.rtaste_protocol.budget import budget_summary

    try:
        summary = budget_summary(study)
    except ScitasteError as exc:
        print(f"budget: no summary yet ({exc})")
        return
    for label in ("svn", "sound", "valuable", "new"):
        block = summary[label]
        print(f"budget on {'sound+valuable+new' if label == 'svn' else label} MVEs: "
              f"{_estimate(block['budget_share'])} of the units, against {_estimate(block['even_share'])} for an "
              f"even spread ({summary['n_conditions']} conditions)")


def run_stage(args: argparse.Namespace) -> int:
    """Run one stage on the study folder and print what it did in one line."""
    from scitaste_hf.rtaste_protocol.study import Study

    study = Study(args.study)
    if args.action == "propose":
        from scitaste_hf.rtaste_protocol.propose import propose

        arxiv, prices = _arxiv(args), _prices(args)
        done = propose(study, _clients(args, [args.model])[args.model], organisation=args.organisation, arxiv=arxiv,
                       force=args.force, prices=prices, repeats=args.repeats)
    elif args.action == "seal":
        from scitaste_hf.rtaste_protocol.seal import seal

        done = seal(study)
    elif args.action == "judge":
        from scitaste_hf.rtaste_protocol.judges import judge

        done = judge(study, _clients(args, _models(args.judges, "--judges")), force=args.force)
    elif args.action == "audit":
        from scitaste_hf.rtaste_protocol.labels import audit

        done = audit(study, _clients(args, _models(args.auditors, "--auditors")), force=args.force)
    elif args.action == "novelty":
        from scitaste_hf.rtaste_protocol.labels import novelty

        matcher = _clients(args, [args.matcher])
        done = novelty(study, _clients(args, _models(args.listers, "--listers")), next(iter(matcher.values())),
                       _clients(args, _models(args.novelty_judges, "--novelty-judges")), arxiv=_arxiv(args),
                       force=args.force)
    elif args.action == "budget":
        from scitaste_hf.rtaste_protocol.budget import budget

        done = budget(study, _clients(args, _models(args.models, "--models")), units=args.budget_units,
                      rounds=args.budget_rounds, force=args.force)
        _print_budget(study)
    elif args.action == "calibrate":
        from scitaste_hf.rtaste_protocol.calibrate import FLAWS, calibrate, calibration_summary

        flaws = tuple(f.strip() for f in args.flaws.split(",") if f.strip()) if args.flaws else tuple(FLAWS)
        done = calibrate(study, _clients(args, _models(args.auditors, "--auditors")), _limits(args), flaws=flaws,
                         force=args.force)
        print_calibration(calibration_summary(study))
    elif args.action == "review":
        from scitaste_hf.rtaste_protocol.labels import review

        done = review(study, _clients(args, _models(args.reviewers, "--reviewers")), force=args.force)
    elif args.action == "rerun":
        from scitaste_hf.rtaste_protocol.rerun import rerun

        done = rerun(study, _limits(args), force=args.force)
    else:
        from scitaste_hf.rtaste_protocol.assemble import write_release

        done = write_release(study)
        failed = done.pop("failed")
        done["failed proposals"] = len(failed)
        for cid, reason in failed.items():
            print(f"failed proposal {cid}: {reason}")
    print(f"rtaste {args.action}: " + ", ".join(f"{k} {v}" for k, v in done.items()))
    return 0


def run(args: argparse.Namespace) -> int:
    """Run a stage or the whole protocol, or load and validate the release and print the report."""
    if args.action == "run":
        return run_all(args)
    if args.action != "report":
        return run_stage(args)
    return print_report(args.data, n_resamples=args.n_resamples, json_out=args.json_out, seed=args.seed)


def print_report(data: str | None, *, n_resamples: int | None, json_out: str | None, seed: int = 0) -> int:
    """Load and validate a release (default the bundled synthetic one), print the report, and write ``json_out``
    atomically when given."""
    from scitaste_hf.errors import InvalidInput
    from scitaste_hf.scoring.bootstrap import N_RESAMPLES

    if n_resamples is None:
        n_resamples = N_RESAMPLES
    if n_resamples < 0:
        raise InvalidInput("--n-resamples must be >= 0")
    import sys

    from rich.console import Console

    from scitaste_hf.output import check_writable, write_json_atomic

    if json_out:
        check_writable(json_out)
    from scitaste_hf.rtaste.release import example_release_dir, load_release
    from scitaste_hf.rtaste.report import report

    console = Console(width=None if sys.stdout.isatty() else 120)
    source = data or example_release_dir()
    if data is None:
        console.print("[dim]Reporting the bundled example: a SYNTHETIC rTaste release (simulated, not study "
                      "data). Use --data for a real release.[/dim]")
    result = report(load_release(source), n_resamples=n_resamples, seed=seed)
    result["inputs"] = {"data": str(source), "n_resamples": n_resamples, "seed": seed}
    for table in report_tables(result):
        console.print(table)
    for caveat in result["caveats"]:
        console.print(f"Caveat: {caveat}.")
    if json_out:
        write_json_atomic(json_out, result)
        console.print(f"wrote {json_out}")
    return 0


def _estimate(block: dict[str, Any] | None, scale: float = 1.0, digits: int = 3, signed: bool = False) -> str:
    if block is None:
        return "n/a"
    sign = "+" if signed else ""
    text = f"{block['estimate'] * scale:{sign}.{digits}f}"
    if block["interval"]:
        lo, hi = block["interval"]
        text += f" [{lo * scale:{sign}.{digits}f}, {hi * scale:{sign}.{digits}f}]" + (
            CLIPPED_MARK if block.get("clipped") else "")
    return text


#: Marks an interval that the statistic's range cut (few seed papers give t-intervals wider than it).
CLIPPED_MARK = " (clipped)"
CLIPPED_NOTE = ("(clipped): the t-interval reached past what the statistic can take (0-1 for a Brier score or a hit "
                "rate) and is cut to it; with few seed papers it says little")


def _clipped(*blocks: dict[str, Any] | None) -> str | None:
    return CLIPPED_NOTE if any(b and b.get("clipped") for b in blocks) else None


def report_tables(result: dict[str, Any]) -> list:
    """Rich tables of a :func:`~scitaste_hf.rtaste.report.report` result: yield, Brier, top-1, agreement."""
    from rich.table import Table

    agreement = result["rerun_agreement"]
    yields = Table(title=f"rTaste yield: {result['n_mves']} MVEs, {result['n_conditions']} conditions, "
                         f"{result['n_seed_papers']} seed papers; {result['n_delivered']} delivered; re-run equals "
                         f"executor on {agreement['n_same_value']}/{agreement['n_compared']}", title_justify="left")
    for column in ("model", "organisation", "conditions", "sound+valuable+new / 5", "cost $ / condition",
                   "per $100"):
        yields.add_column(column, justify="left" if column in ("model", "organisation") else "right")
    for row in result["yield"]:
        per_100 = "n/a" if row["svn_per_100_usd"] is None else f"{row['svn_per_100_usd']:.1f}"
        yields.add_row(row["model"], row["organisation"], str(row["n_conditions"]),
                       f"{row['svn_per_condition']:.2f}", f"{row['cost_usd_per_condition']:.2f}", per_100)

    brier = result["brier"]
    forecasts = Table(title=f"Brier score, lower is better ({brier['n_scored']} resolved events, event rate "
                            f"{brier['event_rate']:.2f}; 95% intervals across seed papers)", title_justify="left")
    forecasts.add_column("forecaster")
    forecasts.add_column("Brier", justify="right")
    for key, name in (("agent", "agent"), ("same_model_judge", "same-model judge"),
                      ("judge_mean", "mean of all judges"), ("base_rate", "base rate (other seed papers)")):
        forecasts.add_row(name, _estimate(brier[key]), end_section=key == "base_rate")
    forecasts.add_row("agent - same-model judge", _estimate(brier["agent_minus_judge"], signed=True))
    forecasts.caption = _clipped(*(brier[k] for k in ("agent", "same_model_judge", "judge_mean", "base_rate",
                                                      "agent_minus_judge")))

    top1 = result["top1"]
    hits = Table(title=f"Top-1 hit rate: the agent's first choice is the auditors' highest-valued MVE "
                       f"({top1['n_conditions']} conditions)", title_justify="left")
    hits.add_column("choice")
    hits.add_column("hit rate %", justify="right")
    hits.add_row("agent's rank 1", _estimate(top1["agent"], 100, 1))
    hits.add_row("first-written MVE", _estimate(top1["first_written"], 100, 1))
    hits.add_row("random", f"{100 * top1['random']:.1f}", end_section=True)
    hits.add_row("agent - random", _estimate(top1["agent_minus_random"], 100, 1, signed=True))
    hits.add_row("agent - first-written", _estimate(top1["agent_minus_first_written"], 100, 1, signed=True))
    hits.caption = _clipped(*(top1[k] for k in ("agent", "first_written", "agent_minus_random",
                                                 "agent_minus_first_written")))

    tables = [yields, forecasts, hits]
    if result.get("repeats"):
        spread = Table(title=f"Between-run spread: standard deviation over repeated runs, pooled over "
                             f"{result['repeats']['n_repeated']} seed paper x model x organisation cells (95% "
                             "chi-square intervals)", title_justify="left")
        spread.add_column("metric of a condition")
        spread.add_column("SD between runs", justify="right")
        for key, name in (("agent_brier", "agent's Brier"), ("same_model_judge_brier", "same-model judge's Brier"),
                          ("top1", "top-1 credit"), ("svn", "sound+valuable+new MVEs"), ("cost_usd", "cost $")):
            spread.add_row(name, _estimate(result["repeats"]["metrics"][key]))
        tables.append(spread)
    kappas = Table(title="Rater agreement (kappa; 1 perfect, 0 chance)", title_justify="left")
    for column in ("labels", "Fleiss", "Cohen, per pair"):
        kappas.add_column(column, justify="left" if column == "labels" else "right")
    for name, block in result["agreement"].items():
        raters = "novelty judges" if name == "novelty" else "auditors"
        kappas.add_row(f"{name} ({raters})", _kappa(block["fleiss"]),
                       ", ".join(_kappa(k) for k in block["cohen"].values()))
    return [*tables, kappas]


def _kappa(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
