"""The scitaste task family's hooks for lm-eval; everything lives in :mod:`scitaste_hf.adapters.lmeval.tasks`
(and the task class, which supplies the metrics, in :mod:`scitaste_hf.adapters.lmeval.chat_task`)."""

from scitaste_hf.adapters.lmeval.chat_task import ScitasteTask
from scitaste_hf.adapters.lmeval.tasks import doc_to_target, doc_to_text, load_docs, process_results

__all__ = ["ScitasteTask", "doc_to_target", "doc_to_text", "load_docs", "process_results"]
