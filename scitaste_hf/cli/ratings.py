"""Expert ratings collected by the Space's Annotate tab: the agreement report and the `expert_ratings` export.

`scitaste ratings report --data DIR` prints the inter-rater reliability per number (ICC(2,1), ICC(2,k), a weighted
kappa), the expert consensus against the bibliometric gold (Spearman, MAE), each rater's disagreement with the
others (flagging one far above them), how many ratings per paper the consensus needs, and the board's runs scored
against the consensus beside the gold; every number with its 95% bootstrap interval. `scitaste ratings export
--data DIR --out OUT` writes the ratings, raters pseudonymised, as the `datasets` configuration `expert_ratings`.
Gold labels: --gold, else DATA/dataset, else the bundled synthetic example (as `scitaste space` finds them).
"""

from __future__ import annotations

import argparse

from scitaste_hf.cli import whole_number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste ratings``: the ``report`` and ``export`` actions. Defaults that scoring and the
    ratings service own are resolved when the command runs, so that building the parser imports neither."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    report = actions.add_parser("report", help="print the agreement report of a Space's expert ratings",
                                description="Inter-rater reliability, the consensus against the gold, rater "
                                            "quality and the runs scored against the consensus, with 95% intervals.")
    export = actions.add_parser("export", help="write the ratings as the datasets configuration expert_ratings",
                                description="Write DATA's ratings, raters pseudonymised with the folder's secret "
                                            "salt, as the `expert_ratings` configuration (Parquet and a card).")
    for action in (report, export):
        action.add_argument("--data", required=True, metavar="DIR", help="the Space's data folder")
        action.add_argument("--gold", help="gold labels of the selected split: a file, a dataset folder or a Hub id")
    report.add_argument("--runs", type=whole_number(0), default=None,
                        help="leaderboard runs to score against the consensus, first of the board's order "
                             "(default: the service's N_RUNS, see docs/ratings.md; 0: none)")
    report.add_argument("--json", metavar="OUT", dest="json_out", help="also write every number as JSON")
    report.add_argument("--n-resamples", type=whole_number(0), default=None,
                        help="bootstrap resamples of the papers (default: the bootstrap's N_RESAMPLES, see "
                             "docs/scoring.md#intervals; 0: no intervals)")
    report.add_argument("--seed", type=whole_number(0), default=None,
                        help="seed of the resamples (default: the bootstrap's SEED)")
    export.add_argument("--out", required=True, metavar="DIR", help="folder to write the configuration into")


def run(args: argparse.Namespace) -> int:
    """Open the data folder's ratings (never creating them) and run the action. A database SQLite cannot open or
    read (a damaged file, a folder this user cannot write to) is one line, as any other refusal."""
    import sqlite3
    from pathlib import Path

    from scitaste_hf.errors import ScitasteError

    try:
        return _run(args)
    except sqlite3.Error as exc:
        data = Path(args.data)
        raise ScitasteError(f"cannot read the ratings in {data} ({exc}): the databases there must be SQLite files "
                            "of a Space, in a folder this user can write to (SQLite's write-ahead log is kept "
                            "beside them even to read)") from None


def _run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from rich.console import Console

    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.leaderboard.setup import gold_source
    from scitaste_hf.ratings import Ratings
    from scitaste_hf.records import load_records

    data = Path(args.data)
    if not (data / "ratings.sqlite").is_file():
        raise ScitasteError(f"no expert ratings in {data} (no ratings.sqlite: the Space's Annotate tab writes it)")
    source, synthetic = gold_source(data, args.gold)
    gold = load_records(source, "selected")
    console = Console(width=None if sys.stdout.isatty() else 140)
    if synthetic:
        console.print("[dim]Gold labels: the SYNTHETIC example (no --gold and no DATA/dataset).[/dim]")
    ratings = Ratings(data, gold)
    try:
        if args.action == "export":
            console.print(f"wrote {ratings.export(args.out)}")
            return 0
        return _report(args, ratings, gold, source, console)
    finally:
        ratings.close()


def _report(args: argparse.Namespace, ratings, gold, source: str, console) -> int:
    """Print the report (and write ``--json`` atomically), the runs read from the board without writing to it."""
    from pathlib import Path

    from rich.table import Table

    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.leaderboard.setup import backup_split
    from scitaste_hf.output import check_writable, write_json_atomic
    from scitaste_hf.ratings.report import report_tables, summary
    from scitaste_hf.ratings.service import N_RUNS
    from scitaste_hf.scoring.bootstrap import N_RESAMPLES, SEED

    if args.json_out:
        check_writable(args.json_out)
    runs = N_RUNS if args.runs is None else args.runs
    board = None
    if runs and (Path(args.data) / "leaderboard.sqlite").is_file():
        board = Leaderboard(args.data, gold, backup=backup_split(source), read_only=True)
    try:
        result = ratings.report(board, n_runs=runs, n_resamples=N_RESAMPLES if args.n_resamples is None
                                else args.n_resamples, seed=SEED if args.seed is None else args.seed)
    finally:
        if board is not None:
            board.close()
    console.print(summary(result))
    for text in report_tables(result):
        table = Table(title=text.title, title_justify="left")
        for column in text.columns:
            table.add_column(column, justify="left" if column in ("number", "rater", "model", "mode") else "right")
        for row in text.rows:
            table.add_row(*row)
        console.print(table)
    if args.json_out:
        write_json_atomic(args.json_out, result)
        console.print(f"wrote {args.json_out}")
    return 0
