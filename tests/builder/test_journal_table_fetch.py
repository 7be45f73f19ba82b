"""The build's one request outside the clients, the mirror's journal table, goes through the same transport: a
failed answer is retried, and what it keeps is what the mirror served."""

import httpx
import pytest

from scitaste_hf.builder.journals import CACHED, mirror_table
from scitaste_hf.errors import ScitasteError
from scitaste_hf.simworld.render import journal_table_csv
from scitaste_hf.sources.endpoints import JOURNAL_TABLE_PATH
from scitaste_hf.sources.errors import ServiceUnavailable


def _asked(mirror):
    log = httpx.get(f"{mirror}/_control/log", timeout=10).json()["requests"]
    return sum(r["path"] == JOURNAL_TABLE_PATH for r in log)


def test_a_failed_answer_is_retried_and_the_table_kept(mirror, world, tmp_path):
    before = _asked(mirror)
    httpx.post(f"{mirror}/_control/faults", json=[{"status": 503, "body": "busy"}], timeout=10)
    table = mirror_table(mirror, tmp_path / "work")
    assert _asked(mirror) - before == 2  # the 503, then the table
    assert (tmp_path / "work" / CACHED).read_text("utf-8") == journal_table_csv(world)
    assert len(table.entries) == len(journal_table_csv(world).splitlines()) - 1
    assert mirror_table(mirror, tmp_path / "work") is not None and _asked(mirror) - before == 2  # kept: not asked again


def test_a_mirror_that_keeps_failing_is_one_line_and_keeps_nothing(mirror, tmp_path):
    httpx.post(f"{mirror}/_control/faults", json=[{"status": 503, "body": "busy"}] * 2, timeout=10)
    with pytest.raises(ServiceUnavailable) as failed:
        mirror_table(mirror, tmp_path / "work", max_retries=1)
    assert str(failed.value) == (f"the mirror's journal table kept failing: HTTP 503 after 2 attempts "
                                 f"[GET {mirror}{JOURNAL_TABLE_PATH}]; try again later")
    assert not (tmp_path / "work" / CACHED).exists()


def test_a_table_that_cannot_be_read_is_one_line_and_asked_again(mirror, world, tmp_path):
    # it was kept before it was read: every later build from the work directory failed on the kept file
    before = _asked(mirror)
    httpx.post(f"{mirror}/_control/faults", json=[{"status": 200, "body": "issn\n1,2,3\n"}], timeout=10)
    with pytest.raises(ScitasteError, match=rf"^the mirror {mirror} served a journal table that cannot be read "
                                            r"\(.*\); nothing was kept$"):
        mirror_table(mirror, tmp_path / "work")
    assert not (tmp_path / "work" / CACHED).exists()
    table = mirror_table(mirror, tmp_path / "work")  # the mirror is asked again, and its table kept
    assert _asked(mirror) - before == 2 and len(table.entries) == len(journal_table_csv(world).splitlines()) - 1
