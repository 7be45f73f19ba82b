"""A report of :func:`~scitaste_hf.analysis.analyse` as tables (:func:`sections`), Markdown, HTML and PNG figures,
and the folder that holds them (:func:`write_report`), written file by file atomically."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scitaste_hf.analysis.compute import BASELINE_MODE
from scitaste_hf.errors import ScitasteError
from scitaste_hf.resources import install_hint
from scitaste_hf.scoring.ranks import detectable_difference
from scitaste_hf.taxonomy import OVERALL

#: The power at which the tool effect's detectable difference is stated (the default of detectable_difference).
POWER = detectable_difference.__kwdefaults__["power"]
#: The heatmap of per-dimension Spearman, written beside the report.
HEATMAP = "dimension_spearman.png"
#: The heading of the report's pages.
TITLE = "SciTaste-Bench report"
#: The files of a report folder, besides its figures.
FILES = ("report.json", "report.md", "report.html")


@dataclass(frozen=True)
class Section:
    """One part of the report: a title, a line of text, and a table (``header`` and rows of cells), or a figure."""

    title: str
    text: str
    header: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    figure: str = ""


def _number(value: float | None, digits: int = 1, scale: float = 1.0, sign: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value * scale:{'+' if sign else ''}.{digits}f}"


def _with_ci(value: float | None, ci: Sequence[float] | None, digits: int = 1, scale: float = 1.0,
             sign: bool = False) -> str:
    """``58.1 [54.7, 61.1]``; the interval left out when there is none."""
    shown = _number(value, digits, scale, sign)
    if value is None or ci is None:
        return shown
    return f"{shown} [{_number(ci[0], digits, scale, sign)}, {_number(ci[1], digits, scale, sign)}]"


def _statistic(block: Mapping[str, Any], key: str, digits: int, scale: float = 1.0, sign: bool = False) -> str:
    stat = block["statistics"][key]
    return _with_ci(stat["value"], stat["ci"], digits, scale, sign)


def _mode(run: Mapping[str, Any]) -> str:
    """A run's mode as the tables show it: ``dimagent_v3 without citation_baseline`` for a run with a tool withheld."""
    return run["mode"] + (f" without {run['withheld']}" if run.get("withheld") else "")


def _skill(skill: Mapping[str, Any] | None) -> str:
    return "n/a" if not skill else _with_ci(skill["skill"], skill["interval"], 2, sign=True)


def _coverage(block: Mapping[str, Any]) -> str:
    return f"{block['n_scored']}/{block['n_total']}"


def _scheme2(block: Mapping[str, Any]) -> str:
    s2 = block["scheme2"]
    return "n/a" if s2 is None else f"{_with_ci(s2['score'], s2['ci'])} {s2['grade']}"


def _table8(report: Mapping[str, Any]) -> Section:
    rows = []
    for run in report["runs"]:
        block = run["scopes"][OVERALL]
        s1, s2 = block["scheme1"], block["scheme2"]
        rows.append((run["model"], _mode(run), _coverage(block),
                     "n/a" if s1 is None else _with_ci(s1["score"], s1["ci"]), "" if s1 is None else s1["grade"],
                     _skill(s1 and s1["skill"]),
                     "n/a" if s2 is None else _with_ci(s2["score"], s2["ci"]), "" if s2 is None else s2["grade"],
                     "n/a" if s2 is None else _with_ci(s2["wape"], s2["wape_ci"], scale=100),
                     _skill(s2 and s2["skill"])))
    return Section("Table 8: every model and mode",
                   "Scheme 1 and Scheme 2 with their grades, WAPE, the skill over the constant floor, and coverage "
                   "(papers scored of the gold set's).",
                   ("model", "mode", "coverage", "Scheme 1", "grade", "S1 skill", "Scheme 2", "grade", "WAPE %",
                    "S2 skill"), tuple(rows))


def _table9(run: Mapping[str, Any]) -> Section:
    rows = []
    for scope, block in run["scopes"].items():
        s2 = block["scheme2"]
        rows.append((scope, _coverage(block), _statistic(block, "spearman", 3),
                     "n/a" if s2 is None else _with_ci(s2["wape"], s2["wape_ci"], scale=100),
                     "n/a" if s2 is None else _with_ci(s2["score"], s2["ci"]), "" if s2 is None else s2["grade"]))
    return Section(f"Table 9: by discipline, {run['model']} / {_mode(run)}",
                   "Spearman of the innovation score, WAPE, Scheme 2 and its grade, per discipline.",
                   ("discipline", "coverage", "Spearman", "WAPE %", "Scheme 2", "grade"), tuple(rows))


def _by_discipline(report: Mapping[str, Any], title: str, text: str, cell) -> Section:
    disciplines = report["disciplines"]
    rows = tuple((run["model"], _mode(run), *(cell(run["scopes"][d]) for d in disciplines))
                 for run in report["runs"])
    return Section(title, text, ("model", "mode", *disciplines), rows)


def _bias(report: Mapping[str, Any]) -> Section:
    rows = tuple((run["model"], _mode(run), str(run["scopes"][OVERALL]["n_scored"]),
                  _statistic(run["scopes"][OVERALL], "mean_signed_error", 2, sign=True),
                  _statistic(run["scopes"][OVERALL], "over_rated", 1, 100),
                  _statistic(run["scopes"][OVERALL], "median_relative_error", 1, 100)) for run in report["runs"])
    return Section("Bias: over-rating",
                   "Mean signed error (predicted minus gold innovation score, points), the share of scored papers "
                   "rated above their gold score, and the median per-paper relative error |predicted - gold| / gold.",
                   ("model", "mode", "scored", "mean signed error", "over-rated %", "median relative error %"), rows)


def _dimensions(report: Mapping[str, Any]) -> Section:
    rows = tuple((run["model"], _mode(run), *(_statistic(run["scopes"][OVERALL], f"spearman_{k}", 2)
                                               for k in report["dimensions"])) for run in report["runs"])
    return Section("Per-dimension Spearman", "Spearman of each predicted dimension against the gold, over all scored "
                   "papers.", ("model", "mode", *report["dimensions"]), rows, figure=HEATMAP)


def _tools(report: Mapping[str, Any]) -> Section:
    def cell(stats: Mapping[str, Any] | None, key: str, digits: int, scale: float = 1.0) -> str:
        if stats is None:
            return "n/a"
        s = stats[key]
        shown = _with_ci(s["difference"], s["interval"], digits, scale, sign=True)
        return shown if s["detectable"] is None else f"{shown} (detectable {_number(s['detectable'] * scale, digits)})"

    rows = tuple((t["model"], f"{t['mode']} - {t['baseline']}", str(t["n"]),
                  cell(t["statistics"], "scheme1", 1), cell(t["statistics"], "scheme2", 1),
                  cell(t["statistics"], "wape", 1, 100), cell(t["statistics"], "mean_signed_error", 2))
                 for t in report["tools"])
    text = (f"Each other mode minus {BASELINE_MODE} for the same model, on the papers both scored: the difference, "
            f"its paired-bootstrap interval and the smallest difference a comparison this precise detects with "
            f"{POWER:.0%} power.")
    if not rows:
        text = f"No model has a {BASELINE_MODE} run beside a run of another mode: there is no paired tool effect."
    return Section("Effect of tools", text, ("model", "difference", "papers", "Scheme 1", "Scheme 2", "WAPE points",
                                             "mean signed error") if rows else (), rows)


def _attribution(report: Mapping[str, Any]) -> Section:
    def cell(stats: Mapping[str, Any] | None, key: str) -> str:
        if stats is None:
            return "n/a"
        s = stats[key]
        shown = _with_ci(s["difference"], s["interval"], 3, sign=True)
        return shown if s["detectable"] is None else f"{shown} (detectable {_number(s['detectable'], 3)})"

    dimensions = tuple(f"spearman_{k}" for k in report["dimensions"])
    rows = tuple((a["model"], a["mode"], a["tool"], str(a["n"]), cell(a["statistics"], "scheme1_skill"),
                  cell(a["statistics"], "scheme2_skill"), *(cell(a["statistics"], k) for k in dimensions))
                 for a in report.get("attribution", ()))
    text = ("Each tool's effect: the full run minus the same model and mode's run with that tool's evidence withheld "
            "(the tool answered that its service has no data), on the papers both scored, for the skill of both "
            "schemes over the constant floor and each dimension's Spearman; the paired-bootstrap interval, and the "
            f"smallest difference a comparison this precise detects with {POWER:.0%} power. A positive effect: the "
            "run used the tool's evidence.")
    if not rows:
        text = ("No run has a tool withheld beside the same model and mode's full run (the task group "
                "scitaste_dimagent_withheld): there is no per-tool attribution.")
    header = ("model", "mode", "tool withheld", "papers", "S1 skill", "S2 skill", *report["dimensions"])
    return Section("Per-tool attribution", text, header if rows else (), rows)


def sections(report: Mapping[str, Any]) -> list[Section]:
    """The report's parts in order: Table 8, Table 10, Table 9 per run, the bias analysis, per-dimension Spearman
    (with its heatmap), the effect of tools and per-tool attribution."""
    return [
        _table8(report),
        _by_discipline(report, "Table 10: Scheme 2 by discipline",
                       "Scheme 2 and its grade for every run in each discipline.", _scheme2),
        *(_table9(run) for run in report["runs"]),
        _bias(report),
        _by_discipline(report, "Mean signed error by discipline",
                       "Predicted minus gold innovation score, points, per discipline.",
                       lambda block: _statistic(block, "mean_signed_error", 2, sign=True)),
        _dimensions(report),
        _tools(report),
        _attribution(report),
    ]


def _inputs_line(report: Mapping[str, Any]) -> str:
    inputs = report["inputs"]
    resampled = (f"{inputs['confidence']:.0%} bootstrap intervals over {inputs['n_resamples']:,} resamples of the "
                 f"papers (seed {inputs['seed']})" if inputs["n_resamples"] else "no intervals (0 resamples)")
    return (f"{len(report['runs'])} run(s) against {inputs['gold']} ({inputs['n_gold']} papers); {resampled}; floors "
            f"learned from the {'backup split' if inputs['floors_from'] == 'backup' else 'gold set itself'}.")


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown, the figures linked as files beside it."""
    lines = [f"# {TITLE}", "", _inputs_line(report), "",
             "Definitions: docs/report.md in the scitaste-hf repository.", ""]
    for section in sections(report):
        lines += [f"## {section.title}", "", section.text, ""]
        if section.figure:
            lines += [f"![{section.title}]({section.figure})", ""]
        if section.header:
            lines.append("| " + " | ".join(_md_cell(h) for h in section.header) + " |")
            lines.append("|" + "---|" * len(section.header))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in section.rows]
            lines.append("")
    return "\n".join(lines)


_STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:90em}table{border-collapse:collapse;"
          "margin-bottom:1.5em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right;white-space:nowrap}"
          "th{background:#f3f3f3}td:first-child,td:nth-child(2){text-align:left}img{max-width:100%}")


def to_html(report: Mapping[str, Any]) -> str:
    """The report as one self-contained HTML page (its style inline), the figures as PNG files beside it."""
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{TITLE}</title>",
             f"<style>{_STYLE}</style></head><body>", f"<h1>{TITLE}</h1>", f"<p>{e(_inputs_line(report))}</p>"]
    for section in sections(report):
        parts += [f"<h2>{e(section.title)}</h2>", f"<p>{e(section.text)}</p>"]
        if section.figure:
            parts.append(f'<img src="{e(section.figure)}" alt="{e(section.title)}">')
        if section.header:
            parts.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in section.header)
                         + "</tr></thead><tbody>")
            parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in section.rows]
            parts.append("</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def check_figures() -> tuple[type, type]:
    """Matplotlib's Agg canvas and its Figure, imported here only (a heavy library; no pyplot, no display).

    Raises
    ------
    ScitasteError
        When matplotlib is not installed (the line says how to install it).
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ScitasteError(f"the report's figures need matplotlib: {install_hint('report')}") from None
    return FigureCanvasAgg, Figure


def heatmap_png(report: Mapping[str, Any]) -> bytes:
    """Per-dimension Spearman of every run as a heatmap (runs against dimensions), PNG bytes.

    Raises
    ------
    ScitasteError
        When matplotlib is not installed (the line says how to install it).
    """
    import io

    import numpy as np

    FigureCanvasAgg, Figure = check_figures()

    dims = report["dimensions"]
    labels = [f"{run['model']} / {_mode(run)}" for run in report["runs"]]
    values = np.array([[np.nan if (v := run["scopes"][OVERALL]["statistics"][f"spearman_{k}"]["value"]) is None
                        else v for k in dims] for run in report["runs"]], dtype=float)
    fig = Figure(figsize=(2.2 + 1.1 * len(dims), 1.6 + 0.45 * len(labels)), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    image = ax.imshow(values, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(dims)), [d.replace("_", "\n") for d in dims], fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            ax.text(j, i, "n/a" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if abs(np.nan_to_num(v)) > 0.6 else "black")
    ax.set_title("Spearman of each dimension, predicted against gold", fontsize=9)
    fig.colorbar(image, ax=ax, shrink=0.9, label="Spearman")
    out = io.BytesIO()
    fig.savefig(out, format="png")
    return out.getvalue()


def write_report(report: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    """Write the report into ``out_dir`` (created if missing): the figures first, then ``report.json``,
    ``report.md`` and ``report.html``, each atomically (:func:`~scitaste_hf.output.write_bytes_atomic`), so a
    failure leaves no half-written file. Returns the files written."""
    from scitaste_hf.output import write_bytes_atomic

    figure = heatmap_png(report)  # before anything is written: a missing matplotlib writes nothing
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    contents = {HEATMAP: figure, FILES[0]: (json.dumps(report, indent=2, allow_nan=False) + "\n").encode(),
                FILES[1]: markdown(report).encode(), FILES[2]: to_html(report).encode()}
    return [write_bytes_atomic(out / name, data) for name, data in contents.items()]
