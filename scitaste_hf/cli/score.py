"""Score a predictions file against the gold labels: Scheme 1 and Scheme 2 (WAPE), overall and per discipline,
with 95% bootstrap intervals, grades and coverage; beside them, the two no-information floors on the same papers
and the run's skill over the constant floor, with its paired-bootstrap interval.

Without --predictions and --gold it scores the bundled synthetic example run against the bundled synthetic
gold set (300 papers, 50 per discipline), the offline demonstration of the output.
"""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from scitaste_hf.cli import whole_number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste score``."""
    parser.add_argument("--predictions", metavar="FILE.jsonl",
                        help="one JSON object per line: bibcode plus the answer fields, "
                             "a raw 'response', or a 'failure'")
    parser.add_argument("--gold", metavar="FILE_OR_DATASET",
                        help="gold records: a .jsonl/.json/.parquet file, a dataset folder, or a Hub dataset id")
    parser.add_argument("--split", help="split of a dataset folder or Hub id (default: selected); a gold file is "
                                        "one split already and takes none")
    parser.add_argument("--backup", metavar="FILE_OR_DATASET",
                        help="records the no-information floors are learned from (default: the backup split when "
                             "--gold is a dataset folder or Hub id, else the gold set itself)")
    parser.add_argument("--json", metavar="OUT", dest="json_out",
                        help="also write the full result as JSON (only when the whole computation succeeded)")
    parser.add_argument("--weights", metavar="FILE", help="dimension weights JSON for Part B: one vector, or one per "
                                                          "discipline (docs/weights.md#per-discipline-weights); "
                                                          "default: the packaged weights")
    # The upper bound is the bootstrap's own (MAX_RESAMPLES), checked before any resampling; the default is resolved
    # when the command runs, so that building the parser imports no scoring code.
    parser.add_argument("--n-resamples", type=whole_number(0), default=None,
                        help="bootstrap resamples (default: the bootstrap's N_RESAMPLES, see "
                             "docs/scoring.md#intervals; 0: none)")
    parser.add_argument("--seed", type=whole_number(0), default=0, help="bootstrap seed, >= 0 (default 0)")


def _example(name: str) -> Path:
    return Path(str(resources.files("scitaste_hf").joinpath(f"data/examples/{name}")))


def run(args: argparse.Namespace) -> int:
    """Score, print the table, and write ``--json`` atomically."""
    from scitaste_hf.errors import InvalidInput, ScitasteError
    from scitaste_hf.output import check_writable, write_json_atomic

    if (args.predictions is None) != (args.gold is None):
        raise InvalidInput("give both --predictions and --gold, or neither to score the bundled example")
    if args.json_out:
        check_writable(args.json_out)
    from scitaste_hf.cli.tables import console as make_console
    from scitaste_hf.cli.tables import fitted
    from scitaste_hf.predictions import read_predictions
    from scitaste_hf.records import load_records
    from scitaste_hf.scoring import score_run
    from scitaste_hf.scoring.bootstrap import N_RESAMPLES
    from scitaste_hf.weights import load_weights

    console = make_console(200)
    predictions_path, gold_path = args.predictions, args.gold
    if predictions_path is None:
        predictions_path, gold_path = _example("predictions.jsonl"), _example("gold.jsonl")
        console.print("[dim]Scoring the bundled example: a synthetic run against synthetic gold labels "
                      "(not benchmark data). Use --predictions and --gold for your own run.[/dim]")
    if args.split is not None and Path(gold_path).is_file():
        raise InvalidInput(f"--split {args.split}: --gold {gold_path} is a file, which holds one split's records; "
                            "drop --split, or give the dataset folder or Hub id")
    split = args.split or "selected"
    weights = load_weights(args.weights) if args.weights else None
    predictions = read_predictions(predictions_path)
    gold = load_records(gold_path, split)
    backup_source, backup = args.backup, load_records(args.backup, "backup") if args.backup else None
    if backup is None and not Path(gold_path).is_file() and split != "backup":
        try:
            backup, backup_source = load_records(gold_path, "backup"), gold_path
        except ScitasteError:  # a dataset without a backup split: the floors come from the gold set
            pass
    n_resamples = N_RESAMPLES if args.n_resamples is None else args.n_resamples
    result = score_run(gold, predictions, weights=weights, n_resamples=n_resamples, seed=args.seed,
                       gold_name=str(gold_path), backup=backup)
    result["inputs"] = {"predictions": str(predictions_path), "gold": str(gold_path), "split": split,
                        "floors_from": f"{backup_source} (backup)" if backup_source else f"{gold_path} (the gold set)",
                        "n_resamples": n_resamples, "seed": args.seed}
    overall = result["overall"]
    # narrower than the table: the scores, Scheme 2, then the agreement statistics, each led by the scope
    console.print(fitted(console, results_table(result, _first_failures(predictions)), [0],
                         [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]))
    if not overall["n_scored"]:
        reasons = ", ".join(f"{reason} {n}" for reason, n in overall["failures"].items())
        first = next(iter(_first_failures(predictions).values()), None)
        raise ScitasteError(f"nothing could be scored: {overall['n_total']} of {overall['n_total']} papers unscored "
                            f"({reasons})" + (f"; first, {first}" if first else ""))
    if args.json_out:
        try:
            write_json_atomic(args.json_out, result)
        except OSError as exc:  # a full disk's error names no file; the temporary file is already removed
            raise ScitasteError(f"cannot write {args.json_out}: {exc.strerror or exc}") from None
        console.print(f"wrote {args.json_out}")
    return 0


def _interval(ci: list[float] | None, resampled: bool, scale: float = 1.0, digits: int = 1) -> str:
    """An interval cell's text: none without resamples, n/a where the resamples left it undefined."""
    if ci is None:
        return " \\[n/a]" if resampled else ""  # escaped: rich would take [n/a] for a style tag and drop it
    return f" [{ci[0] * scale:.{digits}f}, {ci[1] * scale:.{digits}f}]"


#: Longest failure detail the table's note quotes (a failed reply can be pages long).
DETAIL_CHARS = 160


def _first_failures(predictions: dict) -> dict[str, str]:
    """``{reason: "BIBCODE: detail"}`` of the first unscored line of each failure reason, in file order: the
    note names what went wrong (a misspelt key, say), not only how often."""
    from scitaste_hf.schema import Failure

    first: dict[str, str] = {}
    for bibcode, answer in predictions.items():
        if isinstance(answer, Failure) and answer.reason not in first:
            detail = " ".join((answer.detail or answer.reason).split())
            if len(detail) > DETAIL_CHARS:
                detail = detail[:DETAIL_CHARS - 3] + "..."
            first[answer.reason] = f"{bibcode}: {detail}"
    return first


def results_table(result: dict, first_failures: dict[str, str] | None = None):
    """A rich table of a :func:`~scitaste_hf.scoring.score_run` result: overall, then each discipline; the note
    under it names, for each failure reason, ``first_failures[reason]`` (see :func:`_first_failures`)."""
    from rich.table import Table

    table = Table(title="SciTaste-Bench scores (95% bootstrap intervals)", title_justify="left", caption_justify="left")
    for column in ("scope", "coverage", "Scheme-1", "grade", "S1 skill", "Scheme-2", "grade", "WAPE %", "S2 skill",
                   "Spearman", "Pearson", "MAE", "bias"):
        table.add_column(column, justify="left" if column in ("scope", "grade") else "right")
    rows = [("overall", result["overall"]), *result["by_discipline"].items()]
    resampled = result.get("inputs", {}).get("n_resamples", 0) > 0
    for i, (scope, block) in enumerate(rows):
        coverage = f"{block['n_scored']}/{block['n_total']}"
        if block["n_scored"] < block["n_total"]:
            coverage = f"[yellow]{coverage}[/yellow]"
        s1, s2 = block["scheme1"], block["scheme2"]
        if s2 is None:
            table.add_row(scope, coverage, "no scored items", *[""] * 10)
            continue
        cells = ["", ""] if s1 is None else [
            f"{s1['scheme1']:.1f}{_interval(s1['ci']['scheme1'], resampled)}", s1["grade"]]
        stats = [""] * 4 if s1 is None else [
            "n/a" if s1["spearman"] is None else f"{s1['spearman']:.3f}",
            "n/a" if s1["pearson"] is None else f"{s1['pearson']:.3f}",
            f"{s1['mae']:.2f}", f"{s1['bias']:+.2f}",
        ]
        skill = block.get("skill") or {}
        table.add_row(
            scope, coverage, *cells, _skill(skill.get("scheme1"), resampled),
            f"{s2['score']:.1f}{_interval(s2['ci']['score'], resampled)}", s2["grade"],
            f"{100 * s2['wape']:.1f}{_interval(s2['ci']['wape'], resampled, 100)}",
            _skill(skill.get("scheme2"), resampled), *stats,
            end_section=i == 0,
        )
    notes = []
    if any(isinstance(v, dict) for v in result.get("weights", {}).values()):
        notes.append("Part B weights per discipline: each discipline's row uses its own vector, the overall row each "
                     "discipline's in proportion to its gold papers (docs/weights.md#part-b-of-scheme-1)")
    failures = result["overall"]["failures"]
    if failures:
        notes.append("unscored: " + ", ".join(f"{reason} {n}" for reason, n in failures.items()))
        notes.extend(f"  first {reason}: {first}" for reason, first in (first_failures or {}).items())
    floors = result["overall"].get("floors")
    if floors:
        notes.append("floors on the same papers (overall): " + "; ".join(
            f"{name.replace('_', ' ')} Scheme-1 {_number(f['scheme1'])}, Scheme-2 {f['scheme2']:.1f}"
            for name, f in floors.items()))
        notes.append("skill: the share of the constant floor's error the run removes (Scheme 2: 1 - WAPE/WAPE_floor) "
                     "or of its distance to a perfect score it closes (Scheme 1); * not above the floor "
                     "(its interval reaches 0)")
    table.caption = "\n".join(notes) or None
    return table


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def _skill(block: dict | None, resampled: bool) -> str:
    """A skill cell: the skill, its interval, and * when the run is not above the floor."""
    if block is None or block["skill"] is None:
        return ""
    mark = "*" if block["above_floor"] is False else ""
    return f"{block['skill']:+.2f}{_interval(block['interval'], resampled, digits=2)}{mark}"
