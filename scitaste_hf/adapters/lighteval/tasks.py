"""lighteval custom tasks of the modes any chat model runs (:data:`scitaste_hf.adapters.lmeval.tasks.ANY_MODEL`):
``scitaste_pure_qa`` and ``scitaste_dimagent``, the round 1 of the latter as text (the harness makes it; lighteval
sends one user message a document). ``lighteval endpoint litellm MODEL "scitaste_dimagent|0" --custom-tasks
scitaste_hf.adapters.lighteval.tasks`` with the dataset in ``$SCITASTE_DATA_DIR`` (a folder or a Hub id; lighteval
takes no task parameters).

The documents are the lm-eval tasks' (:func:`~scitaste_hf.adapters.lmeval.tasks.load_docs`: the papers, their
order, the frozen evidence, the floor), written once as a JSON-lines file that lighteval's ``load_dataset`` reads;
the replies are read by ``process_results`` and the metrics are the lm-eval aggregations over the whole set
(:func:`scitaste_hf.adapters.inspect.tasks.run_figures`, the Inspect tasks' own; lighteval requires inspect-ai),
so the figures are those of ``lm_eval`` and ``scitaste score`` on the same answers. The figures come as one
corpus-level group, so lighteval adds no ``_stderr`` of its own (its bootstrap resamples papers with replacement,
which the scoring refuses as duplicates); the intervals are the figures' own ``_ci_low`` and ``_ci_high``.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from lighteval.metrics.metrics_sample import SampleLevelComputation
from lighteval.metrics.utils.metric_utils import CorpusLevelMetricGrouping
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc, SamplingMethod

from scitaste_hf.adapters.inspect.tasks import run_figures
from scitaste_hf.adapters.lmeval.tasks import (
    ANY_MODEL,
    OVERALL,
    aggregations,
    doc_to_text,
    higher_is_better,
    load_docs,
    process_results,
)
from scitaste_hf.modes import MODE_SPECS
from scitaste_hf.output import write_bytes_atomic
from scitaste_hf.taxonomy import discipline_order

#: The answer's token budget, as the lm-eval tasks' ``max_gen_toks``.
GENERATION_SIZE = 1024


class _Reply(SampleLevelComputation):
    """One document's reply as the lm-eval task reads it, the same item under every metric's name."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def compute(self, doc: Doc, model_response: Any, **kwargs: Any) -> dict[str, dict[str, Any]]:
        item = process_results(doc.specific["doc"], list(model_response.final_text[:1]))[OVERALL[0]]
        return dict.fromkeys(self.names, item)


def _prompt(line: dict[str, Any], task_name: str) -> Doc:
    return Doc(task_name=task_name, query=doc_to_text(line), choices=[""], gold_index=0, specific={"doc": line})


def _config(mode: str, folder: Path) -> LightevalTaskConfig:
    """The task of ``mode``: its documents written to ``folder`` (as ``test.jsonl``), its metrics those of the
    disciplines the documents hold."""
    docs = list(load_docs(scitaste_task_mode=mode)["test"])
    folder.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(folder / "test.jsonl", "".join(json.dumps(d) + "\n" for d in docs).encode())
    present = discipline_order(d["discipline"] for d in docs)
    names = list(aggregations(present))
    # the first name's aggregation returns every figure (a dict), which lighteval takes for the whole group
    metric = CorpusLevelMetricGrouping(metric_name=names, higher_is_better=higher_is_better(present),
                                       category=SamplingMethod.GENERATIVE, sample_level_fn=_Reply(names),
                                       corpus_level_fn=dict.fromkeys(names, run_figures))
    return LightevalTaskConfig(name=MODE_SPECS[mode].task, prompt_function=_prompt, hf_repo=str(folder),
                               hf_subset="default", hf_avail_splits=["test"], evaluation_splits=["test"],
                               metrics=[metric], generation_size=GENERATION_SIZE, stop_sequence=[], version=0)


# lighteval reads a task's documents with datasets.load_dataset(hf_repo), so they are written where it looks, for
# the life of the process
_FOLDER = Path(tempfile.mkdtemp(prefix="scitaste-lighteval-"))
atexit.register(shutil.rmtree, _FOLDER, ignore_errors=True)
#: What lighteval reads from a custom tasks module: one task per mode any chat model runs.
TASKS_TABLE = [_config(mode, _FOLDER / mode) for mode in MODE_SPECS if MODE_SPECS[mode].task in ANY_MODEL]
