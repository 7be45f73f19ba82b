"""The agreement report as text: a summary and plain tables of strings, every number beside its 95% interval. The
one formatting of the report, which ``scitaste ratings report`` prints with rich and the Space shows as tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from scitaste_hf.ratings.agreement import FLAG_RATIO, MIN_PAPERS, MIN_RATERS, TARGET_HALF_WIDTH, TARGET_RELIABILITY
from scitaste_hf.ratings.guide import label


class TextTable(NamedTuple):
    """A titled table of strings."""

    title: str
    columns: list[str]
    rows: list[list[str]]


def _with_interval(block: Mapping[str, Any] | None, digits: int = 2, scale: float = 1.0) -> str:
    """``estimate [lo, hi]``, "n/a" for an undefined statistic; the interval left out when there is none."""
    if not block or block.get("estimate") is None:
        return "n/a"
    text = f"{block['estimate'] * scale:.{digits}f}"
    if block.get("interval"):
        lo, hi = block["interval"]
        text += f" [{lo * scale:.{digits}f}, {hi * scale:.{digits}f}]"
    return text


def _needed(block: Mapping[str, Any]) -> str:
    """Ratings per paper with the range that the interval of the single-rater reliability allows: ``k [best,
    worst]``, "none" where the reliability's end is not above 0 (no number of raters gets there)."""
    low, high = block["interval"] or (None, None)
    if block["estimate"] is None:
        return "not reachable" + (f" (at best {low})" if low is not None else "")
    text = str(block["estimate"])
    if block["interval"]:
        text += f" [{low}, {high if high is not None else 'none'}]"
    return text


def _range(block: Mapping[str, Any]) -> str:
    """A whole number with its range, ``n [low, high]``; "n/a" when undefined."""
    if block["estimate"] is None:
        return "n/a"
    return str(block["estimate"]) + (f" [{block['interval'][0]}, {block['interval'][1]}]" if block["interval"] else "")


def summary(report: Mapping[str, Any]) -> str:
    """The report's headline in a few sentences: what was rated, who is flagged, and what the intervals need."""
    lines = [f"{report['n_ratings']} ratings of {report['n_papers']} papers by {report['n_raters']} raters; "
             f"{report['n_papers_enough']} papers have at least {report['min_raters']} ratings of raters not flagged"
             + (f" ({report['k']:.2f} on average)." if report["k"] else ".")]
    if report["flagged"]:
        lines.append(f"Flagged (disagreement with the others' consensus over {FLAG_RATIO:g} times the other raters' "
                     f"median, by its whole 95% interval), shown below and left out of the consensus: "
                     f"{', '.join(report['flagged'])}.")
    waiting = report.get("n_ratings_waiting")
    if waiting:
        lines.append(f"{waiting} newer rating(s) wait for the next release: the report moves only when another "
                     f"{MIN_PAPERS} panels of {MIN_RATERS} are complete, so that no rater can read another's ratings "
                     "from its changes.")
    outside = report.get("n_ratings_outside_gold")
    if outside:
        lines.append(f"{outside} rating(s) of papers not in the gold set are left out (the gold labels changed since "
                     "they were given).")
    if not report["numbers"]:
        if report["flagged"] and report.get("n_papers_enough_with_flagged", 0) >= MIN_PAPERS:
            lines.append(f"Too few papers have {report['min_raters']} ratings once the flagged raters' are set aside "
                         f"({report['n_papers_enough_with_flagged']} have with them), so there are no agreement "
                         "statistics: more raters are needed.")
        else:
            lines.append("Too few papers have enough ratings for agreement statistics yet.")
        return " ".join(lines)
    overall = report["numbers"]["innovation_score"]
    needed = overall["ratings_needed"]
    if needed["estimate"] is not None:
        lines.append(f"For a consensus reliability ICC(2,k) of {TARGET_RELIABILITY:g}, the overall innovativeness "
                     f"needs {_needed(needed)} ratings per paper (95% range from the interval of ICC(2,1)).")
    else:
        lines.append("No number of ratings per paper brings the overall innovativeness to a consensus reliability of "
                     f"{TARGET_RELIABILITY:g} at the agreement seen so far.")
    if overall["papers_needed"]["estimate"] is not None:
        lines.append(f"Its Spearman interval with the gold narrows to +/-{TARGET_HALF_WIDTH:g} with "
                     f"{_range(overall['papers_needed'])} papers rated as now.")
    return " ".join(lines)


def report_tables(report: Mapping[str, Any], *, public: bool = False) -> list[TextTable]:
    """The report's tables: reliability per number, the consensus against the gold, the raters, and the runs scored
    against both (the last only when the report has runs).

    ``public`` (the Space, which raters see) leaves out each rater's disagreement, ratio and bias: a rater's own
    bias is her ratings' mean difference from the others' ratings of the same papers, so knowing her ratings she
    would read the others' mean from it, and the rows of two raters beside each other in a panel give each one's
    ratings; only whether a rater is flagged is shown. ``scitaste ratings report`` shows them to whoever holds the
    data folder, and the raw ratings with it."""
    numbers = report["numbers"]
    flagged = bool(report["flagged"])
    reliability = TextTable(
        "Inter-rater reliability (95% bootstrap intervals over papers)",
        ["number", "ICC(2,1)", "ICC(2,k)", "weighted kappa", *(["ICC(2,k) with flagged"] if flagged else []),
         f"ratings per paper for ICC(2,k) {TARGET_RELIABILITY:g}"],
        [[label(n), _with_interval(s["icc_21"]), _with_interval(s["icc_2k"]), _with_interval(s["kappa"]),
          *([_with_interval(s["icc_2k_all"])] if flagged else []), _needed(s["ratings_needed"])]
         for n, s in numbers.items()])
    gold = TextTable(
        "Expert consensus against the bibliometric gold",
        ["number", "Spearman", "MAE (points)", f"papers for Spearman +/-{TARGET_HALF_WIDTH:g}"],
        [[label(n), _with_interval(s["spearman"]), _with_interval(s["mae"], 1),
          _range(s["papers_needed"])] for n, s in numbers.items()])
    def flag(r):
        return "not judged" if r["flagged"] is None else "FLAGGED" if r["flagged"] else "no"

    if public:
        raters = TextTable(
            "Raters: whether each disagrees with the others' consensus far more than the other raters do",
            ["rater", "ratings", "judged", "flagged"],
            # by pseudonym: the report's order, most disagreeing first, would rank the raters by it
            [[r["rater"], str(r["n_ratings"]), str(r["n_judged"]), flag(r)]
             for r in sorted(report["raters"], key=lambda r: r["rater"])])
    else:
        raters = TextTable(
            "Raters: mean absolute difference from the others' consensus (points), and its ratio to the other "
            "raters' median",
            ["rater", "ratings", "judged", "disagreement", "ratio", "bias", "flagged"],
            [[r["rater"], str(r["n_ratings"]), str(r["n_judged"]), _with_interval(r["disagreement"], 1),
              _with_interval(r["ratio"]), _with_interval(r["bias"], 1), flag(r)] for r in report["raters"]])
    tables = [reliability, gold, raters]
    if report.get("runs"):
        tables.append(TextTable(
            f"Runs scored against the gold and against the expert consensus, on the {report['n_papers_enough']} "
            "papers rated enough",
            ["run", "model", "mode", "Scheme-1 vs gold", "Scheme-1 vs experts", "Scheme-2 vs gold",
             "Scheme-2 vs experts", "S1 skill vs gold", "S1 skill vs experts"],
            [[str(r["run"]), r["model"], r["mode"],
              *(_interval_of(r[side], key, digits) for key, digits in (("scheme1", 1), ("scheme2", 1), ("s1_skill", 3))
                for side in ("gold", "experts"))] for r in report["runs"]]))
    return tables


def _interval_of(numbers: Mapping[str, Any], key: str, digits: int) -> str:
    """A number of a leaderboard row (:meth:`~scitaste_hf.leaderboard.service.Leaderboard.score_on`) with its
    interval (under ``<key>_ci``)."""
    return _with_interval({"estimate": numbers.get(key), "interval": numbers.get(f"{key}_ci")}, digits)
