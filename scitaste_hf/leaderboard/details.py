"""Per-paper details of the stored runs: for each run and paper, the prediction, its signed error on each of the eight
numbers, the failure reason where the answer could not be scored, the model's reasoning, and where the paper's
conversation sits in the run's evidence (its samples log, Inspect log or agent trace).

They are kept in a SQLite file of their own beside the store (``DATA/details.sqlite``), derived from the store and
never its source of truth: built incrementally from the stored runs (a run's submission and evidence files are read
once, when it is first seen), and rebuilt whole when the board's :attr:`~scitaste_hf.leaderboard.Leaderboard.
derived_key` changes (another gold set: every error changes). A view of one paper then reads one range of the
table's primary key, whatever the number of runs, instead of parsing every submission.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard.database import Database
from scitaste_hf.leaderboard.integrity import evidence_mode, evidence_paper
from scitaste_hf.output import write_bytes_atomic
from scitaste_hf.predictions import is_inspect_log, log_reader
from scitaste_hf.schema import DIMENSIONS, Answer

logger = logging.getLogger(__name__)

DETAILS_FILE = "details.sqlite"
SCHEMA_VERSION = 1
#: The eight numbers of an answer, in :meth:`~scitaste_hf.schema.Answer.vector`'s order.
NUMBERS = ("innovation_score", *DIMENSIONS)
#: The evidence kinds a store keeps (:meth:`~scitaste_hf.leaderboard.store.Store.evidence`), in the order a paper's
#: conversation is looked for: the agent trace holds every tool call with its result, a samples log the prompt.
EVIDENCE_KINDS = ("trace", "samples")
#: An Inspect log stored as a run's evidence: its conversation is addressed by the sample's id, the paper.
INSPECT = "inspect"
_PREDICTED = [f"p_{n}" for n in NUMBERS]
_ERRORS = [f"e_{n}" for n in NUMBERS]
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (run_id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL, parsed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS details (
    bibcode TEXT NOT NULL,
    run_id INTEGER NOT NULL,
    {", ".join(f"{c} REAL" for c in (*_PREDICTED, *_ERRORS))},
    abs_error REAL,
    failure TEXT,
    detail TEXT,
    reasoning TEXT,
    trace_kind TEXT,
    trace_offset INTEGER,
    trace_length INTEGER,
    PRIMARY KEY (bibcode, run_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS details_worst ON details (run_id, abs_error);
"""
#: The columns of a row, in :meth:`Details.rows_of`'s order.
COLUMNS = ("bibcode", "run_id", *_PREDICTED, *_ERRORS, "abs_error", "failure", "detail", "reasoning", "trace_kind",
           "trace_offset", "trace_length")
#: The columns of a run's row that a paper's page shows for every run (:meth:`Details.of_paper`): the predicted
#: composite, every number's error, the failure (its reason and detail last). A page of 10,000 runs costs in
#: proportion to its cells; a run's dimension predictions are shown for the run picked (:meth:`Details.one`).
PAPER_COLUMNS = (_PREDICTED[0], *_ERRORS, "failure", "detail")
#: Most papers a search returns (a search box answers with a page, not the benchmark).
SEARCH_LIMIT = 50


def _line_paper(obj: Any, mode: str) -> str | None:
    """The paper of an evidence line (:func:`~scitaste_hf.leaderboard.integrity.evidence_paper`), None for a line of
    another mode than ``mode`` (one trace file gathers every mode of an evaluation) or without a paper."""
    if not isinstance(obj, dict):
        return None
    line_mode = evidence_mode(obj)
    if isinstance(line_mode, str) and line_mode != mode:
        return None
    return evidence_paper(obj)


def evidence_lines(data: bytes, mode: str) -> dict[str, tuple[int, int]]:
    """Paper -> (byte offset, length) of its line in a JSONL evidence file (the last one, as the integrity check
    counts it, when a trace was appended to by a second evaluation); lines of other modes are left out."""
    out: dict[str, tuple[int, int]] = {}
    offset = 0
    for line in data.split(b"\n"):
        if line.strip():
            try:
                bibcode = _line_paper(json.loads(line), mode)
            except (ValueError, RecursionError):
                bibcode = None
            if bibcode is not None:
                out[bibcode] = (offset, len(line))
        offset += len(line) + 1
    return out


def _pointers(evidence: Mapping[str, bytes], mode: str) -> dict[str, tuple[str, int | None, int | None]]:
    """Paper -> where its conversation is: (evidence kind, offset, length) in the first of :data:`EVIDENCE_KINDS`
    that holds it; an Inspect log is (:data:`INSPECT`, None, None), its sample found by id."""
    out: dict[str, tuple[str, int | None, int | None]] = {}
    for kind in reversed(EVIDENCE_KINDS):  # the preferred kind last, so that it wins
        blob = evidence.get(kind)
        if not blob:
            continue
        if is_inspect_log(blob):
            continue  # not lines: Details._add points every paper of the run at the log's sample of its id
        out.update({b: (kind, o, n) for b, (o, n) in evidence_lines(blob, mode).items()})
    return out


def _row(bibcode: str, run_id: int, answer, gold: Sequence[float], pointer) -> tuple:
    if isinstance(answer, Answer):
        predicted = answer.vector()
        errors = [p - g for p, g in zip(predicted, gold)]
        scored = (*predicted, *errors, abs(errors[0]), None, None, answer.reasoning)
    else:
        failure = (None, None) if answer is None else (answer.reason, answer.detail)
        scored = (*[None] * (2 * len(NUMBERS) + 1), *failure, None)
    return (bibcode, run_id, *scored, *(pointer or (None, None, None)))


class Details(Database):
    """The per-(run, paper) table of a board (see the module's docstring).

    Parameters
    ----------
    board : Leaderboard
        The board whose store, gold labels, key and parser the details follow; the file is ``DATA/details.sqlite``
        beside its store.
    """

    def __init__(self, board) -> None:
        self.board = board
        self.path = Path(board.store.root) / DETAILS_FILE
        super().__init__(self.path, _SCHEMA, SCHEMA_VERSION)
        #: Paper -> its eight gold numbers, in gold order.
        self.gold = {r["bibcode"]: (r["innovation_score"], *(r["dimension_scores"][k] for k in DIMENSIONS))
                      for r in board.gold}
        self._sync_lock = threading.Lock()
        self._seen: Any = None

    def sync(self, *, wait: bool = True) -> int:
        """Bring the table up to date with the store: add the runs not yet in it (all of them again after a change of
        the board's key). Cheap when nothing changed (the store's change marker is compared first). Returns the
        number of runs added.

        Parameters
        ----------
        wait : bool
            Wait for a sync already under way (another thread's) and then look again; False returns 0 at once
            instead, for a caller that must not wait (a page load while a first start reads every run).
        """
        store = self.board.store
        marker = store.change_marker()
        if not self._sync_lock.acquire(blocking=wait):
            return 0
        try:
            if marker == self._seen:
                return 0
            key = self.board.derived_key
            stored = self.query("SELECT value FROM meta WHERE key = 'derived'")
            if not stored or stored[0]["value"] != key:
                with self.transaction() as db:
                    db.execute("DELETE FROM details")
                    db.execute("DELETE FROM runs")
                    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('derived', ?)", (key,))
            done = {r["run_id"] for r in self.query("SELECT run_id FROM runs")}
            new = sorted(run_id for run_id, *_ in store.states() if run_id not in done)
            for row in store.rows_by_id(new):
                self._add(row)
            self._seen = marker
            return len(new)
        finally:
            self._sync_lock.release()

    def _add(self, run) -> None:
        """Add one run's rows: its answers read from its stored file, the pointers from its evidence files. A file that
        no longer parses against the gold set adds the run with no rows (``parsed`` 0), so that it is not read again."""
        store, run_id = self.board.store, int(run["id"])
        try:
            answers = self.board.parse(store.submission_file(run["sha256"]).read_bytes())
        except (ScitasteError, OSError):
            answers = None
        rows = []
        if answers is not None:
            evidence = store.evidence(run["sha256"])
            pointers = _pointers(evidence, run["mode"])
            inspect = any(is_inspect_log(blob) for blob in evidence.values())
            for bibcode, gold in self.gold.items():
                pointer = pointers.get(bibcode) or ((INSPECT, None, None) if inspect else None)
                rows.append(_row(bibcode, run_id, answers.get(bibcode), gold, pointer))
        with self.transaction() as db:
            db.executemany(f"INSERT OR REPLACE INTO details ({', '.join(COLUMNS)}) VALUES "
                           f"({', '.join('?' * len(COLUMNS))})", rows)
            db.execute("INSERT OR REPLACE INTO runs (run_id, sha256, parsed) VALUES (?, ?, ?)",
                       (run_id, run["sha256"], int(answers is not None)))

    # -- reading -------------------------------------------------------------------------------------

    def of_paper(self, bibcode: str, digits: int | None = None) -> dict[int, tuple]:
        """Run id -> the paper's numbers in that run, a tuple in :data:`PAPER_COLUMNS` order, for every run with a row
        (after :meth:`sync`), rounded to ``digits`` decimals when given: plain tuples of the columns a paper's page
        shows, since a page reads one a stored run."""
        self.sync()
        numeric = len(PAPER_COLUMNS) - 2
        shown = [c if digits is None else f"round({c}, {int(digits)})" for c in PAPER_COLUMNS[:numeric]]
        with self._lock:
            cursor = self._db.cursor()
            cursor.row_factory = None
            rows = cursor.execute(f"SELECT run_id, {', '.join([*shown, *PAPER_COLUMNS[numeric:]])} FROM details "
                                  "WHERE bibcode = ?", (bibcode,)).fetchall()
        return {row[0]: row[1:] for row in rows}

    def of_run(self, run_id: int) -> list[dict[str, Any]]:
        """The rows of one run, in gold order (after :meth:`sync`)."""
        self.sync()
        rows = {r["bibcode"]: dict(r) for r in self.query(
            f"SELECT {', '.join(COLUMNS)} FROM details WHERE run_id = ?", (run_id,))}
        return [rows[b] for b in self.gold if b in rows]

    def one(self, run_id: int, bibcode: str) -> dict[str, Any] | None:
        """One run's row of one paper, or None."""
        self.sync()
        rows = self.query(f"SELECT {', '.join(COLUMNS)} FROM details WHERE bibcode = ? AND run_id = ?",
                          (bibcode, run_id))
        return dict(rows[0]) if rows else None

    def worst(self, run_id: int, n: int = 20) -> list[dict[str, Any]]:
        """The ``n`` papers of a run with the largest absolute error of the innovation score, worst first (failures,
        which have none, are left out)."""
        self.sync()
        rows = self.query(f"SELECT {', '.join(COLUMNS)} FROM details WHERE run_id = ? AND abs_error IS NOT NULL "
                          "ORDER BY abs_error DESC, bibcode LIMIT ?", (run_id, int(n)))
        return [dict(r) for r in rows]

    def conversation(self, run_id: int, bibcode: str) -> list[dict[str, Any]] | None:
        """The paper's conversation in the run's evidence, round by round (:func:`rounds`), or None when the run
        stores no evidence line of the paper."""
        row = self.one(run_id, bibcode)
        if row is None or row["trace_kind"] is None:
            return None
        sha256 = self.query("SELECT sha256 FROM runs WHERE run_id = ?", (run_id,))[0]["sha256"]
        if row["trace_kind"] == INSPECT:  # read by the Inspect adapter, found through its entry point
            for kind, blob in self.board.store.evidence(sha256).items():
                if is_inspect_log(blob):
                    found = log_reader(kind).messages(blob, f"run #{run_id}'s {kind}", bibcode)
                    return None if found is None else rounds({"messages": found})
            return None
        with open(self.board.store.files / f"{sha256}.{row['trace_kind']}.jsonl", "rb") as fh:
            fh.seek(row["trace_offset"])
            line = fh.read(row["trace_length"])
        return rounds(json.loads(line))

    def conversations(self, run_id: int) -> dict[str, list[dict[str, Any]]]:
        """Every paper's conversation in the run's evidence (:meth:`conversation`), each evidence file read once, by
        paper; a paper whose conversation the run does not store is left out. A details dataset wants them all, and
        :meth:`conversation` reads a whole Inspect log for each paper (minutes for a run of 10,000 papers)."""
        rows = [r for r in self.of_run(run_id) if r["trace_kind"] is not None]
        if not rows:
            return {}
        sha256 = self.query("SELECT sha256 FROM runs WHERE run_id = ?", (run_id,))[0]["sha256"]
        evidence = self.board.store.evidence(sha256)
        logged: dict[str, list[dict[str, Any]]] = {}
        if any(r["trace_kind"] == INSPECT for r in rows):
            kind, blob = next(((k, b) for k, b in evidence.items() if is_inspect_log(b)), ("", b""))
            logged = log_reader(kind).all_messages(blob, f"run #{run_id}'s {kind}") if blob else {}
        out = {}
        for r in rows:
            if r["trace_kind"] == INSPECT:
                if r["bibcode"] in logged:
                    out[r["bibcode"]] = rounds({"messages": logged[r["bibcode"]]})
            else:
                start = r["trace_offset"]
                out[r["bibcode"]] = rounds(json.loads(evidence[r["trace_kind"]][start:start + r["trace_length"]]))
        return out


def _text(content: Any) -> str:
    """A message's content as text (a list of parts, as some APIs send, joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else json.dumps(content)


def _messages(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chat messages an evidence line records: an agent trace's ``messages``; an lm-eval sample's prompt (a chat
    prompt as lm-eval logs it, the JSON of its messages, or plain text) followed by the logged reply."""
    if isinstance(obj.get("messages"), list):
        return [m for m in obj["messages"] if isinstance(m, dict)]
    arguments = obj.get("arguments")
    prompt: Any = None
    if isinstance(arguments, dict):
        first = next(iter(arguments.values()), None)
        prompt = first.get("arg_0") if isinstance(first, dict) else None
    elif isinstance(arguments, list) and arguments:
        prompt = arguments[0][0] if isinstance(arguments[0], list) and arguments[0] else arguments[0]
    messages: list[dict[str, Any]] = []
    if isinstance(prompt, str):
        try:
            parsed = json.loads(prompt)
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and all(isinstance(m, dict) and "role" in m for m in parsed):
            messages = parsed
        else:
            messages = [{"role": "user", "content": prompt}]
    reply = obj.get("resps")
    while isinstance(reply, list) and reply:
        reply = reply[0]
    if isinstance(reply, str):
        messages.append({"role": "assistant", "content": reply})
    return messages


def rounds(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An evidence line's conversation, round by round: each round the messages sent (``sent``: role and text), then
    the model's turn (``reply``: its text) and its tool calls (``tool_calls``: name, arguments, and the ``result`` the
    next round sent back). A failed item's ``error`` closes the last round."""
    out: list[dict[str, Any]] = []
    sent: list[dict[str, str]] = []
    results: dict[str, str] = {}
    messages = _messages(obj)
    for m in messages:
        if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
            results[m["tool_call_id"]] = _text(m.get("content"))
    for m in messages:
        role = m.get("role")
        if role == "assistant":
            calls = []
            for call in m.get("tool_calls") or []:
                function = call.get("function") if isinstance(call.get("function"), dict) else call
                calls.append({"name": function.get("name"), "arguments": function.get("arguments"),
                              "result": results.get(call.get("id"))})
            out.append({"round": len(out) + 1, "sent": sent, "reply": _text(m.get("content")), "tool_calls": calls})
            sent = []
        elif role != "tool":
            sent.append({"role": str(role), "content": _text(m.get("content"))})
    if sent or isinstance(obj.get("error"), str):
        out.append({"round": len(out) + 1, "sent": sent, "reply": "", "tool_calls": [],
                    **({"error": obj["error"]} if isinstance(obj.get("error"), str) else {})})
    return out


def find_papers(gold: Sequence[Mapping[str, Any]], query: str = "", discipline: str | None = None,
                limit: int = SEARCH_LIMIT) -> list[Mapping[str, Any]]:
    """The gold records whose identifier (bibcode, DOI, OpenAlex or arXiv id) or title holds every word of ``query``
    (case-insensitive), of ``discipline`` when given; at most ``limit``, in gold order."""
    words = [w for w in re.split(r"\s+", (query or "").strip().lower()) if w]
    out = []
    for record in gold:
        if discipline and record.get("discipline") != discipline:
            continue
        haystack = " ".join(str(record.get(k) or "") for k in ("bibcode", "doi", "openalex_id", "arxiv_id", "title"))
        if all(w in haystack.lower() for w in words):
            out.append(record)
            if len(out) >= limit:
                break
    return out


#: Where a details dataset keeps its rows, relative to its root (the card's ``configs``), and its one file.
DATASET_PATH = "data/details-*.parquet"
DATASET_FILE = "data/details-00000-of-00001.parquet"
#: The card of a details dataset, below its metadata.
DATASET_CARD = """
# Per-paper details of a SciTaste-Bench run

Run #{run} of the leaderboard: model `{model}`, mode `{mode}`, status `{status}`, {n} papers (one row each).

Each row holds the run's prediction of the eight numbers (`predicted_*`, empty where the answer could not be scored),
its signed error (`error_*`: prediction minus gold) beside the gold (`gold_*`), whether the reply parsed (`parsed`)
or why not (`failure`, `failure_detail`), the model's `reasoning`, and the paper's conversation round by round with
each tool call and its result (`trace`, JSON) when the run came with an agent trace or samples log. A row's numbers
are single answers: the run's scores with their intervals are on the leaderboard.
"""


def dataset_rows(details: Details, run_id: int) -> list[dict[str, Any]]:
    """One row a paper of the run ``run_id``, as a details dataset holds it (see :data:`DATASET_CARD`).

    Raises
    ------
    ScitasteError
        When the board stores no such run, or its file no longer parses against the gold set.
    """
    store = details.board.store
    found = store.rows_by_id([int(run_id)])
    if not found:
        raise ScitasteError(f"no run #{run_id} in {store.root}")
    run = found[0]
    rows = details.of_run(int(run_id))
    if not rows:
        raise ScitasteError(f"run #{run_id}'s stored file does not parse against this gold set; nothing to publish")
    conversations = details.conversations(int(run_id))
    out = []
    for row in rows:
        gold = details.gold[row["bibcode"]]
        conversation = conversations.get(row["bibcode"])
        out.append({
            "run": int(run_id), "model": run["model"], "mode": run["mode"], "status": run["status"],
            "bibcode": row["bibcode"], "parsed": row["failure"] is None,
            **{f"predicted_{n}": row[f"p_{n}"] for n in NUMBERS}, **{f"gold_{n}": g for n, g in zip(NUMBERS, gold)},
            **{f"error_{n}": row[f"e_{n}"] for n in NUMBERS},
            "failure": row["failure"], "failure_detail": row["detail"], "reasoning": row["reasoning"],
            "trace": None if conversation is None else json.dumps(conversation),
            "trace_source": row["trace_kind"]})
    return out


def dataset_files(rows: Sequence[Mapping[str, Any]]) -> dict[str, bytes]:
    """A details dataset's files, path -> bytes: its Parquet file and its card, which ``datasets.load_dataset`` reads
    as one ``train`` split."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import yaml

    buffer = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(list(rows)), buffer)
    first = rows[0]
    metadata = {"configs": [{"config_name": "default", "data_files": [{"split": "train", "path": DATASET_PATH}]}]}
    card = DATASET_CARD.format(run=first["run"], model=first["model"], mode=first["mode"], status=first["status"],
                               n=len(rows))
    return {DATASET_FILE: buffer.getvalue().to_pybytes(),
            "README.md": f"---\n{yaml.safe_dump(metadata, sort_keys=False)}---\n{card}".encode()}


def write_dataset(rows: Sequence[Mapping[str, Any]], folder: str | Path) -> Path:
    """Write a details dataset (:func:`dataset_files`) to ``folder``; returns it."""
    folder = Path(folder)
    for name, data in dataset_files(rows).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(folder / name, data)
    return folder


#: Most characters of a Hub repo's name (the part after its owner).
REPO_NAME_LIMIT = 96


#: Hex digits of a run's key in its details repo's name.
KEY_DIGITS = 8


def details_repo(results_repo: str, run_id: int, key: str) -> str:
    """The dataset repo a Space publishes a run's details to: beside its results repo, ``OWNER/NAME-details-RUN-KEY``
    (KEY: the first :data:`KEY_DIGITS` hex digits of the run's key, its ``sha256``; the name shortened to fit the
    Hub's limit). A run number alone is the board's own: two boards on one results repo (staging and production, a
    store started afresh) both have a run #1, and one would publish into the other's repo."""
    owner, _, name = results_repo.rpartition("/")
    suffix = f"-details-{int(run_id)}-{key[:KEY_DIGITS]}"
    name = name[:REPO_NAME_LIMIT - len(suffix)].rstrip("-.") or "run"
    return f"{owner}/{name}{suffix}" if owner else f"{name}{suffix}"


class DetailsQueue:
    """The runs of a board whose details dataset waits to be published, as the Hub copy
    (:class:`~scitaste_hf.net.hub_copy.HubMirror`) takes a store (:class:`~scitaste_hf.net.hub_copy.Copied`): one run
    a commit, each to a repo of its own (:func:`details_repo`), private when the run's submitter chose so.

    The board's store keeps each run's state (:meth:`~scitaste_hf.leaderboard.store.Store.details_pending`), so a
    failed publication stays pending and is retried (after the failure, with the next run, on the next start); a run
    whose file no longer parses against the gold set has no details and leaves the queue, with a warning.

    Parameters
    ----------
    board : Leaderboard
        The board whose runs are published; its details table (:class:`Details`) is opened on first use.
    results_repo : str
        The Space's results repo, beside which each run's details repo is named.
    """

    def __init__(self, board, results_repo: str) -> None:
        self.board = board
        self.results_repo = results_repo
        self._offered: dict[int, int] = {}  # run id -> times offered to the Hub copy and not yet published

    @property
    def details(self) -> Details:
        """The board's details table (:meth:`~scitaste_hf.leaderboard.Leaderboard.details_table`), opened on first use
        (by the publishing thread, not the submission)."""
        return self.board.details_table()

    def copy_pending(self) -> list[str]:
        """The pending run offered the fewest times since its details were last published (the oldest of those), as a
        one-key list (empty when none is): a run whose publication keeps failing (its repo public, a file the Hub
        refuses) takes its turn after the others instead of holding every later run up."""
        pending = self.board.store.details_pending()
        for run_id in sorted(pending, key=lambda run: (self._offered.get(run, 0), run)):
            if self.details.of_run(run_id):
                self._offered[run_id] = self._offered.get(run_id, 0) + 1
                return [str(run_id)]
            logger.warning("run #%s's file does not parse against the board's gold set: no details to publish", run_id)
            self.board.store.set_details(run_id, "")
        return []

    def hub_target(self, keys: list[str]) -> tuple[str, bool]:
        """The repo of the run ``keys[0]`` and whether it is to be private."""
        run_id = int(keys[0])
        run = self.board.store.run(run_id)
        return details_repo(self.results_repo, run_id, run["sha256"]), bool(run["private"])

    def hub_files(self, keys: list[str]) -> tuple[list[tuple[str, bytes]], str]:
        """The run's details dataset (:func:`dataset_files`) and the commit message."""
        run_id = int(keys[0])
        return list(dataset_files(dataset_rows(self.details, run_id)).items()), f"Details of run #{run_id}"

    def copy_done(self, keys: list[str]) -> None:
        """Record that the run's details are published."""
        run_id = int(keys[0])
        self.board.store.set_details(run_id, self.hub_target(keys)[0])
        self._offered.pop(run_id, None)
