"""Compare two releases of the dataset (two folders that `scitaste build` wrote, e.g. two --as-of dates):
papers in and out of each split, the change of the shared papers' citation counts, each dimension's and the
composite's drift (distribution and per paper), rank stability, and, with --runs, stored runs re-scored on both
releases' gold with the change of each score and whether any conclusion between runs changes. Every number comes
with its 95% bootstrap interval; docs/releases.md defines each statistic.

    scitaste release diff OLD NEW
    scitaste release diff OLD NEW --runs run1.jsonl run2.jsonl --json diff.json
    scitaste release diff OLD NEW --runs LEADERBOARD_DATA_DIR
"""

from __future__ import annotations

import argparse
from typing import Any

from scitaste_hf.cli import whole_number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste release``."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    diff = sub.add_parser("diff", help="what changed between two releases, with intervals")
    diff.add_argument("old", metavar="OLD", help="the earlier release folder")
    diff.add_argument("new", metavar="NEW", help="the later release folder")
    diff.add_argument("--runs", nargs="+", default=[], metavar="PATH",
                      help="stored runs to re-score on both releases: predictions .jsonl files and/or leaderboard "
                           "store folders (the Space's data folder)")
    diff.add_argument("--json", metavar="OUT", dest="json_out", help="also write the full report as JSON")
    diff.add_argument("--n-resamples", type=whole_number(0), default=None,
                      help="bootstrap resamples (default: the scoring's N_RESAMPLES; 0: no intervals)")
    diff.add_argument("--seed", type=whole_number(0), default=0, help="bootstrap seed, >= 0 (default 0)")


def _ci(interval: list[float] | None, digits: int = 2) -> str:
    # Escaped: rich would take [a, b] for a style tag.
    return "" if interval is None else f" \\[{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]"


def _stat(entry: dict[str, Any] | None, digits: int = 2, sign: bool = False) -> str:
    if entry is None or entry["value"] is None:
        return "n/a"
    return f"{entry['value']:{'+' if sign else ''}.{digits}f}{_ci(entry['interval'], digits)}"


def print_report(report: dict[str, Any], console) -> None:
    """The report of :func:`scitaste_hf.release.diff_releases` as rich tables; what a user named (folders, runs)
    is escaped, so that rich prints it as written instead of taking ``[...]`` in it for markup."""
    from rich.markup import escape
    from rich.table import Table

    def table(title: str, *columns: str) -> Table:
        t = Table(title=title, title_justify="left")
        for i, c in enumerate(columns):
            t.add_column(c, justify="left" if i == 0 else "right")
        return t

    old, new = report["old"], report["new"]
    d = report["direction"]
    console.print(f"OLD {escape(old['path'])} (as of {d['old_as_of'] or 'build time'}), NEW {escape(new['path'])} "
                  f"(as of {d['new_as_of'] or 'build time'}); {report['shared']} papers in both", soft_wrap=True)
    if d["as_expected"] is not None:
        verdict = "as a later release must" if d["as_expected"] else "[red]NOT as a later release must[/red]"
        console.print(f"direction: NEW differs {verdict} (citation counts fell: {d['citations_fell']}, papers "
                      f"published after OLD's as-of year in OLD: {d['newer_papers_in_old']}, in NEW: "
                      f"{d['newer_papers_in_new']})", soft_wrap=True)
    t = table("papers per split", "split", "old", "new", "stayed", "left: other split", "left: release",
              "joined: other split", "joined: new")
    for split, m in report["membership"].items():
        if split == "published_after_old_as_of":
            continue
        t.add_row(split, *(str(v) for v in (m["old"], m["new"], m["stayed"], m["left"]["to_other_split"],
                                             m["left"]["out_of_release"], m["joined"]["from_other_split"],
                                             m["joined"]["new_to_release"])))
    console.print(t)
    c = report["citations"]
    if c is not None:
        t = table("citations of the shared papers", "", "value")
        t.add_row("papers (grew / same / fell)", f"{c['n']} ({c['grew']} / {c['same']} / {c['fell']})")
        t.add_row("total old -> new", f"{c['total_old']} -> {c['total_new']}")
        t.add_row("mean change", _stat(c["mean_change"], sign=True))
        t.add_row("median change", _stat(c["median_change"], 1, sign=True))
        for key in ("papers", "works_around", "citations"):
            t.add_row(f"graph: {key.replace('_', ' ')} old -> new", " -> ".join(str(v) for v in d["graph"][key]))
        console.print(t)
    t = table("drift (new - old; 95% intervals)", "score", "mean old", "mean new", "shift", "KS (p)",
              "per-paper change", "mean |change|", "Spearman")
    for score, s in report["drift"].items():
        dist, per = s["distribution"], s["per_paper"]
        t.add_row(score, f"{dist['mean_old']:.2f}", f"{dist['mean_new']:.2f}",
                  _stat({"value": dist["shift"], "interval": dist["interval"]}, sign=True),
                  f"{dist['ks']:.3f} ({dist['ks_p_value']:.2g})", _stat(per["mean_change"], sign=True),
                  _stat(per["mean_abs_change"]), _stat(per["spearman"], 3))
    console.print(t)
    q = report["quartile_moves"]
    share = _stat({"value": q["share"], "interval": q["interval"]}, 3)
    console.print(f"selected papers of OLD still in NEW that move composite quartile: {q['moved']} of {q['n']} "
                  f"(share {share})", soft_wrap=True)
    if report["runs"]:
        t = table("runs re-scored on the shared papers (new - old)", "run", "n", "Scheme-1 old", "Scheme-1 new",
                  "change", "Scheme-2 old", "Scheme-2 new", "change")
        for r in report["runs"]:
            if r["n"] == 0:
                t.add_row(escape(r["run"]), "0", *["n/a"] * 6)
                continue
            cells = []
            for name in ("scheme1", "scheme2"):
                s = r[name]
                mark = " *" if s["change"]["resolved"] else ""
                cells += [_stat(s["old"], 1), _stat(s["new"], 1), _stat(s["change"], 1, sign=True) + mark]
            t.add_row(escape(r["run"]), str(r["n"]), *cells)
        console.print(t)
        console.print("* the change's interval excludes 0", style="dim")
        k = report["conclusions"]
        console.print(f"order by {k['order_by']}: old {escape(', '.join(k['order_old']))}; new "
                      f"{escape(', '.join(k['order_new']))} ({'changed' if k['order_changed'] else 'unchanged'})",
                      soft_wrap=True)
        changed = k["conclusions_changed"]
        console.print(f"resolved differences that changed: {escape(', '.join(changed)) if changed else 'none'} "
                      f"(of {len(k['pairs'])} pairs)", soft_wrap=True)


def run(args: argparse.Namespace) -> int:
    """Read both releases and the runs, print the report, and write ``--json`` atomically."""
    import sys

    from rich.console import Console
    from rich.markup import escape

    from scitaste_hf.output import check_writable, finite_json, write_json_atomic
    from scitaste_hf.release import diff_releases
    from scitaste_hf.release.folder import read_release
    from scitaste_hf.release.rescore import load_runs
    from scitaste_hf.scoring.bootstrap import N_RESAMPLES

    if args.json_out:
        check_writable(args.json_out)
    runs = load_runs(args.runs)  # first: a bad path fails before the releases are read
    old, new = read_release(args.old, "OLD"), read_release(args.new, "NEW")
    n_resamples = N_RESAMPLES if args.n_resamples is None else args.n_resamples
    report = diff_releases(old, new, runs, n_resamples=n_resamples, seed=args.seed)
    report["inputs"] = {"runs": list(args.runs), "n_resamples": n_resamples, "seed": args.seed}
    # Strict JSON before anything is printed: an undefined statistic (a constant score's Spearman) is null.
    report = finite_json(report)
    # No emoji codes: a folder named ":x:" is printed as written.
    console = Console(width=None if sys.stdout.isatty() else 200, emoji=False)
    print_report(report, console)
    if args.json_out:
        write_json_atomic(args.json_out, report)
        console.print(f"wrote {escape(args.json_out)}")
    return 0
