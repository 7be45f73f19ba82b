"""The SciTaste-Bench leaderboard Space (Gradio 6).

Runs unchanged on a Hugging Face Space (settings from the environment: SCITASTE_DATA, SCITASTE_GOLD,
HF_TOKEN + SCITASTE_RESULTS_REPO) and locally with ``scitaste space --data DIR``. Everything shown comes from
:mod:`scitaste_hf.leaderboard`; uploaded content is data only: it is parsed, never executed, and rendered as
plain text.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import gradio as gr
import pandas as pd

from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard import Leaderboard
from scitaste_hf.leaderboard.integrity import COPY_SHARE, COPY_TOLERANCE, RANKED_SHARE, RANKED_TOLERANCE
from scitaste_hf.leaderboard.service import MAX_BYTES, MAX_EVIDENCE_BYTES
from scitaste_hf.leaderboard.setup import open_leaderboard, reported_results
from scitaste_hf.leaderboard.store import EVIDENCE_CONSISTENT, SELF_REPORTED
from scitaste_hf.schema import (
    CITATION,
    DEFAULT_WEIGHTS,
    DIMENSION_LETTERS,
    DISCIPLINES,
    MODES,
    SCHEME1_GRADES,
    WAPE_BANDS,
)

ALL = "all"
COLUMNS = ["run", "model", "mode", "Scheme-1", "S1 grade", "S1 95% CI", "Scheme-2", "S2 grade", "S2 95% CI",
           "WAPE %", "Spearman", "Pearson", "MAE", "bias", "coverage", "status", "kind", "date", "organisation", "link"]
#: Pixel widths of :data:`COLUMNS`, wide enough that no header breaks inside a word.
WIDTHS = ["60px", "220px", "170px", "100px", "95px", "125px", "100px", "95px", "125px", "95px", "105px", "95px",
          "80px", "80px", "100px", "125px", "90px", "110px", "140px", "200px"]
COMPARE_COLUMNS = ["scope", "papers", "metric", "A - B", "95% CI", "p"]
#: Gradio's own cap on an uploaded file: above the leaderboard's limits, so that a file over those gets the
#: leaderboard's one-line reason, while a far larger one is refused before it is written.
MAX_UPLOAD_BYTES = 2 * MAX_EVIDENCE_BYTES
#: Submissions processed at once, so that one large upload does not hold up everyone else's.
SUBMIT_CONCURRENCY = 4


def _num(x, digits=1):
    # None stays None: an undefined statistic (Spearman of a constant predictor) is a blank cell, not a string that
    # the table's number formats would choke on.
    return None if x is None else round(float(x), digits)


def _run_id(value, label: str) -> int:
    """A run number picked or typed in a dropdown; anything else is a one-sentence error."""
    if not re.fullmatch(r"[0-9]{1,18}", str(value).strip()):
        raise gr.Error(f"{label} must be a run number from the list")
    return int(str(value))


def _ci(ci, scale=1.0):
    return "" if not ci else f"[{ci[0] * scale:.1f}, {ci[1] * scale:.1f}]"


def table(board: Leaderboard, mode=ALL, discipline="overall", grade=ALL, status=ALL, flagged=False):
    """The leaderboard as a styled DataFrame: coverage below 100% highlighted."""
    rows = board.rows(mode=None if mode == ALL else mode,
                      discipline=None if discipline == "overall" else discipline,
                      grade=None if grade == ALL else grade, status=None if status == ALL else status,
                      include_flagged=flagged)
    frame = pd.DataFrame(
        [[r["run"], r["model"], r["mode"], _num(r["scheme1"]), r["scheme1_grade"] or "", _ci(r["scheme1_ci"]),
          _num(r["scheme2"]), r["scheme2_grade"] or "", _ci(r["scheme2_ci"]),
          _num(None if r["wape"] is None else 100 * r["wape"]), _num(r["spearman"], 3), _num(r["pearson"], 3),
          _num(r["mae"], 2), _num(r["bias"], 2), f"{r['n_scored']}/{r['n_total']}", r["status"], r["kind"],
          r["date"], r["organisation"], r["link"]] for r in rows],
        columns=COLUMNS,
    )

    def highlight(column):
        return ["background-color: #fde68a" if str(v).split("/")[0] != str(v).split("/")[-1] else "" for v in column]

    formats = {"Scheme-1": "{:.1f}", "Scheme-2": "{:.1f}", "WAPE %": "{:.1f}", "Spearman": "{:.3f}",
               "Pearson": "{:.3f}", "MAE": "{:.2f}", "bias": "{:+.2f}"}
    return frame.style.apply(highlight, subset=["coverage"]).format(formats, na_rep="")


def reported_table():
    data = reported_results()
    return pd.DataFrame([[r["model"], r["mode"], r["scheme2"], "reported"] for r in data["rows"]],
                        columns=["model", "mode", "Scheme-2 (reported)", "source"])


def run_choices(board: Leaderboard):
    return [(f"#{r['run']} {r['model']} ({r['mode']})", r["run"]) for r in board.rows(include_flagged=True)]


def compare_table(board: Leaderboard, run_a, run_b):
    """Paired bootstrap differences (A - B) with intervals, overall and per discipline."""
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
                         _num(s["p_value"], 4)])
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS)


def scheme2_by_model(board: Leaderboard):
    rows = board.rows()
    return pd.DataFrame([{"model": r["model"], "mode": r["mode"], "Scheme-2": r["scheme2"]} for r in rows
                         if r["scheme2"] is not None], columns=["model", "mode", "Scheme-2"])


def heatmap(board: Leaderboard, mode):
    """Scheme-2 by discipline and model for one mode (the paper's Table 10 as a picture)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = board.rows(mode=mode)
    labels = [f"#{r['run']} {r['model']}" for r in runs]
    per_discipline = {d: {r["run"]: r["scheme2"] for r in board.rows(mode=mode, discipline=d)} for d in DISCIPLINES}
    grid = [[per_discipline[d].get(r["run"]) for d in DISCIPLINES] for r in runs]
    fig, ax = plt.subplots(figsize=(8, 1 + 0.45 * max(1, len(runs))))
    if runs:
        data = pd.DataFrame(grid, index=labels, columns=DISCIPLINES, dtype=float)
        image = ax.imshow(data.values, cmap="viridis", vmin=0, vmax=100, aspect="auto")
        ax.set_xticks(range(len(DISCIPLINES)), DISCIPLINES, rotation=30, ha="right")
        ax.set_yticks(range(len(labels)), labels)
        for i, row in enumerate(data.values):
            for j, v in enumerate(row):
                if v == v:
                    ax.text(j, i, f"{v:.1f}", ha="center", va="center", color="white" if v < 60 else "black")
        fig.colorbar(image, ax=ax, label="Scheme-2")
    ax.set_title(f"Scheme-2 by discipline, mode {mode}")
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


def about() -> str:
    weights = "\n".join(f"| {DIMENSION_LETTERS[k]} | `{k}` | {w:.4f} |" for k, w in DEFAULT_WEIGHTS.items())
    bands = "\n".join(
        f"| {b.grade} | [{100 * b.low:g}, {100 * b.high:g}%) | {b.score_at_low:g} -> {b.score_at_high:g} |"
        for b in WAPE_BANDS)
    grades = ", ".join(f">= {t:g} {g}" if t > -1e9 else f"below: {g}" for t, g in SCHEME1_GRADES)
    return f"""
## What SciTaste-Bench measures

Whether a language model can judge the innovativeness ("research taste") of scientific papers. For each of 300
papers (50 in each of physics, mathematics, chemistry, biology, medicine and finance) the model predicts an
innovation score and seven dimension scores of the Academic Taste Index (0-100), which is computed from
bibliometric data.

## The four modes

`pure_qa` (no tools), `native_search` (the model's own web search), `dimagent_v3` (the nine DimAgent-v3
bibliometric tools, on frozen evidence), `dimagent_v3_native` (both).

## Scoring

**Scheme 1** = 0.5 Part A (Spearman 15, Pearson 10, MAE/MSE against predicting the gold mean 15, bias against the
gold SD 10) + 0.5 Part B (weighted dimension Spearman 30, weighted dimension accuracy 20). Grades: {grades}.

**Scheme 2** maps WAPE = sum |p - g| / sum g to a score, linear inside each band:

| grade | WAPE | score |
|---|---|---|
{bands}

Every score has a 95% percentile-bootstrap interval (1,000 resamples of the papers). Answers that cannot be
scored are failures, excluded and shown as coverage, never zeros.

## What a run's status does and does not prove

The gold labels are public, so a score alone proves nothing. Each run gets one status:

- **flagged** (never ranked; shown only with "show flagged runs"): the answers are closer to the public gold
  labels than any honest judge gets, even after undoing a shift, a scale or rounding and setting aside papers
  replaced by other values: for instance {COPY_SHARE:.0%} of the papers with all eight numbers within
  {COPY_TOLERANCE:g} points of the labels, or {RANKED_SHARE:.0%} with the innovation score within
  {RANKED_TOLERANCE:g} point. It shows that the answers derive from the labels, not who copied them.
- **{EVIDENCE_CONSISTENT}**: the attached lm-eval samples log or agent trace records exactly the submitted answer
  for every paper. It shows that the log and the answers agree. It does not show that a model produced them: a
  samples log is a text file that anyone can write to match any answers.
- **{SELF_REPORTED}**: no log, or a log that disagrees with the answers. The scores rest on the submitter's word.

Neither *{EVIDENCE_CONSISTENT}* nor *{SELF_REPORTED}* certifies a model; only running it again could. A copy of the
labels with noise the size of a strong model's errors is not flagged.

## Weights

| | dimension | weight |
|---|---|---|
{weights}

Citation impact (37.99) and journal impact (19.73 of 128.86) are published; the paper gives only the total of
the five middle dimensions, which is split equally here (an assumption, shown wherever weights are shown).

## Run the evaluation

```bash
pip install scitaste-hf
lm_eval --model local-chat-completions --tasks scitaste_dimagent --include_path <scitaste lm_eval_tasks> ...
scitaste score --predictions predictions.jsonl --gold skylenage/SciTaste-benchmark
```

## Cite

```bibtex
{CITATION}```
"""


def submit(board: Leaderboard, file, model, mode, organisation, link, samples, trace, request: gr.Request):
    """Validate, score and store an upload; the message says what happened, in one line."""
    if file is None:
        return "Rejected: upload a predictions JSONL file."
    submitter = (getattr(request, "username", None) or getattr(getattr(request, "client", None), "host", None)
                 or "anonymous")
    try:
        result = board.submit(Path(file).read_bytes(), model, mode, organisation, link, submitter=submitter,
                              samples=Path(samples).read_bytes() if samples else None,
                              trace=Path(trace).read_bytes() if trace else None)
    except ScitasteError as exc:
        return f"Rejected: {exc}"
    return ("Already submitted: " if result.duplicate else "Accepted: ") + result.message


def build_app(board: Leaderboard, synthetic: bool = False) -> gr.Blocks:
    """The leaderboard app over ``board``."""
    # The full window width: the table has twenty columns.
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
                    discipline = gr.Dropdown(["overall", *DISCIPLINES], value="overall", label="discipline")
                    grade = gr.Dropdown([ALL, *(b.grade for b in WAPE_BANDS)], value=ALL, label="Scheme-2 grade")
                    status = gr.Dropdown([ALL, EVIDENCE_CONSISTENT, SELF_REPORTED], value=ALL, label="status")
                    flagged = gr.Checkbox(False, label="show flagged runs")
                board_table = gr.Dataframe(value=table(board), interactive=False, show_search="search",
                                           pinned_columns=2, column_widths=WIDTHS,
                                           label="Scored runs (best Scheme-2 first)")
                details = gr.JSON(label="Run details: select a row")
                gr.Markdown("### Reported in the paper (not scored here)")
                gr.Dataframe(value=reported_table(), interactive=False, label="reported results")
                filters = [mode, discipline, grade, status, flagged]

                def leaderboard(mode, discipline, grade, status, flagged):
                    return table(board, mode, discipline, grade, status, flagged)

                gr.on([f.change for f in filters], leaderboard, filters, board_table, api_name="leaderboard")

                def show(evt: gr.SelectData):
                    return board.result(int(evt.row_value[0]))

                board_table.select(show, None, details, api_name=False)
            with gr.Tab("Compare"):
                choices = run_choices(board)
                with gr.Row():
                    # The two best runs are preselected: the comparison most visitors want first.
                    run_a = gr.Dropdown(choices, value=choices[0][1] if choices else None, label="run A",
                                        allow_custom_value=True)
                    run_b = gr.Dropdown(choices, value=choices[1][1] if len(choices) > 1 else None, label="run B",
                                        allow_custom_value=True)
                compare_button = gr.Button("Compare (paired bootstrap)", variant="primary")
                compare_out = gr.Dataframe(value=pd.DataFrame(columns=COMPARE_COLUMNS), interactive=False,
                                           label="A - B with 95% intervals")
                compare_button.click(lambda a, b: compare_table(board, a, b), [run_a, run_b], compare_out,
                                     api_name="compare")
            with gr.Tab("Plots"):
                bars = gr.BarPlot(scheme2_by_model(board), x="model", y="Scheme-2", color="mode",
                                  title="Scheme-2 by model and mode", y_lim=[0, 100])
                heat_mode = gr.Dropdown(list(MODES), value="dimagent_v3", label="mode for the heatmap")
                heat = gr.Plot(heatmap(board, "dimagent_v3"))
                heat_mode.change(lambda m: heatmap(board, m), heat_mode, heat, api_name=False)
                scatter_run = gr.Dropdown(run_choices(board), label="run for the scatter", allow_custom_value=True)
                scatter_plot = gr.ScatterPlot(scatter(board, None), x="gold", y="predicted", color="discipline",
                                              x_lim=[0, 100], y_lim=[0, 100],
                                              title="Predicted vs gold innovation score")
                scatter_run.change(lambda r: scatter(board, r), scatter_run, scatter_plot, api_name=False)
            with gr.Tab("Submit"):
                gr.Markdown("Upload one JSONL line per paper of the `selected` split: `bibcode` plus the answer "
                            "fields, or the model's raw `response`. The server parses and scores it itself; attach "
                            "lm-eval's samples log or the agent trace (`scitaste-traces.jsonl`) to have the run marked "
                            f"*{EVIDENCE_CONSISTENT}* (the log agrees with every answer; see About). Up to "
                            f"{MAX_BYTES // 2**20} MiB for the predictions and {MAX_EVIDENCE_BYTES // 2**20} MiB for "
                            "each evidence file.")
                with gr.Row():
                    file = gr.File(label="predictions (.jsonl)", file_types=[".jsonl"], type="filepath")
                    samples = gr.File(label="lm-eval samples log (optional)", file_types=[".jsonl"], type="filepath")
                    trace = gr.File(label="agent trace (optional)", file_types=[".jsonl"], type="filepath")
                with gr.Row():
                    model = gr.Textbox(label="model name")
                    submit_mode = gr.Dropdown(list(MODES), value="dimagent_v3", label="mode")
                    organisation = gr.Textbox(label="organisation")
                    link = gr.Textbox(label="link (paper, model card or code)")
                submit_button = gr.Button("Submit", variant="primary")
                outcome = gr.Textbox(label="status", interactive=False)

                def do_submit(file, model, mode, organisation, link, samples=None, trace=None,
                              request: gr.Request = None):
                    return submit(board, file, model, mode, organisation, link, samples, trace, request)

                submitted = submit_button.click(do_submit, [file, model, submit_mode, organisation, link, samples,
                                                            trace], outcome, api_name="submit",
                                                concurrency_limit=SUBMIT_CONCURRENCY)
            with gr.Tab("About"):
                gr.Markdown(about())

        def refresh(*filter_values):
            choices = run_choices(board)
            first = choices[0][1] if choices else None
            return (table(board, *filter_values), gr.update(choices=choices), gr.update(choices=choices),
                    gr.update(choices=choices, value=first), scheme2_by_model(board), scatter(board, first))

        # Built once, shown many times: every page visit and every new run reloads what depends on the store.
        reloaded = [board_table, run_a, run_b, scatter_run, bars, scatter_plot]
        demo.load(refresh, filters, reloaded, api_name=False)
        submitted.then(refresh, filters, reloaded, api_name=False)
    return demo


def main_app() -> gr.Blocks:
    """The app as a Space runs it: data folder and gold labels from the environment."""
    board, synthetic = open_leaderboard(os.environ.get("SCITASTE_DATA", "data"), os.environ.get("SCITASTE_GOLD"))
    return build_app(board, synthetic)


def serve(**launch_options) -> None:
    """Open the leaderboard and serve the app: the Space's entry point (``python app.py``) and ``scitaste
    space``'s. Nothing is opened on import, so importing this file writes no store anywhere."""
    main_app().launch(max_file_size=MAX_UPLOAD_BYTES, **launch_options)


if __name__ == "__main__":
    serve()
