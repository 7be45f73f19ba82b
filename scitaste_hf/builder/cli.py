"""Build the SciTaste-Bench dataset: collect from NASA ADS / OpenAlex / arXiv (or the offline mirror, or an OpenAlex
snapshot), fuse, classify, score with the Academic Taste Index, sample the selected/backup splits and write them in
the Hub layout. Resumable: the work directory (DIR.work) keeps the response cache and each finished stage.
"""

from __future__ import annotations

import argparse

from scitaste_hf.cli import iso_date
from scitaste_hf.errors import ScitasteError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste build``."""
    parser.add_argument("--source", nargs="+", default=["mirror"], metavar=("KIND", "PATH"),
                        help="mirror: the offline mirror (default); live: the real services (ADS_API_TOKEN, "
                             "optionally OPENALEX_API_KEY / OPENALEX_MAILTO from the environment); snapshot PATH: "
                             "an OpenAlex snapshot, no request sent (docs/guide-build.md#build-from-a-snapshot)")
    parser.add_argument("--mirror-url", help="URL printed by `scitaste mirror serve` (with --source mirror)")
    parser.add_argument("--out", required=True, help="dataset folder to write")
    parser.add_argument("--work-dir", help="response cache and stage checkpoints (default: OUT.work)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampling (default 0)")
    parser.add_argument("--per-discipline", type=int, default=1000,
                        help="papers per discipline over both splits (default 1000)")
    parser.add_argument("--selected-per-discipline", type=int, default=50,
                        help="papers per discipline in the selected split (default 50)")
    parser.add_argument("--resume", action="store_true", help="reuse the stages an earlier run finished")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    parser.add_argument("--max-retries", type=int, help="retries of a failing request (default 5)")
    parser.add_argument("--journal-table", metavar="FILE",
                        help="licensed journal table for journal impact: CSV or Parquet with issn, name, "
                             "impact_factor, jcr_quartile (Q1-Q4), cas_zone (1-4); without it a mirror build uses "
                             "the simulated world's synthetic table and a live build the OpenAlex impact proxy, "
                             "which has no JCR/CAS partitions (journal impact then tops out at 70)")
    parser.add_argument("--taxonomy", metavar="NAME|FILE",
                        help="the disciplines and sub-disciplines to build: a packaged taxonomy (default: the "
                             "paper's six, Table 2; extended: those and the four the paper names next) or a YAML "
                             "file, which may extend one")
    parser.add_argument("--as-of", type=iso_date, metavar="YYYY-MM-DD",
                        help="build the release the services would have given on this date: works published after "
                             "it are left out (candidates, references, citers) and citation counts are those up to "
                             "it (default: the services' present state)")
    parser.add_argument("--weights", metavar="FILE",
                        help="the composite's weights: a JSON file with one vector, or one per discipline (as "
                             "scitaste weights derive --by discipline writes; each record's vector picked by its "
                             "discipline); default: the packaged weights")
    parser.add_argument("--previous", metavar="RELEASE",
                        help="a release this build refreshes (a folder scitaste build wrote): its papers are kept "
                             "and its selected papers selected again before others, within the same quotas and "
                             "balance, so that the refresh changes what drifted rather than what was drawn")
    parser.add_argument("--prospective-months", type=int, metavar="N",
                        help="add a prospective split: the papers published in the N months up to the build's date "
                             "(--as-of, else today), too young for citation-based gold, released without it and "
                             "resolved later by `scitaste resolve` (docs/prospective.md)")


def _source(words: list[str]):
    """``--source``'s words as (kind, snapshot path or None); the build checks the kind and that a snapshot has its
    path."""
    from pathlib import Path

    kind, rest = words[0], words[1:]
    if len(rest) > 1 or (rest and kind != "snapshot"):
        raise ScitasteError(f"--source {' '.join(words)}: only a snapshot takes a PATH, one (--source snapshot PATH)")
    return kind, Path(rest[0]) if rest else None


def _check_flags(args: argparse.Namespace, kind: str, snapshot) -> None:
    """Refuse the flags that do not go together, in the flags' words; the build checks the values they make
    again, for its Python callers, in the words of :class:`~scitaste_hf.builder.pipeline.BuildConfig`."""
    from scitaste_hf.builder.pipeline import SOURCES

    if kind not in SOURCES:
        raise ScitasteError(f"--source must be {', '.join(SOURCES[:-1])} or {SOURCES[-1]}, got {kind!r}")
    if kind == "snapshot" and snapshot is None:
        raise ScitasteError("--source snapshot needs the snapshot's folder: --source snapshot PATH")
    if kind == "snapshot" and args.mirror_url:
        raise ScitasteError("--mirror-url is for --source mirror; a build from a snapshot sends no request")
    if kind == "snapshot" and args.as_of is not None:
        raise ScitasteError("--as-of is not supported with --source snapshot (the index counts every citer the "
                            "snapshot holds); build from a snapshot of that date instead")
    if kind == "snapshot" and args.prospective_months is not None:
        raise ScitasteError("--prospective-months is not supported with --source snapshot (the index counts every "
                            "citer the snapshot holds); build from the services with --as-of")
    if kind == "snapshot" and args.max_retries is not None:
        raise ScitasteError("--max-retries is for the services; a build from a snapshot sends no request")
    if kind == "mirror" and not args.mirror_url:
        raise ScitasteError("--source mirror needs --mirror-url (the URL `scitaste mirror serve` prints)")


class _Bars:
    """A rich progress bar per stage."""

    def __init__(self) -> None:
        self.progress = None  # the rich Progress, set when the build starts
        self.task = None

    def start(self, stage: str, total: int | None) -> None:
        self.task = self.progress.add_task(stage, total=total)

    def advance(self, n: int) -> None:
        self.progress.advance(self.task, n)

    def finish(self, stage: str, note: str) -> None:
        task = self.progress.tasks[-1]
        self.progress.update(task.id, completed=task.total or task.completed, total=task.total or task.completed,
                             description=f"{stage} ({note})")


def run(args: argparse.Namespace) -> int:
    """Run the build and print its summary."""
    import time
    from pathlib import Path

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from scitaste_hf.builder.pipeline import Build, BuildConfig
    from scitaste_hf.builder.summary import tables
    from scitaste_hf.taxonomy import load_taxonomy
    from scitaste_hf.weights import load_weights

    source, snapshot = _source(args.source)
    _check_flags(args, source, snapshot)
    retries = {} if args.max_retries is None else {"max_retries": args.max_retries}
    config = BuildConfig(out=Path(args.out), source=source, mirror_url=args.mirror_url, snapshot=snapshot,
                         work_dir=Path(args.work_dir) if args.work_dir else None, seed=args.seed,
                         per_discipline=args.per_discipline, selected_per_discipline=args.selected_per_discipline,
                         resume=args.resume, overwrite=args.overwrite, **retries,
                         journal_table=Path(args.journal_table) if args.journal_table else None,
                         as_of=args.as_of, weights=load_weights(args.weights) if args.weights else None,
                         previous=Path(args.previous) if args.previous else None,
                         prospective_months=args.prospective_months)
    bars = _Bars()
    build = Build(config, taxonomy=load_taxonomy(args.taxonomy), reporter=bars)  # bad settings fail before any bar
    started = time.perf_counter()
    with Progress(TextColumn("{task.description:<22}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=False) as bars.progress:
        result = build.run()
    out = Console()
    for title, (columns, rows) in tables(result, build.taxonomy).items():
        if not rows:
            continue
        table = Table(title=title, title_justify="left")
        for c in columns:
            table.add_column(str(c))
        for row in rows:
            table.add_row(*(str(v) for v in row))
        out.print(table)
    n = {s: len(v) for s, v in result.splits.items()}
    resumed = f"; resumed {', '.join(result.stages_resumed)}" if result.stages_resumed else ""
    young = f", prospective {len(result.prospective)}" if result.prospective is not None else ""
    out.print(f"wrote {result.out}: selected {n['selected']}, backup {n['backup']}{young} "
              f"in {time.perf_counter() - started:.1f} s, {result.requests} requests{resumed}", soft_wrap=True)
    return 0
