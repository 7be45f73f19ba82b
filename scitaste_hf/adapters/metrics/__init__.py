"""The ``evaluate`` adapter: the modules' shared input checks (:mod:`.inputs`), their Gradio widget (:mod:`.app`)
and :func:`load_metric`, which loads a packaged module by name."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import evaluate


def load_metric(name: str, **kwargs) -> evaluate.EvaluationModule:
    """Load one of the packaged ``evaluate`` modules (``scitaste_wape``, ``scitaste_scheme1``, ...) by name.

    ``evaluate`` has no plugin lookup, so the module's folder is resolved inside this installation (or the
    source checkout) and handed to :func:`evaluate.load`; ``kwargs`` go to :func:`evaluate.load`.
    """
    import evaluate

    from scitaste_hf.resources import metric_path

    return evaluate.load(str(metric_path(name)), **kwargs)
