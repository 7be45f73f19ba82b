"""lm-eval models of scitaste-hf, registered when ``scitaste eval`` starts (lm-eval 0.4 has no plugin lookup).

``scitaste-baseline``: the offline, deterministic floor of the leaderboard (:mod:`scitaste_hf.baseline`).
"""

from __future__ import annotations

import os
from typing import Any

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from scitaste_hf.baseline import PriorBaseline
from scitaste_hf.schema import HUB_DATASET


@register_model("scitaste-baseline")
class BaselineLM(LM):
    """Answers every paper with its discipline's priors learned from the ``backup`` split.

    Parameters (``--model_args``)
    -----------------------------
    data_dir : str, optional
        The dataset whose ``backup`` split the priors come from; default ``$SCITASTE_DATA_DIR``, else the Hub.
    """

    def __init__(self, data_dir: str | None = None, **_lm_eval_options: Any) -> None:
        super().__init__()
        from scitaste_hf.records import load_records

        source = data_dir or os.environ.get("SCITASTE_DATA_DIR") or HUB_DATASET
        self.baseline = PriorBaseline.fit(load_records(source, "backup"))

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """One JSON answer per request, from the request's document."""
        return [self.baseline.reply(request.doc) for request in requests]

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("scitaste-baseline only generates answers (generate_until tasks)")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("scitaste-baseline only generates answers (generate_until tasks)")
