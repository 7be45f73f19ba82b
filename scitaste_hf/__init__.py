"""scitaste-hf: SciTaste-Bench on the Hugging Face stack.

The public surface is small: :mod:`scitaste_hf.schema` (keys, weights, bands, record and answer schemas),
:mod:`scitaste_hf.scoring` (Scheme 1, Scheme 2/WAPE, bootstrap intervals, answer parsing) and
:func:`load_metric`, which loads the packaged ``evaluate`` modules from any directory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    import evaluate

__all__ = ["__version__", "load_metric"]


def load_metric(name: str, **kwargs) -> evaluate.EvaluationModule:
    """Load one of the packaged ``evaluate`` modules (``scitaste_wape``, ``scitaste_scheme1``, ...) by name.

    ``evaluate`` has no plugin lookup, so the module's folder is resolved inside this installation (or the
    source checkout) and handed to :func:`evaluate.load`; ``kwargs`` go to :func:`evaluate.load`.
    """
    import evaluate

    from scitaste_hf.resources import metric_path

    return evaluate.load(str(metric_path(name)), **kwargs)
