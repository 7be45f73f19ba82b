"""An Inspect log (``.eval`` or ``.json``) as a run: its samples as lm-eval samples lines, which
:mod:`scitaste_hf.predictions` reads as predictions and :func:`scitaste_hf.leaderboard.integrity.verify_evidence`
as evidence. The core package finds this module through the ``scitaste_hf.log_readers`` entry point
(:data:`scitaste_hf.predictions.LOG_READERS`) and calls it only for a file that is an Inspect log.

A sample's reply is its final output, as the task's scorer read it; a sample that ended in an error is a failure
(``other``). The paper is the sample's id, the mode the sample's ``scitaste_mode``.

A run is one answer a paper, so a log of ``inspect eval --epochs K`` (K answers a paper) is refused with one line
that says how to take one epoch out of it as a log of its own (:func:`one_epoch`, the command
``python -m scitaste_hf.adapters.inspect.logs LOG --epoch N --out RUN.eval``), which is then a run like any other.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from scitaste_hf.errors import ScitasteError, first_line
from scitaste_hf.output import check_writable, write_bytes_atomic
from scitaste_hf.predictions import reply_answer
from scitaste_hf.schema import Answer, failure_text


def _suffix(data: bytes) -> str:
    return ".eval" if data[:4] == b"PK\x03\x04" else ".json"


@contextmanager
def _on_disk(data: bytes):
    """The log ``data`` as a file of its format's suffix, for as long as the block runs: Inspect reads logs from
    files only."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"log{_suffix(data)}"
        path.write_bytes(data)
        yield str(path)


def _log(data: bytes, source: str):
    """The log in ``data``, read by Inspect."""
    from inspect_ai.log import read_eval_log

    with _on_disk(data) as path:
        try:
            log = read_eval_log(path, resolve_attachments=True)
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
    log = _log(data, source)
    epochs = sorted({sample.epoch for sample in log.samples})
    if len(epochs) > 1:
        raise ScitasteError(f"{source} holds {len(epochs)} epochs of each paper (inspect eval --epochs); a run is one "
                            f"answer a paper: take one epoch out with python -m scitaste_hf.adapters.inspect.logs "
                            f"{source} --epoch N --out RUN{_suffix(data)}")
    lines = []
    for sample in log.samples:
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


def one_epoch(data: bytes, epoch: int, source: str) -> bytes:
    """The Inspect log ``data`` with only the samples of ``epoch`` (1 is the first), in the same format: one run
    of a log of several epochs. Its samples keep their scores, so it is evidence as the whole log was.

    Raises
    ------
    ScitasteError
        When ``data`` is not a readable Inspect log or has no sample of ``epoch``.
    """
    from inspect_ai.log import write_eval_log

    log = _log(data, source)
    epochs = sorted({sample.epoch for sample in log.samples})
    if epoch not in epochs:
        raise ScitasteError(f"{source} has no epoch {epoch}; its epochs are {', '.join(map(str, epochs))}")
    log.samples = [sample for sample in log.samples if sample.epoch == epoch]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"log{_suffix(data)}"
        write_eval_log(log, str(path))
        return path.read_bytes()


def messages(data: bytes, source: str, sample_id: str) -> list[dict] | None:
    """The conversation of the Inspect log's sample ``sample_id`` (a paper; its first epoch) as OpenAI-style chat
    messages (``role``, ``content`` text, an assistant's ``tool_calls``, a tool result's ``tool_call_id``), the shape
    of an agent trace's ``messages``; None when the log has no such sample.

    Raises
    ------
    ScitasteError
        When ``data`` is not a readable Inspect log.
    """
    from inspect_ai.log import read_eval_log_sample

    with _on_disk(data) as path:
        try:  # an .eval archive gives up the one sample without reading the others
            sample = read_eval_log_sample(path, id=sample_id, resolve_attachments=True)
        except (KeyError, IndexError, ValueError):
            return None  # no sample of that id (Inspect's error for it differs between its versions)
        except Exception as exc:
            raise ScitasteError(f"{source}: not a readable Inspect log ({first_line(exc)})") from None
    return _chat(sample)


def all_messages(data: bytes, source: str) -> dict[str, list[dict]]:
    """Every sample's conversation (:func:`messages`), by sample id (a paper), the log read once: for a caller that
    wants them all (a run's details dataset, one row a paper), which :func:`messages` would read the whole log for
    one at a time.

    Raises
    ------
    ScitasteError
        When ``data`` is not a readable Inspect log or holds no samples.
    """
    out: dict[str, list[dict]] = {}
    for sample in sorted(_log(data, source).samples, key=lambda s: s.epoch):  # the first epoch, as messages reads
        out.setdefault(str(sample.id), _chat(sample))
    return out


def _chat(sample) -> list[dict]:
    """A sample's messages as OpenAI-style chat messages (see :func:`messages`)."""
    out = []
    for message in sample.messages:
        entry: dict = {"role": message.role, "content": message.text}
        if message.role == "assistant" and message.tool_calls:
            entry["tool_calls"] = [{"id": call.id, "type": "function",
                                    "function": {"name": call.function, "arguments": json.dumps(call.arguments)}}
                                   for call in message.tool_calls]
        if message.role == "tool":
            entry["tool_call_id"] = message.tool_call_id
        out.append(entry)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m scitaste_hf.adapters.inspect.logs LOG --epoch N --out RUN``: write one epoch of ``LOG`` as a
    log of its own; an error is one line on stderr and exit status 1, with nothing written."""
    parser = argparse.ArgumentParser(prog="python -m scitaste_hf.adapters.inspect.logs",
                                     description="Take one epoch out of an Inspect log of several, as a run.")
    parser.add_argument("log", type=Path, help="the Inspect log (.eval or .json)")
    parser.add_argument("--epoch", type=int, required=True, help="the epoch to keep (1 is the first)")
    parser.add_argument("--out", type=Path, required=True, help="the log to write, in the same format as LOG")
    args = parser.parse_args(argv)
    try:
        check_writable(args.out)
        try:
            data = args.log.read_bytes()
        except OSError as exc:
            raise ScitasteError(f"cannot read {args.log}: {exc.strerror or first_line(exc)}") from None
        write_bytes_atomic(args.out, one_epoch(data, args.epoch, str(args.log)))
    except ScitasteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote epoch {args.epoch} of {args.log} to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
