"""The Gradio app of a metric Space (``metrics/<name>/app.py``).

``evaluate``'s own widget does not run on Gradio >= 4, so both metric Spaces share this one: the metric
card, a JSON editor or a JSONL upload for the inputs, and the result as JSON. The metric is loaded from
the Space's own folder, so the Space runs exactly the module that ``evaluate.load`` downloads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)


def example_inputs(name: str, n: int = 6) -> dict[str, list[Any]]:
    """Predictions and references for the first ``n`` papers of the bundled synthetic example run."""
    if name.startswith("rtaste_"):
        # rTaste metrics take events and rankings, not papers: their examples come from the rTaste release.
        from scitaste_hf.rtaste.summaries import example_inputs as rtaste_example_inputs

        return rtaste_example_inputs(name, n)
    from importlib import resources

    from scitaste_hf.predictions import read_predictions
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import Answer

    examples = resources.files("scitaste_hf").joinpath("data/examples")
    gold = load_records(Path(str(examples.joinpath("gold.jsonl"))))
    predictions = read_predictions(Path(str(examples.joinpath("predictions.jsonl"))))
    pairs = [(predictions.get(r["bibcode"]), r) for r in gold]
    pairs = [(p, r) for p, r in pairs if isinstance(p, Answer)][:n]
    if name == "scitaste_wape":
        return {"predictions": [p.innovation_score for p, _ in pairs],
                "references": [r["innovation_score"] for _, r in pairs]}
    return {"predictions": [p.model_dump(include={"innovation_score", "dimension_scores"}) for p, _ in pairs],
            "references": [{"innovation_score": r["innovation_score"], "dimension_scores": r["dimension_scores"]}
                           for _, r in pairs]}


def read_inputs(text: str | None, upload: str | None) -> dict[str, list[Any]]:
    """The metric's inputs from an uploaded JSONL file (one ``{"prediction", "reference"}`` object per
    line) or, without a file, from the editor's JSON object ``{"predictions": [...], "references": [...]}``."""
    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.records import jsonl_lines

    if upload:
        rows = []
        for number, line in enumerate(jsonl_lines(Path(upload).read_text("utf-8")), start=1):
            if line.strip():
                rows.append(_loads(line, "the upload", number))
        if not all(isinstance(r, dict) and "reference" in r for r in rows):
            raise ScitasteError("each line of the upload needs 'prediction' and 'reference'")
        return {"predictions": [r.get("prediction") for r in rows], "references": [r["reference"] for r in rows]}
    data = _loads(text or "", "the input", 1)
    if not isinstance(data, dict) or not {"predictions", "references"} <= set(data):
        raise ScitasteError('the input must be a JSON object {"predictions": [...], "references": [...]}')
    return {"predictions": data["predictions"], "references": data["references"]}


def _loads(text: str, what: str, first_line: int) -> Any:
    """``json.loads`` with a one-line error that names the line; ``text`` starts at ``first_line``."""
    from scitaste_hf.errors import ScitasteError

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScitasteError(f"{what} is not valid JSON: {exc.msg} at line {first_line + exc.lineno - 1}") from None
    except RecursionError:
        raise ScitasteError(f"{what} is not valid JSON: nested too deeply at line {first_line}") from None


def build_metric_app(metric_dir: str | Path):
    """A ``gr.Blocks`` app for the ``evaluate`` module in ``metric_dir`` (its README is the page text)."""
    import evaluate
    import gradio as gr

    from scitaste_hf.errors import ScitasteError, first_line

    metric_dir = Path(metric_dir)
    metric = evaluate.load(str(metric_dir))
    card = _FRONT_MATTER.sub("", (metric_dir / "README.md").read_text("utf-8"))

    def compute(text: str, upload: str | None) -> dict[str, Any]:
        try:
            return metric.compute(**read_inputs(text, upload))
        except KeyError as exc:  # evaluate's encoding of an input that lacks a declared field
            raise gr.Error(f"an input lacks the field {exc}") from None
        except (ScitasteError, ValueError, TypeError) as exc:
            raise gr.Error(first_line(exc)) from None

    with gr.Blocks(title=metric_dir.name) as demo:
        gr.Markdown(card)
        with gr.Row():
            editor = gr.Code(value=json.dumps(example_inputs(metric_dir.name), indent=1), language="json",
                             label='Inputs: {"predictions": [...], "references": [...]}')
            upload = gr.File(label='or a JSONL file, one {"prediction", "reference"} per line',
                             file_types=[".jsonl"], type="filepath")
        button = gr.Button("Compute", variant="primary")
        result = gr.JSON(label="Result")
        button.click(compute, [editor, upload], result, api_name="compute")
    return demo
