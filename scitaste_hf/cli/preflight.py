"""Check an endpoint before a large run: a few papers in each mode, then per mode whether the model called tools,
whether its answers parsed, and which parameters the endpoint rejected (a whole run can be lost to that).
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste preflight``."""
    parser.add_argument("--model_args", "--model-args", dest="model_args", metavar="ARGS",
                        help="the --model_args of `scitaste eval --model scitaste-agent`, copied as they are "
                             "(base_url=URL,model=NAME[,profile=P,max_gen_toks=N,timeout=S,data_dir=DIR]); "
                             "--model is then scitaste-agent or left out")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint root ending in /v1")
    parser.add_argument("--model", help="model name the endpoint serves")
    parser.add_argument("--profile", default="default", help="provider profile (see scitaste_hf.agent.chat)")
    parser.add_argument("--data-dir", help="dataset folder (default: the bundled synthetic example, tool modes "
                                           "need frozen evidence in DATA/tool_evidence)")
    parser.add_argument("--papers", type=int, default=3, help="papers per mode (default 3)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per request")


def probe(client, tools, records, mode: str) -> dict:
    """Run ``records`` in ``mode``; count tool calls, parsed answers and failures, keep the first error. A round 1
    made by the harness goes as text where the profile says the endpoint's template has no tool roles."""
    from scitaste_hf.agent.loop import run_item
    from scitaste_hf.schema import Answer
    from scitaste_hf.scoring import parse_answer

    out = {"mode": mode, "papers": len(records), "tool_calls": 0, "parsed": 0, "failures": {}, "error": None}
    for record in records:
        outcome = run_item(client.chat, tools, record, mode, evidence_as_text=not client.profile.tool_roles)
        out["tool_calls"] += len(outcome.trace.get("calls", []))
        if outcome.failure:
            result = outcome.failure
        else:
            parsed = parse_answer(outcome.text)
            result = None if isinstance(parsed, Answer) else parsed.reason
        if result is None:
            out["parsed"] += 1
        else:
            out["failures"][result] = out["failures"].get(result, 0) + 1
            out["error"] = out["error"] or outcome.trace.get("error")
    return out


#: What scitaste-agent's --model_args say to a preflight (the rest, such as num_concurrent, do not matter here).
_CLIENT_ARGS = ("base_url", "model", "profile", "max_gen_toks", "timeout")


def _settings(args: argparse.Namespace) -> dict:
    """Endpoint, model, profile, token budget, timeout and data folder, from --model_args or the plain options."""
    from scitaste_hf.errors import InvalidInput

    if args.model_args is None:
        if not (args.base_url and args.model):
            raise InvalidInput("preflight needs --base-url and --model, or scitaste-agent's --model_args")
        return {"base_url": args.base_url, "model": args.model, "profile": args.profile, "max_gen_toks": None,
                "timeout": args.timeout, "data_dir": args.data_dir}
    from scitaste_hf.adapters.lmeval.models import AgentLM, parse_model_args

    if args.model not in (None, AgentLM.name):
        raise InvalidInput(f"with --model_args, --model is {AgentLM.name} (or left out), not {args.model!r}")
    given = parse_model_args(args.model_args)
    AgentLM.check_model_args(given)
    if "base_url" not in given or "model" not in given:
        raise InvalidInput("--model_args needs base_url=URL and model=NAME")
    settings = {"profile": "default", "max_gen_toks": None, "timeout": args.timeout, "data_dir": args.data_dir}
    settings.update({k: given[k] for k in (*_CLIENT_ARGS, "data_dir") if k in given})
    return settings


def run(args: argparse.Namespace) -> int:
    """Probe every mode and print the verdict; exit 1 when a mode parsed no answer."""
    import dataclasses
    from importlib import resources
    from pathlib import Path

    from rich.console import Console
    from rich.table import Table

    from scitaste_hf.agent.chat import make_client
    from scitaste_hf.agent.evidence import EVIDENCE_DIR, FrozenToolBox
    from scitaste_hf.modes import MODE_SPECS
    from scitaste_hf.records import load_records

    settings = _settings(args)
    client = make_client(**{k: settings[k] for k in _CLIENT_ARGS}, max_retries=1)
    profile, data_dir = client.profile, settings["data_dir"]
    source = data_dir or str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl"))
    records = load_records(source, "selected")[: max(1, args.papers)]
    evidence = Path(data_dir or "", EVIDENCE_DIR)
    tools = FrozenToolBox.load(evidence) if data_dir and evidence.is_dir() else None
    rows, advice = [], []
    for mode, spec in MODE_SPECS.items():
        if spec.tools != "none" and tools is None:
            rows.append({"mode": mode, "skipped": "no frozen evidence (run `scitaste evidence freeze` into "
                                                  "DATA/tool_evidence)"})
            continue
        if spec.search and not profile.search:
            rows.append({"mode": mode, "skipped": f"profile {settings['profile']!r} has no web search switch"})
            continue
        row = probe(client, tools, records, mode)
        if row["parsed"] == 0 and "400" in str(row["error"]) and profile.temperature_with_tools and tools:
            # The usual culprit: temperature together with tools. Try once without it and say so.
            lenient = client.with_profile(dataclasses.replace(profile, temperature_with_tools=False))
            if probe(lenient, tools, records[:1], mode)["parsed"]:
                advice.append(f"{mode}: the endpoint rejects temperature together with tools; use a profile with "
                              "temperature_with_tools=False (e.g. openai-reasoning)")
        rows.append(row)
    table = Table(title=f"preflight of {settings['model']} at {settings['base_url']}")
    for column in ("mode", "papers", "tool calls", "parsed", "failures", "first error"):
        table.add_column(column)
    for row in rows:
        if "skipped" in row:
            table.add_row(row["mode"], "", "", "", "skipped", row["skipped"])
            continue
        failures = ", ".join(f"{k} {v}" for k, v in row["failures"].items())
        calls = f"{row['tool_calls']} (harness)" if MODE_SPECS[row["mode"]].tools == "fixed" else str(row["tool_calls"])
        table.add_row(row["mode"], str(row["papers"]), calls, f"{row['parsed']}/{row['papers']}",
                      failures, (row["error"] or "")[:80])
    console = Console(width=150)
    console.print(table)
    for line in advice:
        console.print(f"[yellow]{line}[/yellow]")
    return 0 if all("skipped" in r or r["parsed"] for r in rows) else 1
