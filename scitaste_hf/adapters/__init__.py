"""The harness adapters: the only modules of the package that import lm-eval (:mod:`.lmeval`) and ``evaluate``
(:mod:`.metrics`). Each turns the core's facts and scoring into what one harness loads; the core never imports
them (``tests/test_layers.py``)."""
