"""An Inspect log (``.eval`` or ``.json``) as a run: its samples as lm-eval samples lines, which
:mod:`scitaste_hf.predictions` reads as predictions and :func:`scitaste_hf.leaderboard.integrity.verify_evidence`
as evidence. The core package finds this module through the ``scitaste_hf.log_readers`` entry point
(:data:`scitaste_hf.predictions.LOG_READERS`) and calls it only for a file that is an Inspect log.

A sample's reply is its final output, as the task's scorer read it; a sample that ended in an error is a failure
(``other``). The paper is the sample's id, the mode the sample's ``scitaste_mode``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from scitaste_hf.errors import ScitasteError, first_line
from scitaste_hf.predictions import reply_answer
from scitaste_hf.schema import Answer, failure_text


def _log(data: bytes, source: str):
    """The log in ``data``, read by Inspect (which reads logs from files only)."""
    from inspect_ai.log import read_eval_log

    suffix = ".eval" if data[:4] == b"PK\x03\x04" else ".json"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"log{suffix}"
        path.write_bytes(data)
        try:
            log = read_eval_log(str(path), resolve_attachments=True)
        except Exception as exc:  # a damaged archive, JSON of another shape: Inspect's reader says which
            raise ScitasteError(f"{source}: not a readable Inspect log ({first_line(exc)})") from None
    if not log.samples:
        raise ScitasteError(f"{source}: the Inspect log holds no samples (status {log.status})")
    return log


def _reply(sample) -> str:
    """The sample's reply, or the failure text of its error (the error's first line; an empty message is none)."""
    if sample.error is not None:
        return failure_text("other", next(iter(str(sample.error.message).splitlines()), ""))
    return sample.output.completion


def samples_text(data: bytes, source: str, *, consistent: bool = False) -> str:
    """The samples of the Inspect log ``data`` as lm-eval samples lines (JSONL): ``doc`` (the paper's bibcode and
    mode) and ``filtered_resps`` (the reply).

    Parameters
    ----------
    consistent : bool
        Also require each sample's recorded score to be what its reply parses to (a log edited after the run
        disagrees with itself): for a log offered as evidence.

    Raises
    ------
    ScitasteError
        When ``data`` is not a readable Inspect log, holds no samples, or (``consistent``) disagrees with itself.
    """
    lines = []
    for sample in _log(data, source).samples:
        reply = _reply(sample)
        if consistent:
            _check_scores(sample, reply)
        lines.append(json.dumps({"doc": {"bibcode": str(sample.id),
                                         "scitaste_mode": (sample.metadata or {}).get("scitaste_mode")},
                                 "filtered_resps": [reply]}) + "\n")
    return "".join(lines)


def _check_scores(sample, reply: str) -> None:
    answer = reply_answer(reply)
    pred = list(answer.vector()) if isinstance(answer, Answer) else None
    for score in (sample.scores or {}).values():
        item = (score.metadata or {}).get("item")
        if isinstance(item, dict) and item.get("pred") != pred:
            raise ScitasteError(f"the Inspect log's score of {sample.id} is not what its reply parses to")
