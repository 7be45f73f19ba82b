"""Serve an offline mirror of OpenAlex, NASA ADS and arXiv on 127.0.0.1: a simulated world at benchmark scale
(synthetic data, labelled so) or the recorded real responses. Point the clients (and `scitaste build`) at the
printed URL: OpenAlex under /openalex, ADS under /ads, arXiv under /arxiv; GET /health answers once ready.
`scitaste mirror snapshot --works N --out DIR` writes a closed simulated world in OpenAlex's snapshot layout
instead (the input of `scitaste index`; docs/scale.md).
"""

from __future__ import annotations

import argparse

from scitaste_hf.cli import whole_number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste mirror``."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    serve = sub.add_parser("serve", help="serve the mirror in the foreground")
    serve.add_argument("--world", choices=("sim", "recorded"), default="sim", help="what to serve (default sim)")
    serve.add_argument("--seed", type=int, default=0, help="seed of the simulated world and of random faults")
    serve.add_argument("--papers", type=int, default=6000,
                       help="papers the benchmark keeps from the world (default 6000, the two splits' size); the "
                            "world generates a surplus of candidates around them")
    serve.add_argument("--taxonomy", metavar="NAME|FILE",
                       help="taxonomy the simulated world generates: a packaged one (default, extended) or a YAML "
                            "file (default: default); build from it with the same --taxonomy")
    serve.add_argument("--field-weights", metavar="NAME|FILE",
                       help="give each discipline of the simulated world its own latent loadings, so that weights "
                            "derived per discipline differ: a packaged preset (distinct) or a JSON file "
                            "(docs/weights.md#simulated-field-weights; default: one set for all)")
    serve.add_argument("--as-of", metavar="YYYY-MM-DD",
                       help="start the simulated world's clock on this date: works published later are in no "
                            "listing, citations made later are not counted; POST /_control/clock moves it "
                            "(default: the world's present)")
    serve.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0: any free port)")
    serve.add_argument("--rate-limit", type=int, help="requests per second before answering 429")
    serve.add_argument("--daily-limit", type=int, help="requests before the X-RateLimit budget is spent")
    serve.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    serve.add_argument("--max-page", type=whole_number(1), metavar="N",
                       help="answer at most N records a page, whatever was asked (a service that caps its page size)")
    serve.add_argument("--fault", action="append", default=[], metavar="KIND=SHARE",
                       help="random faults: 429, 500, empty, truncated or slow, e.g. --fault 429=0.05 (repeatable)")
    snap = sub.add_parser("snapshot", help="write a closed simulated world in OpenAlex's snapshot layout")
    snap.add_argument("--works", type=whole_number(1), required=True, metavar="N", help="number of works")
    snap.add_argument("--out", required=True, help="the snapshot's root folder (data/ is written inside it)")
    snap.add_argument("--seed", type=int, default=0, help="seed of the simulated world")
    snap.add_argument("--parquet", action="store_true", help="also write the works as Parquet (data/parquet/works)")
    snap.add_argument("--part-records", type=whole_number(1), default=50_000, metavar="N",
                      help="records per data file (default 50000)")


def _faults(specs: list[str]) -> dict[str, float]:
    from scitaste_hf.errors import InvalidInput
    from scitaste_hf.mirror.app import FAULT_KINDS

    out = {}
    for spec in specs:
        kind, _, share = spec.partition("=")
        try:
            value = float(share)
        except ValueError:
            value = -1.0
        if kind not in FAULT_KINDS or not 0 <= value <= 1:
            raise InvalidInput(f"--fault {spec!r}: use KIND=SHARE with KIND one of {', '.join(FAULT_KINDS)} "
                                "and SHARE in 0-1")
        out[kind] = value
    if sum(out.values()) > 1:
        raise InvalidInput("the --fault shares add up to more than 1")
    return out


def _snapshot(args: argparse.Namespace) -> int:
    from scitaste_hf.progress import StageProgress
    from scitaste_hf.snapshot.writer import write_snapshot

    with StageProgress() as progress:
        info = write_snapshot(args.out, args.works, seed=args.seed, parquet=args.parquet,
                              part_records=args.part_records, progress=progress)
    print(f"wrote a SYNTHETIC snapshot (seed {info['seed']}; not real data) to {args.out}: {info['works']:,} works, "
          f"{info['citations']:,} citations, {info['sources']} sources; formats {', '.join(info['formats'])}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Build the world, bind the port, print READY with the URL, serve until interrupted (``serve``); or write a
    snapshot (``snapshot``)."""
    if args.action == "snapshot":
        return _snapshot(args)
    import socket
    import time
    from datetime import date

    from scitaste_hf.errors import InvalidInput, ScitasteError
    from scitaste_hf.mirror.server import DEFAULT_DAILY_LIMIT, build_mirror
    from scitaste_hf.simworld.latent import load_field_weights
    from scitaste_hf.sources.endpoints import mirror_clients
    from scitaste_hf.taxonomy import load_taxonomy

    faults = _faults(args.fault)
    field_weights = load_field_weights(args.field_weights)
    if field_weights is not None and args.world != "sim":
        raise InvalidInput("--field-weights shapes the simulated world; the recorded responses have none")
    if args.as_of is not None and args.world != "sim":
        raise InvalidInput("--as-of sets the simulated world's clock; the recorded responses have none")
    try:
        as_of = date.fromisoformat(args.as_of) if args.as_of is not None else None
    except ValueError:
        raise InvalidInput(f"--as-of {args.as_of!r}: expected a date YYYY-MM-DD") from None
    started = time.perf_counter()
    shape = f", field weights {args.field_weights}" if field_weights else ""
    what = "recorded real responses" if args.world == "recorded" else \
        f"SYNTHETIC world (seed {args.seed}, sized for {args.papers} benchmark papers{shape}; not real data)"
    print(f"building the mirror: {what} ...", flush=True)
    app = build_mirror(args.world, seed=args.seed, papers=args.papers, rate_limit=args.rate_limit,
                       daily_limit=args.daily_limit or DEFAULT_DAILY_LIMIT, latency=args.latency,
                       max_page=args.max_page, fault_rates=faults, progress=lambda m: print(m, flush=True),
                       taxonomy=load_taxonomy(args.taxonomy), field_weights=field_weights, as_of=as_of)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", args.port))
    except OSError as exc:
        raise ScitasteError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}; choose another --port") from None
    sock.listen(1024)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    roots = {service: kwargs["base_url"] for service, kwargs in mirror_clients(url).items()}
    print(f"READY {url}  (built in {time.perf_counter() - started:.1f} s; OpenAlex {roots['openalex']}, "
          f"ADS {roots['ads']}, arXiv {roots['arxiv']})", flush=True)
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                           timeout_keep_alive=30))
    server.run(sockets=[sock])
    return 0
