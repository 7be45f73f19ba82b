"""The leaderboard: a local store of scored runs, submission validation and integrity checks, and an
optional copy on a Hugging Face dataset repo. The Space in ``space/`` renders it."""

from scitaste_hf.leaderboard.service import Leaderboard, SubmitResult, check_meta
from scitaste_hf.leaderboard.store import KINDS, STATUSES, Meta, Store
from scitaste_hf.net.guard import SubmissionError

__all__ = ["KINDS", "STATUSES", "Leaderboard", "Meta", "Store", "SubmissionError", "SubmitResult", "check_meta"]
