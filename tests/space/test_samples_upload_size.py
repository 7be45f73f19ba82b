"""An lm-eval samples log submitted as the predictions holds every prompt beside its reply (a tool mode's prompts
are 7-11k tokens), so it is held to the evidence files' size limit, not the predictions file's."""

import json
from importlib import resources

import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard import Leaderboard
from scitaste_hf.predictions import is_samples_log
from scitaste_hf.records import load_records

GOLD = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))


def _answer(record):
    return {"innovation_score": record["innovation_score"], "dimension_scores": record["dimension_scores"]}


@pytest.fixture()
def board(tmp_path):
    board = Leaderboard(tmp_path, GOLD, max_bytes=200_000, max_evidence_bytes=2_000_000, rate_limit=None)
    yield board
    board.close()


def test_a_large_samples_log_is_accepted_where_a_predictions_file_that_size_is_not(board):
    prompt = "evidence " * 400  # about 3.6 kB a paper, as the tool mode's prompts are long
    samples = "".join(json.dumps({"doc_id": k, "doc": {"bibcode": r["bibcode"]}, "arguments": [[prompt, {}]],
                                  "filtered_resps": [json.dumps(_answer(r))]}) + "\n"
                      for k, r in enumerate(GOLD)).encode()
    assert 200_000 < len(samples) < 2_000_000 and is_samples_log(samples)
    result = board.submit(samples, "m", "dimagent_v3")
    assert not result.duplicate and result.run_id
    padded = "".join(json.dumps({"bibcode": r["bibcode"], **_answer(r), "reasoning": prompt}) + "\n"
                     for r in GOLD).encode()
    assert len(padded) > 200_000 and not is_samples_log(padded)
    with pytest.raises(ScitasteError, match=r"the file is 1\.\d MiB, over the limit of 0\.2 MiB"):
        board.submit(padded, "m", "pure_qa")


@pytest.mark.parametrize("data", [b"", b"\n\n", b"not json\n", b'{"bibcode": "B"}\n', b"[1]\n", b"\xff\xfe\n",
                                  b"[" * 100_000])
def test_only_a_samples_line_first_counts_as_a_samples_log(data):
    assert not is_samples_log(data)
    assert is_samples_log(b'\n  {"doc": {}, "filtered_resps": []}\n{"bibcode": "B"}\n')
