"""Expert ratings beside the bibliometric gold: the store and assignment of the Space's Annotate tab, the
``expert_ratings`` export, and the agreement report (docs/ratings.md)."""

from scitaste_hf.ratings.guide import GUIDE, NUMBERS
from scitaste_hf.ratings.service import RateResult, Ratings, blind, check_scores, open_ratings
from scitaste_hf.ratings.store import RatingError, RatingStore

__all__ = ["GUIDE", "NUMBERS", "RateResult", "RatingError", "RatingStore", "Ratings", "blind", "check_scores",
           "open_ratings"]
