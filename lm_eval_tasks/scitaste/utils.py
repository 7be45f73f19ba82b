"""The scitaste task family's hooks for lm-eval; everything lives in :mod:`scitaste_hf.adapters.lmeval.tasks`
(and the task class in :mod:`scitaste_hf.adapters.lmeval.chat_task`)."""

from scitaste_hf.adapters.lmeval.chat_task import ScitasteTask
from scitaste_hf.adapters.lmeval.tasks import (
    BOUNDS,
    PER_DISCIPLINE,
    SKILL_METRICS,
    coverage,
    doc_to_target,
    doc_to_text,
    load_docs,
    process_results,
    scheme1,
    scheme2,
    wape,
)

globals().update(PER_DISCIPLINE)  # scheme2_physics ... scheme2_social_sciences, named in the YAML's metric_list
globals().update(BOUNDS)  # scheme1_ci_low ... scheme2_ci_high
globals().update(SKILL_METRICS)  # scheme1_skill ... scheme2_skill_ci_high

__all__ = ["ScitasteTask", "coverage", "doc_to_target", "doc_to_text", "load_docs", "process_results", "scheme1",
           "scheme2", "wape", *BOUNDS, *SKILL_METRICS, *PER_DISCIPLINE]
