"""A discipline named as the board's overall row (``overall``) would replace that row: the leaderboard merges the
per-discipline summaries under the same keys. The name is refused where disciplines are defined (the taxonomy,
tests/test_taxonomy.py) and where a board reads them from its gold records."""

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.taxonomy import OVERALL


def _gold(disciplines):
    rng = np.random.default_rng(0)
    return [{"bibcode": f"P{i:03d}", "discipline": d, "innovation_score": round(float(rng.uniform(10, 90)), 1),
             "dimension_scores": {k: float(x) for k, x in zip(DIMENSIONS, rng.uniform(5, 95, 7).round(1))}}
            for i, d in enumerate(disciplines)]


def test_a_board_refuses_gold_with_a_discipline_named_as_its_overall_row(tmp_path):
    from scitaste_hf.leaderboard import Leaderboard

    with pytest.raises(ScitasteError, match=rf"^gold: discipline '{OVERALL}' is reserved: the board's {OVERALL} "
                                            r"row holds every discipline; rename it$"):
        Leaderboard(tmp_path / "lb", _gold(["physics"] * 6 + [OVERALL] * 6))
    board = Leaderboard(tmp_path / "ok", _gold(["physics"] * 6 + ["finance"] * 6))
    assert board.scopes == (OVERALL, "physics", "finance")
