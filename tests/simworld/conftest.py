"""The small world the simworld tests share: generating it takes seconds, as every world holds the default size's
works around its candidates."""

import pytest

from scitaste_hf.simworld.world import generate


@pytest.fixture(scope="session")
def world():
    return generate(papers=470, seed=3)
