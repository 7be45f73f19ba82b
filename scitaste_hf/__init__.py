"""scitaste-hf: SciTaste-Bench on the Hugging Face stack.

The public surface is small: :mod:`scitaste_hf.schema` (keys, bands, record and answer schemas),
:mod:`scitaste_hf.modes`, :mod:`scitaste_hf.weights`,
:mod:`scitaste_hf.scoring` (Scheme 1, Scheme 2/WAPE, bootstrap intervals, answer parsing) and
:func:`load_metric`, which loads the packaged ``evaluate`` modules from any directory.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load_metric"]


def __getattr__(name: str):
    # load_metric lives in the evaluate adapter, imported only when asked for: ``import scitaste_hf`` stays light.
    if name == "load_metric":
        from scitaste_hf.adapters.metrics import load_metric

        return load_metric
    raise AttributeError(f"module 'scitaste_hf' has no attribute {name!r}")
