"""The SciTaste-Bench leaderboard Space (Gradio 6).

Runs unchanged on a Hugging Face Space (settings from the environment: SCITASTE_DATA, SCITASTE_GOLD,
HF_TOKEN + SCITASTE_RESULTS_REPO) and locally with ``scitaste space --data DIR``. Everything shown comes from
:mod:`scitaste_hf.leaderboard` and, for the Annotate and Expert agreement tabs, :mod:`scitaste_hf.ratings`; uploaded
content is data only: it is parsed, never executed, and rendered as plain text.
"""

from __future__ import annotations

import gc
import html
import json
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import gradio as gr
import pandas as pd

from scitaste_hf import constants
from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard import Leaderboard
from scitaste_hf.leaderboard.details import NUMBERS as ANSWER_NUMBERS
from scitaste_hf.leaderboard.details import find_papers
from scitaste_hf.leaderboard.hub_queue import collect_from_env
from scitaste_hf.leaderboard.integrity import COPY_SHARE, COPY_TOLERANCE, RANKED_SHARE, RANKED_TOLERANCE
from scitaste_hf.leaderboard.metadata import FIELDS as MODEL_FIELDS
from scitaste_hf.leaderboard.metadata import (
    FILTER_RULE,
    NOT_FOUND,
    READ,
    STATED,
    UNKNOWN,
    UNVERIFIED,
    check_filters,
    model_filters,
)
from scitaste_hf.leaderboard.metadata import shown as model_fields
from scitaste_hf.leaderboard.requests import REQUEST_STATES, operator_endpoints
from scitaste_hf.leaderboard.sealed import SealedBoard, open_sealed, prospective_split
from scitaste_hf.leaderboard.service import ANONYMOUS, FLOOR_NAMES, MAX_BYTES, MAX_EVIDENCE_BYTES, RATE_LIMIT
from scitaste_hf.leaderboard.setup import gold_source, open_leaderboard, reported_results
from scitaste_hf.leaderboard.store import EVIDENCE_CONSISTENT, FLAGGED, SELF_REPORTED, SERVER_RUN, STATUSES
from scitaste_hf.modes import MODE_SPECS, MODES
from scitaste_hf.net.guard import check_name
from scitaste_hf.ratings import Ratings, open_ratings
from scitaste_hf.ratings.guide import GUIDE, NUMBERS, SCALE, guide_markdown, label
from scitaste_hf.ratings.report import report_tables, summary
from scitaste_hf.schema import CITATION, DIMENSION_LETTERS, DISCIPLINES, WAPE_BANDS
from scitaste_hf.scoring.describe import scheme1_text
from scitaste_hf.scoring.ranks import RANK_RESAMPLES
from scitaste_hf.weights import DEFAULT_WEIGHTS, weights_note

ALL = "all"
#: The board's columns: what the order rests on first (rank interval, top group, skill over the constant floor),
#: then both schemes with their grades and intervals, the statistics behind Scheme 1, coverage and who sent the run.
#: Each with what it means, which About lists under the headers the table shows.
COLUMN_MEANINGS = {
    "rank": "the range holding 95% of the run's bootstrap ranks by Scheme-1 skill (blank for a flagged run)",
    "rank (gold redrawn)": "the same range when the gold labels are redrawn too, from the uncertainty of their "
                           "weights: wider than rank where the labels are known less well than the papers resolve "
                           "(equal where the board takes the weights as known; see How sure a rank is)",
    "top group": "\u2605 when the rank's range reaches the leader's: the data cannot tell the run from the leader",
    "run": "the run's number on this board",
    "model": "the model, as submitted",
    "mode": "how the model saw each paper (see The modes)",
    "prospective S1 skill": "the S1 skill that the best sealed run of the same model and mode earned on the "
                            "prospective split at its latest resolution: papers too young for gold when they were "
                            "answered (see the Prospective tab; blank: no such run resolved)",
    "prospective S1 skill 95% CI": "the bootstrap 95% interval of prospective S1 skill",
    "resolved as of": "the resolution date of prospective S1 skill: the gold of those papers as the world stood then",
    "S1 skill": "the share of the constant floor's distance to a perfect Scheme 1 that the run closes",
    "S1 skill 95% CI": "the bootstrap 95% interval of S1 skill",
    "vs floor": "above, or not above floor when the S1 skill interval does not exclude 0",
    "Scheme-1": "the Scheme 1 score (0-100)",
    "S1 grade": "Scheme 1's grade (excellent, moderate, poor, unusable)",
    "S1 95% CI": "the bootstrap 95% interval of Scheme-1",
    "S2 skill": "the share of the constant floor's WAPE that the run removes",
    "S2 skill 95% CI": "the bootstrap 95% interval of S2 skill",
    "Scheme-2": "the Scheme 2 score (0-100), from WAPE",
    "S2 grade": "Scheme 2's WAPE band (A-F)",
    "S2 95% CI": "the bootstrap 95% interval of Scheme-2",
    "WAPE %": "the innovation scores' absolute errors summed, over the gold scores summed, in percent",
    "Spearman": "rank correlation of predicted and gold innovation scores",
    "Pearson": "linear correlation of predicted and gold innovation scores",
    "MAE": "mean absolute error of the innovation score",
    "bias": "mean signed error of the innovation score (positive: over-rated)",
    "coverage": "papers scored of papers asked (failures are excluded, never zeros)",
    "status": "what the run's evidence shows (see What a run's status does and does not prove)",
    "kind": "a submission, a row of the offline baseline, or the bundled example",
    "params (B)": "the model's parameters in billions, as its Hub repo's safetensors metadata counts them",
    "open weights": "yes when the model's Hub repo holds weights files, no when it holds none",
    "licence": "the licence the model card's metadata names",
    "base model": "the model it was trained from, as the model card's metadata names it",
    "knowledge cutoff": "when the model's training data ends, as the submitter states it (never verified)",
    "model metadata": f"where params, open weights, licence and base model come from: {READ}, {NOT_FOUND} (no such "
                      f"model id or revision), {UNVERIFIED} (the Hub could not be asked: the id is kept as given), "
                      f"{STATED} (no Hub id); a field not read is {UNKNOWN}, never guessed",
    "date": "when the run was submitted",
    "organisation": "who submitted it, as given",
    "link": "the submitter's link, as given",
}
COLUMNS = list(COLUMN_MEANINGS)
#: Pixel widths of :data:`COLUMNS`, wide enough that no header breaks inside a word (headers wrap between words:
#: CSS) and no status ("evidence-consistent", the longest), mark ("not above floor") or negative interval
#: ("[-0.006, 0.037]", "[100.0, 100.0]") is cut.
WIDTHS = ["70px", "110px", "80px", "60px", "220px", "170px", "120px", "150px", "110px",
          "90px", "150px", "150px", "100px", "95px", "140px", "90px",
          "150px", "100px", "95px", "140px", "95px", "105px", "95px", "80px", "80px", "100px", "180px", "100px",
          "100px", "90px", "120px", "200px", "110px", "150px", "110px", "140px", "200px"]
#: The columns of a run's scores (:func:`_scores`).
SCORE_COLUMNS = COLUMNS[COLUMNS.index("S1 skill"):COLUMNS.index("coverage") + 1]
#: The reference rows' table: the floors with the same numbers, and how many of the view's runs beat each.
FLOOR_COLUMNS = ["reference row", "runs above it", *SCORE_COLUMNS]
FLOOR_WIDTHS = ["290px", "110px", *WIDTHS[COLUMNS.index("S1 skill"):COLUMNS.index("coverage") + 1]]
COMPARE_COLUMNS = ["scope", "papers", "metric", "A - B", "95% CI", "p", "detectable (80% power)", "verdict"]
#: Mark of a run whose rank interval reaches the leader's.
TOP = "\u2605"
NOT_ABOVE = "not above floor"
#: Gradio's own cap on an uploaded file: above the leaderboard's limits, so that a file over those gets the
#: leaderboard's one-line reason, while a far larger one is refused before it is written.
MAX_UPLOAD_BYTES = 2 * MAX_EVIDENCE_BYTES
#: Submissions processed at once, so that one large upload does not hold up everyone else's.
SUBMIT_CONCURRENCY = 4
#: Models in the Scheme-2 chart and runs in the heatmap: the first ones in the board's order (a chart of thousands
#: says nothing, and takes long to draw).
CHART_MODELS, HEATMAP_RUNS = 15, 30
_HIGHLIGHT = {"coverage": "background-color: #fde68a", "vs floor": "background-color: #fee2e2",
              "status": "background-color: #fecaca; font-weight: 600"}
#: The status filter's choices: every status of the store but flagged, which "show flagged runs" adds.
STATUS_CHOICES = [ALL, *(s for s in STATUSES if s != FLAGGED)]
#: What the Run details box shows before a row is selected, and after the filters change.
DETAILS_PLACEHOLDER = {"run details": "select a row of the table"}
#: A system font stack: the Space needs no web font (offline, Gradio's default fell back to a font with an odd "B").
FONTS = ["system-ui", "-apple-system", "Segoe UI", "Roboto", "Helvetica Neue", "Arial", "sans-serif"]
#: Headers wrap between words, never cut ("S1 skill 95..."), and the "show flagged runs" box's label is kept whole on a
#: narrow screen (at 420 px it was squeezed to its box).
CSS = """
th span.header.text { white-space: normal; text-overflow: clip; overflow-wrap: normal; word-break: normal; }
#show-flagged { min-width: 170px !important; }
#show-flagged label span { white-space: nowrap; }
"""

#: The page's script that gives every table header named in :data:`COLUMN_MEANINGS` its meaning as a tooltip (a
#: ``title``), on whichever tab and whenever Gradio draws the table again (it renders tables in the browser).
HEADER_HINTS = """<script>
(() => {
  const meanings = MEANINGS;
  let queued = false;
  const mark = () => {
    queued = false;
    for (const th of document.querySelectorAll("th")) {
      const meaning = meanings[(th.querySelector(".header") || th).innerText.trim()];
      if (meaning && th.title !== meaning) th.title = meaning;
    }
  };
  new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(mark); } })
    .observe(document.documentElement, {childList: true, subtree: true, characterData: true});
})();
</script>""".replace("MEANINGS", json.dumps(COLUMN_MEANINGS))


def _run_id(value, label: str) -> int:
    """A run number picked or typed in a dropdown; anything else is a one-sentence error."""
    if not re.fullmatch(r"[0-9]{1,18}", str(value).strip()):
        raise gr.Error(f"{label} must be a run number from the list")
    return int(str(value))


def _ci(ci, scale=1.0, digits=1):
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f"[{ci[0] * scale:.{digits}f}, {ci[1] * scale:.{digits}f}]"


def _rank(rank) -> str:
    return "" if not rank else str(rank[0]) if rank[0] == rank[1] else f"{rank[0]}-{rank[1]}"


def _vs_floor(above) -> str:
    return "" if above is None else "above" if above else NOT_ABOVE


def _round(x, digits, scale=1.0):
    return None if x is None else round(float(x) * scale, digits)


def _scores(r) -> list:
    """A row's values in the columns from "S1 skill" to "coverage" (None for an undefined statistic): what depends
    on the run's answers and the scope alone."""
    get = r.get  # the skill keys are missing from runs scored before skill was stored, until they are upgraded
    return (_round(get("s1_skill"), 3), _ci(get("s1_skill_ci"), digits=3), _vs_floor(get("s1_above_floor")),
            _round(r["scheme1"], 1), r["scheme1_grade"] or "", _ci(r["scheme1_ci"]),
            _round(get("s2_skill"), 3), _ci(get("s2_skill_ci"), digits=3),
            _round(r["scheme2"], 1), r["scheme2_grade"] or "", _ci(r["scheme2_ci"]),
            _round(r["wape"], 1, 100.0), _round(r["spearman"], 3), _round(r["pearson"], 3), _round(r["mae"], 2),
            _round(r["bias"], 2), f"{r['n_scored']}/{r['n_total']}")


def _run_values(board: Leaderboard, scope: str, gold: dict | None = None, prospective: dict | None = None):
    """A run row's value in each of :data:`COLUMNS` and its text (:func:`_display`), from what the board keeps of
    it. A board of 10,000 runs has 270,000 cells: a run's scores are rounded and written out once per scope (and
    kept with the run until it is rescored), a view only adds its ranks (``gold``: run id -> rank with the gold
    redrawn, :meth:`~scitaste_hf.leaderboard.service.Leaderboard.gold_ranks`) and the prospective numbers of its
    model and mode (``prospective``: :meth:`~scitaste_hf.leaderboard.sealed.SealedBoard.prospective`)."""
    def values(meta, numbers, rank, top) -> tuple[tuple, tuple]:
        scores = board.per_run(meta["run"], ("scores", scope), lambda: _scores(numbers))
        shown = board.per_run(meta["run"], ("shown", scope), lambda: _display(SCORE_COLUMNS, [scores])[0])
        ahead = (prospective or {}).get((meta["model"], meta["mode"])) or {}
        head = (_rank(rank), _rank((gold or {}).get(meta["run"])), TOP if top else "", meta["run"], meta["model"],
                meta["mode"], _round(ahead.get("s1_skill"), 3), _ci(ahead.get("s1_skill_ci"), digits=3),
                ahead.get("as_of", ""))
        about = model_fields(meta["model_meta"])
        model = tuple(about[f] for f in MODEL_FIELDS)
        tail = (meta["status"], meta["kind"], *model, meta["date"], meta["organisation"], meta["link"])
        text = (UNKNOWN if model[0] is None else f"{model[0]:.3f}", *model[1:])
        return (*head, *scores, *tail), (*_display(COLUMNS[:len(head)], [head])[0], *shown, meta["status"],
                                         meta["kind"], *text, *map(str, tail[-3:]))

    return values


def _floor_values(r) -> tuple:
    """A floor's value in each of :data:`FLOOR_COLUMNS`."""
    return (r["model"], f"{r['runs_above']} of {r['runs']}", *_scores(r))


def _highlighted(column, value) -> bool:
    if column == "status":
        return value == FLAGGED
    if column == "coverage":
        scored, _, total = value.partition("/")
        return scored != total
    return value == NOT_ABOVE


#: Decimals each numeric column is shown with, whatever its value (0.630 beside 0.564, never 0.63).
DIGITS = {"prospective S1 skill": 3,
          "S1 skill": 3, "Scheme-1": 1, "S2 skill": 3, "Scheme-2": 1, "WAPE %": 1, "Spearman": 3, "Pearson": 3,
          "MAE": 2, "bias": 2}


def _display(columns, data) -> list[tuple[str, ...]]:
    """What each cell shows: numeric columns with :data:`DIGITS` decimals (the table keeps the numbers, to sort
    by), an undefined statistic blank, everything else as it is."""
    digits = [DIGITS.get(c) for c in columns]
    return [tuple("" if v is None else f"{v:.{d}f}" if d is not None else str(v) for v, d in zip(row, digits))
            for row in data]


def _frame(columns, data, shown=None) -> dict:
    """What gr.Dataframe renders: the values (a row per tuple; None, an undefined statistic, shows as a blank
    cell), their text (``shown``, else :func:`_display`'s), and the style of the cells to highlight (coverage
    below 100%, "not above floor", a flagged run's status).

    A style only for the rows that have a highlighted cell (the table reads a missing style as none): Gradio walks
    every cell it is given, and a pandas Styler's three entries per cell took seconds on a board of 10,000 runs.
    Rows are tuples, which the garbage collector stops tracking, so that views kept in the cache do not slow down
    every later collection.
    """
    highlighted = [(j, _HIGHLIGHT[c]) for j, c in enumerate(columns) if c in _HIGHLIGHT]
    styles: list[tuple[str, ...]] = [()] * len(data)
    for i, row in enumerate(data):
        marks = {j: style for j, style in highlighted if _highlighted(columns[j], row[j])}
        if marks:
            styles[i] = tuple(marks.get(j, "") for j in range(len(columns)))
    return {"headers": list(columns), "data": data,
            "metadata": {"display_value": _display(columns, data) if shown is None else shown,
                         "styling": styles if any(styles) else None}}


def _datatypes(columns) -> list[str]:
    numeric = {"run", "prospective S1 skill",
               "S1 skill", "Scheme-1", "S2 skill", "Scheme-2", "WAPE %", "Spearman", "Pearson", "MAE", "bias",
               "params (B)"}
    return ["number" if c in numeric else "str" for c in columns]


def _filters(mode, discipline, grade, status, flagged, open_weights=False, model=None) -> dict:
    try:
        chosen = check_filters(model)
    except ScitasteError as exc:
        raise gr.Error(str(exc)) from None
    return {"mode": None if mode in (None, ALL) else mode,
            "discipline": None if discipline in (None, "overall") else discipline,
            "grade": None if grade in (None, ALL) else grade, "status": None if status in (None, ALL) else status,
            "include_flagged": bool(flagged), "open_weights": bool(open_weights), "model": chosen}


def table(board: Leaderboard, mode=ALL, discipline="overall", grade=ALL, status=ALL, flagged=False,
          open_weights=False, model=None, *, sealed: SealedBoard | None = None):
    """The leaderboard view: the runs in the board's order with their rank intervals (built once per view until
    the store changes, or a resolution of ``sealed`` is recorded); ``open_weights`` keeps the runs of open-weight
    models and ``model`` (choices of :func:`~scitaste_hf.leaderboard.metadata.model_filters`) those of a knowledge
    cutoff or size, ranked among themselves; ``sealed`` gives each run the prospective numbers of its model and
    mode."""
    filters = _filters(mode, discipline, grade, status, flagged, open_weights, model)
    scope = filters["discipline"] or "overall"

    def build():
        values = _run_values(board, scope, board.gold_ranks(**filters),
                             None if sealed is None else sealed.prospective(scope))
        rows = board.map_rows(values, **filters)
        return _frame(COLUMNS, [row for row, _ in rows], [shown for _, shown in rows])

    return board.memo(("table", *filters.values(), None if sealed is None else sealed.marker()), build)


def floors_table(board: Leaderboard, mode=ALL, discipline="overall", grade=ALL, status=ALL, flagged=False,
                 open_weights=False, model=None):
    """The no-information floors of the view as reference rows (never runs), and the noise ceiling."""
    filters = _filters(mode, discipline, grade, status, flagged, open_weights, model)
    return board.memo(("floors", *filters.values()), lambda: _frame(FLOOR_COLUMNS, [
        *(_floor_values(f) for f in board.floors(**filters)),
        _ceiling_values(board.noise_ceiling(filters["discipline"]))]))


#: The reference row of the noise ceiling (:meth:`~scitaste_hf.leaderboard.service.Leaderboard.noise_ceiling`).
CEILING_ROW = "noise ceiling: the expected gold against the redrawn gold"


def _ceiling_values(ceiling) -> tuple:
    """The noise ceiling in :data:`FLOOR_COLUMNS`: both schemes and their skill, each with its interval over the
    draws of the gold; the columns it has no figure for are blank."""
    def figure(key, digits):
        return _round(ceiling[key]["value"], digits), _ci(ceiling[key]["interval"], digits=digits)

    s1_skill, s2_skill = figure("scheme1_skill", 3), figure("scheme2_skill", 3)
    s1, s2 = figure("scheme1", 1), figure("scheme2", 1)
    return (CEILING_ROW, "", *s1_skill, "", s1[0], "", s1[1], *s2_skill, s2[0], "", s2[1], None, None, None, None,
            None, "")


def warm(board: Leaderboard, papers=None) -> None:
    """Build the default view of every scope once, so that each run's formatted scores are kept (they outlive new
    runs; only the ranks are computed again) and the first visitor of a discipline does not wait for them; then
    bring the Papers tab's details up to date (:class:`Papers`; reading the runs it has not seen, every run on a
    first start). The Space runs this in the background once it is built."""
    for scope in board.scopes:  # the release's disciplines, read from its gold records
        table(board, ALL, scope)
        floors_table(board, ALL, scope)
    if papers is not None:
        papers.details.sync()


def reported_table():
    data = reported_results()
    return pd.DataFrame([[r["model"], r["mode"], f"{r['scheme2']:.1f}", "reported"] for r in data["rows"]],
                        columns=["model", "mode", "Scheme-2 (reported)", "source"])


def run_choices(board: Leaderboard):
    """The runs to compare or plot, in the board's order (flagged runs last, and marked so); never a floor."""
    return board.memo("choices", lambda: [
        (f"#{r['run']} {r['model']} ({r['mode']})" + (" [flagged]" if r["status"] == FLAGGED else ""), r["run"])
        for r in board.rows(include_flagged=True)])


def default_pair(board: Leaderboard):
    """The runs preselected for a comparison: the first of the board's order, and the next one whose scores differ
    from it (two runs of the same answers in two modes compare to 0 everywhere; the stored scores tell them apart
    without reading any submission). A flagged run is never preselected (it is not ranked, and a copy of the labels
    would otherwise be run A)."""
    def scores(r):
        return tuple(r[k] for k in ("scheme1", "scheme2", "wape", "spearman", "mae", "bias", "n_scored"))

    def build():
        ranked = board.rows()  # the board's order, without flagged runs
        if len(ranked) < 2:
            return [*(r["run"] for r in ranked), None, None][:2]
        first = ranked[0]
        second = next((r for r in ranked[1:] if scores(r) != scores(first)), ranked[1])
        return [first["run"], second["run"]]

    return board.memo("default-pair", build)


def _p_value(p) -> str:
    """A p-value as read: three decimals, and below 0.001 as "< 0.001" (a bootstrap p of 0 means only that no
    resample of 1,000 reached the other side)."""
    if p is None:
        return ""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _rounded(value):
    """A run's stored result for the Run details box: floats to 4 significant digits, not 17."""
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def _verdict(metric, s) -> str:
    if s["distinguishable"] is None:
        return ""
    if not s["distinguishable"]:
        return "not distinguishable"
    a_better = s["difference"] < 0 if metric == "wape" else s["difference"] > 0
    return "A better" if a_better else "B better"


def compare_table(board: Leaderboard, run_a, run_b):
    """Paired bootstrap differences (A - B) with intervals, overall and per discipline; beside each, the smallest
    difference this many papers resolve with 80% power, and whether the two runs can be told apart at all."""
    if run_a is None or run_b is None:
        raise gr.Error("choose two runs")
    try:
        result = board.compare(_run_id(run_a, "run A"), _run_id(run_b, "run B"))
    except ScitasteError as exc:
        raise gr.Error(str(exc)) from None
    rows = []
    for scope, stats in result.items():
        for metric in ("scheme1", "scheme2", "wape"):
            s = stats[metric]
            scale = 100.0 if metric == "wape" else 1.0
            # An interval or p-value is None when too few resamples define it (a tiny scope).
            rows.append([scope, stats["n"], metric, round(s["difference"] * scale, 2), _ci(s["interval"], scale),
                         _p_value(s["p_value"]),
                         None if s["detectable"] is None else round(s["detectable"] * scale, 2),
                         _verdict(metric, s)])
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS)


def scheme2_by_model(board: Leaderboard):
    """The best Scheme-2 of each model in each mode, for the first :data:`CHART_MODELS` models of the board's
    order: columns model, mode, Scheme-2."""
    def build():
        best: dict[tuple[str, str], float] = {}
        models: list[str] = []
        for r in board.rows():
            if r["scheme2"] is None or (r["model"] not in models and len(models) >= CHART_MODELS):
                continue
            if r["model"] not in models:
                models.append(r["model"])
            best[r["model"], r["mode"]] = max(best.get((r["model"], r["mode"]), r["scheme2"]), r["scheme2"])
        return pd.DataFrame([(m, mode, v) for (m, mode), v in best.items()], columns=["model", "mode", "Scheme-2"])

    return board.memo("scheme2-by-model", build)


def _figure(width, height):
    # A Figure of its own, not pyplot's: pyplot keeps every figure it makes and is not thread-safe, and the Space
    # draws in several threads at once.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    return fig, fig.add_subplot()


def scheme2_chart(board: Leaderboard):
    """Scheme-2 by model and mode as grouped bars: each mode's score beside the others (scores of different modes
    do not add up), with the floors' Scheme-2 as dashed lines."""
    data = scheme2_by_model(board)
    models = list(dict.fromkeys(data["model"]))
    modes = [m for m in MODES if m in set(data["mode"])]
    # As wide as the Plots tab's frame at a laptop's width (the picture is drawn at 100 dpi, scaled down to fit).
    fig, ax = _figure(max(13.0, 1.2 + 0.5 * len(models) * max(1, len(modes))), 4.5)
    width = 0.8 / max(1, len(modes))
    for k, mode in enumerate(modes):
        part = data[data["mode"] == mode]
        ax.bar([models.index(m) + (k - (len(modes) - 1) / 2) * width for m in part["model"]], part["Scheme-2"],
               width, label=mode)
    for floor, style in zip(board.floors(), ("--", ":")):
        if floor["scheme2"] is not None:
            ax.axhline(floor["scheme2"], color="grey", linestyle=style, linewidth=1,
                       label=f"{floor['model']} ({floor['scheme2']:.1f})")
    ax.set_xticks(range(len(models)), models, rotation=20, ha="right")
    # room for at least four models, the groups centred: a board of one model keeps bars of a bar's width
    spare = max(0, 4 - len(models)) / 2
    ax.set_xlim(-0.5 - spare, len(models) - 0.5 + spare)
    ax.set_ylim(0, 100)
    ax.set_ylabel("Scheme-2 (best run of the model in the mode)")
    ax.set_title("Scheme-2 by model and mode")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def heatmap(board: Leaderboard, mode):
    """Scheme-2 by discipline and model for one mode (the paper's Table 10 as a picture), for the first
    :data:`HEATMAP_RUNS` runs of the board's order in that mode."""
    runs = board.rows(mode=mode)[:HEATMAP_RUNS]
    labels = [f"#{r['run']} {r['model']}" for r in runs]
    disciplines = list(board.scopes[1:])  # the release's, in reporting order
    per_discipline = {d: {r["run"]: r["scheme2"] for r in board.rows(mode=mode, discipline=d)} for d in disciplines}
    grid = [[per_discipline[d].get(r["run"]) for d in disciplines] for r in runs]
    # Rows for at least three runs, so that a board of one or two keeps a colour bar whose ticks read.
    fig, ax = _figure(10, 1.6 + 0.45 * max(3, len(runs)))
    if runs:
        data = pd.DataFrame(grid, index=labels, columns=disciplines, dtype=float)
        image = ax.imshow(data.values, cmap="viridis", vmin=0, vmax=100, aspect="auto")
        ax.set_xticks(range(len(disciplines)), disciplines, rotation=30, ha="right")
        ax.set_yticks(range(len(labels)), labels)
        for i, row in enumerate(data.values):
            for j, v in enumerate(row):
                if v == v:
                    ax.text(j, i, f"{v:.1f}", ha="center", va="center", color="white" if v < 60 else "black")
        from mpl_toolkits.axes_grid1 import make_axes_locatable

        # an axes of its own beside the heatmap's: the colour bar spans exactly the heatmap's rows
        fig.colorbar(image, cax=make_axes_locatable(ax).append_axes("right", size=0.25, pad=0.15), label="Scheme-2")
    ax.set_title(f"Scheme-2 by discipline, mode {mode} (first {HEATMAP_RUNS} runs of the board's order)")
    fig.tight_layout()
    return fig


def scatter(board: Leaderboard, run_id):
    """Predicted against gold innovation score of one run (empty before a run is chosen)."""
    if run_id is None:
        return pd.DataFrame(columns=["gold", "predicted", "discipline"])
    try:
        return pd.DataFrame(board.scatter(_run_id(run_id, "the run")))
    except ScitasteError as exc:
        raise gr.Error(str(exc)) from None


def _floor_earns(floor) -> str:
    """What the constant floor earns on the board's papers, from its reference row (the one home of the figure:
    it depends on the gold labels and the split the floor learns from, so no fixed grade is written anywhere)."""
    if not floor or floor.get("scheme2") is None:
        return "Yet the constant floor can earn a fair Scheme-2"
    return (f"Yet on this board's papers the constant floor earns a Scheme-2 of {floor['scheme2']:.1f}, grade "
            f"{floor['scheme2_grade']} (WAPE {100 * floor['wape']:.1f}%)")


def about(disciplines: Sequence[str] = DISCIPLINES, floor=None) -> str:
    """The About tab, naming the release's disciplines (default: the default release's) and, given the constant
    floor's reference row (:meth:`~scitaste_hf.leaderboard.service.Leaderboard.floors`), what it earns."""
    named = f"{', '.join(disciplines[:-1])} and {disciplines[-1]}" if len(disciplines) > 1 else disciplines[0]
    columns = "\n".join(f"| {c} | {m} |" for c, m in COLUMN_MEANINGS.items())
    weights = "\n".join(f"| {DIMENSION_LETTERS[k]} | `{k}` | {w:.4f} |" for k, w in DEFAULT_WEIGHTS.items())
    bands = "\n".join(
        f"| {b.grade} | [{100 * b.low:g}, {100 * b.high:g}%) | {b.score_at_low:g} -> {b.score_at_high:g} |"
        for b in WAPE_BANDS)
    modes = "\n".join(f"- `{mode}` (lm-eval task `{spec.task}`): {spec.about}." for mode, spec in MODE_SPECS.items())
    return f"""
## What SciTaste-Bench measures

Whether a language model can judge the innovativeness ("research taste") of scientific papers. For each paper of
the `selected` split (as many in each of {named}) the model
predicts an innovation score and seven dimension scores of the Academic Taste Index (0-100), which is computed from
bibliometric data.

## The modes

{modes}

The first four are the paper's. `dimagent_v3_live`, in which the model chooses its own tool calls, is a mode of
its own: its runs carry that label and are filtered apart from `dimagent_v3`'s.

## Scoring

**{scheme1_text().replace("Scheme 1", "Scheme 1**", 1)}

**Scheme 2** maps WAPE = sum |p - g| / sum g to a score, linear inside each band:

| grade | WAPE | score |
|---|---|---|
{bands}

Every score has a 95% percentile-bootstrap interval (1,000 resamples of the papers). Answers that cannot be
scored are failures, excluded and shown as coverage, never zeros.

## What knowing nothing earns: the floors

Two reference rows sit above the table. They are not submissions: they are never ranked, counted, compared or
copied anywhere.

- **{FLOOR_NAMES["constant"]}** gives every paper the same answer: the average of each number over the public
  `backup` papers (over the gold papers themselves when the data has no `backup` split).
- **{FLOOR_NAMES["discipline_prior"]}** gives every paper of a discipline the same answer: the median over that
  discipline's `backup` papers, or its gold papers (what the offline baseline answers without tools).

Neither looks at the paper in front of it. {_floor_earns(floor)}: WAPE only measures how far the innovation
scores are from the labels on average, and the average answer is never very far.

**Skill** says how much of what the constant floor gets wrong a run gets right, on the same papers: for Scheme 1,
the share of the floor's distance to a perfect 100 that the run closes; for Scheme 2, the share of the floor's
WAPE that the run removes. The floor has a skill of exactly 0, a perfect run 1, a run worse than the floor a
negative skill. A run is marked **{NOT_ABOVE}** when the 95% interval of its Scheme-1 skill does not exclude 0:
on these papers it cannot be told apart from knowing nothing. "runs above it" says how many of the shown runs
beat each floor.

## Why the board is ordered by Scheme-1 skill, not by Scheme-2

Ordered by Scheme-2, the board would put the floors above runs that clearly know something about the papers: a
run that ranks the papers well but spreads its scores more widely than the labels (a judge with real information
and some noise) can have a larger WAPE than the answer that is the same for every paper. Scheme 1 rewards
ordering the papers correctly, and a predictor without information orders nothing, so its Scheme-1 skill is 0
and every run whose answers carry information about the papers lands above it. That is the default order.
Scheme-2 and its grade stay in the table: click the **Scheme-2** header and pick a sort order in the menu it opens.

## How sure a rank is

The benchmark's papers cannot separate close runs: two models whose WAPE differs by 2 points are told apart only
about a third of the time. So a rank is shown as a range. The papers are resampled {RANK_RESAMPLES} times, the same
resamples for every run of the board; in each, the runs of the view are ranked by Scheme-1 skill, and a run's
**rank** is the range that holds 95% of its ranks ("1-3": anywhere from first to third). Runs whose range
reaches the leader's share the **top group** ({TOP}): the data cannot tell them apart from the leader. The gold is
an estimate too: **rank (gold redrawn)** is the same range when each resample is also scored against a redrawn
gold (its weights drawn from their intervals), so two runs whose ranges overlap there differ by less than the
labels are known; it equals **rank** where the board takes the weights as known. The reference row **noise
ceiling** is what a predictor of the expected gold scores against the redrawn gold: the most skill these labels
can show (docs/leaderboard.md). Flagged
runs are never ranked. The **Compare** tab gives, beside each difference, the smallest difference that this many
papers resolve with 80% power, and says *not distinguishable* when the difference's 95% interval includes 0.

## What a run's status does and does not prove

The gold labels are public, so a score alone proves nothing. Each run gets one status:

- **{SERVER_RUN}**: the board's own worker ran the model of a request (Submit tab, Queue tab) on the frozen
  evidence of these papers and scored it with the same code as an upload; the run records the model's revision,
  the backend and its arguments. Only the operator's worker can store it (its result is sealed with the worker's
  secret): an upload never gets this status. It shows that the board ran the named model, not that the model
  never saw the public labels in training.

- **flagged** (never ranked; shown only with "show flagged runs"): the answers are closer to the public gold
  labels than any honest judge gets, even after undoing a shift, a scale or rounding and setting aside papers
  replaced by other values: for instance {COPY_SHARE:.0%} of the papers with all eight numbers within
  {COPY_TOLERANCE:g} points of the labels, or {RANKED_SHARE:.0%} with the innovation score within
  {RANKED_TOLERANCE:g} point. It shows that the answers derive from the labels, not who copied them.
- **{EVIDENCE_CONSISTENT}**: the attached lm-eval samples log or agent trace records exactly the submitted answer
  for every paper. It shows that the log and the answers agree. It does not show that a model produced them: a
  samples log is a text file that anyone can write to match any answers.
- **{SELF_REPORTED}**: no log, or a log that disagrees with the answers. The scores rest on the submitter's word.

Neither *{EVIDENCE_CONSISTENT}* nor *{SELF_REPORTED}* certifies a model; only running it again could, which is
what *{SERVER_RUN}* is. A copy of the
labels with noise the size of a strong model's errors is not flagged.

## The board's columns

| column | meaning |
|---|---|
{columns}

## Weights

| | dimension | weight |
|---|---|---|
{weights}

{weights_note()}

## Run the evaluation

```bash
pip install '.[lmeval]'    # in a checkout of the scitaste-hf repository (no package index carries it)
lm_eval --model local-chat-completions --model_args model=NAME,base_url=http://HOST/v1/chat/completions \\
    --apply_chat_template --include_path "$(scitaste tasks-path)" --tasks scitaste_any_model \\
    --log_samples --output_path results
scitaste score --predictions results/NAME/samples_scitaste_dimagent_*.jsonl --gold skylenage/SciTaste-benchmark
```

Submit that samples log as it is (Submit tab: as the predictions, and again as the samples log to have the run
marked *evidence-consistent*), one mode a submission: `samples_scitaste_dimagent_*` as `dimagent_v3`,
`samples_scitaste_pure_qa_*` as `pure_qa`.

## Cite

```bibtex
{CITATION}```
"""


#: The visibilities a submitter may choose for the run's details dataset (the default first).
PUBLIC, PRIVATE = "public", "private"
VISIBILITIES = (PUBLIC, PRIVATE)


def _submitter(profile, request) -> str:
    """Who sent a submission, the key of its rate limit and what the run stores as its submitter: the signed-in
    Hugging Face account (``hf:<username>``) where there is one; else, on a Space, the visitor's address as the
    Hub's proxy appended it to ``X-Forwarded-For`` (its last entry: the entries before it are whatever the client
    wrote); else the address of the connection itself, which a locally run Space never takes from a header
    (:func:`serve`). docs/guide-host.md#who-a-submitter-is says what the Hub passes and why."""
    if profile is not None:
        return f"hf:{profile.username}"
    if on_hub():
        forwarded = (getattr(request, "headers", None) or {}).get("x-forwarded-for", "")
        visitor = forwarded.rsplit(",", 1)[-1].strip()
        if visitor:
            return visitor
    return getattr(getattr(request, "client", None), "host", None) or ANONYMOUS


def submit(board: Leaderboard, file, model, mode, organisation, link, samples, trace, request: gr.Request,
           profile=None, hub_id="", revision="", cutoff="", visibility=PUBLIC):
    """Validate, score and store an upload; the message says what happened, in one line. The submitter is
    :func:`_submitter`'s; ``hub_id`` and ``revision`` name the model on the Hub (its metadata is read from there),
    ``cutoff`` is the knowledge cutoff the submitter states and ``visibility`` (one of :data:`VISIBILITIES`) that of
    the run's details dataset, where the board publishes one."""
    if file is None:
        return "Rejected: upload a predictions JSONL file."
    submitter = _submitter(profile, request)
    if (visibility or PUBLIC) not in VISIBILITIES:
        return f"Rejected: the details dataset's visibility is one of {', '.join(VISIBILITIES)}."
    try:
        result = board.submit(Path(file).read_bytes(), model, mode, organisation, link, submitter=submitter,
                              samples=Path(samples).read_bytes() if samples else None,
                              trace=Path(trace).read_bytes() if trace else None, hub_id=str(hub_id or ""),
                              revision=str(revision or ""), knowledge_cutoff=str(cutoff or ""),
                              private=visibility == PRIVATE)
    except ScitasteError as exc:
        return f"Rejected: {exc}"
    return ("Already submitted: " if result.duplicate else "Accepted: ") + result.message


#: The prospective table's columns (docs/prospective.md): what is shown of a sealed run (never its answers) and, once
#: resolved, its scores as of each resolution date beside the best retrospective run of the same model and mode.
SEALED_COLUMNS = ["run", "model", "mode", "status", "sealed at", "digest (SHA-256)", "resolved as of", "S1 skill",
                  "S1 skill interval", "Scheme 1", "Scheme-1 interval", "Scheme 2", "Scheme-2 interval",
                  "retrospective S1 skill", "retrospective S1 skill interval", "digest salt"]


def prospective_table(board: Leaderboard, sealed: SealedBoard | None) -> dict:
    """The sealed runs, one row per run and resolution date (one row while sealed), newest first."""
    if sealed is None:
        return _frame(SEALED_COLUMNS, [])
    best = {}
    for r in board.rows():  # in the board's order: the first of a model and mode is its best
        best.setdefault((r["model"], r["mode"]), r)
    rows = []
    for run in sealed.rows():
        retro = best.get((run["model"], run["mode"]), {})
        tail = (_round(retro.get("s1_skill"), 3), _ci(retro.get("s1_skill_ci"), digits=3), run["salt"] or "")
        head = (run["run"], run["model"], run["mode"], run["status"], run["submitted_at"], run["digest"])
        for as_of, n in (run["resolved"] or {"": {}}).items():
            rows.append((*head, as_of, _round(n.get("s1_skill"), 3), _ci(n.get("s1_skill_ci"), digits=3),
                         _round(n.get("scheme1"), 1), _ci(n.get("scheme1_ci")), _round(n.get("scheme2"), 1),
                         _ci(n.get("scheme2_ci")), *tail))
    return _frame(SEALED_COLUMNS, rows)


def prospective_submit(sealed: SealedBoard | None, file, model, mode, request: gr.Request, profile=None) -> str:
    """Seal an upload of the prospective split under :func:`_submitter`'s identity; one line."""
    if sealed is None:
        return "Rejected: this board has no prospective split."
    if file is None:
        return "Rejected: upload a predictions JSONL file of the prospective split."
    try:
        result = sealed.submit(Path(file).read_bytes(), model, mode, submitter=_submitter(profile, request))
    except ScitasteError as exc:
        return f"Rejected: {exc}"
    return ("Already sealed: " if result.duplicate else "Sealed: ") + result.message


def prospective_answers(sealed: SealedBoard | None, run, request: gr.Request, profile=None) -> str:
    """A sealed run's answers for its submitter (anyone's after the first resolution), else one line. On the Hub
    the reader must be signed in: an address is shared by everyone behind it, so it proves no one the submitter."""
    if sealed is None:
        return "Refused: this board has no prospective split."
    reader = ANONYMOUS if on_hub() and profile is None else _submitter(profile, request)
    try:
        return sealed.answers(_run_id(run, "run"), reader).decode("utf-8")
    except (ScitasteError, gr.Error) as exc:
        return f"Refused: {exc}"


def endpoint_names() -> list[str]:
    """The operator's endpoints a request may name (:func:`~scitaste_hf.leaderboard.requests.operator_endpoints`);
    none when their file cannot be read: a request then says why, in one line."""
    try:
        return list(operator_endpoints())
    except ScitasteError:
        return []


def _requester(profile, name, request, action: str = "request an evaluation") -> str:
    """Who asks for an evaluation (or cancels one, ``action``): on the Hub the signed-in account (``hf:<username>``,
    as :func:`_submitter` names it; signing in is required), locally the typed name (``local:<name>``, not
    verified)."""
    if on_hub():
        if profile is None:
            raise ScitasteError(f"sign in with Hugging Face first (the button above) to {action}")
        return _submitter(profile, request)
    return f"local:{check_name(name, 'your name')}"


def request_evaluation(board: Leaderboard, model, revision, modes, name, request: gr.Request, profile=None,
                       cutoff="") -> str:
    """Queue a model for the board's worker in each of ``modes`` (:meth:`~scitaste_hf.leaderboard.service.
    Leaderboard.request`), with the knowledge ``cutoff`` the submitter states; the line to show: what was queued, or
    why nothing was."""
    try:
        submitter = _requester(profile, name, request)
        result = board.request(str(model or ""), list(modes or []), revision=str(revision or ""),
                               submitter=submitter, knowledge_cutoff=str(cutoff or ""))
    except ScitasteError as exc:
        return f"Refused: {exc}"
    return f"Queued: {result.message}"


def cancel_evaluation(board: Leaderboard, request_id, name, request: gr.Request, profile=None) -> str:
    """Cancel a pending or running request of the visitor (:func:`_requester`'s identity, the one that asked for
    it; :meth:`~scitaste_hf.leaderboard.service.Leaderboard.cancel_request`); the line to show."""
    try:
        if not re.fullmatch(r"[0-9]{1,18}", str(request_id or "").strip()):
            raise ScitasteError("request: a request number of the Queue table")
        canceller = _requester(profile, name, request, "cancel a request")
        return f"Cancelled: {board.cancel_request(int(str(request_id).strip()), canceller)}"
    except ScitasteError as exc:
        return f"Refused: {exc}"


#: The Queue tab's columns, and the keys of :meth:`~scitaste_hf.leaderboard.service.Leaderboard.queue`'s rows they
#: show (no submitter: the queue is public).
QUEUE_COLUMNS = ["request", "model", "revision", "source", "mode", "state", "position", "queued", "started",
                 "finished", "attempts", "run", "reason"]
QUEUE_KEYS = ["id", "model", "revision", "source", "mode", "state", "position", "created_at", "started_at",
              "finished_at", "attempts", "run_id", "reason"]


def queue_table(board: Leaderboard) -> dict:
    """Every request, newest first: its state, its place among the pending ones, its times, its attempts, the run
    it produced (a run number of the board) and why it failed."""
    data = [tuple("" if r[k] is None else r[k] for k in QUEUE_KEYS) for r in board.queue()]
    return {"headers": QUEUE_COLUMNS, "data": data or [[""] * len(QUEUE_COLUMNS)]}


#: Runs one report takes at most: each new one costs the report's own statistics over the resamples (about a quarter
#: of a second of CPU on the bundled example's papers; its scores are the board's), and a report of more says little
#: that the board does not.
REPORT_RUNS = 6


def _report_runs(board: Leaderboard, runs, modes) -> tuple[list[tuple[int, str, str]], str]:
    """The runs a report analyses, as (run, model, mode), and the line that says which: the picked runs, else every
    ranked run of ``modes`` in the board's order (the first of each model, mode and withheld tool); at most
    :data:`REPORT_RUNS`. A model's second run in one mode (and withheld tool) is named with its run number (the
    analysis takes each model and mode once, beside its runs with a tool withheld)."""
    picked = [_run_id(r, "a run") for r in (runs or [])]
    if picked:
        metas = [board.result(r) for r in dict.fromkeys(picked)]
        what = "picked runs"
    elif modes:
        seen: set[tuple[str, str, str]] = set()
        metas = []
        for r in board.rows():
            if r["mode"] not in modes:
                continue
            key = (r["model"], r["mode"], board.withheld(r["run"]))
            if key not in seen:
                seen.add(key)
                metas.append(r)
        what = f"ranked runs of {', '.join(m for m in MODES if m in modes)}"
    else:
        raise ScitasteError("pick runs, or modes for all their ranked runs")
    if not metas:
        raise ScitasteError(f"no {what}")
    line = f"{min(len(metas), REPORT_RUNS)} of {len(metas)} {what}" + (
        f" (a report takes at most {REPORT_RUNS}: the first ones)" if len(metas) > REPORT_RUNS else "")
    named: set[tuple[str, str, str]] = set()
    out = []
    for meta in metas[:REPORT_RUNS]:
        key = (meta["model"], meta["mode"], board.withheld(meta["run"]))
        model = meta["model"] if key not in named else f"{meta['model']} (#{meta['run']})"
        named.add(key)
        out.append((meta["run"], model, meta["mode"]))
    return out, line


def report_view(board: Leaderboard, runs=None, modes=None) -> tuple:
    """What ``scitaste report`` writes, for stored runs (:func:`_report_runs`): the line saying which runs, the
    report's tables as Markdown (every number with its interval), the per-dimension Spearman heatmap and the
    report's numbers (``report.json``). Kept until the store changes; each run's score_run result is the board's
    stored one where it holds for the board's gold set and floors (:meth:`~scitaste_hf.leaderboard.service.
    Leaderboard.current_result`; the board scores with the package's resamples, seed and confidence, as the report
    does), else the report scores the run; its statistics are kept by :func:`analyse` for the next report."""
    import io

    from PIL import Image

    from scitaste_hf.analysis import Run, analyse
    from scitaste_hf.analysis.render import HEATMAP, heatmap_png, markdown

    try:
        chosen, line = _report_runs(board, runs, modes)

        def build():
            report = analyse([Run(model, mode, board.answers(run), f"run #{run}", board.withheld(run))
                              for run, model, mode in chosen],
                             board.gold, backup=board.backup, gold_name="the board's gold set",
                             results=[board.current_result(run) for run, _, _ in chosen])
            # the heatmap is shown beside the text, not linked as the report folder's file
            text = re.sub(r"!\[[^\]]*\]\(" + re.escape(HEATMAP) + r"\)", "*(the heatmap below)*", markdown(report))
            return text, heatmap_png(report), report

        text, png, report = board.memo(("report", tuple(chosen)), build)
    except ScitasteError as exc:
        raise gr.Error(str(exc)) from None
    return f"Report on {line}.", text, Image.open(io.BytesIO(png)), report


#: Where every slider of the Annotate tab starts, for each paper.
SLIDER_START = 50
#: Annotate requests processed at once: raters work in parallel, and the store serialises only its own writes.
ANNOTATE_CONCURRENCY = 8


def on_hub() -> bool:
    """Whether the app runs on a Hugging Face Space (``SYSTEM=spaces``, Gradio's own test). Raters then sign in with
    their Hugging Face account; elsewhere they type a name, and no gr.LoginButton is built: outside a Space Gradio
    replaces its sign-in with the machine's own Hugging Face login, which a server does not have."""
    return os.environ.get("SYSTEM") == "spaces"


def identity_box():
    """Where a tab takes a visitor's identity: on the Hub a sign-in button (the handler reads its
    ``gr.OAuthProfile``) and a hidden name box; elsewhere a typed name, which nothing verifies."""
    if on_hub():
        gr.LoginButton()
        return gr.Textbox(visible=False)
    return gr.Textbox(label="your name (run locally: not verified; on the Hub you sign in instead)")


def _rater(name, profile) -> str:
    """The rater's id: the signed-in Hugging Face account on the Hub (never a name the client sends), the typed
    name elsewhere."""
    if on_hub():
        if profile is None:
            raise ScitasteError("sign in with Hugging Face first (the button above)")
        return Ratings.rater(username=profile.username)
    return Ratings.rater(local_name=name)


def _plain(value) -> str:
    """A value as Markdown that shows it as it is: markup in a title or abstract is shown, not rendered."""
    return re.sub(r"([\\`*_{}\[\]()#+!|~])", r"\\\1", html.escape(str(value or "")))


def paper_markdown(paper) -> str:
    """What the Annotate tab shows of a paper (:func:`scitaste_hf.ratings.blind`'s fields only), as plain text: a
    title or abstract holding markup is shown, not rendered."""
    venue = ", ".join(_plain(v) for v in (paper["discipline"], paper["year"], paper["journal_name"]) if v)
    return f"### {_plain(paper['title'])}\n\n*{venue}*\n\n{_plain(paper['abstract'])}"


def _annotate_view(paper, status: str, discipline=None) -> tuple:
    """The Annotate tab's outputs: the paper (or why there is none), its id, every slider at its start, the status."""
    if paper is None:
        shown = f"No paper of {discipline} is left for you: you have seen them all. Thank you!" if discipline else ""
        return (shown, "", *[SLIDER_START] * len(NUMBERS), status)
    return (paper_markdown(paper), paper["bibcode"], *[SLIDER_START] * len(NUMBERS), status)


def _unchanged(status: str) -> tuple:
    """The Annotate tab's outputs after a refusal: the paper and the sliders as they were, the reason."""
    return (gr.update(), gr.update(), *[gr.update()] * len(NUMBERS), status)


def _progress(ratings: Ratings, rater: str) -> str:
    return (f"You have rated {ratings.store.rated_by(rater)} paper(s); the published ratings call you "
            f"{ratings.pseudonym(rater)}.")


def annotate_next(ratings: Ratings, name, discipline, profile) -> tuple:
    """The rater's next paper in ``discipline`` (the same one again while it is open)."""
    try:
        rater = _rater(name, profile)
        return _annotate_view(ratings.next_paper(rater, discipline), _progress(ratings, rater), discipline)
    except ScitasteError as exc:
        return _unchanged(f"Refused: {exc}")


def annotate_rate(ratings: Ratings, name, discipline, bibcode, scores, profile) -> tuple:
    """Store the rating of the open paper and show the next one; a refusal keeps the paper and says why."""
    try:
        rater = _rater(name, profile)
        result = ratings.rate(rater, bibcode, list(scores))
        paper = ratings.next_paper(rater, discipline)
    except ScitasteError as exc:
        return _unchanged(f"Refused: {exc}")
    done = ("Already stored: " if result.duplicate else "Stored: ") + result.message
    return _annotate_view(paper, f"{done}. {_progress(ratings, rater)}", discipline)


def annotate_skip(ratings: Ratings, name, discipline, bibcode, profile) -> tuple:
    """Skip the open paper (never shown to this rater again) and show the next one."""
    try:
        rater = _rater(name, profile)
        ratings.skip(rater, bibcode)
        paper = ratings.next_paper(rater, discipline)
    except ScitasteError as exc:
        return _unchanged(f"Refused: {exc}")
    return _annotate_view(paper, f"Skipped {bibcode}. {_progress(ratings, rater)}", discipline)


def annotate_stop(ratings: Ratings, name, profile) -> tuple:
    """The rater stops for now: the open paper is released for others, and the tab is cleared."""
    try:
        rater = _rater(name, profile)
        ratings.stop(rater)
    except ScitasteError as exc:
        return _unchanged(f"Refused: {exc}")
    return _annotate_view(None, f"Stopped; come back any time. {_progress(ratings, rater)}")


def agreement_report(ratings: Ratings, board: Leaderboard) -> tuple:
    """The agreement report (:meth:`scitaste_hf.ratings.Ratings.report`) as its summary and tables: reliability,
    the consensus against the gold, the raters (by pseudonym), the runs against both."""
    report = ratings.report(board)
    tables = report_tables(report, public=True)
    frames = [pd.DataFrame(t.rows, columns=t.columns) for t in tables]
    if len(frames) < 4:  # no run scored against the consensus yet: the table stays, empty
        frames.append(pd.DataFrame(columns=AGREEMENT_RUN_COLUMNS))
    return (summary(report), *frames)


#: The columns of the runs' table of the Expert agreement tab.
AGREEMENT_RUN_COLUMNS = ["run", "model", "mode", "Scheme-1 vs gold", "Scheme-1 vs experts", "Scheme-2 vs gold",
                         "Scheme-2 vs experts", "S1 skill vs gold", "S1 skill vs experts"]


def _annotate_tab(ratings: Ratings) -> None:
    """The Annotate tab: sign in (or a name locally), a discipline, one paper at a time with eight sliders."""
    gr.Markdown("Rate papers as an expert, beside the bibliometric gold. You see a paper's title, abstract, year and "
                "venue, never its gold scores or other raters' ratings. Each paper gets at least three raters before "
                "any gets a fourth; skip a paper outside your expertise, and stop at any time. Your ratings are "
                "published under a pseudonym.")
    name = identity_box()
    with gr.Row():
        discipline = gr.Dropdown(list(ratings.disciplines), value=ratings.disciplines[0], label="discipline")
        start = gr.Button("Next paper", variant="primary")
    paper = gr.Markdown()
    paper_id = gr.Textbox(label="paper", interactive=False)
    with gr.Accordion("Rating guide", open=False):
        gr.Markdown(guide_markdown())
    sliders = [gr.Slider(0, 100, value=SLIDER_START, step=1, label=label(n), info=f"{GUIDE[n].rate} ({SCALE})"
                         if n == NUMBERS[0] else GUIDE[n].rate) for n in NUMBERS]
    with gr.Row():
        rate = gr.Button("Submit rating", variant="primary")
        skip = gr.Button("Skip this paper")
        stop = gr.Button("Stop")
    status = gr.Textbox(label="status", interactive=False)
    shown = [paper, paper_id, *sliders, status]

    def do_next(name, discipline, profile: gr.OAuthProfile | None = None):
        return annotate_next(ratings, name, discipline, profile)

    # The profile comes first: Gradio injects its special arguments only among the parameters before the first
    # variadic one, so after *scores it would always be None (and no signed-in rater could rate on the Hub).
    def do_rate(profile: gr.OAuthProfile | None, name, discipline, bibcode, *scores):
        return annotate_rate(ratings, name, discipline, bibcode, scores, profile)

    def do_skip(name, discipline, bibcode, profile: gr.OAuthProfile | None = None):
        return annotate_skip(ratings, name, discipline, bibcode, profile)

    def do_stop(name, profile: gr.OAuthProfile | None = None):
        return annotate_stop(ratings, name, profile)

    limit = {"concurrency_limit": ANNOTATE_CONCURRENCY}
    start.click(do_next, [name, discipline], shown, api_name="annotate_next", **limit)
    rate.click(do_rate, [name, discipline, paper_id, *sliders], shown, api_name="annotate_rate", **limit)
    skip.click(do_skip, [name, discipline, paper_id], shown, api_name="annotate_skip", **limit)
    stop.click(do_stop, [name], shown, api_name="annotate_stop", **limit)


def _agreement_tab(ratings: Ratings, board: Leaderboard) -> None:
    """The Expert agreement tab: the report of :func:`agreement_report`, computed on request."""
    gr.Markdown("How far the experts agree with each other and with the bibliometric gold, and the board's first "
                "runs scored against the expert consensus beside the gold, on the papers with at least three "
                "raters. The report moves only when another five papers have three ratings, so that no rater can "
                "read another's ratings from its changes, and it shows no rater's own numbers. Every number has "
                "its 95% bootstrap interval over the papers; definitions in the package's docs/ratings.md.")
    button = gr.Button("Compute the agreement report", variant="primary")
    text = gr.Markdown()
    # The tables' own headers before Compute (Gradio shows "1 2 3" for a table without a value).
    empty = report_tables({"numbers": {}, "flagged": [], "raters": []}, public=True)
    headers = [t.columns for t in empty] + [AGREEMENT_RUN_COLUMNS]
    tables = [gr.Dataframe(value=pd.DataFrame(columns=columns), interactive=False, label=title)
              for columns, title in zip(headers, ("inter-rater reliability", "expert consensus against the gold",
                                                  "raters (by pseudonym)", "runs against the gold and the experts"))]
    button.click(lambda: agreement_report(ratings, board), None, [text, *tables], api_name="ratings_report")


#: The Papers tab's list of papers (a search's or a run's worst).
PAPER_LIST_COLUMNS = ["bibcode", "title", "discipline", "year", "|error| of the innovation score"]
#: Short names of the eight numbers in the Papers tab: the composite, then the dimensions by their letters.
NUMBER_NAMES = {"innovation_score": "IS", **DIMENSION_LETTERS}
#: The Papers tab's table of the runs' answers for one paper: each run with its status and rank, its predicted
#: composite and the signed error (prediction - gold) of each number, or why it could not be scored (a run's
#: prediction of each dimension is shown when the run is picked: a table of 10,000 runs costs in its cells).
PAPER_RUN_COLUMNS = ["rank", "run", "model", "mode", "status", NUMBER_NAMES[ANSWER_NUMBERS[0]],
                     *(f"{NUMBER_NAMES[n]} error" for n in ANSWER_NUMBERS), "not scored: why"]
#: The picked run's answer of one paper: each number's gold, prediction and error.
PAPER_ANSWER_COLUMNS = ["number", "name", "gold", "predicted", "error"]
#: Papers a run's worst list shows.
WORST_PAPERS = 20
UNRANKED = "unranked"


class Papers:
    """What the Papers tab reads: the board's per-paper details (:class:`~scitaste_hf.leaderboard.details.Details`)
    and the frozen tool evidence of the gold's dataset, loaded on first use (``evidence``: a dataset folder or Hub
    id, as :meth:`~scitaste_hf.agent.evidence.FrozenToolBox.find` reads it; None: none)."""

    def __init__(self, board: Leaderboard, evidence: str | None = None) -> None:
        self.board = board
        self.details = board.details_table()
        self.records = {r["bibcode"]: r for r in board.gold}
        self._source = evidence
        self._evidence = None
        self._lock = threading.Lock()

    def refresh(self) -> None:
        """Bring the details up to date with the store and build the board's order of the pages' runs
        (:func:`_run_order`): done after each submission and on each page visit, so that a paper's page then only
        reads its rows. Never waits for a sync under way (a first start reading every stored run in the background).
        """
        self.details.sync(wait=False)
        _run_order(self.board)

    def evidence(self, bibcode: str) -> dict | None:
        """The nine tools' frozen output for the paper, tool by tool; None when the dataset has no frozen evidence."""
        from scitaste_hf.agent.evidence import FrozenToolBox
        from scitaste_hf.agent.tools import TOOL_NAMES

        with self._lock:
            if self._evidence is None:
                found = None
                if self._source:
                    try:
                        found = FrozenToolBox.find(self._source)
                    except ScitasteError:
                        found = None
                self._evidence = found or False
        if not self._evidence or bibcode not in self._evidence.papers:
            return None
        return {tool: self._evidence.call(tool, {"bibcode": bibcode}) for tool in TOOL_NAMES}


def _paper_id(value) -> str:
    bibcode = str(value or "").strip()
    if not bibcode:
        raise gr.Error("choose a paper: find one, or pick one of a run's worst papers")
    return bibcode


def _paper_list(records, errors=None) -> dict:
    data = [(r["bibcode"], r["title"], r["discipline"], r["year"], None if errors is None else round(e, 2))
            for r, e in zip(records, errors or [None] * len(records))]
    return {"headers": PAPER_LIST_COLUMNS, "data": data or [[""] * len(PAPER_LIST_COLUMNS)]}


def papers_find(papers: Papers, query="", discipline=ALL) -> dict:
    """The papers whose title or identifier holds every word of ``query``, of ``discipline`` unless "all"."""
    found = find_papers(papers.board.gold, query or "", None if discipline in (None, ALL, "overall") else discipline)
    return _paper_list(found)


def papers_worst(papers: Papers, run) -> dict:
    """A run's :data:`WORST_PAPERS` papers with the largest error of the innovation score, worst first."""
    if run is None or str(run).strip() == "":
        raise gr.Error("choose a run")
    rows = papers.details.worst(_run_id(run, "the run"), WORST_PAPERS)
    return _paper_list([papers.records[r["bibcode"]] for r in rows], [r["abs_error"] for r in rows])


def _paper_record(record) -> str:
    """A paper's record as plain-text Markdown: title, venue line, sub-discipline, identifiers, abstract."""
    venue = ", ".join(_plain(v) for v in (record.get("journal_name"), record.get("year")) if v)
    ids = " · ".join(f"{k}: {_plain(record[k])}" for k in ("bibcode", "doi", "openalex_id", "arxiv_id")
                     if record.get(k))
    return (f"### {_plain(record['title'])}\n\n*{venue}*\n\ndiscipline: {_plain(record['discipline'])}; "
            f"sub-discipline: {_plain(record.get('subcategory_name') or record.get('subcategory_id'))}\n\n{ids}\n\n"
            f"{_plain(record.get('abstract'))}")


def _paper_gold(values) -> dict:
    """A paper's gold numbers (the details' vector: the composite, then the dimensions) as the gold table."""
    return {"headers": ["number", "name", "gold"],
            "data": [(NUMBER_NAMES[n], n, v) for n, v in zip(ANSWER_NUMBERS, values)]}


def _run_order(board: Leaderboard) -> list[tuple]:
    """Every stored run, flagged ones included (last), in the board's order, as the first columns of
    :data:`PAPER_RUN_COLUMNS` (rank, run, model, mode, status): what a paper's runs are listed in. Built from the view
    of Compare's run lists (:func:`run_choices`), which every page visit computes."""
    return board.memo("papers-run-order", lambda: [
        (_rank(r["rank"]) or UNRANKED, r["run"], r["model"], r["mode"], r["status"])
        for r in board.rows(include_flagged=True)])


def paper_view(papers: Papers, bibcode) -> tuple:
    """A paper's page: its record, its gold numbers, each stored run's answer with its errors (in the board's order;
    flagged and unranked runs shown as such), the runs to pick for a conversation, the tools' frozen evidence."""
    bibcode = _paper_id(bibcode)
    record = papers.records.get(bibcode)
    if record is None:
        raise gr.Error(f"no paper {bibcode} in the selected split")
    rows = papers.details.of_paper(bibcode, digits=2)
    data = []
    for run in _run_order(papers.board):
        row = rows.get(run[1])
        if row is not None:
            failure, detail = row[-2:]
            data.append((*run, *row[:-2], "" if failure is None else f"{failure}: {detail or ''}"[:200]))
    choices = [(f"#{r[1]} {r[2]} ({r[3]})", r[1]) for r in data]
    evidence = papers.evidence(bibcode)
    return (_paper_record(record), _paper_gold(papers.details.gold[bibcode]),
            {"headers": PAPER_RUN_COLUMNS, "data": data or [[""] * len(PAPER_RUN_COLUMNS)]},
            gr.update(choices=choices, value=choices[0][1] if choices else None),
            evidence if evidence is not None else {"frozen evidence": "none: the gold's dataset has no tool_evidence"})


def paper_run(papers: Papers, bibcode, run) -> tuple:
    """One run on one paper: the model's reasoning (or why its answer was not scored), its answer beside the gold
    number by number, and the conversation round by round, each tool call with its result, when the run stored a
    trace, samples log or Inspect log."""
    bibcode = _paper_id(bibcode)
    run_id = _run_id(run, "the run")
    row = papers.details.one(run_id, bibcode)
    if row is None:
        raise gr.Error(f"run #{run_id} has no answer for {bibcode}")
    if row["failure"] is not None:
        reasoning = f"not scored ({row['failure']}): {row['detail'] or ''}"
    else:
        reasoning = row["reasoning"] or "(the answer gives no reasoning)"
    gold = papers.details.gold[bibcode]
    answer = {"headers": PAPER_ANSWER_COLUMNS, "data": [
        (NUMBER_NAMES[n], n, g, None if row[f"p_{n}"] is None else round(row[f"p_{n}"], 2),
         None if row[f"e_{n}"] is None else round(row[f"e_{n}"], 2)) for n, g in zip(ANSWER_NUMBERS, gold)]}
    conversation = papers.details.conversation(run_id, bibcode)
    if conversation is None:
        conversation = {"conversation": "none stored: the run came without a trace or samples log"
                        if row["trace_kind"] is None else "none stored for this paper in the run's evidence"}
    return reasoning, answer, conversation


def _papers_tab(papers: Papers) -> None:
    """The Papers tab: find a paper (title, identifier, discipline) or open a run's worst papers; the paper's record,
    gold, every run's answer with its errors, one run's reasoning and conversation, the frozen evidence."""
    board = papers.board
    gr.Markdown("Open one paper: its record and gold labels, what each stored run answered with its error on each "
                "number (prediction minus gold; flagged and unranked runs are listed as such), a run's reasoning and, "
                "when the run came with a trace, samples log or Inspect log, its conversation round by round, and "
                "the nine tools' frozen evidence. A paper's numbers are single answers: they carry no interval.")
    with gr.Row():
        query = gr.Textbox(label="title or identifier (bibcode, DOI, OpenAlex or arXiv id)")
        discipline = gr.Dropdown([ALL, *board.scopes[1:]], value=ALL, label="discipline")
        find = gr.Button("Find papers", variant="primary")
    with gr.Row():
        worst_run = gr.Dropdown(run_choices(board), label="or a run's worst papers", allow_custom_value=True)
        worst = gr.Button("Worst papers of the run")
    found = gr.Dataframe(value={"headers": PAPER_LIST_COLUMNS, "data": [[""] * len(PAPER_LIST_COLUMNS)]},
                         interactive=False, label="papers: select one to open it")
    with gr.Row():
        bibcode = gr.Textbox(label="paper (bibcode)")
        open_paper = gr.Button("Open paper", variant="primary")
    record = gr.Markdown()
    gold = gr.Dataframe(value={"headers": ["number", "name", "gold"], "data": [["", "", ""]]}, interactive=False,
                        label="gold: the composite (IS) and the seven dimensions (A-G)")
    runs = gr.Dataframe(value={"headers": PAPER_RUN_COLUMNS, "data": [[""] * len(PAPER_RUN_COLUMNS)]},
                        interactive=False, label="each stored run's answer and its error (prediction - gold), in the "
                                                 "board's order; select a row for its reasoning and conversation")
    run = gr.Dropdown([], label="run", allow_custom_value=True)
    reasoning = gr.Textbox(label="reasoning", interactive=False, lines=3)
    answer = gr.Dataframe(value={"headers": PAPER_ANSWER_COLUMNS, "data": [[""] * len(PAPER_ANSWER_COLUMNS)]},
                          interactive=False, label="the run's answer beside the gold")
    conversation = gr.JSON(label="conversation, round by round: each tool call with its result")
    evidence = gr.JSON(label="the nine tools' frozen evidence for the paper")

    def run_view(b, r):
        return paper_run(papers, b, r) if r not in (None, "") else ("", None, None)

    find.click(lambda q, d: papers_find(papers, q, d), [query, discipline], found, api_name="papers_find")
    query.submit(lambda q, d: papers_find(papers, q, d), [query, discipline], found, api_name=False)
    worst.click(lambda r: papers_worst(papers, r), worst_run, found, api_name="papers_worst")
    page = [record, gold, runs, run, evidence]
    # The run shown is read again after a paper opens: its dropdown may keep its value, which fires no change.
    open_paper.click(lambda b: paper_view(papers, b), bibcode, page, api_name="paper").then(
        run_view, [bibcode, run], [reasoning, answer, conversation], api_name=False)

    def pick_paper(evt: gr.SelectData):
        return evt.row_value[0]

    found.select(pick_paper, None, bibcode, api_name=False).then(
        lambda b: paper_view(papers, b), bibcode, page, api_name=False).then(
        run_view, [bibcode, run], [reasoning, answer, conversation], api_name=False)

    def pick_run(evt: gr.SelectData):
        return evt.row_value[PAPER_RUN_COLUMNS.index("run")]

    runs.select(pick_run, None, run, api_name=False)
    run.change(run_view, [bibcode, run], [reasoning, answer, conversation], api_name="paper_run")
    return worst_run


def build_app(board: Leaderboard, synthetic: bool = False, ratings: Ratings | None = None,
              papers: Papers | None = None, sealed: SealedBoard | None = None) -> gr.Blocks:
    """The leaderboard app over ``board``, with the Annotate and Expert agreement tabs over ``ratings`` (default: the
    board's folder's, :func:`~scitaste_hf.ratings.open_ratings`) and the Papers tab over ``papers`` (default: the
    board's details, without frozen evidence) and the Prospective tab over ``sealed`` (None: no prospective
    split; the tab says so)."""
    ratings = open_ratings(board) if ratings is None else ratings
    papers = Papers(board) if papers is None else papers
    # The full window width: the table has over thirty columns.
    with gr.Blocks(title="SciTaste-Bench leaderboard", fill_width=True) as demo:
        gr.Markdown("# SciTaste-Bench leaderboard\n"
                    "Can language models judge the innovativeness of scientific papers?")
        if synthetic:
            gr.Markdown("> **Synthetic demo data.** These gold labels come from the simulated world of scitaste-hf "
                        "(a demo build or the bundled example), not the benchmark. Start with `--gold` or "
                        "`SCITASTE_GOLD` for the real `selected` split.")
        with gr.Tabs():
            with gr.Tab("Leaderboard"):
                with gr.Row():
                    mode = gr.Dropdown([ALL, *MODES], value=ALL, label="mode")
                    discipline = gr.Dropdown(list(board.scopes), value="overall", label="discipline")
                    grade = gr.Dropdown([ALL, *(b.grade for b in WAPE_BANDS)], value=ALL, label="Scheme-2 grade")
                    status = gr.Dropdown(STATUS_CHOICES, value=ALL, label="status")
                    flagged = gr.Checkbox(False, label="show flagged runs", min_width=170, elem_id="show-flagged")
                    weights = gr.Checkbox(False, label="open weights only", min_width=170,
                                          info=f"weights {UNKNOWN}: left out")
                    model_filter = gr.Dropdown(list(model_filters()), value=[], multiselect=True,
                                               label="model: knowledge cutoff, size", info=FILTER_RULE, min_width=260)
                floor_table = gr.Dataframe(value=floors_table(board), interactive=False, column_widths=FLOOR_WIDTHS,
                                           datatype=_datatypes(FLOOR_COLUMNS), pinned_columns=1, wrap=True,
                                           label="Reference rows: what knowing nothing earns on the same papers "
                                                 "(not submissions; never ranked, counted or compared; see About)")
                board_table = gr.Dataframe(value=table(board, sealed=sealed), interactive=False, show_search="search",
                                           pinned_columns=5, column_widths=WIDTHS, datatype=_datatypes(COLUMNS),
                                           wrap=True,
                                           label=f"Scored runs, best Scheme-1 skill over the constant floor first; "
                                                 f"rank: 95% interval, {TOP}: top group (see About)")
                details = gr.JSON(value=DETAILS_PLACEHOLDER, label="Run details: select a row")
                gr.Markdown("### Reported in the paper (not scored here)")
                gr.Dataframe(value=reported_table(), interactive=False, label="reported results")
                filters = [mode, discipline, grade, status, flagged, weights, model_filter]

                # Trailing inputs default to None, which gradio_client reads as optional (a raw HTTP call sends each)
                def leaderboard(mode, discipline, grade, status, flagged, open_weights=False, model=None):
                    return table(board, mode, discipline, grade, status, flagged, open_weights, model, sealed=sealed)

                def reference(mode, discipline, grade, status, flagged, open_weights=False, model=None):
                    return floors_table(board, mode, discipline, grade, status, flagged, open_weights, model)

                gr.on([f.change for f in filters], leaderboard, filters, board_table, api_name="leaderboard")
                gr.on([f.change for f in filters], reference, filters, floor_table, api_name="floors")

                def show(evt: gr.SelectData):
                    return _rounded(board.result(int(evt.row_value[COLUMNS.index("run")])))

                # a run the new filters may hide is not left on show
                gr.on([f.change for f in filters], lambda: DETAILS_PLACEHOLDER, None, details, api_name=False)

                board_table.select(show, None, details, api_name=False)
            with gr.Tab("Compare"):
                choices = run_choices(board)
                first, second = default_pair(board)
                with gr.Row():
                    # The two first ranked runs are preselected: the comparison most visitors want first.
                    run_a = gr.Dropdown(choices, value=first, label="run A", allow_custom_value=True)
                    run_b = gr.Dropdown(choices, value=second, label="run B", allow_custom_value=True)
                compare_button = gr.Button("Compare (paired bootstrap)", variant="primary")
                compare_out = gr.Dataframe(value=pd.DataFrame(columns=COMPARE_COLUMNS), interactive=False,
                                           label="A - B with 95% intervals; detectable: the smallest difference "
                                                 "these papers resolve with 80% power")
                compare_button.click(lambda a, b: compare_table(board, a, b), [run_a, run_b], compare_out,
                                     api_name="compare")
            with gr.Tab("Papers"):
                worst_run = _papers_tab(papers)
            with gr.Tab("Report"):
                gr.Markdown("What `scitaste report` writes (docs/report.md), for stored runs: Table 8 (each run's "
                            "Scheme 1, Scheme 2 with its grade, coverage), Table 10 and Table 9 by discipline, the "
                            "bias analysis, per-dimension Spearman as a heatmap and the effect of tools (a model's "
                            "tool mode minus its pure_qa run), every number with its 95% bootstrap interval. Pick "
                            f"runs, or modes for their ranked runs (the first run of each model and mode); at most "
                            f"{REPORT_RUNS} runs a report.")
                with gr.Row():
                    report_runs = gr.Dropdown(run_choices(board), multiselect=True, allow_custom_value=True,
                                              label="runs")
                    report_modes = gr.CheckboxGroup(list(MODES), label="or every ranked run of these modes")
                report_button = gr.Button("Report", variant="primary")
                report_line = gr.Markdown()
                report_text = gr.Markdown()
                report_heat = gr.Image(label="per-dimension Spearman", type="pil", interactive=False)
                report_json = gr.JSON(label="every number of the report (report.json)")
                report_button.click(lambda r, m: report_view(board, r, m), [report_runs, report_modes],
                                    [report_line, report_text, report_heat, report_json], api_name="report")
            with gr.Tab("Plots"):
                # Drawn by every page visit's refresh below, not here: a figure drawn when the app is built would
                # never be shown, and it would cost each start Matplotlib's import.
                bars = gr.Plot(label="Scheme-2 by model and mode")
                heat_mode = gr.Dropdown(list(MODES), value="dimagent_v3", label="mode for the heatmap")
                heat = gr.Plot()
                heat_mode.change(lambda m: heatmap(board, m), heat_mode, heat, api_name=False)
                scatter_run = gr.Dropdown(run_choices(board), label="run for the scatter", allow_custom_value=True)
                scatter_plot = gr.ScatterPlot(scatter(board, None), x="gold", y="predicted", color="discipline",
                                              x_lim=[0, 100], y_lim=[0, 100],
                                              title="Predicted vs gold innovation score")
                scatter_run.change(lambda r: scatter(board, r), scatter_run, scatter_plot, api_name=False)
            with gr.Tab("Submit"):
                gr.Markdown("Upload one JSONL line per paper of the `selected` split: `bibcode` plus the answer "
                            "fields, or the model's raw `response`; or lm-eval's samples log of one mode as it is "
                            "(`samples_<task>_*.jsonl`), or an Inspect log (`.eval`, `.json`). The server parses "
                            "and scores it itself; attach lm-eval's samples log, the Inspect log or the agent trace "
                            "(`scitaste-traces.jsonl`) to have the run marked "
                            f"*{EVIDENCE_CONSISTENT}* (the log agrees with every answer; see About). Up to "
                            f"{MAX_BYTES // 2**20} MiB for the predictions ({MAX_EVIDENCE_BYTES // 2**20} MiB for a "
                            f"samples log as the predictions) and {MAX_EVIDENCE_BYTES // 2**20} MiB for each evidence "
                            "file.")
                with gr.Row():
                    # an Inspect log (.eval, .json) is a run and its evidence too, read where inspect-ai is installed
                    file = gr.File(label="predictions (.jsonl)", file_types=[".jsonl", ".eval", ".json"],
                                   type="filepath")
                    samples = gr.File(label="lm-eval samples log or Inspect log (optional)",
                                      file_types=[".jsonl", ".eval", ".json"], type="filepath")
                    trace = gr.File(label="agent trace (optional)", file_types=[".jsonl"], type="filepath")
                with gr.Row():
                    model = gr.Textbox(label="model name")
                    submit_mode = gr.Dropdown(list(MODES), value="dimagent_v3", label="mode")
                    organisation = gr.Textbox(label="organisation")
                    link = gr.Textbox(label="link (paper, model card or code)")
                with gr.Row():
                    hub_id = gr.Textbox(label="Hub model id (optional: its size, licence and weights are read "
                                              "from the Hub)")
                    hub_revision = gr.Textbox(label="revision (optional: branch, tag or commit)")
                    cutoff = gr.Textbox(label="knowledge cutoff (optional: YYYY, YYYY-MM or YYYY-MM-DD, as you "
                                              "state it)")
                    visibility = gr.Radio(list(VISIBILITIES), value=PUBLIC,
                                          label="details dataset on the Hub, where this board publishes one (the "
                                                "Papers tab here shows the run's papers either way)")
                submit_button = gr.Button("Submit", variant="primary")
                outcome = gr.Textbox(label="status", interactive=False)

                # Trailing inputs default to None, which gradio_client reads as optional (older callers omit them).
                def do_submit(file, model, mode, organisation, link, samples=None, trace=None, hub_id=None,
                              revision=None, cutoff=None, visibility=None, request: gr.Request = None,
                              profile: gr.OAuthProfile | None = None):
                    return submit(board, file, model, mode, organisation, link, samples, trace, request, profile,
                                  hub_id, revision, cutoff, visibility)

                submitted = submit_button.click(do_submit, [file, model, submit_mode, organisation, link, samples,
                                                            trace, hub_id, hub_revision, cutoff, visibility], outcome,
                                                api_name="submit",
                                                concurrency_limit=SUBMIT_CONCURRENCY)
                gr.Markdown(f"### Or ask the board to evaluate a model\n"
                            f"The board's own worker runs it on the frozen evidence of these papers and stores the "
                            f"result as *{SERVER_RUN}* (see About); follow it in the Queue tab. Name a Hub model id "
                            "(open weights; a revision is optional) or one of the endpoints the board's operator "
                            "configured (never send a key: the operator holds it). One request per mode; a model, "
                            "revision and mode already pending, running or finished is not queued again.")
                requester = identity_box()
                with gr.Row():
                    request_model = gr.Dropdown(endpoint_names(), value=None, allow_custom_value=True,
                                                label="model: a Hub model id (owner/name) or a board endpoint")
                    request_revision = gr.Textbox(label="revision (optional: branch, tag or commit)")
                    request_modes = gr.CheckboxGroup(list(MODES), value=["pure_qa"], label="modes")
                    request_cutoff = gr.Textbox(label="knowledge cutoff (optional: as you state it)")
                request_button = gr.Button("Request an evaluation", variant="primary")
                request_outcome = gr.Textbox(label="request", interactive=False)

                # The profile comes first, as in the Annotate tab's handlers (where Gradio injects it reliably).
                def do_request(profile: gr.OAuthProfile | None, model, revision, modes, name, cutoff=None,
                               request: gr.Request = None):
                    return request_evaluation(board, model, revision, modes, name, request, profile, cutoff)

                requested = request_button.click(do_request, [request_model, request_revision, request_modes,
                                                              requester, request_cutoff], request_outcome,
                                                 api_name="request",
                                                 concurrency_limit=SUBMIT_CONCURRENCY)
            with gr.Tab("Prospective"):
                gr.Markdown("Sealed runs of the prospective split: papers too young for gold, answered now and "
                            "scored when the split is resolved, as of each resolution date (docs/prospective.md). "
                            "Only a sealed run's submitter can read its answers until the first resolution, which "
                            "closes the split to new runs.")
                sealed_table = gr.Dataframe(value=prospective_table(board, sealed), interactive=False,
                                            label="sealed runs: prospective scores beside the retrospective ones")
                with gr.Row():
                    sealed_file = gr.File(label="predictions of the prospective split (.jsonl)",
                                          file_types=[".jsonl"], type="filepath")
                    sealed_model = gr.Textbox(label="model name")
                    sealed_mode = gr.Dropdown(list(MODES), value="pure_qa", label="mode")
                seal_button = gr.Button("Seal", variant="primary")
                sealed_outcome = gr.Textbox(label="status", interactive=False)
                sealed_run = gr.Textbox(label="run number")
                read_button = gr.Button("Read my sealed answers")
                sealed_answers = gr.Textbox(label="answers", interactive=False)

                def do_seal(file, model, mode, request: gr.Request = None, profile: gr.OAuthProfile | None = None):
                    return prospective_submit(sealed, file, model, mode, request, profile)

                def do_read(run, request: gr.Request = None, profile: gr.OAuthProfile | None = None):
                    return prospective_answers(sealed, run, request, profile)

                seal_button.click(do_seal, [sealed_file, sealed_model, sealed_mode], sealed_outcome,
                                  api_name="prospective_submit", concurrency_limit=SUBMIT_CONCURRENCY).then(
                    lambda: prospective_table(board, sealed), None, sealed_table, api_name=False)
                read_button.click(do_read, sealed_run, sealed_answers, api_name="prospective_answers")
                gr.Button("Refresh").click(lambda: prospective_table(board, sealed), None, sealed_table,
                                           api_name="prospective")
            with gr.Tab("Queue"):
                gr.Markdown("Every model asked for (Submit tab), newest first. A request is "
                            + " -> ".join(f"`{s}`" for s in REQUEST_STATES[:3]) + f", or `{REQUEST_STATES[3]}` with "
                            f"its reason, or `{REQUEST_STATES[4]}`; position counts the pending ones from 1 (the "
                            f"next to run), run is the board's run it produced (*{SERVER_RUN}*).")
                queue_refresh = gr.Button("Refresh")
                queue = gr.Dataframe(value=queue_table(board), interactive=False, label="requests")
                queue_refresh.click(lambda: queue_table(board), None, queue, api_name="queue")
                requested.then(lambda: queue_table(board), None, queue, api_name=False)
                gr.Markdown("Cancel a request of yours, pending or running (its worker stops at once and stores "
                            "nothing), with the identity that asked for it.")
                canceller = identity_box()
                with gr.Row():
                    cancel_id = gr.Textbox(label="request number")
                    cancel_button = gr.Button("Cancel the request")
                cancel_outcome = gr.Textbox(label="cancel", interactive=False)

                def do_cancel(profile: gr.OAuthProfile | None, request_id, name, request: gr.Request = None):
                    return cancel_evaluation(board, request_id, name, request, profile)

                cancel_button.click(do_cancel, [cancel_id, canceller], cancel_outcome, api_name="cancel",
                                    concurrency_limit=SUBMIT_CONCURRENCY).then(
                    lambda: queue_table(board), None, queue, api_name=False)
            with gr.Tab("Annotate"):
                _annotate_tab(ratings)
            with gr.Tab("Expert agreement"):
                _agreement_tab(ratings, board)
            with gr.Tab("About"):
                constant = next((f for f in board.floors() if f["model"] == FLOOR_NAMES["constant"]), None)
                gr.Markdown(about(board.scopes[1:], constant))

        def refresh(*values, visit=False):
            *filter_values, heat_value = values
            choices = run_choices(board)
            first, second = default_pair(board)
            # A page visit preselects the comparison afresh (never a flagged run); after a submission the choices
            # grow and what the visitor picked stays.
            if visit:
                pick_a, pick_b = gr.update(choices=choices, value=first), gr.update(choices=choices, value=second)
            else:
                pick_a, pick_b = gr.update(choices=choices), gr.update(choices=choices)
            papers.refresh()
            return (table(board, *filter_values), floors_table(board, *filter_values), pick_a, pick_b,
                    gr.update(choices=choices, value=first), scheme2_chart(board), scatter(board, first),
                    heatmap(board, heat_value), gr.update(choices=choices), gr.update(choices=choices),
                    queue_table(board))

        # Built once, shown many times: every page visit and every new run reloads what depends on the store.
        reloaded = [board_table, floor_table, run_a, run_b, scatter_run, bars, scatter_plot, heat, worst_run,
                    report_runs, queue]
        demo.load(lambda *values: refresh(*values, visit=True), [*filters, heat_mode], reloaded, api_name=False)
        submitted.then(refresh, [*filters, heat_mode], reloaded, api_name=False)
    return demo


def theme() -> gr.themes.Base:
    """Gradio's default theme with :data:`FONTS`, and the captions under a label (the Annotate sliders' guide) in a
    dark grey: Gradio's light grey made them look disabled."""
    return gr.themes.Default(font=FONTS).set(block_info_text_color="*neutral_700",
                                              block_info_text_color_dark="*neutral_300",
                                              block_title_text_color="*neutral_900",
                                              block_title_text_color_dark="*neutral_100")


def main_board() -> tuple[Leaderboard, bool]:
    """The board as a Space opens it: data folder and gold labels from the environment (``SCITASTE_DATA``, and
    ``SCITASTE_GOLD`` as :func:`~scitaste_hf.leaderboard.setup.gold_source` reads it), collecting what workers of
    the Hub's queue hand back when a results repo is configured (:func:`~scitaste_hf.leaderboard.hub_queue.
    collect_from_env`)."""
    board, synthetic = open_leaderboard(constants.board_data())
    collect_from_env(board)
    return board, synthetic


def main_evidence() -> str:
    """Where the Space's gold labels come from, which is where the Papers tab reads the frozen tool evidence."""
    return gold_source(constants.board_data())[0]


def main_sealed(board: Leaderboard) -> SealedBoard | None:
    """The sealed runs of the gold source's prospective split, in the board's data folder and its Hub copy where one
    is configured (:func:`~scitaste_hf.leaderboard.sealed.open_sealed`; None: no such split)."""
    split = prospective_split(main_evidence())
    if split is None:
        return None
    return open_sealed(board.store.root, split, rate_limit=constants.submit_limit(RATE_LIMIT))


def main_app() -> gr.Blocks:
    """The app as a Space runs it: data folder and gold labels from the environment."""
    board, synthetic = main_board()
    return build_app(board, synthetic, papers=Papers(board, main_evidence()), sealed=main_sealed(board))


def serve(**launch_options) -> None:
    """Open the leaderboard and serve the app: the Space's entry point (``python app.py``) and ``scitaste
    space``'s. Nothing is opened on import, so importing this file writes no store anywhere."""
    if not on_hub():
        # Uvicorn takes the client's address from X-Forwarded-For when the connection comes from 127.0.0.1 (its
        # default FORWARDED_ALLOW_IPS): locally anyone could then name any address, and so pass the submission
        # limit and choose the submitter stored. An operator behind a proxy of their own sets the variable.
        os.environ.setdefault("FORWARDED_ALLOW_IPS", "")
    board, synthetic = main_board()
    papers = Papers(board, main_evidence())
    app = build_app(board, synthetic, papers=papers, sealed=main_sealed(board))
    # Everything built so far (Gradio, and every stored run read into the board's cache) lives as long as the
    # server: set it aside from the garbage collector, whose full passes over a board of 10,000 runs otherwise
    # cost a tenth of a second several times a view.
    gc.collect()
    gc.freeze()
    threading.Thread(target=warm, args=(board, papers), daemon=True, name="scitaste-warm").start()
    app.launch(max_file_size=MAX_UPLOAD_BYTES, theme=theme(), css=CSS, head=HEADER_HINTS, **launch_options)


if __name__ == "__main__":
    serve()
