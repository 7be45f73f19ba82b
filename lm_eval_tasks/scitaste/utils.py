"""The scitaste task family's hooks for lm-eval; everything lives in :mod:`scitaste_hf.lm_tasks`."""

from scitaste_hf.lm_tasks import (
    PER_DISCIPLINE,
    coverage,
    doc_to_target,
    doc_to_text,
    load_docs,
    process_results,
    scheme1,
    scheme2,
    wape,
)

globals().update(PER_DISCIPLINE)  # scheme2_physics ... scheme2_finance, named in the YAML's metric_list

__all__ = ["coverage", "doc_to_target", "doc_to_text", "load_docs", "process_results", "scheme1", "scheme2",
           "wape", *PER_DISCIPLINE]
