"""The paper's tables and findings for any runs: Table 8 (every model and mode), Table 9 (per discipline), Table 10
(Scheme 2 by discipline), the bias analysis, per-dimension Spearman as a heatmap and the effect of tools, every
figure with its 95% bootstrap interval, written to --out as report.md, report.html, report.json and PNG figures
(docs/report.md).

A RUN is a predictions file, an lm-eval samples log or an Inspect log, named by its model and mode:

  model=NAME,mode=MODE,path=FILE    (in any order; mode= may be left out for a samples or Inspect log, which
                                     records its mode; model= may be left out when --model names it; add
                                     withheld=TOOL for a run with one tool's evidence withheld, which a samples
                                     log records too)
  FILE                              (the same, with only the path)

  scitaste report --gold demo/dataset --model scitaste-baseline demo/results/*/samples_scitaste_*.jsonl --out rep
"""

from __future__ import annotations

import argparse
import re

from scitaste_hf.cli import whole_number

#: The keys of a RUN written as key=value pairs.
RUN_KEYS = ("model", "mode", "path", "withheld")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste report``."""
    parser.add_argument("runs", nargs="*", metavar="RUN", help="model=NAME,mode=MODE,path=FILE, or FILE (see above)")
    parser.add_argument("--gold", metavar="FILE_OR_DATASET",
                        help="gold records: a .jsonl/.json/.parquet file, a dataset folder, or a Hub dataset id")
    parser.add_argument("--split", help="split of a dataset folder or Hub id (default: selected)")
    parser.add_argument("--model", help="the model of every RUN that names none")
    parser.add_argument("--out", metavar="DIR", help="folder for report.md, report.html, report.json and the figures")
    parser.add_argument("--n-resamples", type=whole_number(0), default=None,
                        help="bootstrap resamples (default: the bootstrap's N_RESAMPLES; 0: no intervals)")
    parser.add_argument("--seed", type=whole_number(0), default=0, help="bootstrap seed, >= 0 (default 0)")


def parse_run(text: str, model: str | None) -> dict[str, str | None]:
    """A RUN argument as ``{"model", "mode", "path", "withheld"}`` (mode None when it is to be read from the log).

    A path may hold commas: the text is split only before a ``model=``, ``mode=`` or ``path=``.
    """
    from scitaste_hf.errors import InvalidInput

    if not re.match(r"(model|mode|path|withheld)=", text):
        fields = {"path": text}
    else:
        fields = {}
        for part in re.split(r",(?=(?:model|mode|path|withheld)=)", text):
            key, _, value = part.partition("=")
            if key in fields:
                raise InvalidInput(f"run {text!r}: {key}= is given twice")
            fields[key] = value
        if not fields.get("path"):
            raise InvalidInput(f"run {text!r}: no path=FILE")
    fields.setdefault("model", model)
    if not fields["model"]:
        raise InvalidInput(f"run {fields['path']}: name its model, model=NAME,path={fields['path']}, or give --model")
    return {k: fields.get(k) for k in RUN_KEYS}


def logged_mode(path: str, key: str = "scitaste_mode") -> str | None:
    """The mode an lm-eval samples log or an Inspect log records on its first sample (``doc.scitaste_mode``), or
    another field ``key`` of its document (``withheld``); None for a predictions file, which records none."""
    from pathlib import Path

    from scitaste_hf.predictions import logged_field

    return logged_field(Path(path).read_bytes(), path, key)


def read_run(fields: dict[str, str | None]):
    """A :class:`~scitaste_hf.analysis.Run` from a parsed RUN: its answers read, its mode given or logged."""
    from scitaste_hf.analysis import Run
    from scitaste_hf.errors import InvalidInput
    from scitaste_hf.modes import MODES
    from scitaste_hf.predictions import read_predictions

    path = fields["path"]
    predictions = read_predictions(path)  # first: a missing or bad file is named as scitaste score names it
    mode = fields["mode"] or logged_mode(path)
    if mode is None:
        raise InvalidInput(f"run {path}: the file records no mode; give it as mode=MODE,path={path}")
    if mode not in MODES:
        raise InvalidInput(f"run {path}: unknown mode {mode!r}; the modes are {', '.join(MODES)}")
    withheld = fields.get("withheld") or logged_mode(path, "withheld") or ""
    if withheld:
        from scitaste_hf.agent.evidence import check_withheld

        check_withheld(withheld)
    return Run(str(fields["model"]), mode, predictions, str(path), withheld)


def run(args: argparse.Namespace) -> int:
    """Read the runs and the gold set, analyse, and write the report folder."""
    from scitaste_hf.errors import InvalidInput

    if not args.runs:
        raise InvalidInput("no runs: give one or more RUN (model=NAME,mode=MODE,path=FILE, or FILE with --model)")
    if not args.gold:
        raise InvalidInput("give the gold set the runs were made on: --gold FILE_OR_DATASET")
    if not args.out:
        raise InvalidInput("give the report's folder: --out DIR")
    from pathlib import Path

    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise InvalidInput(f"--out {args.out} is a file; give a folder for the report")
    from scitaste_hf.analysis import analyse
    from scitaste_hf.analysis.render import check_figures, write_report
    from scitaste_hf.leaderboard.setup import backup_split
    from scitaste_hf.records import load_records
    from scitaste_hf.scoring.bootstrap import N_RESAMPLES

    check_figures()  # matplotlib missing: say so before any work
    runs = [read_run(parse_run(text, args.model)) for text in args.runs]
    if args.split is not None and Path(args.gold).is_file():
        raise InvalidInput(f"--split {args.split}: --gold {args.gold} is a file, which holds one split's records; "
                           "drop --split, or give the dataset folder or Hub id")
    gold = load_records(args.gold, args.split or "selected")
    backup = None if args.split == "backup" else backup_split(args.gold)  # as the leaderboard learns its floors
    n_resamples = N_RESAMPLES if args.n_resamples is None else args.n_resamples
    report = analyse(runs, gold, backup=backup, n_resamples=n_resamples, seed=args.seed, gold_name=str(args.gold))
    for path in write_report(report, args.out):
        print(f"wrote {path}")
    return 0
