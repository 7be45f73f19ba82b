"""Resolve a prospective split (docs/prospective.md): rebuild its papers as of a resolution date, give them their gold
under the build's rules, normalised against the papers of their own age, and score every sealed run of a
leaderboard with Scheme 1, Scheme 2, their intervals and skill. The gold is written as a dataset folder (the split's
papers as `selected`, the other papers of the same age as `backup`), so that `scitaste score --gold` on it gives
each run's resolved score.
"""

from __future__ import annotations

import argparse

from scitaste_hf.cli import iso_date


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste resolve``."""
    parser.add_argument("--data", required=True, help="the leaderboard's data folder (its sealed runs are scored)")
    parser.add_argument("--dataset", required=True,
                        help="the release folder with the prospective split (scitaste build --prospective-months)")
    parser.add_argument("--as-of", required=True, type=iso_date, metavar="YYYY-MM-DD",
                        help="the resolution date: the split's papers are rebuilt as the services stood on it")
    parser.add_argument("--mirror-url", help="URL printed by `scitaste mirror serve` (default source: the mirror)")
    parser.add_argument("--live", action="store_true", help="rebuild from the live services instead of the mirror")
    parser.add_argument("--out", help="folder of the resolved gold (default: DATA/resolutions/AS_OF)")
    parser.add_argument("--work-dir", help="response cache and stage checkpoints (default: OUT.work)")
    parser.add_argument("--per-discipline", type=int, default=1000,
                        help="most papers collected per discipline, as in scitaste build (default 1000)")
    parser.add_argument("--taxonomy", metavar="NAME|FILE", help="the taxonomy the release was built with")
    parser.add_argument("--weights", metavar="FILE", help="the weights the release was built with")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    parser.add_argument("--resume", action="store_true",
                        help="reuse the rebuild's stages that a stopped resolve of the same date finished")


def resolve(args: argparse.Namespace) -> dict:
    """Rebuild, write the resolved gold and score the sealed runs; returns what :func:`run` prints.

    Raises
    ------
    ScitasteError
        One line: the release has no prospective split, the date is not after its window, the rebuild failed or
        found none of the split's papers (nothing is then recorded: the split stays open), or the board's Hub copy
        of its sealed runs cannot be opened.
    """
    from datetime import date
    from pathlib import Path

    from scitaste_hf.builder.layout import check_out, write_dataset
    from scitaste_hf.builder.pipeline import Build, BuildConfig
    from scitaste_hf.builder.prospective import Window
    from scitaste_hf.errors import InvalidInput
    from scitaste_hf.leaderboard.sealed import open_sealed, prospective_split
    from scitaste_hf.release.folder import provenance, read_release
    from scitaste_hf.taxonomy import ADS_ROUTE, load_taxonomy
    from scitaste_hf.weights import DEFAULT_WEIGHTS, load_weights

    release = read_release(Path(args.dataset), "--dataset")
    window = release.provenance.get("prospective")
    split = prospective_split(args.dataset)
    if not window or split is None:
        raise InvalidInput(f"--dataset {args.dataset} has no prospective split (build it with --prospective-months)")
    cohort = Window(date.fromisoformat(window["published_after"]), date.fromisoformat(window["published_by"]))
    if args.as_of <= cohort.end:
        raise InvalidInput(f"--as-of {args.as_of.isoformat()} must come after the split's release date "
                           f"{cohort.end.isoformat()}")
    if args.live == bool(args.mirror_url):
        raise InvalidInput("give --mirror-url (the offline mirror) or --live (the real services), one of them")
    # The services answer as of now at the latest: a later date would label today's gold with it and close the split.
    now = date.today() if args.live else _mirror_clock(args.mirror_url)
    if now is not None and args.as_of > now:
        where = "today" if args.live else "the mirror's world (move its clock: POST /_control/clock)"
        raise InvalidInput(f"--as-of {args.as_of.isoformat()} is after {now.isoformat()}, the date of {where}: "
                           "the split can be resolved only as of a date the services have reached")
    out = Path(args.out) if args.out else Path(args.data) / "resolutions" / args.as_of.isoformat()
    if out.resolve() == Path(args.dataset).resolve():  # --overwrite would replace the release, its split with it
        raise InvalidInput(f"--out {out} is the release itself: the resolved gold goes to a folder of its own")
    weights = load_weights(args.weights) if args.weights else None
    taxonomy = load_taxonomy(args.taxonomy)
    config = BuildConfig(out=out, source="live" if args.live else "mirror", mirror_url=args.mirror_url,
                         work_dir=Path(args.work_dir) if args.work_dir else None, per_discipline=args.per_discipline,
                         selected_per_discipline=1, overwrite=args.overwrite, as_of=args.as_of, weights=weights,
                         cohort=cohort, resume=args.resume)
    build = Build(config, taxonomy=taxonomy)
    check_out(out, args.overwrite)  # before the rebuild, not after it
    board = open_sealed(args.data, split)  # before the rebuild too: a Hub copy's missing key is told at once
    try:
        indexed = build.indexed_records()
        records = indexed["records"]
        ids = {r["bibcode"] for r in split}
        gold = [r for r in records if r["bibcode"] in ids]
        if not gold:  # a resolution of no paper would close the split with nothing scored
            raise InvalidInput(f"the rebuild as of {args.as_of.isoformat()} found none of the split's {len(ids)} "
                               f"papers ({len(records)} papers of their window): nothing was resolved and the split "
                               "stays open; resolve against the services and with the taxonomy the release was built "
                               "with")
        same_age = [r for r in records if r["bibcode"] not in ids]
        recorded = provenance(args.as_of, weights or DEFAULT_WEIGHTS, taxonomy, indexed["graph"])
        recorded["resolves"] = {**window, "release": str(args.dataset)}
        write_dataset(out, {"selected": gold, "backup": same_age}, weights or DEFAULT_WEIGHTS,
                      synthetic=not args.live, overwrite=args.overwrite, provenance=recorded,
                      ads_disciplines=[d.name for d in build.taxonomy.by_route(ADS_ROUTE)])
        # the real world's dates are the board's clock; the simulated world's are not (its runs are sealed now)
        scored = board.resolve(args.as_of.isoformat(), gold, same_age or None,
                               sealed_before=args.as_of.isoformat() if args.live else None)
        late = [r["run"] for r in board.rows() if r["run"] not in scored]
    finally:
        board.close()
    return {"out": out, "resolved": len(gold), "total": len(ids), "same_age": len(same_age), "scored": scored,
            "late": sorted(late)}


def _mirror_clock(url: str):
    """The date the mirror's world stands at (``GET /_control/clock``), or None: its present, or a mirror without a
    clock (recorded responses)."""
    import json
    from datetime import date

    import httpx

    from scitaste_hf.errors import InvalidInput
    from scitaste_hf.net.bounded import TooLarge, exchange

    try:
        status, _, body = exchange("GET", f"{url.rstrip('/')}/_control/clock", limit=30, max_bytes=4096)
    except (httpx.HTTPError, TooLarge) as exc:
        raise InvalidInput(f"--mirror-url {url}: no answer to GET /_control/clock ({type(exc).__name__}); is "
                           "`scitaste mirror serve` running there?") from None
    if status != 200:
        return None
    try:
        clock = json.loads(body).get("as_of")
        return date.fromisoformat(clock) if clock else None
    except (ValueError, AttributeError, TypeError):
        return None


def _number(value, interval) -> str:
    """A score and its interval as the line prints them."""
    if value is None:
        return "undefined"
    return f"{value:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval and None not in interval else "")


def run(args: argparse.Namespace) -> int:
    """Resolve and print one line per sealed run scored."""
    from scitaste_hf.taxonomy import OVERALL

    done = resolve(args)
    print(f"resolved {done['resolved']} of {done['total']} prospective papers as of {args.as_of.isoformat()} "
          f"(normalised against {done['resolved'] + done['same_age']} papers of their age); gold in {done['out']}")
    for run_id, result in sorted(done["scored"].items()):
        overall = result["overall"]
        s1, s2 = overall["scheme1"] or {}, overall["scheme2"] or {}
        ci1, ci2 = (s1.get("ci") or {}).get("scheme1"), (s2.get("ci") or {}).get("score")
        skill = ((overall.get("skill") or {}).get("scheme1") or {})
        print(f"sealed run #{run_id} ({OVERALL}): Scheme 1 {_number(s1.get('scheme1'), ci1)}, Scheme 2 "
              f"{_number(s2.get('score'), ci2)}, Scheme-1 skill {_number(skill.get('skill'), skill.get('interval'))}")
    for run_id in done["late"]:
        print(f"sealed run #{run_id}: not scored, sealed on or after {args.as_of.isoformat()}")
    return 0
