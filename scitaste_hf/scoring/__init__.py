"""Scoring of SciTaste-Bench runs, exactly as docs/scoring.md and docs/answers.md define it.

Pure numpy/scipy computation; reading files is the CLI's job (:mod:`scitaste_hf.predictions`).
"""

from scitaste_hf.scoring.answers import parse_answer, validate_answer
from scitaste_hf.scoring.bootstrap import bootstrap, paired_bootstrap
from scitaste_hf.scoring.report import score_pairs, score_run, summarize
from scitaste_hf.scoring.scheme1 import scheme1, scheme1_grade
from scitaste_hf.scoring.wape import wape, wape_grade, wape_score

__all__ = [
    "bootstrap",
    "paired_bootstrap",
    "parse_answer",
    "scheme1",
    "scheme1_grade",
    "score_pairs",
    "score_run",
    "summarize",
    "validate_answer",
    "wape",
    "wape_grade",
    "wape_score",
]
