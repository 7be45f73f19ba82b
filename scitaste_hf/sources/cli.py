"""Fetch records from OpenAlex, NASA ADS or arXiv and print them as JSON lines (``scitaste fetch``).

Useful to check credentials, to fill or inspect a response cache (``--cache-dir``, ``--record``), and to see
exactly what the dataset builder will get (``--offline`` answers from the cache only). Examples::

    scitaste fetch openalex W2741809807 --cache-dir cache/
    scitaste fetch openalex W2741809807 --citers --offline --cache-dir cache/
    scitaste fetch ads 2007ApJ...669..741S --references
    scitaste fetch arxiv 1707.08567 quant-ph/0201082v1
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from datetime import date
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the command's arguments.

    :param parser: the subcommand's parser.
    """
    parser.add_argument("service", choices=("openalex", "ads", "arxiv"), help="which service to ask")
    parser.add_argument("ids", nargs="+", help="OpenAlex work ids, ADS bibcodes or arXiv ids")
    links = parser.add_mutually_exclusive_group()
    links.add_argument("--citers", action="store_true", help="print the works citing the ids (OpenAlex, ADS)")
    links.add_argument("--references", action="store_true", help="print the works the ids cite (OpenAlex, ADS)")
    parser.add_argument("--base-url", default=None, help="service root (a mirror or test server); default: live")
    parser.add_argument("--cache-dir", default=None, help="response cache directory (plain JSON files)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--offline", action="store_true", help="answer from the cache only; fail on a miss")
    mode.add_argument("--record", action="store_true", help="always ask the service and rewrite the cache")


def _jsonable(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def run(args: argparse.Namespace) -> int:
    """Fetch and print; credentials come from ``OPENALEX_API_KEY`` / ``ADS_API_TOKEN``.

    :param args: parsed arguments (see :func:`add_arguments`).
    """
    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.sources import ADSClient, ArxivClient, OpenAlexClient

    common = {"cache_dir": args.cache_dir, "offline": args.offline, "record": args.record}
    if args.base_url:
        common["base_url"] = args.base_url
    if args.service == "openalex":
        client = OpenAlexClient(**common)
        if args.citers or args.references:
            records = client.iter_citing(args.ids) if args.citers else client.iter_references(args.ids)
        else:
            # One id: a single-entity lookup, which OpenAlex does not bill; several: batched listings.
            records = [client.get_work(args.ids[0])] if len(args.ids) == 1 else client.get_works(args.ids)
    elif args.service == "ads":
        client = ADSClient(**common)
        if args.citers or args.references:
            fetch = client.citations if args.citers else client.references
            records = (rec for code in args.ids for rec in fetch(code))
        else:
            records = client.get_records(args.ids)
    else:
        if args.citers or args.references:
            raise ScitasteError("arXiv has no citation links; use openalex or ads for --citers/--references")
        client = ArxivClient(**common)
        records = client.get_entries(args.ids)
    with client:
        for rec in records:
            sys.stdout.write(json.dumps(dataclasses.asdict(rec), default=_jsonable, ensure_ascii=False) + "\n")
    return 0
