"""Freeze the nine tools' evidence for every paper of a dataset split once, as the `tool_evidence` config, so
that every model is evaluated on identical evidence without API keys (`--source mirror` for the offline mirror,
`--source live` for the real services with OPENALEX_API_KEY and ADS_API_TOKEN from the environment).

By default the evidence goes into the dataset folder (DATA/tool_evidence), where its card declares it as the
config `tool_evidence`: `load_dataset(DATA, "tool_evidence")` reads it and `scitaste publish dataset` pushes it.
"""

from __future__ import annotations

import argparse

from scitaste_hf.cli import whole_number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste evidence``."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    freeze = sub.add_parser("freeze", help="fetch every tool's output for every paper once")
    freeze.add_argument("--dataset", required=True, help="dataset folder (Hub layout) or records file")
    freeze.add_argument("--out", help="folder of the evidence (default DATASET/tool_evidence, the dataset's "
                                      "tool_evidence config; needed when --dataset is a file)")
    freeze.add_argument("--split", default="selected", help="split to freeze (default selected)")
    freeze.add_argument("--source", choices=("mirror", "live"), default="mirror", help="where the tools fetch from")
    freeze.add_argument("--mirror-url", default="http://127.0.0.1:8765", help="URL printed by `scitaste mirror serve`")
    freeze.add_argument("--workers", type=whole_number(1), default=8, help="papers fetched concurrently")


def run(args: argparse.Namespace) -> int:
    """Build the tools over the chosen services and freeze their evidence."""
    import shutil
    from pathlib import Path

    from rich.progress import Progress

    from scitaste_hf.agent.evidence import EVIDENCE_DIR, freeze
    from scitaste_hf.agent.tools import PaperRef, ToolBox
    from scitaste_hf.errors import InvalidInput
    from scitaste_hf.records import load_bibcode_map, load_records
    from scitaste_hf.sources import ADSClient, OpenAlexClient
    from scitaste_hf.sources.endpoints import mirror_clients

    if not args.out and not Path(args.dataset).is_dir():
        raise InvalidInput("--out DIR is needed when --dataset is a records file (a dataset folder keeps its "
                            f"evidence in {EVIDENCE_DIR}/)")
    out_dir = Path(args.out or Path(args.dataset) / EVIDENCE_DIR)
    records = load_records(args.dataset, args.split)
    if missing := [i for i, r in enumerate(records) if not r.get("bibcode") or not r.get("discipline")]:
        raise InvalidInput(f"{args.dataset}: record {missing[0]} has no bibcode or discipline; --dataset takes the "
                            "dataset (its folder or a records file), not predictions")
    mapping = load_bibcode_map(args.dataset) if Path(args.dataset).is_dir() else {}
    papers = {r["bibcode"]: PaperRef(r["bibcode"], r["discipline"], r.get("openalex_id") or mapping.get(r["bibcode"]),
                                     r.get("doi")) for r in records}
    cache = str(out_dir / ".cache")
    settings = mirror_clients(args.mirror_url) if args.source == "mirror" else {"openalex": {}, "ads": {}}
    openalex = OpenAlexClient(cache_dir=cache, **settings["openalex"])
    ads = ADSClient(cache_dir=cache, **settings["ads"])
    toolbox = ToolBox(openalex, ads, papers, strict=True)
    with Progress() as bar:
        task = bar.add_task(f"freezing evidence of {len(papers)} papers", total=len(papers))
        out = freeze(toolbox, papers, out_dir, source=args.source, workers=args.workers,
                     progress=lambda done: bar.update(task, completed=done))
    # the response cache lets a failed freeze resume; once the evidence is whole it is no part of the dataset
    shutil.rmtree(cache, ignore_errors=True)
    print(f"wrote {out} ({len(papers)} papers x 9 tools)")
    if Path(args.dataset).is_dir() and out.resolve() == (Path(args.dataset) / EVIDENCE_DIR).resolve():
        print(f"it is the dataset's tool_evidence config; `scitaste publish dataset --path {args.dataset}` pushes it")
    return 0
